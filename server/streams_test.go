package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/server"
)

func checkIncreasing(t *testing.T, evs []servertest.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if !servertest.IDLess(evs[i-1].ID, evs[i].ID) {
			t.Fatalf("ids not increasing at %d: %s then %s (%v)", i, evs[i-1].ID, evs[i].ID, servertest.Types(evs))
		}
	}
}

func TestRunStream(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread := b.Thread(t, b.KeyA, "support")
	resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I was charged twice for order 1234", "stream": true})
	if resp.StatusCode != 200 || resp.Header.Get("Baton-Run-Id") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
	}
	evs := servertest.Collect(t, ch, nil)
	checkIncreasing(t, evs)
	want := []string{"run_start", "agent_start"}
	if got := servertest.Types(evs); !reflect.DeepEqual(got[:2], want) || got[len(got)-1] != "run_end" {
		t.Fatalf("events: %v", got)
	}
	var transferred bool
	for _, e := range evs {
		// The SSE id is the event's seq and the event name its type, as in `baton run --json`.
		if e.Data["type"] != e.Type || fmt.Sprint(e.Data["seq"]) != e.ID {
			t.Fatalf("event %s %s: data %s", e.ID, e.Type, e.Raw)
		}
		if e.Type == "transfer" && e.Data["from"] == "triage" && e.Data["to"] == "billing" {
			transferred = true
		}
	}
	if !transferred || evs[len(evs)-1].Data["status"] != "completed" {
		t.Fatalf("no transfer or not completed: %v", servertest.Types(evs))
	}
}

// A client that drops the stream reconnects with Last-Event-ID and gets
// exactly the events it missed: no loss, no repeat.
func TestReconnectLastEventID(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread := b.Thread(t, b.KeyA, "research")
	resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "How did EV sales develop?", "stream": true})
	runID := resp.Header.Get("Baton-Run-Id")
	first := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.ID == "8" })
	resp.Body.Close() // the client goes away mid-run
	events := "/v1/threads/" + thread + "/runs/" + runID + "/events"
	resp2, ch2 := b.Stream(t, b.KeyA, "GET", events, nil, "Last-Event-ID", "8")
	if resp2.StatusCode != 200 {
		t.Fatalf("reconnect: %d", resp2.StatusCode)
	}
	rest := servertest.Collect(t, ch2, nil)
	got := append(first, rest...)
	checkIncreasing(t, got)
	// The whole run, read again from the start, is the same sequence.
	_, ch3 := b.Stream(t, b.KeyA, "GET", events, nil)
	all := servertest.Collect(t, ch3, nil)
	if len(all) != len(got) {
		t.Fatalf("reconnected %d events, full stream %d: %v vs %v", len(got), len(all), servertest.Types(got), servertest.Types(all))
	}
	for i := range all {
		if all[i].ID != got[i].ID || all[i].Raw != got[i].Raw {
			t.Fatalf("event %d differs: %s %s vs %s %s", i, got[i].ID, got[i].Raw, all[i].ID, all[i].Raw)
		}
	}
	if last := all[len(all)-1]; last.Type != "run_end" || last.Data["status"] != "completed" {
		t.Fatalf("the background continuation did not complete: %v", servertest.Types(all))
	}
	var suspended bool
	for _, e := range all {
		suspended = suspended || e.Type == "suspended"
	}
	if !suspended {
		t.Fatalf("the run was not handed to the background: %v", servertest.Types(all))
	}
	// After the end, a reconnect from the middle gets the tail.
	mid := all[len(all)/2].ID
	_, ch4 := b.Stream(t, b.KeyA, "GET", events+"?last_event_id="+mid, nil)
	tail := servertest.Collect(t, ch4, nil)
	if len(tail) == 0 || !reflect.DeepEqual(tail, all[len(all)/2+1:]) {
		t.Fatalf("tail after %s: %v", mid, servertest.Types(tail))
	}
}

// Events that are no longer in memory (the log's bound, a restart) are
// rebuilt from the stored checkpoints, in order.
func TestReconnectRebuildsFromStore(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.LogEvents = 4 }))
	thread := b.Thread(t, b.KeyA, "support")
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I was charged twice for order 1234"})
	var res struct{ ID string }
	r.JSON(t, &res)
	events := "/v1/threads/" + thread + "/runs/" + res.ID + "/events"
	check := func(name string, evs []servertest.Event) {
		t.Helper()
		checkIncreasing(t, evs)
		kinds := map[string]bool{}
		for _, e := range evs {
			kinds[e.Type] = true
		}
		if !kinds["transfer"] || !kinds["message"] || !kinds["tool_result"] || evs[len(evs)-1].Type != "run_end" || evs[len(evs)-1].Data["status"] != "completed" {
			t.Fatalf("%s: %v", name, servertest.Types(evs))
		}
	}
	_, ch := b.Stream(t, b.KeyA, "GET", events, nil)
	bounded := servertest.Collect(t, ch, nil)
	check("bounded log", bounded)

	// A new server on the same store knows nothing of the run in memory.
	b2 := b.Replica(t, 0)
	_, ch = b2.Stream(t, b.KeyA, "GET", events, nil)
	rebuilt := servertest.Collect(t, ch, nil)
	check("rebuilt", rebuilt)
	for _, e := range rebuilt {
		if e.Type == "text_delta" {
			t.Fatalf("rebuilt events have deltas: %v", servertest.Types(rebuilt))
		}
	}
	mid := rebuilt[len(rebuilt)/2]
	_, ch = b2.Stream(t, b.KeyA, "GET", events, nil, "Last-Event-ID", mid.ID)
	tail := servertest.Collect(t, ch, nil)
	if len(tail) == 0 || !servertest.IDLess(mid.ID, tail[0].ID) || !reflect.DeepEqual(tail, rebuilt[len(rebuilt)/2+1:]) {
		t.Fatalf("rebuilt tail after %s: %v", mid.ID, servertest.Types(tail))
	}
}

