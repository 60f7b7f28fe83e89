package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
)

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
	// Networks (as models: server/openai's TestModels).
	r = b.Do(t, b.KeyA, "GET", "/v1/networks", nil)
	if !strings.Contains(string(r.Body), `"name":"research"`) || !strings.Contains(string(r.Body), `"thread_handoff":true`) {
		t.Fatalf("networks: %s", r.Body)
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
	servertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		resp, _ := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
		resp.Body.Close()
		return resp.StatusCode == 200, fmt.Sprintf("stream slot not freed: %d", resp.StatusCode)
	})
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
