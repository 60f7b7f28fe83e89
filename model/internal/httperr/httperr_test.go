package httperr

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"None", nil, 0},
		{"Seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"FractionalSeconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"Milliseconds", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond},
		{"HTTPDate", map[string]string{"Retry-After": "Thu, 01 Jan 2026 00:00:30 GMT"}, 30 * time.Second},
		{"HTTPDatePast", map[string]string{"Retry-After": "Wed, 31 Dec 2025 23:00:00 GMT"}, 0},
		{"Negative", map[string]string{"Retry-After": "-3"}, 0},
		{"Garbage", map[string]string{"Retry-After": "soon", "Retry-After-Ms": "NaN"}, 0},
		{"Huge", map[string]string{"Retry-After": "1e300"}, 0},
		{"OpenAIResetExhausted", map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "6m0s", "X-Ratelimit-Remaining-Tokens": "0", "X-Ratelimit-Reset-Tokens": "20ms"}, 6 * time.Minute},
		{"OpenAIResetNotExhausted", map[string]string{"X-Ratelimit-Remaining-Requests": "10", "X-Ratelimit-Reset-Requests": "6m0s"}, 0},
		{"AnthropicReset", map[string]string{"Anthropic-Ratelimit-Tokens-Remaining": "0", "Anthropic-Ratelimit-Tokens-Reset": "2026-01-01T00:00:42Z"}, 42 * time.Second},
		{"RetryAfterWins", map[string]string{"Retry-After": "2", "Anthropic-Ratelimit-Tokens-Remaining": "0", "Anthropic-Ratelimit-Tokens-Reset": "2026-01-01T00:00:42Z"}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := RetryAfter(h, now); got != tc.want {
				t.Errorf("RetryAfter = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       Body
	}{
		{"Empty", "", Body{}},
		{"OpenAI", `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"context_length_exceeded"}}`, Body{Message: "m", Type: "invalid_request_error", Code: "context_length_exceeded"}},
		{"Anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Body{Message: "Overloaded", Type: "overloaded_error"}},
		{"VLLM", `{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}`, Body{Message: "bad", Type: "BadRequestError", Status: 400}},
		{"Ollama", `{"error":"model \"x\" not found"}`, Body{Message: `model "x" not found`}},
		{"FastAPI", `{"detail":"Not Found"}`, Body{Message: "Not Found"}},
		{"FastAPIList", `{"detail":[{"loc":["body"],"msg":"field required"}]}`, Body{Message: `[{"loc":["body"],"msg":"field required"}]`}},
		{"ResponsesErrorEvent", `{"type":"error","code":"server_error","message":"oops","param":null}`, Body{Message: "oops", Code: "server_error"}},
		{"Text", "upstream connect error\n", Body{Message: "upstream connect error"}},
		{"NullError", `{"error":null,"message":"x"}`, Body{Message: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ParseBody([]byte(tc.body)); got != tc.want {
				t.Errorf("ParseBody = %+v, want %+v", got, tc.want)
			}
		})
	}
	long := strings.Repeat("x", 5000)
	if got := ParseBody([]byte(long)); len(got.Message) > maxMessage+len("…") {
		t.Errorf("message not clipped: %d bytes", len(got.Message))
	}
}

func TestResponse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		status    int
		header    map[string]string
		body      string
		transient bool
		code      string
	}{
		{"429", 429, map[string]string{"Retry-After": "1"}, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, true, "rate_limit_exceeded"},
		{"429Quota", 429, nil, `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`, false, "insufficient_quota"},
		{"408", 408, nil, ``, true, ""},
		{"500", 500, nil, `{"error":{"message":"oops","type":"server_error"}}`, true, "server_error"},
		{"529", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, "overloaded_error"},
		{"400", 400, nil, `{"error":{"message":"bad","type":"invalid_request_error"}}`, false, "invalid_request_error"},
		{"401", 401, nil, `{"error":{"message":"no","type":"invalid_request_error","code":"invalid_api_key"}}`, false, "invalid_api_key"},
		{"403", 403, nil, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, false, "permission_error"},
		{"404", 404, nil, `{"error":"model not found"}`, false, ""},
		{"ContextLength413", 413, nil, `{"type":"error","error":{"type":"request_too_large","message":"prompt is too long"}}`, false, CodeContextLength},
		{"ShouldRetryFalse", 503, map[string]string{"X-Should-Retry": "false"}, ``, false, ""},
		{"ShouldRetryTrue", 400, map[string]string{"X-Should-Retry": "true"}, ``, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			e := Response("p", tc.status, h, []byte(tc.body), nil, "sk-secret-value")
			if e.Transient != tc.transient || e.Code != tc.code || e.StatusCode != tc.status || e.Message == "" {
				t.Errorf("got %+v, want transient=%v code=%q", e, tc.transient, tc.code)
			}
			if !e.Transient && e.RetryAfter != 0 {
				t.Errorf("RetryAfter %v on a permanent error", e.RetryAfter)
			}
		})
	}
	e := Response("p", 401, nil, []byte(`{"error":{"message":"bad key sk-secret-value"}}`), nil, "sk-secret-value")
	if strings.Contains(e.Error(), "sk-secret-value") {
		t.Errorf("secret in %q", e)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransport(t *testing.T) {
	t.Parallel()
	var _ net.Error = timeoutErr{}
	e := Transport(t.Context(), "p", "req_1", timeoutErr{})
	if !e.Transient || e.Code != CodeIncompleteStream || !strings.Contains(e.Message, "timed out") || e.RequestID != "req_1" {
		t.Errorf("timeout: %+v", e)
	}
	e = Transport(t.Context(), "p", "", io.ErrUnexpectedEOF)
	if !e.Transient || !errors.Is(e, io.ErrUnexpectedEOF) {
		t.Errorf("unexpected EOF: %+v", e)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("run timeout")
	cancel(cause)
	e = Transport(ctx, "p", "", io.ErrUnexpectedEOF)
	if e.Transient || !errors.Is(e, context.Canceled) || !errors.Is(e, cause) {
		t.Errorf("cancelled: %+v", e)
	}
}

func TestStreamEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body      string
		transient bool
		code      string
		status    int
	}{
		{`{"error":{"message":"x","type":"server_error"}}`, true, "server_error", 0},
		{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true, "overloaded_error", 0},
		{`{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`, false, "invalid_request_error", 0},
		{`{"object":"error","message":"bad","type":"BadRequestError","code":400}`, false, "BadRequestError", 400},
		{`{"object":"error","message":"oops","type":"InternalServerError","code":500}`, true, "InternalServerError", 500},
		{`{"error":{"message":"This model's maximum context length is 10 tokens"}}`, false, CodeContextLength, 0},
	} {
		e := StreamEvent("p", "r", []byte(tc.body))
		if e.Transient != tc.transient || e.Code != tc.code || e.StatusCode != tc.status {
			t.Errorf("StreamEvent(%s) = %+v, want transient=%v code=%q status=%d", tc.body, e, tc.transient, tc.code, tc.status)
		}
	}
}

func FuzzParseBody(f *testing.F) {
	for _, s := range []string{``, `{"error":{"message":"m","code":1}}`, `{"error":"x"}`, `{"detail":{}}`, `[]`, `"s"`, `{"type":"error","error":{"type":"t"}}`} {
		f.Add([]byte(s), 429, "7")
	}
	f.Fuzz(func(t *testing.T, body []byte, status int, retryAfter string) {
		b := ParseBody(body)
		if len(b.Message) > maxMessage+len("…") {
			t.Fatalf("message of %d bytes", len(b.Message))
		}
		h := http.Header{"Retry-After": {retryAfter}, "Retry-After-Ms": {retryAfter}}
		e := Response("p", status, h, body, nil)
		if e.RetryAfter < 0 {
			t.Fatalf("negative RetryAfter %v", e.RetryAfter)
		}
		_ = StreamEvent("p", "", body).Error()
	})
}
