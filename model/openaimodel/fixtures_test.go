package openaimodel_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
)

func done(t *testing.T, chunks []model.Chunk) model.Chunk {
	t.Helper()
	return chunks[len(chunks)-1]
}

// chatParse is the "Expected parse" of a Chat fixture's .meta.md.
type chatParse struct {
	Model     string  `json:"model"`
	Content   *string `json:"content"`
	ToolCalls []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Args string `json:"args"`
	} `json:"tool_calls"`
	FinishReason string `json:"finish_reason"`
	Usage        struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
}

func TestChatFixtures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		body        string
		contentType string
		user        string
		settings    model.Settings
		// compare lists the request fields compared with the recording.
		compare []string
	}{
		{
			name: "openai_chat_stream_1", body: "openai_chat_stream_1.sse", contentType: "text/event-stream; charset=utf-8",
			user:     "Tell me: the capital of the country; the weather there; the product name",
			settings: model.Settings{ToolChoice: "required"},
			compare:  []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options", "temperature", "max_completion_tokens", "response_format"},
		},
		{
			name: "openai_chat_stream_3", body: "openai_chat_stream_3.sse", contentType: "text/event-stream; charset=utf-8",
			user:    "What is 1231 * 2331?",
			compare: []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options", "temperature"},
		},
		{
			// A server that answers "stream": true with one JSON completion.
			name: "openai_chat_json_1", body: "openai_chat_json_1.json", contentType: "application/json",
			user:    "Can the country of Crumpet have dragons? Answer with only YES or NO",
			compare: []string{"model", "messages", "tools", "tool_choice", "temperature"},
		},
		{
			name: "openai_chat_json_3", body: "openai_chat_json_3.json", contentType: "application/json",
			user:     "What is the weather like in Boston?",
			settings: model.Settings{Temperature: new(0.0)},
			compare:  []string{"model", "messages", "tools", "tool_choice", "temperature"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec, want := providertest.Recording[chatParse](t, tc.name)

			srv := providertest.NewServer(t, providertest.Reply{
				ContentType: tc.contentType,
				Header:      map[string][]string{"X-Request-Id": {"req_" + tc.name}},
				Body:        providertest.Fixture(t, tc.body),
			})
			m := newModel(t, openaimodel.Config{Model: rec["model"].(string), BaseURL: srv.URL + "/v1", APIKey: "sk-test-key-0000"})
			req := &model.Request{Messages: []message.Message{message.User(tc.user)}, Tools: providertest.RecordedTools(t, rec), Settings: tc.settings}
			chunks, err := providertest.Stream(t, m, req)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}

			// The request: path, auth, and the recorded fields.
			got := srv.Last(t)
			if got.Path != "/v1/chat/completions" {
				t.Errorf("path %q", got.Path)
			}
			if a := got.Header.Get("Authorization"); a != "Bearer sk-test-key-0000" {
				t.Errorf("Authorization %q", a)
			}
			body := got.JSON(t)
			if strings.HasSuffix(tc.body, ".sse") {
				providertest.CompareFields(t, body, rec, tc.compare...)
			} else {
				// The recording was not streamed; ours always is.
				providertest.CompareFields(t, body, rec, tc.compare...)
				if body["stream"] != true {
					t.Errorf("stream = %v, want true", body["stream"])
				}
			}

			// The parse.
			d := done(t, chunks)
			if d.Model != want.Model {
				t.Errorf("model %q, want %q", d.Model, want.Model)
			}
			if d.FinishReason != want.FinishReason {
				t.Errorf("finish %q, want %q", d.FinishReason, want.FinishReason)
			}
			if d.RequestID != "req_"+tc.name {
				t.Errorf("request id %q", d.RequestID)
			}
			wantText := ""
			if want.Content != nil {
				wantText = *want.Content
			}
			if got := d.Message.Text(); got != wantText {
				t.Errorf("text %q, want %q", got, wantText)
			}
			calls := d.Message.ToolCalls()
			if len(calls) != len(want.ToolCalls) {
				t.Fatalf("%d calls, want %d", len(calls), len(want.ToolCalls))
			}
			for i, w := range want.ToolCalls {
				if calls[i].ID != w.ID || calls[i].Name != w.Name || string(calls[i].Arguments) != w.Args {
					t.Errorf("call %d = %s %s %s, want %s %s %s", i, calls[i].ID, calls[i].Name, calls[i].Arguments, w.ID, w.Name, w.Args)
				}
			}
			if cc := providertest.ChunkCalls(chunks); !reflect.DeepEqual(cc, calls) {
				t.Errorf("call chunks %v, message calls %v", cc, calls)
			}
			wantUsage := message.Usage{
				InputTokens: want.Usage.PromptTokens, OutputTokens: want.Usage.CompletionTokens,
				CachedTokens: want.Usage.PromptTokensDetails.CachedTokens, ReasoningTokens: want.Usage.CompletionTokensDetails.ReasoningTokens,
			}
			if d.Usage != wantUsage || *d.Message.Usage != wantUsage {
				t.Errorf("usage %+v, want %+v", d.Usage, wantUsage)
			}
		})
	}
}

