package httperr

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func response(contentType string, body io.Reader) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(body)}
}

func TestOpenKind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, contentType, body string
		want                    Kind
	}{
		{"EventStream", "text/event-stream; charset=utf-8", `{"a":1}`, KindEventStream},
		{"JSON", "application/json", "data: x\n\n", KindJSON},
		{"JSONCharset", "application/json; charset=utf-8", "", KindJSON},
		{"ProblemJSON", "application/problem+json", "{}", KindJSON},
		{"NoTypeJSON", "", "\n  {\"id\": 1}", KindJSON},
		{"NoTypeArray", "", "[1]", KindJSON},
		{"NoTypeSSE", "", "data: {}\n\n", KindEventStream},
		{"NoTypeSSEEvent", "", "event: message_start\ndata: {}\n\n", KindEventStream},
		{"NoTypeComment", "", ": keep-alive\n\n", KindEventStream},
		{"NoTypeBOM", "", "\ufeff{\"id\":1}", KindJSON},
		{"TextPlainSSE", "text/plain", "id: 1\ndata: {}\n\n", KindEventStream},
		{"HTML", "text/html", "<html></html>", KindUnknown},
		{"NoTypeText", "", "Bad Gateway", KindUnknown},
		{"NoTypeShortPrefix", "", "da", KindUnknown},
		{"Empty", "", "", KindEventStream},
		{"OctetStreamJSON", "application/octet-stream", `{"x":1}`, KindJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(tc.body), iotest.OneByteReader(strings.NewReader(tc.body))} {
				res := response(tc.contentType, r)
				c := Open(res)
				if c.Kind != tc.want {
					t.Fatalf("kind %d, want %d", c.Kind, tc.want)
				}
				if res.Body != c {
					t.Fatal("res.Body is not the Content")
				}
				b, err := io.ReadAll(res.Body)
				if err != nil || string(b) != tc.body {
					t.Fatalf("read %q, %v: the sniffed bytes must be read again", b, err)
				}
				if c.Len() != int64(len(tc.body)) || !bytes.HasPrefix([]byte(tc.body), c.Head()) {
					t.Errorf("len %d head %q", c.Len(), c.Head())
				}
			}
		})
	}
}

// TestSniffDoesNotWait checks that an event stream without a Content-Type
// is recognised from its first bytes, without waiting for more: the first
// event of a stream may be all there is for a while.
func TestSniffDoesNotWait(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	go func() { _, _ = pw.Write([]byte("data: {}\n\n")) }() // then nothing, until closed
	defer pw.Close()
	if c := Open(response("", pr)); c.Kind != KindEventStream {
		t.Fatalf("kind %d", c.Kind)
	}
}

func TestNoEvents(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		"":                               false,
		"\n\n":                           false,
		"data: {}\n\n":                   false,
		": ping\n\n{\"x\":1}":            false,
		"event: ping\n":                  false,
		"{\"id\":\"resp_1\"}":            true,
		"<html>Bad Gateway</html>\n\n":   true,
		"upstream error\ndata: x\n\n":    false,
		"Service Unavailable\nretry\n":   true,
		"\"just a string\"\n":            true,
		strings.Repeat("x", 5000) + "\n": true,
	} {
		c := Open(response("text/event-stream", strings.NewReader(body)))
		_, _ = io.ReadAll(c)
		if got := c.NoEvents(); got != want {
			t.Errorf("NoEvents(%.40q) = %v, want %v", body, got, want)
		}
	}
}

func TestReadAllLimit(t *testing.T) {
	t.Parallel()
	c := Open(response("application/json", strings.NewReader(strings.Repeat("a", 11))))
	if _, err := c.ReadAll(10); err == nil || !strings.Contains(err.Error(), "longer than 10 bytes") {
		t.Fatalf("err %v", err)
	}
	c = Open(response("application/json", strings.NewReader(strings.Repeat("a", 10))))
	if b, err := c.ReadAll(10); err != nil || len(b) != 10 {
		t.Fatalf("%d bytes, %v", len(b), err)
	}
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		secrets    []string
		want       string
	}{
		{"Empty", "  \n", nil, "an empty body"},
		{"Short", " {\"a\":1}\n", nil, `"{\"a\":1}"`},
		{"Long", strings.Repeat("ab", 200), nil, strconv.Quote(strings.Repeat("ab", 100)) + "…"},
		{"RuneBoundary", strings.Repeat("a", 199) + "é" + "tail", nil, strconv.Quote(strings.Repeat("a", 199)) + "…"},
		{"InvalidUTF8", "a\xffb", nil, "\"a\ufffdb\""},
		{"Key", "key is my-secret-key-123 ok", []string{"my-secret-key-123"}, `"key is [redacted] ok"`},
		{"KeyCutAtTheEnd", strings.Repeat("x", 190) + "my-secret-key-123", []string{"my-secret-key-123"}, `"` + strings.Repeat("x", 190) + `[redacted]"`},
		{"Bearer", "Authorization: Bearer abcdefgh12345678", nil, `"Authorization: Bearer [redacted]"`},
		{"OpenAIKey", `{"key":"sk-proj-ABCDEFGH1234"}`, nil, `"{\"key\":\"[redacted]\"}"`},
		{"APIKeyField", `{"api_key": "abcd1234xyz"}`, nil, `"{\"api_key\": \"[redacted]\"}"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Snippet([]byte(tc.body), tc.secrets...); got != tc.want {
				t.Errorf("Snippet = %s\nwant      %s", got, tc.want)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	t.Parallel()
	e := Malformed("openai", "req_1", "malformed response", []byte(`{"id": "x", "key": "sk-live-0123456789"`), io.ErrUnexpectedEOF, "sk-live-0123456789")
	if e.Code != CodeInvalidResponse || e.Transient || e.RequestID != "req_1" || e.Err != io.ErrUnexpectedEOF {
		t.Errorf("%+v", e)
	}
	if strings.Contains(e.Error(), "0123456789") || !strings.Contains(e.Message, `malformed response: unexpected EOF; the body began "{\"id\": \"x\"`) {
		t.Errorf("message %q", e.Message)
	}
	ev := InvalidEvent("anthropic", "req_2", "malformed stream event", []byte("{nope"), nil)
	if ev.Code != CodeInvalidStream || ev.Transient || !strings.HasSuffix(ev.Message, `the event began "{nope"`) {
		t.Errorf("%+v", ev)
	}
}

// FuzzSnippet checks that a snippet is short, valid UTF-8, a quoted
// string, and never holds a secret, whatever the body.
func FuzzSnippet(f *testing.F) {
	f.Add([]byte(`{"error": "key sk-abcdefgh12345678 invalid"}`), "sk-abcdefgh12345678")
	f.Add([]byte("<html>\xff\xfe Bearer tok_0123456789</html>"), "tok_0123456789")
	f.Add([]byte(strings.Repeat("é", 300)), "")
	f.Fuzz(func(t *testing.T, body []byte, secret string) {
		s := Snippet(body, secret)
		if !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8: %q", s)
		}
		if len(s) > 6*SnippetSize+8 {
			t.Fatalf("snippet of %d bytes", len(s))
		}
		if s == "an empty body" {
			if len(bytes.TrimSpace(body)) != 0 {
				t.Fatalf("non-empty body reported empty: %q", body)
			}
			return
		}
		q := strings.TrimSuffix(s, "…")
		u, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("not a quoted string: %s", s)
		}
		if len(secret) >= 8 && !strings.Contains(secret, "[redacted]") && strings.Contains(u, secret) {
			t.Fatalf("secret %q in %s", secret, s)
		}
	})
}
