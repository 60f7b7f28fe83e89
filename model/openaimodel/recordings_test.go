package openaimodel_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
)

func TestRecordings(t *testing.T) {
	t.Parallel()
	const (
		rs  = "rs_0a1b2c3d4e5f60718293a4b5c6d7e8f90011223344556677"
		fc  = "fc_0a1b2c3d4e5f60718293a4b5c6d7e8f900aabbccddeeff00"
		enc = "gAAAAABo8Zr3c2lnbmVkLXJlYXNvbmluZy1ibG9iLWZvci10ZXN0cy1vbmx5LW5vdC1yZWFs"
	)
	for _, tc := range []struct {
		name      string
		body      string
		api       string
		provider  string
		output    *model.OutputSchema
		text      string
		reasoning string
		calls     []message.ToolCall
		parts     []message.Part // when set, the exact final parts
		finish    string
		usage     message.Usage
		model     string
	}{
		{
			name: "CompatibleRepeatedNameNoFinishReason", body: "compat_chat_stream_repeat_name.sse", provider: openaimodel.ProviderCompatible,
			calls: []message.ToolCall{
				{ID: "chatcmpl-tool-5f1c", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris", "unit": "celsius"}`)},
				{ID: "chatcmpl-tool-77aa", Name: "get_time", Arguments: json.RawMessage(`{"tz": "Europe/Paris"}`)},
			},
			finish: "tool_calls", model: "Qwen/Qwen2.5-7B-Instruct",
		},
		{
			name: "CompatibleOllamaObjectArgsNoIndexNoDone", body: "compat_chat_stream_ollama.sse", provider: openaimodel.ProviderCompatible,
			calls:  []message.ToolCall{{ID: "call_y3kq0fzt", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}},
			finish: "tool_calls", model: "llama3.1:8b",
		},
		{
			name: "CompatibleReasoningContent", body: "compat_chat_stream_reasoning.sse", provider: openaimodel.ProviderCompatible,
			text: "Hello there!", reasoning: "The user wants a greeting.",
			parts: []message.Part{
				{Type: message.PartReasoning, Text: "The user wants a greeting.", Provider: openaimodel.ProviderCompatible},
				{Type: message.PartText, Text: "Hello there!"},
			},
			finish: "stop", usage: message.Usage{InputTokens: 11, OutputTokens: 9}, model: "deepseek-r1-distill",
		},
		{
			name: "StructuredOutput", body: "openai_chat_stream_text.sse",
			output: &model.OutputSchema{Name: "answer", Schema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`), Strict: true},
			text:   `{"answer": 2869461}`, finish: "stop",
			usage: message.Usage{InputTokens: 80, OutputTokens: 9, CachedTokens: 64}, model: "gpt-4o-mini-2024-07-18",
		},
		{
			name: "ResponsesReasoningItem", body: "openai_responses_stream_reasoning.sse", api: openaimodel.APIResponses,
			text: "Let me compute that.", reasoning: "**Planning the multiplication** I should call the multiply tool.",
			calls: []message.ToolCall{{ID: "call_R3as0n1ngT00lCa11xyz", Name: "multiply", Arguments: json.RawMessage(`{"a":1231,"b":2331}`)}},
			parts: []message.Part{
				{Type: message.PartReasoning, Provider: "openai", ID: rs, Signature: enc, Text: "**Planning the multiplication** I should call the multiply tool."},
				{Type: message.PartText, Text: "Let me compute that."},
				{Type: message.PartToolCall, ID: fc, CallID: "call_R3as0n1ngT00lCa11xyz", Name: "multiply", Arguments: json.RawMessage(`{"a":1231,"b":2331}`)},
			},
			finish: "tool_calls", usage: message.Usage{InputTokens: 120, OutputTokens: 96, CachedTokens: 32, ReasoningTokens: 64}, model: "gpt-5.5-2026-04-23",
		},
		{
			name: "ResponsesIncomplete", body: "openai_responses_stream_incomplete.sse", api: openaimodel.APIResponses,
			text: "The answer is", finish: "length", usage: message.Usage{InputTokens: 20, OutputTokens: 4}, model: "gpt-5.5-2026-04-23",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply{Header: reqID("req_rec"), Body: providertest.Fixture(t, tc.body)})
			m := newModel(t, openaimodel.Config{Model: "m", API: tc.api, Provider: tc.provider, BaseURL: srv.URL})
			chunks, err := providertest.Stream(t, m, &model.Request{Messages: []message.Message{message.User("hi")}, Output: tc.output})
			if err != nil {
				t.Fatal(err)
			}
			d := done(t, chunks)
			if got := providertest.ChunkText(chunks, model.ChunkText); got != tc.text || d.Message.Text() != tc.text {
				t.Errorf("text chunks %q, message %q, want %q", got, d.Message.Text(), tc.text)
			}
			if got := providertest.ChunkText(chunks, model.ChunkReasoning); got != tc.reasoning {
				t.Errorf("reasoning %q, want %q", got, tc.reasoning)
			}
			calls := d.Message.ToolCalls()
			if len(calls) != len(tc.calls) {
				t.Fatalf("calls %v, want %v", calls, tc.calls)
			}
			for i := range calls {
				if calls[i].ID != tc.calls[i].ID || calls[i].Name != tc.calls[i].Name || !providertest.JSONEqual(t, calls[i].Arguments, tc.calls[i].Arguments) {
					t.Errorf("call %d = %s, want %s", i, providertest.Show(calls[i]), providertest.Show(tc.calls[i]))
				}
			}
			if cc := providertest.ChunkCalls(chunks); !reflect.DeepEqual(cc, calls) {
				t.Errorf("call chunks %v, message calls %v", cc, calls)
			}
			if tc.parts != nil && !reflect.DeepEqual(d.Message.Parts, tc.parts) {
				t.Errorf("parts\n got  %s\n want %s", providertest.Show(d.Message.Parts), providertest.Show(tc.parts))
			}
			if d.FinishReason != tc.finish || d.Usage != tc.usage || d.Model != tc.model || d.RequestID != "req_rec" {
				t.Errorf("done: finish %q usage %+v model %q request id %q; want %q %+v %q", d.FinishReason, d.Usage, d.Model, d.RequestID, tc.finish, tc.usage, tc.model)
			}
		})
	}
}

func TestStructuredOutputMismatch(t *testing.T) {
	t.Parallel()
	for _, api := range []string{openaimodel.APIChat, openaimodel.APIResponses} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			var body []byte
			if api == openaimodel.APIChat {
				body = providertest.ChatWire{Model: "m"}.Stream(`{"answer": "many"}`, nil)
			} else {
				body = providertest.ResponsesWire{Model: "m"}.Stream(`{"answer": "many"}`, nil)
			}
			srv := providertest.NewServer(t, providertest.Reply{Body: body})
			m := newModel(t, openaimodel.Config{Model: "m", API: api, BaseURL: srv.URL})
			schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"]}`)
			_, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}, Output: &model.OutputSchema{Name: "answer", Schema: schema}}))
			var me *model.Error
			if !errors.As(err, &me) || me.Code != openaimodel.CodeOutputMismatch || me.Transient {
				t.Fatalf("error %v, want a non-transient %s", err, openaimodel.CodeOutputMismatch)
			}
			var sent map[string]any
			if err := json.Unmarshal(srv.Last(t).Body, &sent); err != nil {
				t.Fatal(err)
			}
			var format map[string]any
			if api == openaimodel.APIChat {
				format = sent["response_format"].(map[string]any)
				format = format["json_schema"].(map[string]any)
			} else {
				format = sent["text"].(map[string]any)["format"].(map[string]any)
				if format["type"] != "json_schema" {
					t.Errorf("text.format.type %v", format["type"])
				}
			}
			if format["name"] != "answer" || !reflect.DeepEqual(providertest.Canonical(format["schema"]), providertest.Canonical(mustMap(t, schema))) {
				t.Errorf("format sent %v", format)
			}
		})
	}
}

