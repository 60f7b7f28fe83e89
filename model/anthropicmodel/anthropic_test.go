package anthropicmodel_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/anthropicmodel"
	"github.com/batonhq/baton/model/internal/providertest"
)

func TestConformance(t *testing.T) {
	wire := providertest.AnthropicWire{Model: "claude-sonnet-4-5-20250929"}
	providertest.Conformance(t, wire, http.Header{"Request-Id": {"req_conformance"}}, func(t *testing.T, url string) model.Model {
		return newModel(t, anthropicmodel.Config{Model: "claude-sonnet-4-5", BaseURL: url, APIKey: "sk-ant-test"})
	})
}

// anthropicParse is the "Expected parse" of an Anthropic fixture's .meta.md.
type anthropicParse struct {
	Model  string `json:"model"`
	Blocks []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"blocks"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		FinalInput      int64 `json:"final_input_tokens"`
		FinalCacheWrite int64 `json:"final_cache_creation_input_tokens"`
		FinalCacheRead  int64 `json:"final_cache_read_input_tokens"`
		FinalOutput     int64 `json:"final_output_tokens"`
	} `json:"usage"`
}

func TestFixtures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		user string
	}{
		{"anthropic_stream_1", "Two names for a pet pelican"},
		{"anthropic_stream_4", "Calculate a 15% tip on a $50 bill and tell me who is the waiter in the format: '<waiterName> should get a tip of <tipAmount>'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec, want := providertest.Recording[anthropicParse](t, tc.name)
			tools := providertest.RecordedTools(t, rec)
			srv := providertest.NewServer(t, providertest.Reply{
				Header: http.Header{"Request-Id": {"req_" + tc.name}},
				Body:   providertest.Fixture(t, tc.name+".sse"),
			})
			m := newModel(t, anthropicmodel.Config{Model: rec["model"].(string), BaseURL: srv.URL, APIKey: "sk-ant-test-0000"})
			req := &model.Request{
				Messages: []message.Message{message.User(tc.user)},
				Tools:    tools,
				// The recorded requests set no cache breakpoints.
				Settings: model.Settings{Temperature: new(rec["temperature"].(float64)), MaxTokens: int(rec["max_tokens"].(float64)), PromptCaching: new(false)},
			}
			chunks, err := providertest.Stream(t, m, req)
			if err != nil {
				t.Fatal(err)
			}

			got := srv.Last(t)
			if got.Path != "/v1/messages" || got.Header.Get("X-Api-Key") != "sk-ant-test-0000" || got.Header.Get("Anthropic-Version") == "" {
				t.Errorf("path %q, key %q, version %q", got.Path, got.Header.Get("X-Api-Key"), got.Header.Get("Anthropic-Version"))
			}
			providertest.CompareFields(t, got.JSON(t), rec, "model", "messages", "max_tokens", "stream", "temperature", "tools", "tool_choice", "system", "thinking", "top_p")

			d := chunks[len(chunks)-1]
			if d.Model != want.Model || d.RequestID != "req_"+tc.name || d.FinishReason != "tool_calls" || want.StopReason != "tool_use" {
				t.Errorf("done: model %q request id %q finish %q", d.Model, d.RequestID, d.FinishReason)
			}
			var wantText string
			var wantCalls []message.ToolCall
			for _, b := range want.Blocks {
				switch b.Type {
				case "text":
					wantText += b.Text
				case "tool_use":
					wantCalls = append(wantCalls, message.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
				}
			}
			if d.Message.Text() != wantText || providertest.ChunkText(chunks, model.ChunkText) != wantText {
				t.Errorf("text %q, want %q", d.Message.Text(), wantText)
			}
			calls := d.Message.ToolCalls()
			if len(calls) != len(wantCalls) {
				t.Fatalf("calls %s, want %s", providertest.Show(calls), providertest.Show(wantCalls))
			}
			for i := range calls {
				if calls[i].ID != wantCalls[i].ID || calls[i].Name != wantCalls[i].Name || !providertest.JSONEqual(t, calls[i].Arguments, wantCalls[i].Arguments) {
					t.Errorf("call %d = %s, want %s", i, providertest.Show(calls[i]), providertest.Show(wantCalls[i]))
				}
			}
			if cc := providertest.ChunkCalls(chunks); !reflect.DeepEqual(cc, calls) {
				t.Errorf("call chunks %v, message calls %v", cc, calls)
			}
			u := want.Usage
			wantUsage := message.Usage{InputTokens: u.FinalInput + u.FinalCacheRead + u.FinalCacheWrite, OutputTokens: u.FinalOutput, CachedTokens: u.FinalCacheRead}
			if d.Usage != wantUsage || *d.Message.Usage != wantUsage {
				t.Errorf("usage %+v, want %+v", d.Usage, wantUsage)
			}
		})
	}
}

