package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"regexp"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Redacted replaces a secret in logs and span status messages.
const Redacted = "[REDACTED]"

// secretValue matches strings that look like credentials wherever they
// appear: OpenAI and Anthropic keys (sk-…, sk-ant-…), bearer tokens, baton
// API keys (store.APIKeySecretPrefix "baton_" and 43 characters of
// base64url), Google API keys, GitHub tokens, AWS access key ids and JWTs.
var secretValue = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}` +
	`|\b(?i:bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*` +
	`|\bbaton_[A-Za-z0-9_\-]{40,}` +
	`|\bAIza[0-9A-Za-z_\-]{35}` +
	`|\bgh[pousr]_[A-Za-z0-9]{30,}` +
	`|\bAKIA[0-9A-Z]{16}\b` +
	`|\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]+`)

// minSecret is the length of the shortest string secretValue matches
// ("Bearer " and 8 characters).
const minSecret = 15

// holdsSecret reports whether s looks like it holds a credential: whether
// secretValue matches it. Most logged strings (ids, names, counts) hold
// none of the literal starts of secretValue's alternatives, which one pass
// over the bytes finds; only strings that do go through the regular
// expression. FuzzHoldsSecret checks that it agrees with secretValue.
func holdsSecret(s string) bool {
	if len(s) < minSecret {
		return false
	}
	for i := 0; i+3 <= len(s); i++ {
		rest := s[i:]
		var start bool
		switch s[i] {
		case 's':
			start = rest[1] == 'k' && rest[2] == '-'
		case 'b', 'B':
			start = len(rest) >= 6 && strings.EqualFold(rest[:6], "bearer") || strings.HasPrefix(rest, "baton_")
		case 'A':
			start = strings.HasPrefix(rest, "AIza") || strings.HasPrefix(rest, "AKIA")
		case 'g':
			start = len(rest) >= 4 && rest[1] == 'h' && strings.IndexByte("pousr", rest[2]) >= 0 && rest[3] == '_'
		case 'e':
			start = rest[1] == 'y' && rest[2] == 'J'
		}
		if start {
			return secretValue.MatchString(s)
		}
	}
	return false
}

// RedactString returns s with every substring that looks like a credential
// (see [Redact]) replaced by [Redacted].
func RedactString(s string) string {
	if !holdsSecret(s) {
		return s
	}
	return secretValue.ReplaceAllLiteralString(s, Redacted)
}

// sensitiveKey reports whether an attribute or group named k holds a
// secret: api_key, apikey, authorization, password, secret, credential,
// cookie, private_key, auth, or a word ending in "token" (access_token,
// x-auth-token, token) — but not token counts such as tokens_used or
// input_tokens.
func sensitiveKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range [...]string{"api_key", "apikey", "api-key", "authorization", "password", "passwd", "secret", "credential", "cookie", "private_key", "privatekey"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	for w := range strings.FieldsFuncSeq(k, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		if strings.HasSuffix(w, "token") || w == "auth" || w == "bearer" {
			return true
		}
	}
	return false
}

// Redact is a slog ReplaceAttr function that hides secrets: the value of an
// attribute whose key, or the key of an enclosing group, names a secret
// (see the list at [NewLogger]) becomes [Redacted] unless it is a number or
// a boolean; strings, errors and the message have credential-looking
// substrings replaced; other values are redacted the same way inside their
// JSON form. [NewLogger] installs it; use it in your own
// slog.HandlerOptions to get the same behaviour.
func Redact(groups []string, a slog.Attr) slog.Attr {
	v := a.Value
	switch v.Kind() {
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		return a
	case slog.KindGroup, slog.KindLogValuer:
		return a // handlers resolve these and call Redact on their members
	}
	if sensitiveKey(a.Key) || anySensitive(groups) {
		return slog.String(a.Key, Redacted)
	}
	switch v.Kind() {
	case slog.KindString:
		if s := v.String(); holdsSecret(s) {
			return slog.String(a.Key, RedactString(s))
		}
		return a
	case slog.KindAny:
		return redactAny(a)
	}
	return a
}

func anySensitive(groups []string) bool {
	for _, g := range groups {
		if sensitiveKey(g) {
			return true
		}
	}
	return false
}

// redactAny redacts a KindAny attribute: errors as their message, byte
// strings as text, anything else through its JSON encoding. The value is
// replaced only when something was redacted.
func redactAny(a slog.Attr) slog.Attr {
	switch x := a.Value.Any().(type) {
	case error:
		return slog.String(a.Key, RedactString(x.Error()))
	case json.RawMessage:
		if out, ok := redactJSON(x); ok {
			return slog.Any(a.Key, json.RawMessage(out))
		}
		return a
	case []byte:
		return slog.String(a.Key, RedactString(string(x)))
	case fmt.Stringer:
		// Handlers format Stringers (and TextMarshalers) as text.
		if s := x.String(); holdsSecret(s) {
			return slog.String(a.Key, RedactString(s))
		}
		return a
	}
	if rv := reflect.ValueOf(a.Value.Any()); rv.Kind() == reflect.String {
		if s := rv.String(); holdsSecret(s) {
			return slog.String(a.Key, RedactString(s))
		}
		return a
	}
	b, err := json.Marshal(a.Value.Any())
	if err != nil {
		return a
	}
	if out, ok := redactJSON(b); ok {
		return slog.Any(a.Key, json.RawMessage(out))
	}
	return a
}

// redactJSON redacts the JSON document b by keys and values; ok reports
// whether anything changed.
func redactJSON(b []byte) (out []byte, ok bool) {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	v, changed := redactValue(v)
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

func redactValue(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if holdsSecret(x) {
			return RedactString(x), true
		}
	case []any:
		changed := false
		for i, e := range x {
			var c bool
			x[i], c = redactValue(e)
			changed = changed || c
		}
		return x, changed
	case map[string]any:
		changed := false
		for k, e := range x {
			if sensitiveKey(k) {
				switch e.(type) {
				case float64, bool, nil:
				default:
					x[k], changed = Redacted, true
				}
				continue
			}
			var c bool
			x[k], c = redactValue(e)
			changed = changed || c
		}
		return x, changed
	}
	return v, false
}

// NewLogger returns a logger that writes to w in format "json" or "text"
// ("" means text) from level up (nil means Info). Its handler:
//
//   - redacts secrets with [Redact]: values of attributes (or groups) named
//     like api_key, apikey, authorization, password, secret, credential,
//     cookie, private_key, auth, token or *_token (not tokens_used,
//     input_tokens and other counts), and strings anywhere — the message,
//     errors, nested values — that look like keys (sk-…, sk-ant-…,
//     Bearer …, baton_…);
//   - adds trace_id and span_id when the context has a span, so that log
//     lines join their trace.
func NewLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: Redact}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("telemetry: log format %q: want json or text", format)
	}
	return slog.New(traceHandler{h}), nil
}

// The keys of the trace ids a log line carries.
const (
	logTraceID = "trace_id"
	logSpanID  = "span_id"
)

// traceHandler adds the context's trace and span ids to each record that
// does not carry a trace id already (the run log's lines carry their own).
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !hasTraceID(r) {
		r = r.Clone()
		r.AddAttrs(slog.String(logTraceID, sc.TraceID().String()), slog.String(logSpanID, sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// hasTraceID reports whether r has a trace_id attribute of its own.
func hasTraceID(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == logTraceID
		return !found
	})
	return found
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
