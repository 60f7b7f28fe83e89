// Package httperr turns failed provider calls into classified [*model.Error]
// values: it records the HTTP response an SDK saw (through a middleware), reads
// the provider's error body whatever its dialect, decides whether a retry may
// succeed, and parses how long the provider asked to wait.
//
// It is shared by the provider adapters; nothing here talks to a network.
package httperr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/model"
)

// maxErrorBody is how much of an error response body is kept.
const maxErrorBody = 64 << 10

// maxMessage is how long a provider message may be in an error's text.
const maxMessage = 2000

// CodeContextLength is the [model.Error] Code of a request that does not fit
// the model's context window, whatever the provider calls it.
const CodeContextLength = "context_length_exceeded"

// CodeInvalidStream is the [model.Error] Code of a stream the adapter could
// not make sense of (malformed events, missing fields).
const CodeInvalidStream = "invalid_stream"

// CodeIncompleteStream is the [model.Error] Code of a stream that ended before
// the provider said it was complete. Such errors are transient.
const CodeIncompleteStream = "incomplete_stream"

// Capture records the last HTTP response of one call. Its Middleware method
// is installed on the SDK call; it is used by one goroutine at a time.
type Capture struct {
	Status int
	Header http.Header
	// Body holds up to 64 KiB of an error response's body (status >= 400).
	Body []byte
}

// Middleware records res and, for an error status, buffers its body and puts
// an equivalent reader back, so that the SDK can read it too.
func (c *Capture) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if res == nil {
		return res, err
	}
	c.Status = res.StatusCode
	c.Header = res.Header
	c.Body = nil
	if res.StatusCode >= 400 && res.Body != nil {
		b, rerr := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		c.Body = b
		res.Body = io.NopCloser(bytes.NewReader(b))
		if rerr != nil && err == nil {
			err = rerr
		}
	}
	return res, err
}

// Body is a provider error body parsed from any of the common dialects:
// OpenAI and Anthropic ({"error":{"message","type","code"}}), vLLM
// ({"object":"error","message",...}), Ollama ({"error":"text"}), FastAPI
// ({"detail":...}) and plain text.
type Body struct {
	Message string
	Type    string
	Code    string
	// Status is a numeric code found in the body (vLLM), 0 if none.
	Status int
}

// ParseBody reads an error body. It never fails: what cannot be parsed is
// kept as (trimmed) text.
func ParseBody(b []byte) Body {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Body{}
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return Body{Message: clip(string(b))}
	}
	var out Body
	if raw, ok := top["error"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out.Message = s
		} else {
			var inner map[string]json.RawMessage
			if json.Unmarshal(raw, &inner) == nil {
				fill(&out, inner)
			}
		}
	}
	if out.Message == "" && out.Type == "" && out.Code == "" {
		fill(&out, top)
		if out.Type == "error" { // Anthropic's envelope type, not an error kind
			out.Type = ""
		}
	}
	if out.Message == "" {
		if raw, ok := top["detail"]; ok {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				out.Message = s
			} else {
				out.Message = string(raw)
			}
		}
	}
	out.Message = clip(out.Message)
	return out
}

func fill(out *Body, m map[string]json.RawMessage) {
	str := func(k string) string {
		var s string
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	out.Message = str("message")
	out.Type = str("type")
	out.Code = str("code")
	if raw, ok := m["code"]; ok && out.Code == "" {
		var n int
		if json.Unmarshal(raw, &n) == nil {
			out.Status = n
		}
	}
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxMessage {
		s = s[:maxMessage] + "…"
	}
	return s
}

// Response classifies an HTTP error response: status, headers and body as
// the provider sent them; err is the SDK's error, kept for errors.As.
// Secrets (API keys) are removed from the message.
func Response(provider string, status int, h http.Header, body []byte, err error, secrets ...string) *model.Error {
	b := ParseBody(body)
	e := &model.Error{
		Provider:   provider,
		StatusCode: status,
		Code:       b.Code,
		Message:    redact(b.Message, secrets),
		RequestID:  RequestID(h),
		Err:        err,
	}
	if e.Code == "" {
		e.Code = b.Type
	}
	if e.Message == "" {
		e.Message = strings.ToLower(http.StatusText(status))
	}
	e.Transient = transientStatus(status, e.Code, b.Type)
	if isContextLength(b) {
		e.Code = CodeContextLength
		e.Transient = false
	}
	switch h.Get("x-should-retry") {
	case "true":
		e.Transient = true
	case "false":
		e.Transient = false
	}
	if e.Transient {
		e.RetryAfter = RetryAfter(h, time.Now())
	}
	return e
}

// StreamEvent classifies an error event received inside a stream that had
// started well (HTTP 200): body is the event's data.
func StreamEvent(provider, requestID string, body []byte, secrets ...string) *model.Error {
	b := ParseBody(body)
	e := &model.Error{
		Provider:  provider,
		Code:      b.Code,
		Message:   redact(b.Message, secrets),
		RequestID: requestID,
	}
	if e.Code == "" {
		e.Code = b.Type
	}
	if e.Message == "" {
		e.Message = "error event in stream"
	}
	switch {
	case isContextLength(b):
		e.Code = CodeContextLength
	case b.Status >= 400:
		e.StatusCode = b.Status
		e.Transient = transientStatus(b.Status, e.Code, b.Type)
	default:
		e.Transient = transientEvent(e.Code, b.Type)
	}
	return e
}

// Transport classifies a call that failed without an HTTP response, or a
// stream that broke: when ctx has ended it reports that (not transient, so
// that errors.Is(err, context.Canceled) holds and nothing retries);
// otherwise the failure is transient (timeouts, resets, cut streams).
func Transport(ctx context.Context, provider, requestID string, err error) *model.Error {
	if cerr := ctx.Err(); cerr != nil {
		return Canceled(ctx, provider)
	}
	msg := "connection failed"
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		msg = "request timed out"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		msg = "connection closed mid-stream"
	}
	return &model.Error{Provider: provider, Code: CodeIncompleteStream, Message: msg + ": " + errText(err), RequestID: requestID, Transient: true, Err: err}
}