func TestThinkingStream(t *testing.T) {
	t.Parallel()
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.Fixture(t, "anthropic_stream_thinking.sse")})
	m := newModel(t, anthropicmodel.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL})
	chunks, err := providertest.Stream(t, m, &model.Request{Messages: []message.Message{message.User("Weather and time in Paris?")}})
	if err != nil {
		t.Fatal(err)
	}
	d := chunks[len(chunks)-1]
	wantParts := []message.Part{
		{Type: message.PartReasoning, Provider: "anthropic", Text: "The user asks for the weather in Paris. I will search, then call get_time.", Signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDSFAKeV6u4wEr5OMiMHHyT5NyxNMc"},
		{Type: message.PartReasoning, Provider: "anthropic", ID: anthropicmodel.RedactedThinking, Signature: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"},
		{Type: message.PartText, Text: "It is 18°C in Paris. Let me get the time."},
		{Type: message.PartToolCall, CallID: "toolu_01GetTime00000000000000001", Name: "get_time", Arguments: json.RawMessage(`{"tz": "Europe/Paris"}`)},
	}
	if !reflect.DeepEqual(d.Message.Parts, wantParts) {
		t.Errorf("parts\n got  %s\n want %s", providertest.Show(d.Message.Parts), providertest.Show(wantParts))
	}
	if got := providertest.ChunkText(chunks, model.ChunkReasoning); got != wantParts[0].Text {
		t.Errorf("reasoning chunks %q", got)
	}
	if got := providertest.ChunkText(chunks, model.ChunkText); got != "It is 18°C in Paris. Let me get the time." {
		t.Errorf("text chunks %q (thinking must never be text)", got)
	}
	wantUsage := message.Usage{InputTokens: 2048 + 1024 + 256, OutputTokens: 310, CachedTokens: 1024, CacheCreationTokens: 256, ReasoningTokens: 120}
	if d.FinishReason != "tool_calls" || d.Usage != wantUsage || d.Model != "claude-sonnet-4-5-20250929" {
		t.Errorf("finish %q usage %+v model %q", d.FinishReason, d.Usage, d.Model)
	}

	// The answer goes back verbatim as history; reasoning from OpenAI does not.
	next := providertest.NewServer(t, providertest.Reply{Body: providertest.AnthropicWire{Model: "m"}.Stream("Done.", nil)})
	m2 := newModel(t, anthropicmodel.Config{Model: "claude-sonnet-4-5", BaseURL: next.URL})
	hist := []message.Message{
		message.User("Weather and time in Paris?"),
		*d.Message,
		message.ToolResult("", "toolu_01GetTime00000000000000001", "get_time", "14:05", false),
		{Role: message.RoleAssistant, Parts: []message.Part{
			{Type: message.PartReasoning, Provider: "openai", ID: "rs_1", Signature: "gAAA"},
			{Type: message.PartText, Text: "It is 14:05."},
		}},
		message.User("Thanks"),
	}
	if _, err := model.Collect(m2.Stream(t.Context(), &model.Request{Messages: hist, Settings: model.Settings{ReasoningEffort: "low"}})); err != nil {
		t.Fatal(err)
	}
	var sent struct {
		Messages []map[string]any `json:"messages"`
		Thinking map[string]any   `json:"thinking"`
		MaxToks  float64          `json:"max_tokens"`
	}
	if err := json.Unmarshal(next.Last(t).Body, &sent); err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Weather and time in Paris?"}}},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "thinking", "thinking": wantParts[0].Text, "signature": wantParts[0].Signature},
			map[string]any{"type": "redacted_thinking", "data": wantParts[1].Signature},
			map[string]any{"type": "text", "text": "It is 18°C in Paris. Let me get the time."},
			map[string]any{"type": "tool_use", "id": "toolu_01GetTime00000000000000001", "name": "get_time", "input": map[string]any{"tz": "Europe/Paris"}},
		}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_01GetTime00000000000000001", "content": []any{map[string]any{"type": "text", "text": "14:05"}}},
		}},
		map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "It is 14:05."}}},
		// The conversation's cache breakpoint, on by default.
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Thanks", "cache_control": ephemeral}}},
	}
	if got := providertest.ToAny(sent.Messages); !reflect.DeepEqual(got, want) {
		t.Errorf("messages\n got  %s\n want %s", providertest.Show(got), providertest.Show(want))
	}
	if sent.Thinking["type"] != "enabled" || sent.Thinking["budget_tokens"] != 2048.0 || sent.MaxToks != 2048+4096 {
		t.Errorf("thinking %v max_tokens %v", sent.Thinking, sent.MaxToks)
	}
}

