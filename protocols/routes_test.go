package protocols_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
)

// route is one API route with a body that is valid for it.
type route struct {
	method, path string
	body         any
}

// routes returns every /v1 route, on a thread, run and interrupt of
// owner A.
func routes(thread, run, interrupt string) []route {
	return []route{
		{"GET", "/v1/networks", nil},
		{"GET", "/v1/models", nil},
		{"GET", "/v1/models/support", nil},
		{"POST", "/v1/threads", map[string]any{"network": "support"}},
		{"GET", "/v1/threads", nil},
		{"GET", "/v1/threads/" + thread, nil},
		{"GET", "/v1/threads/" + thread + "/messages", nil},
		{"POST", "/v1/threads/" + thread + "/runs", map[string]any{"input": "hello"}},
		{"GET", "/v1/threads/" + thread + "/runs/" + run, nil},
		{"GET", "/v1/threads/" + thread + "/runs/" + run + "/events", nil},
		{"GET", "/v1/threads/" + thread + "/runs/" + run + "/steps", nil},
		{"GET", "/v1/threads/" + thread + "/runs/" + run + "/steps/wait_x", nil},
		{"GET", "/v1/threads/" + thread + "/events", nil},
		{"POST", "/v1/threads/" + thread + "/handoff", map[string]any{}},
		{"POST", "/v1/threads/" + thread + "/fork", map[string]any{"at": "x"}},
		{"GET", "/v1/interrupts/" + interrupt, nil},
		{"POST", "/v1/interrupts/" + interrupt + "/decision", map[string]any{"type": "approve"}},
		{"POST", "/v1/chat/completions", map[string]any{"model": "support", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{"POST", "/v1/responses", map[string]any{"model": "support", "input": "hi"}},
		{"POST", "/mcp/support", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
			"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}}},
		{"GET", "/mcp/support", nil},
		{"DELETE", "/mcp/support", nil},
	}
}

// openAIRoute reports whether path is of OpenAI's API, whose errors use
// OpenAI's types and codes.
func openAIRoute(path string) bool {
	return strings.HasPrefix(path, "/v1/models") || path == "/v1/chat/completions" || path == "/v1/responses"
}

func TestAuthRequired(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread, run, intr := b.Interrupted(t, b.KeyA)
	revoked := servertest.NewKey(t, b.St, "carol")
	keys, err := b.St.ListAPIKeys(t.Context(), &store.ListAPIKeysParams{OwnerID: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.St.RevokeAPIKey(t.Context(), &store.RevokeAPIKeyParams{OwnerID: "carol", ID: keys[0].ID}); err != nil {
		t.Fatal(err)
	}
	for _, rt := range routes(thread, run, intr) {
		for name, hdr := range map[string][]string{
			"missing":  nil,
			"invalid":  {"Authorization", "Bearer baton_not-a-key"},
			"revoked":  {"Authorization", "Bearer " + revoked},
			"basic":    {"Authorization", "Basic " + b.KeyA},
			"empty":    {"Authorization", "Bearer "},
			"long-key": {"Authorization", "Bearer " + strings.Repeat("x", 600)},
		} {
			r := b.Do(t, "", rt.method, rt.path, rt.body, hdr...)
			want := "unauthorized"
			if openAIRoute(rt.path) {
				want = "invalid_request_error" // OpenAI's words, code invalid_api_key
			}
			if r.Status != http.StatusUnauthorized || r.ErrType(t) != want || r.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s (%s key): %d %s", rt.method, rt.path, name, r.Status, r.Body)
			}
		}
	}
	// Health, readiness and the UI need no key.
	for _, p := range []string{"/healthz", "/readyz", "/", "/assets/app.js"} {
		if r := b.Do(t, "", "GET", p, nil); r.Status != http.StatusOK {
			t.Errorf("GET %s: %d", p, r.Status)
		}
	}
}

// Every route that names a thread, run or interrupt of another owner
// answers 404, as if it did not exist; nothing of it leaks.
func TestCrossOwnerNotFound(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread, run, intr := b.Interrupted(t, b.KeyA)
	for _, rt := range routes(thread, run, intr) {
		if !strings.Contains(rt.path, thread) && !strings.Contains(rt.path, intr) {
			continue
		}
		r := b.Do(t, b.KeyB, rt.method, rt.path, rt.body)
		if r.Status != http.StatusNotFound || r.ErrType(t) != "not_found" {
			t.Errorf("%s %s as another owner: %d %s", rt.method, rt.path, r.Status, r.Body)
		}
		if strings.Contains(string(r.Body), "refund") {
			t.Errorf("%s %s leaks content: %s", rt.method, rt.path, r.Body)
		}
	}
	// A parent thread, a chat continuation and the listings of another owner.
	if r := b.Do(t, b.KeyB, "POST", "/v1/threads", map[string]any{"network": "support", "parent_id": thread}); r.Status != http.StatusNotFound {
		t.Errorf("parent of another owner: %d %s", r.Status, r.Body)
	}
	chat := map[string]any{"model": "support", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	if r := b.Do(t, b.KeyB, "POST", "/v1/chat/completions", chat, server.ThreadHeader, thread); r.Status != http.StatusNotFound {
		t.Errorf("chat on a thread of another owner: %d %s", r.Status, r.Body)
	}
	// A run id of A under a thread of B.
	threadB := b.Thread(t, b.KeyB, "support")
	if r := b.Do(t, b.KeyB, "GET", "/v1/threads/"+threadB+"/runs/"+run, nil); r.Status != http.StatusNotFound {
		t.Errorf("run of another owner under own thread: %d %s", r.Status, r.Body)
	}
	if r := b.Do(t, b.KeyB, "GET", "/v1/threads?parent_id="+thread, nil); r.Status != http.StatusNotFound {
		t.Errorf("children of another owner's thread: %d %s", r.Status, r.Body)
	}
	r := b.Do(t, b.KeyB, "GET", "/v1/threads", nil)
	if strings.Contains(string(r.Body), thread) {
		t.Errorf("listing shows another owner's thread: %s", r.Body)
	}
	// The owner still sees everything.
	if r := b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+intr, nil); r.Status != http.StatusOK {
		t.Errorf("own interrupt: %d %s", r.Status, r.Body)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.MaxBodyBytes = 4096; c.MaxInputBytes = 1000 }))
	thread := b.Thread(t, b.KeyA, "support")
	runs := "/v1/threads/" + thread + "/runs"
	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		want               string // in the message
	}{
		{"syntax", "POST", "/v1/threads", `{"network": "support",}`, 400, "invalid JSON at byte"},
		{"truncated", "POST", "/v1/threads", `{"network": "sup`, 400, "ends in the middle"},
		{"empty body", "POST", "/v1/threads", ``, 400, "body is empty"},
		{"not an object", "POST", "/v1/threads", `[1,2]`, 400, "must be a JSON object"},
		{"wrong type", "POST", "/v1/threads", `{"network": 42}`, 400, `"network" must be a string`},
		{"unknown field", "POST", "/v1/threads", `{"network": "support", "colour": "red"}`, 400, `unknown field "colour"`},
		{"trailing data", "POST", "/v1/threads", `{"network": "support"} {}`, 400, "nothing after it"},
		{"no network", "POST", "/v1/threads", `{}`, 400, "network is required"},
		{"unknown network", "POST", "/v1/threads", `{"network": "nope"}`, 400, `unknown network "nope"`},
		{"reserved metadata", "POST", "/v1/threads", `{"network": "support", "metadata": {"handoff": {}}}`, 400, "reserved"},
		{"bad metadata key", "POST", "/v1/threads", `{"network": "support", "metadata": {"a b": 1}}`, 400, "metadata key"},
		{"oversized", "POST", "/v1/threads", `{"network": "support", "name": "` + strings.Repeat("x", 5000) + `"}`, 413, "larger than 4096 bytes"},
		{"no input", "POST", runs, `{}`, 400, "input is required"},
		{"blank input", "POST", runs, `{"input": "   "}`, 400, "input is required"},
		{"long input", "POST", runs, `{"input": "` + strings.Repeat("y", 1200) + `"}`, 400, "more than the limit of 1000"},
		{"unknown agent", "POST", runs, `{"input": "hi", "agent": "ghost"}`, 400, `no agent "ghost"`},
		{"bad limit", "GET", "/v1/threads?limit=0", nil, 400, "limit must be"},
		{"bad cursor", "GET", "/v1/threads?cursor=garbage", nil, 400, "cursor"},
		{"bad last event id", "GET", "/v1/threads/" + thread + "/events?last_event_id=x1", nil, 400, "Last-Event-ID"},
		{"unknown model", "POST", "/v1/chat/completions", `{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}`, 404, `model "nope" does not exist`},
		{"no messages", "POST", "/v1/chat/completions", `{"model": "support", "messages": []}`, 400, "at least one message"},
		{"last not user", "POST", "/v1/chat/completions", `{"model": "support", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}`, 400, "last message must be from the user"},
		{"image part", "POST", "/v1/chat/completions", `{"model": "support", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}`, 400, "not supported"},
		{"bad decision", "POST", "/v1/interrupts/run_x-i1/decision", `{"type": "maybe"}`, 400, "not approve, edit or reject"},
		{"edit without args", "POST", "/v1/interrupts/run_x-i1/decision", `{"type": "edit"}`, 400, "edit needs args"},
		{"unknown route", "GET", "/v1/nothing", nil, 404, "no route"},
		{"wrong method", "DELETE", "/v1/threads", nil, 405, "not allowed"},
	} {
		var body any
		if s, ok := tc.body.(string); ok {
			body = []byte(s)
		}
		r := b.Do(t, b.KeyA, tc.method, tc.path, body)
		var e struct{ Error struct{ Message string } }
		_ = json.Unmarshal(r.Body, &e)
		if r.Status != tc.status || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, r.Status, r.Body, tc.status, tc.want)
			continue
		}
		r.ErrType(t)
	}
}