// Canceled returns the error of a call stopped because ctx ended. It wraps
// ctx's error (and its cause) and is not transient.
func Canceled(ctx context.Context, provider string) *model.Error {
	err := context.Cause(ctx)
	if err == nil {
		err = ctx.Err()
	}
	if err != ctx.Err() {
		err = errors.Join(ctx.Err(), err)
	}
	return &model.Error{Provider: provider, Message: "call stopped: " + ctx.Err().Error(), Err: err}
}

// Refuse returns the error a stream must end with before any call: one
// wrapping unsupported for a nil request, [Canceled] when ctx has ended, or
// nil.
func Refuse(ctx context.Context, provider string, req *model.Request, unsupported error) error {
	if req == nil {
		return fmt.Errorf("%w: nil request", unsupported)
	}
	if ctx.Err() != nil {
		return Canceled(ctx, provider)
	}
	return nil
}

// Incomplete returns the transient error of a stream that ended cleanly
// before its terminal event.
func Incomplete(provider, requestID, what string) *model.Error {
	return &model.Error{Provider: provider, Code: CodeIncompleteStream, Message: "stream ended before " + what, RequestID: requestID, Transient: true}
}

// Invalid returns the non-transient error of a stream or response the adapter
// cannot use.
func Invalid(provider, requestID, msg string, err error) *model.Error {
	if err != nil {
		msg += ": " + errText(err)
	}
	return &model.Error{Provider: provider, Code: CodeInvalidStream, Message: msg, RequestID: requestID, Err: err}
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return clip(err.Error())
}

// RequestID returns the provider request id of a response: x-request-id
// (OpenAI and most compatible servers) or request-id (Anthropic).
func RequestID(h http.Header) string {
	if h == nil {
		return ""
	}
	if v := h.Get("x-request-id"); v != "" {
		return v
	}
	return h.Get("request-id")
}

func transientStatus(status int, code, typ string) bool {
	switch {
	case status == http.StatusTooManyRequests:
		// Out of quota or billing is not a rate limit: waiting does not help.
		switch code {
		case "insufficient_quota", "billing_hard_limit_reached", "billing_not_active":
			return false
		}
		return true
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status == http.StatusTooEarly:
		return true
	case status >= 500:
		return true
	}
	return transientEvent(code, typ) && status == 0
}

// transientEvent reports whether an error kind reported inside a stream (no
// HTTP status) is worth retrying: overloads, rate limits and server errors
// are; invalid requests, auth and policy errors are not. Unknown kinds are
// treated as server errors, since the request was accepted.
func transientEvent(code, typ string) bool {
	for _, k := range []string{code, typ} {
		switch k {
		case "invalid_request_error", "authentication_error", "permission_error", "not_found_error",
			"request_too_large", "invalid_prompt", "invalid_api_key", "insufficient_quota",
			"billing_error", "content_filter", "content_policy_violation", CodeContextLength,
			"BadRequestError", "bad_request":
			return false
		}
	}
	return true
}

func isContextLength(b Body) bool {
	if b.Code == CodeContextLength || b.Type == CodeContextLength {
		return true
	}
	m := strings.ToLower(b.Message)
	for _, s := range []string{"prompt is too long", "maximum context length", "context length exceeded", "context_length_exceeded", "exceeds the context window", "input is too long for requested model"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func redact(s string, secrets []string) string {
	for _, k := range secrets {
		if len(k) >= 8 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

// RetryAfter returns how long the provider asked to wait, 0 if it did not
// say: retry-after-ms (milliseconds), retry-after (seconds or an HTTP date),
// else the latest reset time of an exhausted rate limit, from OpenAI's
// x-ratelimit-reset-{requests,tokens} (durations like "6m0s") or Anthropic's
// anthropic-ratelimit-*-reset (RFC 3339 times). now anchors the dates.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("retry-after")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s > 0 && s < 1e9 {
				return time.Duration(s * float64(time.Second))
			}
			return 0
		}
		if t, err := http.ParseTime(v); err == nil {
			return positive(t.Sub(now))
		}
	}
	var d time.Duration
	for _, k := range []string{"requests", "tokens"} {
		if h.Get("x-ratelimit-remaining-"+k) != "0" {
			continue
		}
		if v, err := time.ParseDuration(strings.TrimSpace(h.Get("x-ratelimit-reset-" + k))); err == nil {
			d = max(d, positive(v))
		}
	}
	for _, k := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		if h.Get("anthropic-ratelimit-"+k+"-remaining") != "0" {
			continue
		}
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(h.Get("anthropic-ratelimit-"+k+"-reset"))); err == nil {
			d = max(d, positive(t.Sub(now)))
		}
	}
	return d
}

func positive(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}
