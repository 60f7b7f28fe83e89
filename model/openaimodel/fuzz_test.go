package openaimodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/modeltest"
	"github.com/batonhq/baton/model/openaimodel"
)

// fuzzTimeout bounds one fuzz input: a stream must end (with a parse or an
// error) well before it.
const fuzzTimeout = 10 * time.Second

func fuzzStream(f *testing.F, contentType, api string, seeds []string, extra ...[]byte) {
	for _, name := range seeds {
		f.Add(providertest.Fixture(f, name), false)
		f.Add(providertest.Fixture(f, name), true)
	}
	for _, b := range extra {
		f.Add(b, false)
	}
	f.Fuzz(func(t *testing.T, body []byte, compatible bool) {
		provider := openaimodel.ProviderOpenAI
		if compatible {
			provider = openaimodel.ProviderCompatible
		}
		m, err := openaimodel.New(openaimodel.Config{
			Model: "m", API: api, Provider: provider, BaseURL: "http://fuzz.invalid/v1",
			HTTPClient: providertest.BodyClient(contentType, body),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), fuzzTimeout)
		defer cancel()
		req := modeltest.Request()
		if len(body) > 0 && body[0]%2 == 0 {
			req.Output = &model.OutputSchema{Name: "o", Schema: []byte(`{"type":"object"}`)}
		}
		providertest.CheckStream(ctx, t, req, m.Stream(ctx, req))
	})
}

func FuzzOpenAIChatStream(f *testing.F) {
	fuzzStream(f, "text/event-stream", openaimodel.APIChat, []string{
		"openai_chat_stream_1.sse", "openai_chat_stream_3.sse", "openai_chat_stream_cut.sse",
		"openai_chat_stream_error_event.sse", "openai_chat_stream_text.sse",
		"compat_chat_stream_repeat_name.sse", "compat_chat_stream_ollama.sse", "compat_chat_stream_reasoning.sse",
	}, []byte("data: [DONE]\n\n"), []byte(": keep-alive\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"{}\\\"\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
}

func FuzzOpenAIChatJSON(f *testing.F) {
	fuzzStream(f, "application/json", openaimodel.APIChat, []string{
		"openai_chat_json_1.json", "openai_chat_json_3.json",
	}, []byte(`{"choices":[{"index":0,"message":{"content":"{}"},"finish_reason":"stop"}]}`), []byte(`{"error":"model not found"}`))
}

func FuzzResponsesStream(f *testing.F) {
	fuzzStream(f, "text/event-stream", openaimodel.APIResponses, []string{
		"openai_responses_stream_1.sse", "openai_responses_stream_reasoning.sse", "openai_responses_stream_cut.sse",
		"openai_responses_stream_failed.sse", "openai_responses_stream_incomplete.sse",
	})
}
