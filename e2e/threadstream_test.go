package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/sse"
)

// threadEvent is an event of a thread's stream.
type threadEvent struct {
	id, typ, raw string
	data         map[string]any
}

// threadReader follows a thread's events (GET /v1/threads/{id}/events),
// reconnecting with ?after= the last id whenever the stream ends: serve
// died, or the reader dropped it.
type threadReader struct {
	mu    sync.Mutex
	evs   []threadEvent
	conns int
}

// follow reads from after last ("" for a snapshot first) until done
// accepts an event; drop, if set, says when to drop the connection.
func (r *threadReader) follow(ctx context.Context, a *api, thread, last string, drop, done func(threadEvent) bool) error {
	for ctx.Err() == nil {
		path := "/v1/threads/" + thread + "/events"
		if last != "" {
			path += "?after=" + url.QueryEscape(last)
		}
		resp, err := a.request(ctx, http.MethodGet, path, nil)
		if err != nil {
			time.Sleep(100 * time.Millisecond) // serve is down: again
			continue
		}
		r.mu.Lock()
		r.conns++
		r.mu.Unlock()
		rd := sse.NewReader(resp.Body, 0)
		for {
			se, err := rd.Next()
			if err != nil {
				break
			}
			if se.Type == "shutdown" {
				continue
			}
			ev := threadEvent{id: se.ID, typ: se.Type, raw: string(se.Data)}
			_ = json.Unmarshal(se.Data, &ev.data)
			r.mu.Lock()
			r.evs = append(r.evs, ev)
			r.mu.Unlock()
			if ev.id != "" {
				last = ev.id
			}
			if done(ev) {
				resp.Body.Close()
				return nil
			}
			if drop != nil && drop(ev) {
				break
			}
		}
		resp.Body.Close()
	}
	return ctx.Err()
}

func (r *threadReader) events() []threadEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]threadEvent(nil), r.evs...)
}

// idLess compares thread event ids ("P.S", "P.S.V", "P.S.V.H") as tuples.
func idLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		x, y := 0, 0
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// durable returns the events a thread stream stores: without the snapshot,
// the deltas and the drafts (docs/api.md, Thread events).
func durable(evs []threadEvent) []threadEvent {
	var out []threadEvent
	for _, e := range evs {
		switch e.typ {
		case "thread", "text_delta", "reasoning_delta", "draft":
			continue
		}
		out = append(out, e)
	}
	return out
}

// firstReason is the reason of a run's first agent_start, which its
// checkpoints do not keep.
var firstReason = regexp.MustCompile(`,"reason":"[^"]*"}$`)

func comparable(e threadEvent) string {
	if e.typ == "agent_start" && e.data["reason"] != "transfer" {
		return e.id + " " + e.typ + " " + firstReason.ReplaceAllString(e.raw, "}")
	}
	return e.id + " " + e.typ + " " + e.raw
}