// ephemeral is the cache_control of a prompt-cache breakpoint.
var ephemeral = map[string]any{"type": "ephemeral"}

// TestHistoryMapping covers system placement, grouping of parallel tool
// results (and a following user message) into one user message, error
// results, images, and defaults (prompt-cache breakpoints on the system
// prompt, the tools and the conversation).
func TestHistoryMapping(t *testing.T) {
	t.Parallel()
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.AnthropicWire{Model: "m"}.Stream("ok", nil)})
	m := newModel(t, anthropicmodel.Config{Model: "claude-haiku-4-5", BaseURL: srv.URL})
	req := &model.Request{
		System: "Be brief.",
		Messages: []message.Message{
			message.System("Transfer: you now serve the billing team."),
			{Role: message.RoleUser, Parts: []message.Part{
				{Type: message.PartText, Text: "What is on this receipt?"},
				{Type: message.PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nfake")},
				{Type: message.PartImage, URL: "https://example.com/r.jpg"},
			}},
			{Role: message.RoleAssistant, Parts: []message.Part{
				{Type: message.PartToolCall, CallID: "toolu_a", Name: "lookup", Arguments: json.RawMessage(`{"q":"a"}`)},
				{Type: message.PartToolCall, CallID: "toolu_b", Name: "lookup", Arguments: nil},
			}},
			message.ToolResult("", "toolu_a", "lookup", "A", false),
			message.ToolResult("", "toolu_b", "lookup", "boom", true),
			message.User("And?"),
		},
		Tools:    []model.Tool{{Name: "lookup", Description: "Look up.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)}},
		Settings: model.Settings{ToolChoice: "required", ParallelToolCalls: new(false), TopP: new(0.9)},
	}
	if _, err := model.Collect(m.Stream(t.Context(), req)); err != nil {
		t.Fatal(err)
	}
	got := srv.Last(t).JSON(t)
	want := map[string]any{
		"model":      "claude-haiku-4-5",
		"max_tokens": 4096.0,
		"stream":     true,
		"top_p":      0.9,
		"system": []any{
			map[string]any{"type": "text", "text": "Be brief."},
			map[string]any{"type": "text", "text": "Transfer: you now serve the billing team.", "cache_control": ephemeral},
		},
		"messages": []any{
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "What is on this receipt?"},
				map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgpmYWtl"}},
				map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://example.com/r.jpg"}},
			}},
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": "toolu_a", "name": "lookup", "input": map[string]any{"q": "a"}},
				map[string]any{"type": "tool_use", "id": "toolu_b", "name": "lookup", "input": map[string]any{}},
			}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": []any{map[string]any{"type": "text", "text": "A"}}},
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true, "content": []any{map[string]any{"type": "text", "text": "boom"}}},
				map[string]any{"type": "text", "text": "And?", "cache_control": ephemeral},
			}},
		},
		"tools": []any{map[string]any{"name": "lookup", "description": "Look up.", "cache_control": ephemeral, "input_schema": map[string]any{
			"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}, "additionalProperties": false,
		}}},
		"tool_choice": map[string]any{"type": "any", "disable_parallel_tool_use": true},
	}
	providertest.CompareFields(t, got, want, "model", "max_tokens", "stream", "top_p", "system", "messages", "tools", "tool_choice", "temperature", "thinking", "output_config")
}