func TestThreadEvents(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread := b.Thread(t, b.KeyA, "support")
	resp, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("subscribe: %d", resp.StatusCode)
	}
	snap := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
	if snap[0].Data["id"] != thread {
		t.Fatalf("snapshot: %s", snap[0].Raw)
	}
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I want a refund for order 1234"})
	var res struct{ ID string }
	r.JSON(t, &res)
	evs := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" })
	checkIncreasing(t, evs)
	for _, e := range evs {
		if e.Data["run_id"] != res.ID {
			t.Fatalf("event without run_id: %s", e.Raw)
		}
	}
	kinds := strings.Join(servertest.Types(evs), ",")
	if !strings.Contains(kinds, "transfer") || !strings.Contains(kinds, "interrupt") {
		t.Fatalf("thread events: %s", kinds)
	}
	resp.Body.Close()
	// Reconnect after the third event: the rest again, nothing before.
	_, ch = b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil, "Last-Event-ID", evs[2].ID)
	again := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" })
	if len(again) != len(evs)-3 || again[0].ID != evs[3].ID {
		t.Fatalf("reconnect: %v after %s, want %v", servertest.Types(again), evs[2].ID, servertest.Types(evs[3:]))
	}
	// An id of an earlier server process (a restart) starts over from a
	// snapshot.
	_, ch = b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil, "Last-Event-ID", "5")
	if snap := servertest.Collect(t, ch, func(e servertest.Event) bool { return true }); snap[0].Type != "thread" || snap[0].Data["run"] == nil {
		t.Fatalf("reconnect from an earlier process: %v", servertest.Types(snap))
	}
}

func TestInterrupts(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread, run, intr := b.Interrupted(t, b.KeyA)
	r := b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+intr, nil)
	var in struct {
		ID, Status, RunID, ThreadID string
		RunIDx                      string `json:"run_id"`
		ThreadIDx                   string `json:"thread_id"`
		ActionRequests              []struct {
			Name   string
			CallID string `json:"call_id"`
		} `json:"action_requests"`
	}
	r.JSON(t, &in)
	if r.Status != 200 || in.Status != "pending" || in.RunIDx != run || in.ThreadIDx != thread || len(in.ActionRequests) != 1 || in.ActionRequests[0].Name != "issue_refund" {
		t.Fatalf("interrupt: %d %s", r.Status, r.Body)
	}
	// A new turn waits for the decision.
	if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "hello?"}); r.Status != http.StatusConflict {
		t.Fatalf("turn on an interrupted thread: %d %s", r.Status, r.Body)
	}
	if r := b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+intr+"/decision", map[string]any{"decisions": []any{map[string]any{"type": "approve", "call_id": "nope"}}}); r.Status != 400 {
		t.Fatalf("decision for an unknown call: %d %s", r.Status, r.Body)
	}
	if r := b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+run+"-i99", nil); r.Status != 404 {
		t.Fatalf("unknown interrupt of the run: %d %s", r.Status, r.Body)
	}
	// Approve with edited arguments, streaming the resumed run.
	resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/interrupts/"+intr+"/decision", map[string]any{"type": "edit", "args": map[string]any{"order_id": "1234", "amount": 10}, "stream": true})
	if resp.StatusCode != 200 {
		t.Fatalf("decision: %d", resp.StatusCode)
	}
	evs := servertest.Collect(t, ch, nil)
	checkIncreasing(t, evs)
	if evs[0].Type != "run_start" || evs[0].Data["resumed"] != true || evs[len(evs)-1].Data["status"] != "completed" {
		t.Fatalf("resumed: %v", servertest.Types(evs))
	}
	var edited bool
	for _, e := range evs {
		if e.Type == "tool_result" && e.Data["name"] == "issue_refund" && strings.Contains(e.Raw, "R-77") {
			edited = true
		}
	}
	if !edited {
		t.Fatalf("the refund did not run: %v", servertest.Types(evs))
	}
	r = b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+intr, nil)
	if !strings.Contains(string(r.Body), `"status":"decided"`) {
		t.Fatalf("after decision: %s", r.Body)
	}
	if r := b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+intr+"/decision", map[string]any{"type": "approve"}); r.Status != http.StatusConflict {
		t.Fatalf("second decision: %d %s", r.Status, r.Body)
	}
	// The thread's messages show the approved call, its result and the answer.
	r = b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/messages", nil)
	if !strings.Contains(string(r.Body), `"refund_id\":\"R-77`) || !strings.Contains(string(r.Body), "has been issued") {
		t.Fatalf("messages: %s", r.Body)
	}
	// Reject, without streaming: the model is told, the run completes.
	_, _, intr2 := b.Interrupted(t, b.KeyA)
	r = b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+intr2+"/decision", map[string]any{"type": "reject", "message": "not eligible"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"completed"`) {
		t.Fatalf("reject: %d %s", r.Status, r.Body)
	}
}

// A stuck client (it never reads) is not the run's problem: the run
// completes, and the server drops the client.
func TestStuckClientDoesNotHoldTheRun(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.StreamWriteTimeout = 200 * time.Millisecond; c.StreamBuffer = 1024 }))
	thread := b.Thread(t, b.KeyA, "support")
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"input": "I was charged twice for order 1234", "stream": true}`
	fmt.Fprintf(conn, "POST /v1/threads/%s/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", thread, b.KeyA, len(body), body)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("status line %q: %v", line, err)
	}
	servertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() (bool, string) {
		r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil)
		return strings.Contains(string(r.Body), `"status":"completed"`), fmt.Sprintf("run did not complete: %s", r.Body)
	})
}

