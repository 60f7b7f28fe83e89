package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/server/internal/servertest"

	"github.com/batonhq/baton/internal/testdb"
)

// fuzzServer is a served store per backend (testdb.Backends: SQLite, and
// PostgreSQL when BATON_TEST_DATABASE_URL is set), each with a support and
// a research thread of owner A, in the order of names.
type fuzzServer struct {
	names   []string
	bundles map[string]*servertest.Bundle
	threads map[string][2]string
}

func newFuzzServer(f *testing.F) *fuzzServer {
	fs := &fuzzServer{bundles: map[string]*servertest.Bundle{}, threads: map[string][2]string{}}
	for name, open := range testdb.Backends(f) {
		b := servertest.SetupStore(f, open(f))
		fs.names = append(fs.names, name)
		fs.bundles[name] = b
		fs.threads[name] = [2]string{b.Thread(f, b.KeyA, "support"), b.Thread(f, b.KeyA, "research")}
	}
	slices.Sort(fs.names)
	return fs
}

// send serves method path (with {support} and {research} replaced by the
// backend's threads) and body on every backend and checks each answer: never
// a 5xx other than 502 and 503, every error a JSON error body, and every
// backend answering a refused input (400) alike.
func (fs *fuzzServer) send(t *testing.T, method, path string, body []byte) {
	t.Helper()
	codes := map[string]int{}
	for _, name := range fs.names {
		b := fs.bundles[name]
		p := strings.NewReplacer("{support}", fs.threads[name][0], "{research}", fs.threads[name][1]).Replace(path)
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		raw, query, _ := strings.Cut(p, "?")
		req.URL = &url.URL{Path: mustUnescape(raw), RawPath: raw, RawQuery: query}
		req.RequestURI = p
		req.Header.Set("Authorization", "Bearer "+b.KeyA)
		rec := httptest.NewRecorder()
		b.Srv.ServeHTTP(rec, req)
		codes[name] = rec.Code
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusBadGateway {
			t.Fatalf("%s: %s %s %q: %d %s", name, method, p, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 && rec.Code != http.StatusNotFound || rec.Code == http.StatusNotFound && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			var e struct {
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
				t.Fatalf("%s: %s %s %q: %d with a body that is not a JSON error: %s", name, method, p, body, rec.Code, rec.Body.Bytes())
			}
		}
	}
	for _, name := range fs.names[1:] {
		a, z := codes[fs.names[0]], codes[name]
		if a != z && (a == http.StatusBadRequest || z == http.StatusBadRequest) {
			t.Fatalf("%s %s %q: %s answers %d, %s %d", method, path, body, fs.names[0], a, name, z)
		}
	}
}

// mustUnescape is the decoded path of an escaped one; an invalid escape is
// kept as written (the mux then answers it as it would).
func mustUnescape(p string) string {
	s, err := url.PathUnescape(p)
	if err != nil {
		return p
	}
	return s
}

// FuzzRequestBodies sends arbitrary bodies to every route that takes one,
// on every backend: the answer is never a 5xx, always a JSON error body
// when it is an error, and a body one backend refuses (400) the others
// refuse too.
func FuzzRequestBodies(f *testing.F) {
	fs := newFuzzServer(f)
	paths := []string{
		"/v1/threads",
		"/v1/threads/{support}/runs",
		"/v1/threads/{research}/handoff",
		"/v1/interrupts/run_x-i1/decision",
		"/v1/chat/completions",
	}
	for _, seed := range []string{
		`{"network":"support"}`, `{"network":"support","metadata":{"a":1},"name":"x"}`,
		`{"input":"I was charged twice","stream":false}`, `{"input":"hi","agent":"billing"}`,
		`{"type":"approve"}`, `{"decisions":[{"type":"edit","args":{"a":1}}]}`,
		`{"model":"support","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"support","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"stream":true}`,
		`{"interrupt":{"schema_version":1},"decision":{"type":"approve"}}`,
		``, `null`, `[]`, `{"input":`, "\xff\xfe", `{"network":"support"} trailing`,
		// What PostgreSQL refuses: NUL, lone surrogates, huge numbers.
		`{"network":"support","name":"a\u0000b"}`, `{"network":"support","metadata":{"a":"\u0000"}}`,
		`{"network":"support","metadata":{"a":"\ud800"}}`, `{"network":"support","metadata":{"\udc00":1}}`,
		`{"network":"support","metadata":{"a":1e131072}}`, `{"network":"support","metadata":{"a":[1e-16384]}}`,
		`{"network":"support","name":"\ud800"}`, `{"input":"\u0000"}`, `{"input":"hi","agent":"\u0000"}`,
		`{"model":"support","messages":[{"role":"user","content":"\ud800\u0000"}],"user":"\u0000"}`,
		`{"decisions":[{"type":"edit","call_id":"\u0000","args":{"a":1e999999}}]}`,
	} {
		for i := range paths {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		fs.send(t, "POST", paths[int(route)%len(paths)], body)
	})
}

// FuzzPathIDs puts arbitrary ids, escaped as a client would (%00 for NUL,
// %FF for a byte that is not UTF-8, a long id), in every route's path, on
// every backend: never a 5xx, always a JSON error, and alike on every
// backend when refused.
func FuzzPathIDs(f *testing.F) {
	fs := newFuzzServer(f)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/threads/{id}", ""},
		{"GET", "/v1/threads/{id}/messages", ""},
		{"POST", "/v1/threads/{id}/runs", `{"input":"hi"}`},
		{"GET", "/v1/threads/{id}/runs/{id}", ""},
		{"GET", "/v1/threads/{support}/runs/{id}", ""},
		{"POST", "/v1/threads/{id}/handoff", `{}`},
		{"GET", "/v1/interrupts/{id}", ""},
		{"POST", "/v1/interrupts/{id}/decision", `{"type":"approve"}`},
		{"GET", "/v1/threads?parent_id={id}&cursor={id}", ""},
	}
	for _, id := range []string{
		"x", "%00", "a%00b", "%FF", "caf%E9", "%ED%A0%80", "run_x-i1", "run_%00-i1", "..", "%2F", "%25",
		strings.Repeat("a", 2000), strings.Repeat("%00", 100), "01a214b6-8699-7b75-855c-7dbf90f17581",
	} {
		for i := range routes {
			f.Add(uint8(i), id)
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, id string) {
		r := routes[int(route)%len(routes)]
		// The id as it would be escaped, unless it already holds escapes.
		esc := id
		if strings.Contains(id, "%") {
			if _, err := url.PathUnescape(id); err != nil {
				esc = url.PathEscape(id)
			}
		} else {
			esc = url.PathEscape(id)
		}
		path := strings.ReplaceAll(r.path, "{id}", esc)
		var body []byte
		if r.body != "" {
			body = []byte(r.body)
		}
		fs.send(t, r.method, path, body)
	})
}
