package openaimodel_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
)

// TestBodies replays the recordings of issue 16 — whole JSON bodies of each
// API (real ones from OpenAI), refusals, content filters, length cuts,
// reasoning, bodies that are not what they claim — served with their
// Content-Type, and checks the parse or the error. Every case is one
// request: the SDK does not retry, and a malformed body is not transient,
// so the runner does not either.
func TestBodies(t *testing.T) {
	t.Parallel()
	const key = "sk-test-0123456789abcdef"
	jsonReply := func(name string) providertest.Reply {
		return providertest.Reply{ContentType: "application/json", Header: http.Header{"X-Request-Id": {"req_" + name}}, Body: providertest.Fixture(t, name)}
	}
	sseReply := func(name string) providertest.Reply {
		return providertest.Reply{Header: http.Header{"X-Request-Id": {"req_" + name}}, Body: providertest.Fixture(t, name)}
	}
	for _, tc := range []struct {
		name     string
		api      string
		provider string
		reply    providertest.Reply
		want     providertest.Parse
	}{
		// Responses API, whole JSON bodies (real recordings).
		{name: "ResponsesJSONToolCall", api: openaimodel.APIResponses, reply: jsonReply("openai_responses_json_1.json"), want: providertest.WantMeta(t, "openai_responses_json_1")},
		{name: "ResponsesJSONText", api: openaimodel.APIResponses, reply: jsonReply("openai_responses_json_2.json"), want: providertest.WantMeta(t, "openai_responses_json_2")},
		{name: "ResponsesJSONReasoning", api: openaimodel.APIResponses, reply: jsonReply("openai_responses_json_reasoning.json"), want: providertest.WantMeta(t, "openai_responses_json_reasoning")},
		{name: "ResponsesJSONNoContentType", api: openaimodel.APIResponses,
			reply: providertest.Reply{ContentType: " ", Body: providertest.Fixture(t, "openai_responses_json_2.json")}, want: providertest.WantMeta(t, "openai_responses_json_2")},
		{name: "ResponsesJSONContentFilter", api: openaimodel.APIResponses, reply: jsonReply("openai_responses_json_content_filter.json"),
			want: providertest.WantParse(t, `{"text":"Step one is to","finish_reason":"content_filter","usage":{"input_tokens":22,"output_tokens":5}}`)},
		{name: "ResponsesJSONCut", api: openaimodel.APIResponses, reply: jsonReply("openai_responses_json_cut.json"),
			want: providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["malformed response","the body began \"{\\n  \\\"id\\\": \\\"resp_05c01d5dceb461c5"]}}`)},
		{name: "ResponsesJSONServedAsEventStream", api: openaimodel.APIResponses, reply: providertest.HTTPReply(t, "openai_responses_json_as_event_stream.http"),
			want: providertest.WantParse(t, `{"request_id":"req_json_as_sse","error":{"code":"invalid_response","message":["the event stream holds no event","the body began \"{\\\"id\\\":\\\"resp_07c42ac68b2c94"]}}`)},
		{name: "ResponsesJSONInProgress", api: openaimodel.APIResponses,
			reply: providertest.Reply{ContentType: "application/json", Body: []byte(`{"id":"resp_bg","object":"response","status":"in_progress","output":[]}`)},
			want:  providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["the response is \"in_progress\", not completed"]}}`)},
		{name: "ResponsesJSONNotAResponse", api: openaimodel.APIResponses,
			reply: providertest.Reply{ContentType: "application/json", Body: []byte(`{"object":"chat.completion","choices":[]}`)},
			want:  providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["not a response (object \"chat.completion\")"]}}`)},
		{name: "ResponsesJSONError", api: openaimodel.APIResponses,
			reply: providertest.Reply{ContentType: "application/json", Body: []byte(`{"error":{"message":"model not found","type":"invalid_request_error","code":"model_not_found"}}`)},
			want:  providertest.WantParse(t, `{"error":{"code":"model_not_found","message":["model not found"]}}`)},
		// Responses API streams.
		{name: "ResponsesStreamRefusal", api: openaimodel.APIResponses, reply: sseReply("openai_responses_stream_refusal.sse"),
			want: providertest.WantParse(t, `{"text":"I'm sorry, but I can't help with that.","finish_reason":"refusal","refusal_prefix":"I'm sorry, but I can't help with that.","usage":{"input_tokens":27,"output_tokens":11}}`)},

		// Chat Completions.
		{name: "ChatStreamRefusal", reply: sseReply("openai_chat_stream_refusal.sse"),
			want: providertest.WantParse(t, `{"text":"I'm sorry, I can't help with that.","finish_reason":"refusal","refusal_prefix":"I'm sorry, I can't help with that.","usage":{"input_tokens":31,"output_tokens":9}}`)},
		{name: "ChatJSONRefusal", reply: jsonReply("openai_chat_json_refusal.json"),
			want: providertest.WantParse(t, `{"text":"I'm sorry, I can't assist with that request.","finish_reason":"refusal","refusal_prefix":"I'm sorry, I can't assist","usage":{"input_tokens":31,"output_tokens":11}}`)},
		{name: "ChatStreamContentFilter", reply: sseReply("openai_chat_stream_content_filter.sse"),
			want: providertest.WantParse(t, `{"text":"Here is how you","finish_reason":"content_filter","usage":{"input_tokens":24,"output_tokens":3}}`)},
		{name: "ChatStreamLength", reply: sseReply("openai_chat_stream_length.sse"),
			want: providertest.WantParse(t, `{"text":"The three largest moons of Jupiter are Ganymede, Callisto and","finish_reason":"length","usage":{"input_tokens":18,"output_tokens":16}}`)},
		{name: "ChatStreamUnknownTool", reply: sseReply("openai_chat_stream_unknown_tool.sse"),
			want: providertest.WantParse(t, `{"calls":[{"id":"call_Wether0000000000000000001","name":"get_wether","arguments":{"city":"Paris"}}],"finish_reason":"tool_calls","usage":{"input_tokens":83,"output_tokens":15}}`)},
		{name: "ChatHTMLPage", reply: providertest.HTTPReply(t, "openai_chat_200_html.http"),
			want: providertest.WantParse(t, `{"request_id":"req_html200","error":{"code":"invalid_response","message":["neither an event stream nor JSON (Content-Type text/html; charset=utf-8)","<!DOCTYPE html>","Bearer [redacted]"],"not_message":["LEAKEDKEY"]}}`)},
		{name: "ChatJSONCut", reply: providertest.Reply{ContentType: "application/json", Body: providertest.Fixture(t, "openai_chat_json_1.json")[:200]},
			want: providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["malformed completion","the body began"]}}`)},
		{name: "ChatJSONNoChoice", reply: providertest.Reply{ContentType: "application/json", Body: []byte(`{"id":"x","object":"chat.completion","choices":[]}`)},
			want: providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["completion without a choice"]}}`)},
		{name: "ChatJSONEchoesKey", reply: providertest.Reply{ContentType: "application/json", Body: []byte(`{"note":"key ` + key + ` rejected"`)},
			want: providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["[redacted]"],"not_message":["`+key+`"]}}`)},
		{name: "ChatEventStreamGarbage", reply: providertest.Reply{Body: []byte("Service Unavailable: upstream connect error\n")},
			want: providertest.WantParse(t, `{"error":{"code":"invalid_response","message":["holds no event","Service Unavailable"]}}`)},
		{name: "ChatMalformedEvent", reply: providertest.Reply{Body: []byte("data: {\"choices\": [nope]}\n\n")},
			want: providertest.WantParse(t, `{"error":{"code":"invalid_stream","message":["malformed stream event","the event began \"{\\\"choices\\\": [nope]}\""]}}`)},
		{name: "ChatEmptyBodyIsCut", reply: providertest.Reply{Body: nil},
			want: providertest.WantParse(t, `{"error":{"code":"incomplete_stream","transient":true}}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			providertest.CheckBody(t, tc.reply, tc.want, func(url string) model.Model {
				return newModel(t, openaimodel.Config{Model: "gpt-5.5", API: tc.api, Provider: tc.provider, BaseURL: url + "/v1", APIKey: key})
			})
		})
	}
}

// TestSnippetBounded checks that the snippet quoted in an error stays short
// whatever came back.
func TestSnippetBounded(t *testing.T) {
	t.Parallel()
	body := "<html>" + strings.Repeat("é", 10000) + "</html>"
	srv := providertest.NewServer(t, providertest.Reply{ContentType: "text/html", Body: []byte(body)})
	m := newModel(t, openaimodel.Config{Model: "m", BaseURL: srv.URL})
	_, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}}))
	if err == nil || len(err.Error()) > 600 || !strings.Contains(err.Error(), "…") {
		t.Fatalf("error %d bytes: %v", len(err.Error()), err)
	}
	if httperr.SnippetSize > 256 {
		t.Errorf("SnippetSize %d", httperr.SnippetSize)
	}
}
