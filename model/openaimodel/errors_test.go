package openaimodel_test

import (
	"errors"
	"strings"
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
		name      string
		reply     func(t *testing.T) providertest.Reply
		api       string
		provider  string
		transient bool
		status    int
		code      string
		retry     time.Duration
		requestID string
		message   string // a substring of the error's message
		// text is what the stream yielded before failing.
		text string
		// sdkErr: the SDK's *openai.Error is reachable with errors.As.
		sdkErr bool
	}{
		{
			name: "429RetryAfter", reply: rec("openai_chat_429_retry_after.http"),
			transient: true, status: 429, code: "rate_limit_exceeded", retry: 7 * time.Second,
			requestID: "req_8f2b8c0a5e1d4f7a9b3c2d1e0f9a8b7c", message: "Rate limit reached for gpt-4o-mini", sdkErr: true,
		},
		{
			name: "429RetryAfterMs", reply: rec("openai_chat_429_retry_after_ms.http"),
			transient: true, status: 429, code: "rate_limit_exceeded", retry: 1500 * time.Millisecond, requestID: "req_ms", sdkErr: true,
		},
		{
			name: "429ResponsesAPI", reply: rec("openai_chat_429_retry_after.http"), api: openaimodel.APIResponses,
			transient: true, status: 429, code: "rate_limit_exceeded", retry: 7 * time.Second, requestID: "req_8f2b8c0a5e1d4f7a9b3c2d1e0f9a8b7c", sdkErr: true,
		},
		{
			name: "429InsufficientQuota", reply: rec("openai_chat_429_insufficient_quota.http"),
			transient: false, status: 429, code: "insufficient_quota", requestID: "req_quota", message: "exceeded your current quota", sdkErr: true,
		},
		{
			name: "400ContextLength", reply: rec("openai_chat_400_context_length.http"),
			transient: false, status: 400, code: "context_length_exceeded", requestID: "req_ctx400", message: "maximum context length is 128000 tokens", sdkErr: true,
		},
		{
			name: "400ContextLengthVLLM", reply: rec("compat_chat_400_vllm_context_length.http"), provider: openaimodel.ProviderCompatible,
			transient: false, status: 400, code: "context_length_exceeded", message: "maximum context length is 8192 tokens", sdkErr: true,
		},
		{
			name: "401KeyNotEchoed", reply: rec("openai_chat_401_echo_key.http"),
			transient: false, status: 401, code: "invalid_api_key", requestID: "req_401", message: "Incorrect API key provided: [redacted]", sdkErr: true,
		},
		{
			name: "503HTML", reply: rec("openai_chat_503_html.http"),
			transient: true, status: 503, message: "503 Service Temporarily Unavailable", sdkErr: true,
		},
		{
			name: "StreamCutCleanEOF", reply: sse("openai_chat_stream_cut.sse"),
			transient: true, code: "incomplete_stream", requestID: "req_sse", message: "[DONE]",
		},
		{
			name: "StreamCutConnectionReset", reply: func(t *testing.T) providertest.Reply {
				r := sse("openai_chat_stream_cut.sse")(t)
				r.Abort = true
				return r
			},
			transient: true, code: "incomplete_stream", requestID: "req_sse",
		},
		{
			name: "StreamCutCompatible", reply: sse("openai_chat_stream_cut.sse"), provider: openaimodel.ProviderCompatible,
			transient: true, code: "incomplete_stream", requestID: "req_sse",
		},
		{
			name: "StreamErrorEvent", reply: sse("openai_chat_stream_error_event.sse"),
			transient: true, code: "server_error", requestID: "req_sse", message: "The server had an error", text: "Partial",
		},
		{
			name: "StrictNeedsFinishReason", reply: sse("compat_chat_stream_repeat_name.sse"),
			transient: false, code: "invalid_stream", requestID: "req_sse", message: "finish_reason",
		},
		{
			name: "StrictNeedsDone", reply: sse("compat_chat_stream_ollama.sse"),
			transient: true, code: "incomplete_stream", requestID: "req_sse",
		},
		{
			name: "TruncatedArgumentsAfterFinish", reply: func(*testing.T) providertest.Reply {
				return providertest.Reply{Header: reqID("req_sse"), Body: providertest.SSEEvents(
					[2]string{"", `{"id":"c","model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"multiply","arguments":"{\"a\":"}}]},"finish_reason":null}]}`},
					[2]string{"", `{"id":"c","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`},
					[2]string{"", `[DONE]`},
				)}
			},
			transient: false, code: openaimodel.CodeInvalidToolArguments, requestID: "req_sse", message: "token limit",
		},
		{
			name: "ResponsesCut", reply: sse("openai_responses_stream_cut.sse"), api: openaimodel.APIResponses,
			transient: true, code: "incomplete_stream", requestID: "req_sse", message: "response.completed",
		},
		{
			name: "ResponsesFailed", reply: sse("openai_responses_stream_failed.sse"), api: openaimodel.APIResponses,
			transient: true, code: "server_error", requestID: "req_sse", message: "failed to generate",
		},
		{
			name: "ResponsesErrorEvent", api: openaimodel.APIResponses, reply: func(*testing.T) providertest.Reply {
				return providertest.Reply{Header: reqID("req_sse"), Body: providertest.SSEEvents(
					[2]string{"error", `{"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached","param":null,"sequence_number":1}`},
				)}
			},
			transient: true, code: "rate_limit_exceeded", requestID: "req_sse", message: "Rate limit reached",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, tc.reply(t))
			m, err := openaimodel.New(openaimodel.Config{Model: "gpt-4o-mini", API: tc.api, Provider: tc.provider, BaseURL: srv.URL, APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := stream(t, m, &model.Request{Messages: []message.Message{message.User("hi")}})
			if err == nil {
				t.Fatalf("no error; chunks %+v", chunks)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %T %v is not a *model.Error", err, err)
			}
			if me.Transient != tc.transient || me.StatusCode != tc.status || me.Code != tc.code || me.RetryAfter != tc.retry {
				t.Errorf("got transient=%v status=%d code=%q retry=%v, want %v %d %q %v (%v)",
					me.Transient, me.StatusCode, me.Code, me.RetryAfter, tc.transient, tc.status, tc.code, tc.retry, err)
			}
			if me.RequestID != tc.requestID {
				t.Errorf("request id %q, want %q", me.RequestID, tc.requestID)
			}
			wantProvider := tc.provider
			if wantProvider == "" {
				wantProvider = "openai"
			}
			if me.Provider != wantProvider || !strings.HasPrefix(err.Error(), wantProvider+": ") {
				t.Errorf("provider %q, error %q", me.Provider, err)
			}
			if !strings.Contains(me.Message, tc.message) {
				t.Errorf("message %q does not contain %q", me.Message, tc.message)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(me.Message, key) {
				t.Errorf("error text holds the API key: %v", err)
			}
			if me.Temporary() != me.Transient || me.RetryDelay() != me.RetryAfter {
				t.Error("Temporary/RetryDelay disagree with the fields")
			}
			var sdk *openai.Error
			if got := errors.As(err, &sdk); got != tc.sdkErr {
				t.Errorf("errors.As(*openai.Error) = %v, want %v", got, tc.sdkErr)
			}
			if got := chunkText(chunks, model.ChunkText); got != tc.text {
				t.Errorf("text before the error %q, want %q", got, tc.text)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests: the SDK must not retry", n)
			}
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
	m, err := openaimodel.New(openaimodel.Config{Model: "m", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	_, err = model.Collect(m.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hi")}}))
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
		m, err := openaimodel.New(openaimodel.Config{Model: "m", API: api, BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			req  *model.Request
		}{
			{"Nil", nil},
			{"ImageInAssistant", &model.Request{Messages: []message.Message{{Role: message.RoleAssistant, Parts: []message.Part{{Type: message.PartImage, URL: "https://x/y.png"}}}}}},
			{"ImageInSystem", &model.Request{Messages: []message.Message{{Role: message.RoleSystem, Parts: []message.Part{{Type: message.PartImage, URL: "https://x/y.png"}}}}}},
			{"ImageWithoutSource", &model.Request{Messages: []message.Message{{Role: message.RoleUser, Parts: []message.Part{{Type: message.PartImage}}}}}},
			{"UnknownRole", &model.Request{Messages: []message.Message{{Role: "narrator", Parts: []message.Part{{Type: message.PartText, Text: "x"}}}}}},
			{"BadToolSchema", &model.Request{Messages: []message.Message{message.User("x")}, Tools: []model.Tool{{Name: "t", Parameters: []byte(`[1]`)}}}},
			{"UnknownToolChoice", &model.Request{Messages: []message.Message{message.User("x")}, Tools: []model.Tool{{Name: "t"}}, Settings: model.Settings{ToolChoice: "other"}}},
			{"BadOutputSchema", &model.Request{Messages: []message.Message{message.User("x")}, Output: &model.OutputSchema{Schema: []byte(`{`)}}},
		} {
			t.Run(api+"/"+tc.name, func(t *testing.T) {
				_, err := model.Collect(m.Stream(t.Context(), tc.req))
				if !errors.Is(err, openaimodel.ErrUnsupported) {
					t.Fatalf("error %v, want ErrUnsupported", err)
				}
			})
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for unsupported requests", n)
	}
}
