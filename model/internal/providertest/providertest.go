// Package providertest serves recorded provider responses from httptest
// servers for the adapter tests, captures the requests the adapters send, and
// writes synthetic streams in each provider's wire format.
//
// The recordings live in testdata/ and are embedded, so tests never read
// files outside their module at run time. Real recordings come with a
// .meta.md naming their source and licence; baton's own are described in
// testdata/baton_recordings.meta.md.
package providertest

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

//go:embed testdata
var files embed.FS

// Fixture returns the bytes of testdata/name.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := files.ReadFile(path.Join("testdata", name))
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	return b
}

// FixtureJSON decodes testdata/name into v.
func FixtureJSON(t testing.TB, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(Fixture(t, name), v); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
}

// Reply is one response a [Server] sends.
type Reply struct {
	// Status defaults to 200.
	Status int
	// ContentType defaults to "text/event-stream; charset=utf-8".
	ContentType string
	Header      http.Header
	Body        []byte
	// Abort breaks the connection after Body instead of ending the response
	// cleanly (a cut stream).
	Abort bool
	// Hold keeps the response open after Body until the client goes away,
	// then calls OnDisconnect (if set).
	Hold         bool
	OnDisconnect func()
}

// SSE returns a 200 Reply of an event stream.
func SSE(body []byte) Reply { return Reply{Body: body} }

// HTTPReply parses a raw HTTP/1.1 response recording (a .http file: status
// line, headers, blank line, body) into a Reply.
func HTTPReply(t testing.TB, name string) Reply {
	t.Helper()
	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(Fixture(t, name))), nil)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	h := res.Header.Clone()
	ct := h.Get("Content-Type")
	h.Del("Content-Type")
	return Reply{Status: res.StatusCode, ContentType: ct, Header: h, Body: body}
}

// Request is a request a [Server] received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// JSON decodes the request body into a generic map.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("request body: %v\n%s", err, r.Body)
	}
	return m
}

// Server replays replies in order (the last one repeats) and records the
// requests it receives. It is closed when the test ends.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	n        int
	requests []Request
}

// NewServer starts a Server.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{replies: replies}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	var rep Reply
	if len(s.replies) > 0 {
		rep = s.replies[min(s.n, len(s.replies)-1)]
	}
	s.n++
	s.mu.Unlock()
	Write(w, r, rep)
}

// Write sends rep on w.
func Write(w http.ResponseWriter, r *http.Request, rep Reply) {
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	ct := rep.ContentType
	if ct == "" {
		ct = "text/event-stream; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(rep.Body)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if rep.Hold {
		<-r.Context().Done()
		if rep.OnDisconnect != nil {
			rep.OnDisconnect()
		}
		return
	}
	if rep.Abort {
		panic(http.ErrAbortHandler)
	}
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Last returns the last request received; it fails the test if none came.
func (s *Server) Last(t testing.TB) Request {
	t.Helper()
	rs := s.Requests()
	if len(rs) == 0 {
		t.Fatal("no request received")
	}
	return rs[len(rs)-1]
}

// CompareFields checks that got and want agree on each top-level key,
// comparing JSON values after [Canonical]. A key absent from want must be
// absent from got.
func CompareFields(t testing.TB, got, want map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		if gok != wok {
			t.Errorf("field %q: present in request %v, in recording %v (request %s)", k, gok, wok, Show(g))
			continue
		}
		if !reflect.DeepEqual(Canonical(g), Canonical(w)) {
			t.Errorf("field %q differs:\n request:   %s\n recording: %s", k, Show(Canonical(g)), Show(Canonical(w)))
		}
	}
}

// Canonical normalises a decoded JSON value for comparison with a recording:
// empty "description" strings and SDK-only defaults that do not change
// meaning ("strict": false, "type": "function" on tools is kept) are dropped,
// and "required" lists are sorted.
func Canonical(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if k == "description" && val == "" {
				continue
			}
			if k == "strict" {
				continue
			}
			if k == "required" {
				if l, ok := val.([]any); ok {
					s := make([]string, 0, len(l))
					for _, e := range l {
						if str, ok := e.(string); ok {
							s = append(s, str)
						}
					}
					sort.Strings(s)
					out[k] = s
					continue
				}
			}
			out[k] = Canonical(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = Canonical(x[i])
		}
		return out
	}
	return v
}

// SSEEvents joins events into an event-stream body: each event is "event:
// <name>" (when name is not empty) and one data line.
func SSEEvents(events ...[2]string) []byte {
	var b strings.Builder
	for _, e := range events {
		if e[0] != "" {
			b.WriteString("event: " + e[0] + "\n")
		}
		b.WriteString("data: " + e[1] + "\n\n")
	}
	return []byte(b.String())
}

// MustJSON marshals v or panics; for building synthetic events.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// MetaParse decodes the "Expected parse" JSON block of testdata/name (a
// .meta.md file) into v.
func MetaParse(t testing.TB, name string, v any) {
	t.Helper()
	s := string(Fixture(t, name))
	const open = "```json\n"
	i := strings.Index(s, open)
	if i < 0 {
		t.Fatalf("%s: no json block", name)
	}
	s = s[i+len(open):]
	j := strings.Index(s, "\n```")
	if j < 0 {
		t.Fatalf("%s: unterminated json block", name)
	}
	if err := json.Unmarshal([]byte(s[:j]), v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}