func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`)
	toolAnswer := func(args string) []byte {
		return providertest.AnthropicWire{Model: "m"}.Stream("", []message.ToolCall{{ID: "toolu_out", Name: "answer", Arguments: json.RawMessage(args)}})
	}
	for _, tc := range []struct {
		name   string
		mode   string
		tools  []model.Tool
		body   []byte
		text   string
		code   string
		choice any
	}{
		{name: "Native", mode: anthropicmodel.OutputNative, body: providertest.AnthropicWire{Model: "m"}.Stream(`{"answer": 42}`, nil), text: `{"answer": 42}`},
		{name: "NativeMismatch", mode: anthropicmodel.OutputNative, body: providertest.AnthropicWire{Model: "m"}.Stream(`{"answer": "lots"}`, nil), code: anthropicmodel.CodeOutputMismatch},
		{name: "NativeNotJSON", mode: anthropicmodel.OutputNative, body: providertest.AnthropicWire{Model: "m"}.Stream(`The answer is 42.`, nil), code: anthropicmodel.CodeOutputMismatch},
		{
			name: "Tool", mode: anthropicmodel.OutputTool, body: toolAnswer(`{"answer":42}`), text: `{"answer":42}`,
			choice: map[string]any{"type": "tool", "name": "answer"},
		},
		{
			name: "ToolWithOtherTools", mode: anthropicmodel.OutputTool, body: toolAnswer(`{"answer":42}`), text: `{"answer":42}`,
			tools: []model.Tool{{Name: "lookup"}}, choice: map[string]any{"type": "any"},
		},
		{
			name: "ToolMismatch", mode: anthropicmodel.OutputTool, body: toolAnswer(`{"answer":4.2}`), code: anthropicmodel.CodeOutputMismatch,
			choice: map[string]any{"type": "tool", "name": "answer"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply{Body: tc.body})
			m := newModel(t, anthropicmodel.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL, StructuredOutput: tc.mode})
			chunks, err := providertest.Stream(t, m, &model.Request{Messages: []message.Message{message.User("6*7?")}, Tools: tc.tools, Output: &model.OutputSchema{Name: "answer", Schema: schema}})
			sent := srv.Last(t).JSON(t)
			if tc.mode == anthropicmodel.OutputNative {
				format := sent["output_config"].(map[string]any)["format"].(map[string]any)
				if format["type"] != "json_schema" || !providertest.JSONEqual(t, []byte(providertest.Show(format["schema"])), schema) {
					t.Errorf("output_config.format %v", format)
				}
			} else if !reflect.DeepEqual(sent["tool_choice"], tc.choice) {
				t.Errorf("tool_choice %v, want %v", sent["tool_choice"], tc.choice)
			}
			if tc.code != "" {
				var me *model.Error
				if !errors.As(err, &me) || me.Code != tc.code || me.Transient {
					t.Fatalf("error %v, want non-transient %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := chunks[len(chunks)-1]
			if d.Message.Text() != tc.text || d.Message.HasToolCalls() || d.FinishReason != "stop" || providertest.ChunkText(chunks, model.ChunkText) != tc.text {
				t.Errorf("text %q calls %v finish %q", d.Message.Text(), d.Message.ToolCalls(), d.FinishReason)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-api03-SECRET-0123456789"
	rec := func(name string) func(t *testing.T) providertest.Reply {
		return func(t *testing.T) providertest.Reply { return providertest.HTTPReply(t, name) }
	}
	sse := func(name string) func(t *testing.T) providertest.Reply {
		return func(t *testing.T) providertest.Reply {
			return providertest.Reply{Header: http.Header{"Request-Id": {"req_sse"}}, Body: providertest.Fixture(t, name)}
		}
	}
	for _, tc := range []struct {
		name  string
		reply func(t *testing.T) providertest.Reply
		want  providertest.WantError
	}{
		{name: "529Overloaded", reply: rec("anthropic_529_overloaded.http"), want: providertest.WantError{Transient: true, Status: 529, Code: "overloaded_error", RequestID: "req_011CYoverloaded529", Message: "Overloaded", SDKError: true}},
		{name: "429RetryAfter", reply: rec("anthropic_429_rate_limit.http"), want: providertest.WantError{Transient: true, Status: 429, Code: "rate_limit_error", Retry: 12 * time.Second, RequestID: "req_011CYratelimit429", Message: "exceed the rate limit", SDKError: true}},
		{name: "400PromptTooLong", reply: rec("anthropic_400_prompt_too_long.http"), want: providertest.WantError{Status: 400, Code: "context_length_exceeded", RequestID: "req_011CYtoolong400", Message: "prompt is too long", SDKError: true}},
		{name: "StreamCutMidArgument", reply: sse("anthropic_stream_cut.sse"), want: providertest.WantError{Transient: true, Code: "incomplete_stream", RequestID: "req_sse", Message: "message_stop"}},
		{name: "StreamCutConnectionReset", reply: func(t *testing.T) providertest.Reply {
			r := sse("anthropic_stream_cut.sse")(t)
			r.Abort = true
			return r
		}, want: providertest.WantError{Transient: true, Code: "incomplete_stream", RequestID: "req_sse"}},
		{name: "ErrorEventOverloaded", reply: sse("anthropic_stream_error_event.sse"), want: providertest.WantError{Transient: true, Code: "overloaded_error", RequestID: "req_sse", Message: "Overloaded", Text: "Partial", SDKError: true}},
		{name: "ErrorEventInvalidRequest", reply: func(*testing.T) providertest.Reply {
			return providertest.Reply{Header: http.Header{"Request-Id": {"req_sse"}}, Body: providertest.SSEEvents(
				[2]string{"error", `{"type":"error","error":{"type":"invalid_request_error","message":"messages: bad"}}`})}
		}, want: providertest.WantError{Code: "invalid_request_error", RequestID: "req_sse", Message: "messages: bad", SDKError: true}},
		{name: "KeyEchoRedacted", reply: func(*testing.T) providertest.Reply {
			return providertest.Reply{Status: 401, ContentType: "application/json", Header: http.Header{"Request-Id": {"req_401"}},
				Body: []byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-api03-SECRET-0123456789"}}`)}
		}, want: providertest.WantError{Status: 401, Code: "authentication_error", RequestID: "req_401", Message: "invalid x-api-key [redacted]", SDKError: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, tc.reply(t))
			m := newModel(t, anthropicmodel.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL, APIKey: key})
			tc.want.Provider = anthropicmodel.Provider
			providertest.CheckError[*anthropic.Error](t, srv, m, key, tc.want)
		})
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		cfg      anthropicmodel.Config
		settings model.Settings
		want     map[string]any
		err      error
	}{
		{"Defaults", anthropicmodel.Config{}, model.Settings{}, map[string]any{"max_tokens": 4096.0}, nil},
		{"ConfigMaxTokens", anthropicmodel.Config{MaxTokens: 1000}, model.Settings{Temperature: new(0.2)}, map[string]any{"max_tokens": 1000.0, "temperature": 0.2}, nil},
		{"ThinkingFitsMaxTokens", anthropicmodel.Config{}, model.Settings{ReasoningEffort: "high", MaxTokens: 10000, Temperature: new(0.2), TopP: new(0.5)},
			map[string]any{"max_tokens": 10000.0, "thinking": map[string]any{"type": "enabled", "budget_tokens": 9999.0}}, nil},
		{"ThinkingTooSmall", anthropicmodel.Config{}, model.Settings{ReasoningEffort: "low", MaxTokens: 1000}, map[string]any{"max_tokens": 1000.0}, nil},
		{"ThinkingNone", anthropicmodel.Config{}, model.Settings{ReasoningEffort: "none"}, map[string]any{"max_tokens": 4096.0}, nil},
		{"ThinkingForcedTool", anthropicmodel.Config{}, model.Settings{ReasoningEffort: "low", ToolChoice: "required"}, nil, anthropicmodel.ErrUnsupported},
		{"BadEffort", anthropicmodel.Config{}, model.Settings{ReasoningEffort: "extreme"}, nil, anthropicmodel.ErrUnsupported},
		{"UnknownToolChoice", anthropicmodel.Config{}, model.Settings{ToolChoice: "nope"}, nil, anthropicmodel.ErrUnsupported},
		// The end user is metadata.user_id; seed, penalties and logit bias
		// (OpenAI's best effort) have no Messages API field and are left out.
		{"BestEffort", anthropicmodel.Config{}, model.Settings{User: "user-1", Seed: new(int64(7)), PresencePenalty: new(0.5), LogitBias: map[string]int{"1": 5}},
			map[string]any{"max_tokens": 4096.0, "metadata": map[string]any{"user_id": "user-1"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply{Body: providertest.AnthropicWire{Model: "m"}.Stream("ok", nil)})
			cfg := tc.cfg
			cfg.Model, cfg.BaseURL = "claude-sonnet-4-5", srv.URL
			m := newModel(t, cfg)
			_, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}, Tools: []model.Tool{{Name: "t"}}, Settings: tc.settings}))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				if n := len(srv.Requests()); n != 0 {
					t.Errorf("%d requests sent", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			providertest.CompareFields(t, srv.Last(t).JSON(t), tc.want, "max_tokens", "thinking", "temperature", "top_p", "metadata", "seed", "presence_penalty", "logit_bias")
		})
	}
}