func listing(evs []threadEvent) string {
	var sb strings.Builder
	for _, e := range evs {
		sb.WriteString(comparable(e))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// completedEnds returns a done func true at the n-th run_end completed.
func completedEnds(n int) func(threadEvent) bool {
	seen := 0
	return func(e threadEvent) bool {
		if e.typ == "run_end" && e.data["status"] == "completed" {
			seen++
		}
		return seen >= n
	}
}

// threadStreamKills is TestThreadStreamSurvivesKills on a backend.
func threadStreamKills(t *testing.T, be backend) {
	t.Parallel()
	db := be.open(t)
	fx := newEffects(t, func(tool string) time.Duration {
		if tool == "ship" {
			return 2 * time.Second // a worker dies in the middle of it
		}
		return 0
	})
	c := startCluster(t, db, fx, clusterConfig{serveWorkers: 0, workers: 2, workerSlots: 2, flags: []string{
		"--lease-ttl", leaseTTL.String(), "--job-timeout", jobTimeout.String(), "--rescue-after", rescueAfter.String()}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*recoveryBound()+time.Minute)
	defer cancel()
	thread, err := c.api.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls, stop := fx.watch()
	defer stop()

	// The reader: dropped and back at every kill, and at moments of its
	// own (mid-answer, at the transfer, during the worker's progress).
	rdr := &threadReader{}
	serveKill := make(chan struct{})
	subscribed := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		killed := false
		sub := false
		drops := 0
		readErr <- rdr.follow(ctx, c.api, thread, "", func(e threadEvent) bool {
			if e.typ == "thread" && !sub {
				sub = true
				close(subscribed)
			}
			// Serve dies while shipping streams its answer, inline.
			if !killed && e.typ == "text_delta" && e.data["agent"] == "shipping" {
				killed = true
				close(serveKill)
			}
			switch {
			case e.typ == "transfer", e.typ == "draft" && drops < 6, e.typ == "tool_result" && drops < 8:
				drops++
				return true
			}
			return false
		}, completedEnds(2))
	}()
	<-subscribed

	// Run 1: triage looks the order up, transfers to shipping, which
	// streams its answer inline in serve — killed then, restarted; the
	// run is adopted and finished by a worker.
	go func() { _, _, _ = c.api.stream(ctx, thread, paths["transfer"][0], nil, nil) }()
	select {
	case <-serveKill:
	case <-ctx.Done():
		t.Fatalf("shipping did not stream: %v", listing(rdr.events()))
	}
	c.serve.kill()
	if err := c.serve.start(); err != nil {
		t.Fatal(err)
	}
	waitCompleted(ctx, t, c, thread, 1)

	for drained := false; !drained; { // the calls of run 1
		select {
		case <-calls:
		default:
			drained = true
		}
	}
	// Run 2: shipping's slow call goes to a worker, SIGKILLed during it;
	// River gives the continuation to the other worker (or this one,
	// restarted).
	go func() { _, _, _ = c.api.stream(ctx, thread, paths["transfer"][1], nil, nil) }()
	var victim string
	for victim == "" {
		select {
		case ev := <-calls:
			if ev.tool == "ship" && !ev.done && strings.HasPrefix(ev.caller, "worker-") {
				victim = ev.caller
			}
		case <-ctx.Done():
			t.Fatal("no worker called ship")
		}
	}
	for _, w := range c.workers {
		if w.name == victim {
			w.kill()
		}
	}
	if err := <-readErr; err != nil {
		t.Fatalf("the thread stream did not see both runs complete: %v\n%s", err, listing(rdr.events()))
	}
	_ = c.ensure() // the killed worker back, for the clean-up

	got := rdr.events()
	for i := 1; i < len(got); i++ {
		if got[i].id == "" || !idLess(got[i-1].id, got[i].id) {
			t.Fatalf("ids not increasing at %d (a duplicate or an event out of order): %s then %s\n%s", i, got[i-1].id, got[i].id, listing(got))
		}
	}
	rdr.mu.Lock()
	conns := rdr.conns
	rdr.mu.Unlock()
	if conns < 4 {
		t.Fatalf("the reader connected %d times only", conns)
	}
	// Everything, read again from the store by a new reader from the
	// thread's first id: the same events (no gap).
	ref := &threadReader{}
	if err := ref.follow(ctx, c.api, thread, got[0].id, nil, completedEnds(2)); err != nil {
		t.Fatal(err)
	}
	want, have := listing(durable(ref.events())), listing(durable(got))
	if want != have {
		t.Fatalf("the reconnected stream differs from the stored events:\n%s--- want ---\n%s", have, want)
	}
	kinds := map[string]int{}
	for _, e := range durable(got) {
		kinds[e.typ]++
	}
	if kinds["transfer"] != 2 || kinds["suspended"] < 2 || kinds["run_end"] < 4 {
		t.Fatalf("the runs did not transfer, get adopted and go to a worker: %v\n%s", kinds, have)
	}
}

// waitCompleted waits until thread's n-th run is completed.
func waitCompleted(ctx context.Context, t *testing.T, c *cluster, thread string, n int) {
	t.Helper()
	deadline := time.Now().Add(recoveryBound())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var page struct {
			Data []struct{ Role, Status string }
		}
		if err := c.api.do(ctx, http.MethodGet, "/v1/threads/"+thread+"/messages?limit=1000", nil, &page); err == nil {
			users := 0
			for _, m := range page.Data {
				if m.Role == "user" {
					users++
				}
			}
			if r, err := c.api.latestRun(ctx, thread); err == nil && r != nil && r.Status == "completed" && users >= n {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("run %d of thread %s did not complete", n, thread)
}

// TestThreadStreamSurvivesKills: a client following a thread's events
// (GET /v1/threads/{id}/events), reconnecting with ?after= its last id,
// sees every stored event once, in order — the same as a reader that reads
// the thread afterwards from its first id — across a SIGKILL of `baton
// serve` while a run streams inline (restarted; the run adopted and
// finished by a worker), a SIGKILL of the `baton worker` running a
// continuation (another takes it over), agent transfers, the hand-overs to
// workers, and drops of its own; on SQLite and PostgreSQL.
func TestThreadStreamSurvivesKills(t *testing.T) {
	batonBin(t)
	t.Parallel()
	for _, be := range backends(t, "") {
		t.Run(be.name, func(t *testing.T) { threadStreamKills(t, be) })
	}
}
