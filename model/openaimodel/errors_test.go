package openaimodel_test

import (
	"cmp"
	"errors"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
)

func TestErrors(t *testing.T) {
	t.Parallel()
	const key = "sk-test-SECRET-0123456789abcdef"
	for _, tc := range []struct {
		name     string
		reply    func(t *testing.T) providertest.Reply
		api      string
		provider string
		want     providertest.WantError // Provider defaults to the provider
	}{
		{
			name: "429RetryAfter", reply: rec("openai_chat_429_retry_after.http"),
			want: providertest.WantError{Transient: true, Status: 429, Code: "rate_limit_exceeded", Retry: 7 * time.Second, RequestID: "req_8f2b8c0a5e1d4f7a9b3c2d1e0f9a8b7c", Message: "Rate limit reached for gpt-4o-mini", SDKError: true},
		},
		{
			name: "429RetryAfterMs", reply: rec("openai_chat_429_retry_after_ms.http"),
			want: providertest.WantError{Transient: true, Status: 429, Code: "rate_limit_exceeded", Retry: 1500 * time.Millisecond, RequestID: "req_ms", SDKError: true},
		},
		{
			name: "429ResponsesAPI", reply: rec("openai_chat_429_retry_after.http"), api: openaimodel.APIResponses,
			want: providertest.WantError{Transient: true, Status: 429, Code: "rate_limit_exceeded", Retry: 7 * time.Second, RequestID: "req_8f2b8c0a5e1d4f7a9b3c2d1e0f9a8b7c", SDKError: true},
		},
		{
			name: "429InsufficientQuota", reply: rec("openai_chat_429_insufficient_quota.http"),
			want: providertest.WantError{Status: 429, Code: "insufficient_quota", RequestID: "req_quota", Message: "exceeded your current quota", SDKError: true},
		},
		{
			name: "400ContextLength", reply: rec("openai_chat_400_context_length.http"),
			want: providertest.WantError{Status: 400, Code: "context_length_exceeded", RequestID: "req_ctx400", Message: "maximum context length is 128000 tokens", SDKError: true},
		},
		{
			name: "400ContextLengthVLLM", reply: rec("compat_chat_400_vllm_context_length.http"), provider: openaimodel.ProviderCompatible,
			want: providertest.WantError{Status: 400, Code: "context_length_exceeded", Message: "maximum context length is 8192 tokens", SDKError: true},
		},
		{
			name: "401KeyNotEchoed", reply: rec("openai_chat_401_echo_key.http"),
			want: providertest.WantError{Status: 401, Code: "invalid_api_key", RequestID: "req_401", Message: "Incorrect API key provided: [redacted]", SDKError: true},
		},
		{
			name: "503HTML", reply: rec("openai_chat_503_html.http"),
			want: providertest.WantError{Transient: true, Status: 503, Message: "503 Service Temporarily Unavailable", SDKError: true},
		},
		{
			name: "StreamCutCleanEOF", reply: sse("openai_chat_stream_cut.sse"),
			want: providertest.WantError{Transient: true, Code: "incomplete_stream", RequestID: "req_sse", Message: "[DONE]"},
		},
		{
			name: "StreamCutConnectionReset", reply: func(t *testing.T) providertest.Reply {
				r := sse("openai_chat_stream_cut.sse")(t)
				r.Abort = true
				return r
			},
			want: providertest.WantError{Transient: true, Code: "incomplete_stream", RequestID: "req_sse"},
		},
		{
			name: "StreamCutCompatible", reply: sse("openai_chat_stream_cut.sse"), provider: openaimodel.ProviderCompatible,
			want: providertest.WantError{Transient: true, Code: "incomplete_stream", RequestID: "req_sse"},
		},
		{
			name: "StreamErrorEvent", reply: sse("openai_chat_stream_error_event.sse"),
			want: providertest.WantError{Transient: true, Code: "server_error", RequestID: "req_sse", Message: "The server had an error", Text: "Partial"},
		},
		{
			name: "StrictNeedsFinishReason", reply: sse("compat_chat_stream_repeat_name.sse"),
			want: providertest.WantError{Code: "invalid_stream", RequestID: "req_sse", Message: "finish_reason"},
		},
		{
			name: "StrictNeedsDone", reply: sse("compat_chat_stream_ollama.sse"),
			want: providertest.WantError{Transient: true, Code: "incomplete_stream", RequestID: "req_sse"},
		},
		{
			name: "TruncatedArgumentsAfterFinish", reply: func(*testing.T) providertest.Reply {
				return providertest.Reply{Header: reqID("req_sse"), Body: providertest.SSEEvents(
					[2]string{"", `{"id":"c","model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"multiply","arguments":"{\"a\":"}}]},"finish_reason":null}]}`},
					[2]string{"", `{"id":"c","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`},
					[2]string{"", `[DONE]`},
				)}
			},
			want: providertest.WantError{Code: openaimodel.CodeInvalidToolArguments, RequestID: "req_sse", Message: "token limit"},
		},
		{
			name: "ResponsesCut", reply: sse("openai_responses_stream_cut.sse"), api: openaimodel.APIResponses,
			want: providertest.WantError{Transient: true, Code: "incomplete_stream", RequestID: "req_sse", Message: "response.completed"},
		},
		{
			name: "ResponsesFailed", reply: sse("openai_responses_stream_failed.sse"), api: openaimodel.APIResponses,
			want: providertest.WantError{Transient: true, Code: "server_error", RequestID: "req_sse", Message: "failed to generate"},
		},
		{
			name: "ResponsesErrorEvent", api: openaimodel.APIResponses, reply: func(*testing.T) providertest.Reply {
				return providertest.Reply{Header: reqID("req_sse"), Body: providertest.SSEEvents(
					[2]string{"error", `{"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached","param":null,"sequence_number":1}`},
				)}
			},
			want: providertest.WantError{Transient: true, Code: "rate_limit_exceeded", RequestID: "req_sse", Message: "Rate limit reached"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, tc.reply(t))
			m := newModel(t, openaimodel.Config{Model: "gpt-4o-mini", API: tc.api, Provider: tc.provider, BaseURL: srv.URL, APIKey: key})
			tc.want.Provider = cmp.Or(tc.provider, openaimodel.ProviderOpenAI)
			providertest.CheckError[*openai.Error](t, srv, m, key, tc.want)
		})
	}
}

