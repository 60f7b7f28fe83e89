package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/server/internal/servertest"

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
		{"GET", "/v1/threads/" + thread + "/events", nil},
		{"POST", "/v1/threads/" + thread + "/handoff", map[string]any{}},
		{"GET", "/v1/interrupts/" + interrupt, nil},
		{"POST", "/v1/interrupts/" + interrupt + "/decision", map[string]any{"type": "approve"}},
		{"POST", "/v1/chat/completions", map[string]any{"model": "support", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}},
		{"POST", "/v1/responses", map[string]any{"model": "support", "input": "hi"}},
	}
}

// openAIRoute reports whether path is of OpenAI's API, whose errors use
// OpenAI's types and codes.
func openAIRoute(path string) bool {
	return strings.HasPrefix(path, "/v1/models") || path == "/v1/chat/completions" || path == "/v1/responses"
}

// interrupted makes a thread of key whose run waits for an approval and
// returns the thread, run and interrupt ids.
func interrupted(t *testing.T, b *servertest.Bundle, key string) (thread, run, interrupt string) {
	t.Helper()
	thread = b.Thread(t, key, "support")
	r := b.Do(t, key, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I want a refund for order 1234"})
	if r.Status != http.StatusOK {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	var res struct {
		ID        string
		Status    string
		Interrupt struct {
			ID string `json:"interrupt_id"`
		}
	}
	r.JSON(t, &res)
	if res.Status != "interrupted" || res.Interrupt.ID == "" {
		t.Fatalf("run: %s", r.Body)
	}
	return thread, res.ID, res.Interrupt.ID
}

func TestAuthRequired(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread, run, intr := interrupted(t, b, b.KeyA)
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
	thread, run, intr := interrupted(t, b, b.KeyA)
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

func TestThreads(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	r := b.Do(t, b.KeyA, "POST", "/v1/threads", map[string]any{"network": "support", "name": "first", "metadata": map[string]any{"app": map[string]any{"ticket": 7}}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var th struct {
		ID, Object, Network, Name string
		Metadata                  map[string]map[string]int
	}
	r.JSON(t, &th)
	if th.Object != "thread" || th.Network != "support" || th.Name != "first" || th.Metadata["app"]["ticket"] != 7 || r.Header.Get("Location") != "/v1/threads/"+th.ID {
		t.Fatalf("create: %s (location %q)", r.Body, r.Header.Get("Location"))
	}
	child := b.Do(t, b.KeyA, "POST", "/v1/threads", map[string]any{"network": "research", "parent_id": th.ID})
	if child.Status != http.StatusCreated || !strings.Contains(string(child.Body), `"parent_id":"`+th.ID+`"`) {
		t.Fatalf("child: %d %s", child.Status, child.Body)
	}
	b.Thread(t, b.KeyA, "support")
	// Paging, newest first.
	var seen []string
	cursor := ""
	for range 10 {
		r := b.Do(t, b.KeyA, "GET", "/v1/threads?limit=2&cursor="+cursor, nil)
		var page struct {
			Data       []struct{ ID string }
			NextCursor string `json:"next_cursor"`
			HasMore    bool   `json:"has_more"`
		}
		r.JSON(t, &page)
		for _, d := range page.Data {
			seen = append(seen, d.ID)
		}
		if !page.HasMore {
			break
		}
		cursor = page.NextCursor
	}
	if len(seen) != 3 || seen[2] != th.ID {
		t.Fatalf("paging: %v", seen)
	}
	// Children of a thread.
	r = b.Do(t, b.KeyA, "GET", "/v1/threads?parent_id="+th.ID, nil)
	if strings.Count(string(r.Body), `"object":"thread"`) != 1 {
		t.Fatalf("children: %s", r.Body)
	}
	// A run, then its messages with status and agent, and the thread's run.
	run := b.Do(t, b.KeyA, "POST", "/v1/threads/"+th.ID+"/runs", map[string]any{"input": "I was charged twice for order 1234"})
	var res struct {
		ID, Status, Output string
		LastAgent          string `json:"last_agent"`
	}
	run.JSON(t, &res)
	if run.Status != 200 || res.Status != "completed" || res.LastAgent != "billing" || !strings.Contains(res.Output, "duplicate") {
		t.Fatalf("run: %d %s", run.Status, run.Body)
	}
	r = b.Do(t, b.KeyA, "GET", "/v1/threads/"+th.ID+"/messages", nil)
	var msgs struct {
		Data []struct{ Role, Agent, Status, Text string }
	}
	r.JSON(t, &msgs)
	if len(msgs.Data) < 5 || msgs.Data[0].Role != "user" || msgs.Data[1].Agent != "triage" {
		t.Fatalf("messages: %s", r.Body)
	}
	last := msgs.Data[len(msgs.Data)-1]
	if last.Agent != "billing" || last.Status != "completed" || !strings.Contains(last.Text, "duplicate") {
		t.Fatalf("last message: %+v", last)
	}
	r = b.Do(t, b.KeyA, "GET", "/v1/threads/"+th.ID+"/messages?limit=2&after=1", nil)
	r.JSON(t, &msgs)
	if len(msgs.Data) != 2 || msgs.Data[0].Agent != "triage" || !strings.Contains(string(r.Body), `"has_more":true`) {
		t.Fatalf("messages page: %s", r.Body)
	}
	r = b.Do(t, b.KeyA, "GET", "/v1/threads/"+th.ID, nil)
	if !strings.Contains(string(r.Body), `"run":{"id":"`+res.ID+`","status":"completed"`) || !strings.Contains(string(r.Body), `"active_agent":"billing"`) {
		t.Fatalf("thread: %s", r.Body)
	}
	// Networks and models.
	r = b.Do(t, b.KeyA, "GET", "/v1/networks", nil)
	if !strings.Contains(string(r.Body), `"name":"research"`) || !strings.Contains(string(r.Body), `"thread_handoff":true`) {
		t.Fatalf("networks: %s", r.Body)
	}
	r = b.Do(t, b.KeyA, "GET", "/v1/models", nil)
	if !strings.Contains(string(r.Body), `"id":"support"`) {
		t.Fatalf("models: %s", r.Body)
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	if r := b.Do(t, "", "GET", "/healthz", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"ok"`) {
		t.Fatalf("healthz: %d %s", r.Status, r.Body)
	}
	if r := b.Do(t, "", "GET", "/readyz", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"database":"ok"`) {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	if r := b.Do(t, "", "GET", "/", nil); r.Status != 200 || !strings.Contains(r.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("ui: %d %v", r.Status, r.Header)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.RateLimit = 0.5; c.RateBurst = 2 }))
	for i := range 2 {
		if r := b.Do(t, b.KeyA, "GET", "/v1/networks", nil); r.Status != 200 {
			t.Fatalf("request %d: %d", i, r.Status)
		}
	}
	r := b.Do(t, b.KeyA, "GET", "/v1/networks", nil)
	if r.Status != http.StatusTooManyRequests || r.ErrType(t) != "rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d %s %v", r.Status, r.Body, r.Header)
	}
	// Per key: another key is not limited.
	if r := b.Do(t, b.KeyB, "GET", "/v1/networks", nil); r.Status != 200 {
		t.Fatalf("other key: %d", r.Status)
	}
}

func TestMaxStreams(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.MaxStreams = 1 }))
	thread := b.Thread(t, b.KeyA, "support")
	resp, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("first stream: %d", resp.StatusCode)
	}
	servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
	r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
	if r.Status != http.StatusServiceUnavailable || r.ErrType(t) != "overloaded" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream: %d %s", r.Status, r.Body)
	}
	resp.Body.Close()
	// The slot is freed when the first stream ends.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream slot not freed: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A non-streaming run that outlasts the request timeout answers 202 with
// its state and where to follow it; the run goes on.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.RequestTimeout = 300 * time.Millisecond }))
	thread := b.Thread(t, b.KeyA, "research")
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "EV sales?"})
	var res struct {
		ID, Status string
		EventsURL  string `json:"events_url"`
	}
	r.JSON(t, &res)
	if r.Status != http.StatusAccepted || res.Status == "completed" || r.Header.Get("Location") != res.EventsURL {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	resp, ch := b.Stream(t, b.KeyA, "GET", res.EventsURL, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("follow: %d", resp.StatusCode)
	}
	evs := servertest.Collect(t, ch, nil)
	if last := evs[len(evs)-1]; last.Type != "run_end" || last.Data["status"] != "completed" {
		t.Fatalf("the run did not go on: %v", servertest.Types(evs))
	}
}

func TestUnknownNetworkOfThread(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	th, err := b.St.CreateThread(t.Context(), &store.CreateThreadParams{OwnerID: "alice", Network: "retired"})
	if err != nil {
		t.Fatal(err)
	}
	r := b.Do(t, b.KeyA, "POST", fmt.Sprintf("/v1/threads/%s/runs", th.ID), map[string]any{"input": "hi"})
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "does not run") {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