// Shutdown: readiness fails, new runs are refused, and a run in flight
// (handed to a worker of the process) completes, its stream with it.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread := b.Thread(t, b.KeyA, "research")
	other := b.Thread(t, b.KeyA, "support")
	resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "EV sales?", "stream": true})
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	got := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "suspended" })
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- b.Srv.Shutdown(ctx)
	}()
	servertest.Eventually(t, 5*time.Second, 10*time.Millisecond, func() (bool, string) {
		r := b.Do(t, "", "GET", "/readyz", nil)
		return r.Status == http.StatusServiceUnavailable && strings.Contains(string(r.Body), "draining"), fmt.Sprintf("readyz while draining: %d %s", r.Status, r.Body)
	})
	if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+other+"/runs", map[string]any{"input": "hi"}); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("new run while draining: %d %s", r.Status, r.Body)
	}
	got = append(got, servertest.Collect(t, ch, nil)...)
	if last := got[len(got)-1]; last.Type != "run_end" || last.Data["status"] != "completed" {
		t.Fatalf("in-flight run: %v", servertest.Types(got))
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// With durable continuation (River on the SQLite store) the stream follows
// the worker through drafts and checkpoints until the answer is final.
func TestDurableContinuation(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) {
		c.FollowInterval = 100 * time.Millisecond
	}))
	thread := b.Thread(t, b.KeyA, "research")
	_, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "How did EV sales develop?", "stream": true})
	evs := servertest.Collect(t, ch, nil)
	checkIncreasing(t, evs)
	kinds := map[string]int{}
	for _, e := range evs {
		kinds[e.Type]++
	}
	last := evs[len(evs)-1]
	if kinds["suspended"] != 1 || kinds["draft"] == 0 || last.Type != "run_end" || last.Data["status"] != "completed" || !strings.Contains(last.Raw, "RPT-42") {
		t.Fatalf("durable stream: %v", servertest.Types(evs))
	}
	r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/messages", nil)
	var msgs struct {
		Data []struct {
			Status   string
			Metadata map[string]any
		}
	}
	r.JSON(t, &msgs)
	placeholders := 0
	for _, m := range msgs.Data {
		if m.Status != "completed" {
			t.Fatalf("message left %s: %s", m.Status, r.Body)
		}
		if m.Metadata[continuation.MetaContinuation] != nil {
			placeholders++
		}
	}
	if placeholders != 1 {
		t.Fatalf("placeholders: %d in %s", placeholders, r.Body)
	}
	// Non-streaming, the run answers once the worker is done.
	thread2 := b.Thread(t, b.KeyA, "research")
	r = b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread2+"/runs", map[string]any{"input": "And in 2024?"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"completed"`) {
		t.Fatalf("non-streaming durable run: %d %s", r.Status, r.Body)
	}
}

// TestDurableChildTurnClearsSeed: the first turn of a child thread that a
// background worker completes clears the thread handoff's seed, as an
// inline turn does: the summary leaves the agent's memory and the thread
// handoff flags of the child are cleared.
func TestDurableChildTurnClearsSeed(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) {
		c.FollowInterval = 100 * time.Millisecond
	}))
	child, _ := b.HandOff(t, b.Thread(t, b.KeyA, "research"), "How did EV sales develop?")
	if c, p := b.Seed(t, child); !c || !p {
		t.Fatalf("child before its first turn: cleanup_required %v, pending %v", c, p)
	}
	// The child's first turn reaches the slow tool and is finished by the worker.
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+child+"/runs", map[string]any{"input": "And in 2024?"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"completed"`) {
		t.Fatalf("child turn: %d %s", r.Status, r.Body)
	}
	servertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		c, p := b.Seed(t, child)
		return !c && !p, fmt.Sprintf("after the child's first turn, finished by a worker: cleanup_required %v, pending %v", c, p)
	})
}
