package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies to every route that takes one:
// the answer is never a 5xx and always a JSON error body when it is an
// error.
func FuzzRequestBodies(f *testing.F) {
	b := setup(f)
	thread := b.thread(f, b.keyA, "support")
	research := b.thread(f, b.keyA, "research")
	paths := []string{
		"/v1/threads",
		"/v1/threads/" + thread + "/runs",
		"/v1/threads/" + research + "/handoff",
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
	} {
		for i := range paths {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := paths[int(route)%len(paths)]
		req := httptest.NewRequest("POST", path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+b.keyA)
		rec := httptest.NewRecorder()
		b.srv.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusBadGateway {
			t.Fatalf("POST %s %q: %d %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			var e struct {
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Type == "" || e.Error.Message == "" {
				t.Fatalf("POST %s %q: %d with a body that is not a JSON error: %s", path, body, rec.Code, rec.Body.Bytes())
			}
		}
	})
}
