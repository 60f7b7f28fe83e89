package openaimodel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/openaimodel"
)

// A model on an OpenAI-compatible server (here a stand-in that streams two
// text deltas), streamed chunk by chunk.
func ExampleModel_Stream() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Request-Id", "req_123")
		fmt.Fprint(w, `data: {"model":"llama3.1:8b","choices":[{"index":0,"delta":{"content":"Hello"}}]}`+"\n\n")
		fmt.Fprint(w, `data: {"model":"llama3.1:8b","choices":[{"index":0,"delta":{"content":" there"}}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	m, err := openaimodel.New(openaimodel.Config{
		Model:    "llama3.1:8b",
		Provider: openaimodel.ProviderCompatible,
		BaseURL:  srv.URL + "/v1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &model.Request{System: "Be friendly.", Messages: []message.Message{message.User("Hi!")}}
	for c, err := range m.Stream(context.Background(), req) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch c.Type {
		case model.ChunkText:
			fmt.Printf("delta %q\n", c.Text)
		case model.ChunkDone:
			fmt.Printf("done: %q finish=%s request=%s\n", c.Message.Text(), c.FinishReason, c.RequestID)
		}
	}
	// Output:
	// delta "Hello"
	// delta " there"
	// done: "Hello there" finish=stop request=req_123
}