func mustMap(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReasoningRoundTrip sends a Responses answer with a reasoning item back
// as history: the Responses API gets the reasoning item (id, encrypted
// content) and the function call with its item id; Chat Completions gets
// neither reasoning nor item ids.
func TestReasoningRoundTrip(t *testing.T) {
	t.Parallel()
	first := providertest.NewServer(t, providertest.Reply{Body: providertest.Fixture(t, "openai_responses_stream_reasoning.sse")})
	m := newModel(t, openaimodel.Config{Model: "gpt-5.5", API: openaimodel.APIResponses, BaseURL: first.URL})
	res, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("What is 1231 * 2331?")}}))
	if err != nil {
		t.Fatal(err)
	}
	history := []message.Message{
		message.User("What is 1231 * 2331?"),
		res.Message,
		message.ToolResult("", "call_R3as0n1ngT00lCa11xyz", "multiply", "2869461", false),
	}
	if err := message.Validate(history); err != nil {
		t.Fatal(err)
	}

	t.Run("Responses", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewServer(t, providertest.Reply{Body: providertest.ResponsesWire{Model: "m"}.Stream("2869461", nil)})
		m := newModel(t, openaimodel.Config{Model: "gpt-5.5", API: openaimodel.APIResponses, BaseURL: srv.URL})
		if _, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: history})); err != nil {
			t.Fatal(err)
		}
		var sent struct {
			Input   []map[string]any `json:"input"`
			Include []string         `json:"include"`
			Store   *bool            `json:"store"`
		}
		if err := json.Unmarshal(srv.Last(t).Body, &sent); err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{
			{"role": "user", "content": "What is 1231 * 2331?"},
			{"type": "reasoning", "id": "rs_0a1b2c3d4e5f60718293a4b5c6d7e8f90011223344556677",
				"encrypted_content": "gAAAAABo8Zr3c2lnbmVkLXJlYXNvbmluZy1ibG9iLWZvci10ZXN0cy1vbmx5LW5vdC1yZWFs",
				"summary":           []any{map[string]any{"type": "summary_text", "text": "**Planning the multiplication** I should call the multiply tool."}}},
			{"role": "assistant", "content": "Let me compute that."},
			{"type": "function_call", "id": "fc_0a1b2c3d4e5f60718293a4b5c6d7e8f900aabbccddeeff00", "call_id": "call_R3as0n1ngT00lCa11xyz", "name": "multiply", "arguments": `{"a":1231,"b":2331}`},
			{"type": "function_call_output", "call_id": "call_R3as0n1ngT00lCa11xyz", "output": "2869461"},
		}
		if !reflect.DeepEqual(providertest.ToAny(sent.Input), providertest.ToAny(want)) {
			t.Errorf("input\n got  %s\n want %s", providertest.Show(sent.Input), providertest.Show(want))
		}
		if !reflect.DeepEqual(sent.Include, []string{"reasoning.encrypted_content"}) || sent.Store == nil || *sent.Store {
			t.Errorf("include %v store %v", sent.Include, sent.Store)
		}
	})
	t.Run("Chat", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewServer(t, providertest.Reply{Body: providertest.ChatWire{Model: "m"}.Stream("2869461", nil)})
		m := newModel(t, openaimodel.Config{Model: "gpt-4o", BaseURL: srv.URL})
		if _, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: history})); err != nil {
			t.Fatal(err)
		}
		var sent struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(srv.Last(t).Body, &sent); err != nil {
			t.Fatal(err)
		}
		want := []map[string]any{
			{"role": "user", "content": "What is 1231 * 2331?"},
			{"role": "assistant", "content": "Let me compute that.", "tool_calls": []any{map[string]any{
				"id": "call_R3as0n1ngT00lCa11xyz", "type": "function", "function": map[string]any{"name": "multiply", "arguments": `{"a":1231,"b":2331}`},
			}}},
			{"role": "tool", "tool_call_id": "call_R3as0n1ngT00lCa11xyz", "content": "2869461"},
		}
		if !reflect.DeepEqual(providertest.ToAny(sent.Messages), providertest.ToAny(want)) {
			t.Errorf("messages\n got  %s\n want %s", providertest.Show(sent.Messages), providertest.Show(want))
		}
	})
}

// TestCompatibleSendsNoOpenAIKey: a compatible server without a configured
// key gets no Authorization header, even when OPENAI_API_KEY is set.
func TestCompatibleSendsNoOpenAIKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-should-never-leave")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/never")
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.ChatWire{Model: "m"}.Stream("hi", nil)})
	m := newModel(t, openaimodel.Config{Model: "llama3.1", Provider: openaimodel.ProviderCompatible, BaseURL: srv.URL + "/v1", Headers: map[string]string{"X-Team": "baton"}})
	if _, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}, Settings: model.Settings{MaxTokens: 64}})); err != nil {
		t.Fatal(err)
	}
	r := srv.Last(t)
	if a := r.Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization %q sent to a compatible server", a)
	}
	if r.Header.Get("X-Team") != "baton" || r.Path != "/v1/chat/completions" {
		t.Errorf("header %q path %q", r.Header.Get("X-Team"), r.Path)
	}
	body := r.JSON(t)
	if body["max_tokens"] != 64.0 || body["max_completion_tokens"] != nil {
		t.Errorf("max tokens: %v / %v; compatible servers get max_tokens", body["max_tokens"], body["max_completion_tokens"])
	}
}
