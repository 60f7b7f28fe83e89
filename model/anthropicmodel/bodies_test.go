package anthropicmodel_test

import (
	"net/http"
	"testing"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/anthropicmodel"
	"github.com/batonhq/baton/model/internal/providertest"
)

// TestBodies replays the Messages recordings of issue 16 — a real refusal
// and a real thinking stream, whole JSON messages, stop reasons — served
// with their Content-Type, and checks the parse or the error, each in one
// request.
func TestBodies(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-test-0123456789"
	hdr := func(name string) http.Header { return http.Header{"Request-Id": {"req_" + name}} }
	jsonReply := func(name string) providertest.Reply {
		return providertest.Reply{ContentType: "application/json", Header: hdr(name), Body: providertest.Fixture(t, name)}
	}
	sseReply := func(name string) providertest.Reply {
		return providertest.Reply{Header: hdr(name), Body: providertest.Fixture(t, name)}
	}
	for _, tc := range []struct {
		name  string
		reply providertest.Reply
		want  providertest.Parse
	}{
		{"StreamRefusal", sseReply("anthropic_stream_refusal.sse"), providertest.WantMeta(t, "anthropic_stream_refusal")},
		{"StreamThinking", sseReply("anthropic_stream_thinking_2.sse"), providertest.WantMeta(t, "anthropic_stream_thinking_2")},
		{"StreamMaxTokens", sseReply("anthropic_stream_max_tokens.sse"),
			providertest.WantParse(t, `{"text":"The three largest moons of Jupiter are Ganymede, Callisto and","finish_reason":"length","usage":{"input_tokens":25,"output_tokens":20}}`)},
		{"StreamPauseTurn", sseReply("anthropic_stream_pause_turn.sse"),
			providertest.WantParse(t, `{"text":"Let me keep researching that for you.","finish_reason":"pause_turn","usage":{"input_tokens":25,"output_tokens":12}}`)},
		{"JSONToolUse", jsonReply("anthropic_json_tool_use.json"),
			providertest.WantParse(t, `{"text":"I'll look up the weather in Paris.","calls":[{"id":"toolu_01JsonWeather00000000001","name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}}],
				"finish_reason":"tool_calls","usage":{"input_tokens":3996,"output_tokens":61,"cached_tokens":2048,"cache_creation_tokens":1536},
				"model":"claude-sonnet-4-5-20250929","request_id":"req_anthropic_json_tool_use.json"}`)},
		{"JSONThinking", jsonReply("anthropic_json_thinking.json"),
			providertest.WantParse(t, `{"reasoning":[{"text":"The user wants a haiku about the sea. Five, seven, five.","signature_prefix":"ErUBCkYIBRgCIkBjsonThinking"},{"id":"redacted_thinking","text":"","signature_prefix":"EmwKAhgBEgyJsonRedacted"}],
				"text":"Grey waves fold and turn,\nsalt wind carries gull voices,\nthe tide keeps its time.","finish_reason":"stop","usage":{"input_tokens":38,"output_tokens":96}}`)},
		{"JSONNoContentType", providertest.Reply{ContentType: " ", Body: providertest.Fixture(t, "anthropic_json_tool_use.json")},
			providertest.WantParse(t, `{"text":"I'll look up the weather in Paris.","calls":[{"id":"toolu_01JsonWeather00000000001","name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}}],"finish_reason":"tool_calls"}`)},
		{"JSONCut", providertest.Reply{ContentType: "application/json", Body: providertest.Fixture(t, "anthropic_json_tool_use.json")[:150]},
			providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["malformed message","the body began \"{\\n  \\\"id\\\": \\\"msg_01JsonToolUse"]}}`)},
		{"JSONNotAMessage", providertest.Reply{ContentType: "application/json", Body: []byte(`{"type":"completion","completion":"hi"}`)},
			providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["not a message (type \"completion\")"]}}`)},
		{"JSONError", providertest.Reply{ContentType: "application/json", Body: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
			providertest.WantParse(t, `{"error":{"code":"overloaded_error","transient":true,"message":["Overloaded"]}}`)},
		{"JSONServedAsEventStream", providertest.Reply{Body: providertest.Fixture(t, "anthropic_json_thinking.json")},
			providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["the event stream holds no event","msg_01JsonThinking"]}}`)},
		{"HTMLPage", providertest.Reply{ContentType: "text/html", Body: []byte(`<html><body>x-api-key: ` + key + ` is not allowed here</body></html>`)},
			providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["neither an event stream nor JSON (Content-Type text/html)","[redacted]"],"not_message":["`+key+`"]}}`)},
		{"MalformedEvent", providertest.Reply{Body: []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":[oops]}\n\n")},
			providertest.WantParse(t, `{"error":{"code":"invalid_stream","message":["malformed stream event","the event began \"{\\\"type\\\":\\\"message_start\\\",\\\"message\\\":[oops]}\""]}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			providertest.CheckBody(t, tc.reply, tc.want, func(url string) model.Model {
				return newModel(t, anthropicmodel.Config{Model: "claude-sonnet-4-5", BaseURL: url, APIKey: key})
			})
		})
	}
}
