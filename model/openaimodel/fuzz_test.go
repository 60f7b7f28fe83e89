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
			Model: "m", API: api, Provider: provider, BaseURL: "http://fuzz.invalid/v1", APIKey: providertest.FuzzKey,
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
		"openai_responses_stream_failed.sse", "openai_responses_stream_incomplete.sse", "openai_responses_stream_refusal.sse",
	}, []byte("data: {\"type\":\"error\",\"message\":\"key "+providertest.FuzzKey+" revoked\"}\n\n"))
}

// FuzzResponsesJSON feeds arbitrary bodies through the Responses adapter as
// a whole application/json Response (a server that ignored "stream").
func FuzzResponsesJSON(f *testing.F) {
	fuzzStream(f, "application/json", openaimodel.APIResponses, []string{
		"openai_responses_json_1.json", "openai_responses_json_2.json", "openai_responses_json_reasoning.json",
		"openai_responses_json_content_filter.json", "openai_responses_json_cut.json",
	}, []byte(`{"status":"failed","error":{"code":"server_error","message":"boom"}}`), []byte(`{"object":"response","status":"in_progress"}`),
		[]byte(`{"error":{"message":"Incorrect API key provided: `+providertest.FuzzKey+`"}}`))
}

// FuzzAnyBody serves arbitrary bodies with an arbitrary Content-Type to both
// OpenAI APIs: the adapter chooses how to read each (stream, JSON, neither)
// and must end with a parse or a clean error.
func FuzzAnyBody(f *testing.F) {
	for _, tc := range []struct{ ct, name string }{
		{"", "openai_responses_json_2.json"}, {"text/plain", "openai_chat_stream_text.sse"}, {"text/html", "openai_chat_json_1.json"},
		{"application/x-ndjson", "openai_responses_stream_1.sse"}, {"text/event-stream", "openai_chat_json_refusal.json"},
	} {
		f.Add(tc.ct, providertest.Fixture(f, tc.name), false)
		f.Add(tc.ct, providertest.Fixture(f, tc.name), true)
	}
	f.Add("application/json; charset=utf-8", []byte("\ufeff{\"choices\":[]}"), false)
	f.Fuzz(func(t *testing.T, contentType string, body []byte, responses bool) {
		api := openaimodel.APIChat
		if responses {
			api = openaimodel.APIResponses
		}
		m, err := openaimodel.New(openaimodel.Config{Model: "m", API: api, BaseURL: "http://fuzz.invalid/v1", APIKey: providertest.FuzzKey,
			HTTPClient: providertest.BodyClient(contentType, body)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), fuzzTimeout)
		defer cancel()
		req := modeltest.Request()
		providertest.CheckStream(ctx, t, req, m.Stream(ctx, req))
	})
}