func TestUnsupportedRequests(t *testing.T) {
	t.Parallel()
	srv := providertest.NewServer(t)
	m := newModel(t, anthropicmodel.Config{Model: "m", BaseURL: srv.URL})
	providertest.CheckUnsupported(t, srv, m, anthropicmodel.ErrUnsupported, map[string]*model.Request{
		"ImageBadType":      {Messages: []message.Message{{Role: message.RoleUser, Parts: []message.Part{{Type: message.PartImage, MediaType: "image/tiff", Data: []byte("II*")}}}}},
		"ToolSchemaInvalid": {Messages: []message.Message{message.User("x")}, Tools: []model.Tool{{Name: "t", Parameters: []byte(`{"type":"object","required":"a"}`)}}},
	})
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []anthropicmodel.Config{
		{},
		{Model: "m", BaseURL: "ftp://x"},
		{Model: "m", MaxTokens: -1},
		{Model: "m", StructuredOutput: "json"},
	} {
		if _, err := anthropicmodel.New(cfg); !errors.Is(err, anthropicmodel.ErrConfig) {
			t.Errorf("New(%+v) = %v, want ErrConfig", cfg, err)
		}
	}
}

// TestNoEnvironment: ANTHROPIC_* variables are never read.
func TestNoEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	srv := providertest.NewServer(t, providertest.Reply{Body: providertest.AnthropicWire{Model: "m"}.Stream("ok", nil)})
	m := newModel(t, anthropicmodel.Config{Model: "m", BaseURL: srv.URL, APIKey: "sk-ant-configured", Headers: map[string]string{"anthropic-beta": "x-1"}})
	if _, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}})); err != nil {
		t.Fatal(err)
	}
	h := srv.Last(t).Header
	if h.Get("X-Api-Key") != "sk-ant-configured" || h.Get("Anthropic-Beta") != "x-1" {
		t.Errorf("x-api-key %q anthropic-beta %q", h.Get("X-Api-Key"), h.Get("Anthropic-Beta"))
	}
}

func newModel(t *testing.T, cfg anthropicmodel.Config) *anthropicmodel.Model {
	return providertest.NewModel(t, anthropicmodel.New, cfg)
}