func rec(name string) func(t *testing.T) providertest.Reply {
	return func(t *testing.T) providertest.Reply { return providertest.HTTPReply(t, name) }
}

func sse(name string) func(t *testing.T) providertest.Reply {
	return func(t *testing.T) providertest.Reply {
		return providertest.Reply{Header: reqID("req_sse"), Body: providertest.Fixture(t, name)}
	}
}

func reqID(id string) map[string][]string { return map[string][]string{"X-Request-Id": {id}} }

func TestConnectionRefusedIsTransient(t *testing.T) {
	t.Parallel()
	srv := providertest.NewServer(t)
	url := srv.URL
	srv.Close()
	m := newModel(t, openaimodel.Config{Model: "m", BaseURL: url})
	_, err := model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}}))
	var me *model.Error
	if !errors.As(err, &me) || !me.Transient || me.StatusCode != 0 {
		t.Fatalf("error %v, want a transient *model.Error without status", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  openaimodel.Config
	}{
		{"NoModel", openaimodel.Config{}},
		{"BadAPI", openaimodel.Config{Model: "m", API: "completions"}},
		{"BadProvider", openaimodel.Config{Model: "m", Provider: "azure"}},
		{"CompatibleNeedsBaseURL", openaimodel.Config{Model: "m", Provider: openaimodel.ProviderCompatible}},
		{"BadBaseURL", openaimodel.Config{Model: "m", BaseURL: "localhost:8080"}},
		{"BadSummary", openaimodel.Config{Model: "m", ReasoningSummary: "long"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := openaimodel.New(tc.cfg); !errors.Is(err, openaimodel.ErrConfig) {
				t.Fatalf("New(%+v) = %v, want ErrConfig", tc.cfg, err)
			}
		})
	}
}

func TestUnsupportedRequests(t *testing.T) {
	t.Parallel()
	srv := providertest.NewServer(t)
	for _, api := range []string{openaimodel.APIChat, openaimodel.APIResponses} {
		t.Run(api, func(t *testing.T) {
			m := newModel(t, openaimodel.Config{Model: "m", API: api, BaseURL: srv.URL})
			providertest.CheckUnsupported(t, srv, m, openaimodel.ErrUnsupported, nil)
		})
	}
}
