package anthropicmodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/anthropicmodel"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/modeltest"
)

// FuzzAnthropicStream feeds arbitrary bodies through the adapter as a
// Messages event stream: each must end in a parse or an error, never a panic
// or a hang. The second input selects the structured-output mode.
func FuzzAnthropicStream(f *testing.F) {
	for _, name := range []string{
		"anthropic_stream_1.sse", "anthropic_stream_4.sse", "anthropic_stream_thinking.sse",
		"anthropic_stream_cut.sse", "anthropic_stream_error_event.sse", "anthropic_stream_refusal.sse",
		"anthropic_stream_thinking_2.sse", "anthropic_stream_max_tokens.sse", "anthropic_stream_pause_turn.sse",
	} {
		f.Add(providertest.Fixture(f, name), uint8(0))
		f.Add(providertest.Fixture(f, name), uint8(2))
	}
	f.Add([]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), uint8(1))
	f.Fuzz(fuzzBody("text/event-stream; charset=utf-8"))
}

// FuzzAnthropicJSON feeds arbitrary bodies through the adapter as one
// application/json message (a server that ignored "stream"), in each
// structured-output mode.
func FuzzAnthropicJSON(f *testing.F) {
	for _, name := range []string{"anthropic_json_tool_use.json", "anthropic_json_thinking.json"} {
		f.Add(providertest.Fixture(f, name), uint8(0))
		f.Add(providertest.Fixture(f, name), uint8(2))
	}
	f.Add([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+providertest.FuzzKey+`"}}`), uint8(0))
	f.Add([]byte(`{"type":"message","content":[],"stop_reason":"refusal"}`), uint8(1))
	f.Fuzz(fuzzBody("application/json"))
}

// fuzzBody is a fuzz target that serves body as contentType to one request,
// in the structured-output mode mode selects (none, native or tool), and
// checks that the stream ends in a parse or an error.
func fuzzBody(contentType string) func(*testing.T, []byte, uint8) {
	return func(t *testing.T, body []byte, mode uint8) {
		cfg := anthropicmodel.Config{Model: "m", BaseURL: "http://fuzz.invalid", APIKey: providertest.FuzzKey, HTTPClient: providertest.BodyClient(contentType, body)}
		req := modeltest.Request()
		switch mode % 3 {
		case 1:
			req.Output = &model.OutputSchema{Name: "final_output", Schema: []byte(`{"type":"object"}`)}
		case 2:
			cfg.StructuredOutput = anthropicmodel.OutputTool
			req.Output = &model.OutputSchema{Name: "final_output", Schema: []byte(`{"type":"object"}`)}
		}
		m := newModel(t, cfg)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		providertest.CheckStream(ctx, t, req, m.Stream(ctx, req))
	}
}