// responsesParse is the "Expected parse" of a Responses fixture's .meta.md.
type responsesParse struct {
	Items []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"items"`
	Final struct {
		Status string `json:"status"`
		Model  string `json:"model"`
		Usage  struct {
			InputTokens        int64 `json:"input_tokens"`
			OutputTokens       int64 `json:"output_tokens"`
			InputTokensDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			OutputTokensDetails struct {
				ReasoningTokens int64 `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
	} `json:"final"`
}

func TestResponsesFixture(t *testing.T) {
	t.Parallel()
	const name = "openai_responses_stream_1"
	rec, want := providertest.Recording[responsesParse](t, name)
	tools := providertest.RecordedTools(t, rec)
	srv := providertest.NewServer(t, providertest.Reply{
		Header: map[string][]string{"X-Request-Id": {"req_resp1"}},
		Body:   providertest.Fixture(t, name+".sse"),
	})
	m := newModel(t, openaimodel.Config{Model: "gpt-5.5", API: openaimodel.APIResponses, BaseURL: srv.URL + "/v1", APIKey: "sk-test-key-0000"})
	req := &model.Request{
		Messages: []message.Message{message.User("What is 1231 * 2331? Use the multiply tool.")},
		Tools:    tools,
		Settings: model.Settings{ReasoningEffort: "low"},
	}
	chunks, err := providertest.Stream(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	got := srv.Last(t)
	if got.Path != "/v1/responses" {
		t.Errorf("path %q", got.Path)
	}
	providertest.CompareFields(t, got.JSON(t), rec, "model", "input", "tools", "include", "reasoning", "store", "stream", "tool_choice", "temperature", "instructions", "text")

	d := done(t, chunks)
	if d.Model != want.Final.Model || d.FinishReason != "tool_calls" || d.RequestID != "req_resp1" {
		t.Errorf("done: model %q finish %q request id %q", d.Model, d.FinishReason, d.RequestID)
	}
	calls := d.Message.ToolCalls()
	if len(calls) != len(want.Items) {
		t.Fatalf("%d calls, want %d", len(calls), len(want.Items))
	}
	for i, w := range want.Items {
		if calls[i].ID != w.CallID || calls[i].Name != w.Name || string(calls[i].Arguments) != w.Arguments {
			t.Errorf("call %d = %+v, want %+v", i, calls[i], w)
		}
		if p := d.Message.Parts[i]; p.ID != w.ID {
			t.Errorf("call %d item id %q, want %q", i, p.ID, w.ID)
		}
	}
	if cc := providertest.ChunkCalls(chunks); !reflect.DeepEqual(cc, calls) {
		t.Errorf("call chunks %v, message calls %v", cc, calls)
	}
	u := want.Final.Usage
	wantUsage := message.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.InputTokensDetails.CachedTokens, ReasoningTokens: u.OutputTokensDetails.ReasoningTokens}
	if d.Usage != wantUsage {
		t.Errorf("usage %+v, want %+v", d.Usage, wantUsage)
	}
}

func newModel(t *testing.T, cfg openaimodel.Config) *openaimodel.Model {
	return providertest.NewModel(t, openaimodel.New, cfg)
}
