package protocols_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"
)

// FuzzRequestBodies sends arbitrary bodies to every route that takes one,
// on every backend: the answer is never a 5xx, always a JSON error body
// when it is an error, and a body one backend refuses (400) the others
// refuse too.
func FuzzRequestBodies(f *testing.F) {
	fs := servertest.NewFuzzServer(f)
	paths := []string{
		"/v1/threads",
		"/v1/threads/{support}/runs",
		"/v1/threads/{research}/handoff",
		"/v1/interrupts/run_x-i1/decision",
		"/v1/chat/completions",
		"/v1/threads/{support}/fork",
	}
	for _, seed := range []string{
		`{"at":"x"}`, `{"at":"run_x-m1","edit":{"text":"hi"}}`, `{"at":"x","edit":{"text":"\u0000","is_error":true},"name":"n"}`,
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
		fs.Send(t, "POST", paths[int(route)%len(paths)], body)
	})
}

// FuzzPathIDs puts arbitrary ids, escaped as a client would (%00 for NUL,
// %FF for a byte that is not UTF-8, a long id), in every route's path, on
// every backend: never a 5xx, always a JSON error, and alike on every
// backend when refused.
func FuzzPathIDs(f *testing.F) {
	fs := servertest.NewFuzzServer(f)
	routes := []struct{ method, path, body string }{
		{"GET", "/v1/threads/{id}", ""},
		{"GET", "/v1/threads/{id}/messages", ""},
		{"POST", "/v1/threads/{id}/runs", `{"input":"hi"}`},
		{"GET", "/v1/threads/{id}/runs/{id}", ""},
		{"GET", "/v1/threads/{support}/runs/{id}", ""},
		{"POST", "/v1/threads/{id}/handoff", `{}`},
		{"POST", "/v1/threads/{support}/fork", `{"at":"{id}"}`},
		{"GET", "/v1/threads/{support}/runs/{id}/steps", ""},
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
		fs.Send(t, r.method, path, body)
	})
}
