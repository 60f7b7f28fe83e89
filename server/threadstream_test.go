package server_test

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/message"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// threadLess compares thread event ids ("P.S", "P.S.V", "P.S.V.H").
func threadLess(t testing.TB, a, b string) bool {
	t.Helper()
	ca, legacy, err := runlog.ThreadCursor(a)
	if err != nil || legacy {
		t.Fatalf("thread event id %q: %v (legacy %v)", a, err, legacy)
	}
	cb, legacy, err := runlog.ThreadCursor(b)
	if err != nil || legacy {
		t.Fatalf("thread event id %q: %v (legacy %v)", b, err, legacy)
	}
	return ca.Less(cb)
}

// checkThreadIDs fails unless the ids of evs strictly increase: no event
// twice, none out of order.
func checkThreadIDs(t testing.TB, name string, evs []servertest.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if !threadLess(t, evs[i-1].ID, evs[i].ID) {
			t.Fatalf("%s: ids not increasing at %d: %s %s then %s %s\n%s", name, i, evs[i-1].ID, evs[i-1].Type, evs[i].ID, evs[i].Type, dump(evs))
		}
	}
}

func dump(evs []servertest.Event) string {
	var sb strings.Builder
	for _, e := range evs {
		sb.WriteString(e.ID + " " + e.Type + "\n")
	}
	return sb.String()
}

// folded returns the durable events of a thread stream: without the
// snapshot, the text and reasoning deltas (folded into their message
// events, which carry the whole text) and the drafts (a draft is the whole
// text so far: a reconnect gets the latest only).
func folded(evs []servertest.Event) []servertest.Event {
	var out []servertest.Event
	for _, e := range evs {
		switch e.Type {
		case "thread", "text_delta", "reasoning_delta", "draft":
			continue
		}
		out = append(out, e)
	}
	return out
}

// entryReason is the reason of a run's first agent_start, which its
// checkpoints do not keep: rebuilt, the event has none.
var entryReason = regexp.MustCompile(`,"reason":"(entry|requested|[^"]*)"}$`)

// sameEvents fails unless a and b are the same events: ids, types and data
// (but the reason of a run's first agent_start, which a rebuilt event
// lacks).
func sameEvents(t testing.TB, name string, a, b []servertest.Event) {
	t.Helper()
	n := max(len(a), len(b))
	raw := func(e servertest.Event) string {
		if e.Type == "agent_start" && e.Data["reason"] != "transfer" && e.Data["reason"] != "return" {
			return entryReason.ReplaceAllString(e.Raw, "}")
		}
		return e.Raw
	}
	for i := range n {
		if i >= len(a) || i >= len(b) || a[i].ID != b[i].ID || a[i].Type != b[i].Type || raw(a[i]) != raw(b[i]) {
			t.Fatalf("%s: the sequences differ at %d:\n%s\n--- vs ---\n%s", name, i, dumpRaw(a), dumpRaw(b))
		}
	}
}

func dumpRaw(evs []servertest.Event) string {
	var sb strings.Builder
	for _, e := range evs {
		sb.WriteString(e.ID + " " + e.Type + " " + e.Raw + "\n")
	}
	return sb.String()
}

// threadClient reads a thread's events, reconnecting with Last-Event-ID
// whenever drop says so, until done says it has all.
type threadClient struct {
	t      testing.TB
	thread string
	key    string

	mu          sync.Mutex
	evs         []servertest.Event
	reconnected int
}

// read follows the thread on the servers urls() names (each connection on
// the current one) from id last ("" for a snapshot first) until done.
func (c *threadClient) read(b *servertest.Bundle, urls func() string, last string, drop, done func(servertest.Event) bool) {
	t := c.t
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		bb := *b
		bb.URL = urls()
		var hdr []string
		if last != "" {
			hdr = []string{"Last-Event-ID", last}
		}
		resp, ch := bb.Stream(t, c.key, "GET", "/v1/threads/"+c.thread+"/events", nil, hdr...)
		if resp.StatusCode != 200 {
			t.Fatalf("thread events after %q: %d", last, resp.StatusCode)
		}
		dropped := false
		for ev := range ch {
			if ev.Type == "shutdown" {
				continue
			}
			c.mu.Lock()
			c.evs = append(c.evs, ev)
			c.mu.Unlock()
			if ev.ID != "" {
				last = ev.ID
			}
			if done(ev) {
				resp.Body.Close()
				return
			}
			if drop != nil && drop(ev) {
				dropped = true
				break
			}
		}
		resp.Body.Close()
		if dropped {
			c.mu.Lock()
			c.reconnected++
			c.mu.Unlock()
		} else {
			time.Sleep(20 * time.Millisecond) // the server went: reconnect
		}
	}
	t.Fatalf("thread stream did not end: %s", dump(c.events()))
}

// completeTurn runs input on thread as the owner of key A and fails t
// unless the run answers 200, completed.
func completeTurn(t testing.TB, b *servertest.Bundle, thread, input string) {
	t.Helper()
	if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": input}); r.Status != 200 || !strings.Contains(string(r.Body), `"status":"completed"`) {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
}

func (c *threadClient) events() []servertest.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]servertest.Event(nil), c.evs...)
}

// dropAt returns a drop func that drops the connection at each event that
// the next of preds accepts, once per pred, in order.
func dropAt(preds ...func(servertest.Event) bool) func(servertest.Event) bool {
	i := 0
	return func(e servertest.Event) bool {
		if i < len(preds) && preds[i](e) {
			i++
			return true
		}
		return false
	}
}

func ofType(typ string) func(servertest.Event) bool {
	return func(e servertest.Event) bool { return e.Type == typ }
}

func nth(n int) func(servertest.Event) bool {
	seen := 0
	return func(servertest.Event) bool { seen++; return seen >= n }
}

// runEnds returns a done func true at the n-th final run_end (completed or
// failed).
func runEnds(n int) func(servertest.Event) bool {
	seen := 0
	return func(e servertest.Event) bool {
		if e.Type == "run_end" && (e.Data["status"] == "completed" || e.Data["status"] == "failed") {
			seen++
		}
		return seen >= n
	}
}

// TestThreadStreamReconnects: a client that drops the thread's stream and
// reconnects with Last-Event-ID — mid-answer, at a transfer, at the
// hand-over to a background worker, during the worker's progress, between
// runs — sees the same events, with the same ids, as one that never
// dropped (deltas and drafts folded); and so does a client that reconnects
// to a new server on the same store (a restart), and one that comes back
// after both runs from the thread's first id.
func TestThreadStreamReconnects(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "research")
		url := func() string { return b.URL }
		steady := &threadClient{t: t, thread: thread, key: b.KeyA}
		dropper := &threadClient{t: t, thread: thread, key: b.KeyA}
		var wg sync.WaitGroup
		ready := make(chan struct{}, 2)
		for _, c := range []*threadClient{steady, dropper} {
			var drop func(servertest.Event) bool
			if c == dropper {
				drop = dropAt(nth(4), ofType("transfer"), ofType("tool_call"), ofType("suspended"), ofType("draft"), ofType("run_start"),
					func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" }, nth(3))
			}
			wg.Go(func() {
				c.read(b, url, "", func(e servertest.Event) bool {
					if e.Type == "thread" {
						ready <- struct{}{}
					}
					return drop != nil && drop(e)
				}, runEnds(2))
			})
		}
		<-ready
		<-ready
		for _, input := range []string{"How did EV sales develop?", "And what about 2024?"} {
			completeTurn(t, b, thread, input)
		}
		wg.Wait()
		all := steady.events()
		checkThreadIDs(t, "never dropped", all)
		checkThreadIDs(t, "reconnected", dropper.events())
		if dropper.reconnected < 5 {
			t.Fatalf("the client reconnected %d times only: %s", dropper.reconnected, dump(dropper.events()))
		}
		want := folded(all)
		kinds := map[string]int{}
		for _, e := range want {
			kinds[e.Type]++
		}
		if kinds["run_start"] < 4 || kinds["transfer"] < 2 || kinds["suspended"] != 2 || kinds["message"] < 4 {
			t.Fatalf("the runs did not transfer and go to the background twice: %v\n%s", kinds, dump(all))
		}
		sameEvents(t, "reconnected vs never dropped", folded(dropper.events()), want)

		// A new server on the same store (a restart: nothing in memory):
		// from the first id, and from the middle, the same events.
		readAfterRestart(t, b, thread, all, want, 2, 0, len(want)/3, len(want)-2)
	})
}

// readAfterRestart reads thread on a new server on b's store (a restart:
// nothing in memory), from after want[from-1] (from 0: after all[0], the
// snapshot, before every run) for each from, until the thread's runs
// (of which want holds every end) have ended, and checks it gets
// want[from:].
func readAfterRestart(t *testing.T, b *servertest.Bundle, thread string, all, want []servertest.Event, runs int, froms ...int) {
	t.Helper()
	hs := b.Replica(t, 100*time.Millisecond)
	for _, from := range froms {
		last := all[0].ID // the snapshot's id, before every run
		if from > 0 {
			last = want[from-1].ID
		}
		late := &threadClient{t: t, thread: thread, key: b.KeyA}
		late.read(b, func() string { return hs.URL }, last, nil, runEnds(runs-countEnds(want[:from])))
		sameEvents(t, "after a restart, from "+last, late.events(), want[from:])
	}
}

func countEnds(evs []servertest.Event) int {
	n := 0
	for _, e := range evs {
		if e.Type == "run_end" && (e.Data["status"] == "completed" || e.Data["status"] == "failed") {
			n++
		}
	}
	return n
}

// TestThreadStreamIDs: the forms of a thread stream's cursor. ?after= is
// Last-Event-ID; an id of before durable ids (one number, or EPOCH.N)
// starts over with a snapshot; a malformed one is 400; a thread handoff's
// event comes after the run events before it; the run stream takes
// ?after= too.
func TestThreadStreamIDs(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread := b.Thread(t, b.KeyA, "research")
	events := "/v1/threads/" + thread + "/events"
	_, ch := b.Stream(t, b.KeyA, "GET", events, nil)
	snap := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
	if id := snap[len(snap)-1].ID; id != "0.0" {
		t.Fatalf("the snapshot of a thread without runs: id %q", id)
	}
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "How did EV sales develop?"})
	var res struct{ ID string }
	r.JSON(t, &res)
	if r.Status != 200 {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	all := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" })
	checkThreadIDs(t, "live", all)
	if all[0].Type != "run_start" || all[0].ID != "1.1" {
		t.Fatalf("the first run's first event: %s %s (its first message is the thread's first: position 1)", all[0].ID, all[0].Type)
	}
	_, ch = b.Stream(t, b.KeyA, "GET", events+"?after=0.0", nil)
	again := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" })
	sameEvents(t, "?after=0.0", folded(again), folded(all))
	for _, legacy := range []string{"1795012345", "1795012345.3"} {
		_, ch = b.Stream(t, b.KeyA, "GET", events, nil, "Last-Event-ID", legacy)
		if first := servertest.Collect(t, ch, func(servertest.Event) bool { return true }); first[0].Type != "thread" {
			t.Fatalf("an id of before durable ids, %s: %v", legacy, servertest.Types(first))
		}
	}
	for _, bad := range []string{"1.x", "1.2.3.4.5.6", "-1.2", "1..2"} {
		if r := b.Do(t, b.KeyA, "GET", events+"?after="+bad, nil); r.Status != 400 {
			t.Fatalf("id %q: %d %s", bad, r.Status, r.Body)
		}
	}
	// A thread handoff's event comes after the thread's last.
	last := all[len(all)-1].ID
	_, ch = b.Stream(t, b.KeyA, "GET", events, nil, "Last-Event-ID", last)
	if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/handoff", nil); r.Status != 201 {
		t.Fatalf("propose: %d %s", r.Status, r.Body)
	}
	prop := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread_handoff_proposed" })
	if p := prop[len(prop)-1]; !threadLess(t, last, p.ID) {
		t.Fatalf("the proposal's id %s is not after %s", p.ID, last)
	}
	// The run stream takes ?after= too.
	_, ch = b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/runs/"+res.ID+"/events?after=3", nil)
	if tail := servertest.Collect(t, ch, nil); len(tail) == 0 || tail[0].ID != "4" {
		t.Fatalf("run stream after 3: %v", servertest.Types(tail))
	}
}

// TestThreadStreamRunOfAnotherProcess: a run that the server neither
// executes nor follows (here run through the library, as another process
// would) reaches the thread's open streams: the server finds it in the
// store, follows it, and sends its events, the same as a reader of the
// thread from its first id.
func TestThreadStreamRunOfAnotherProcess(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "research")
		_, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
		servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
		var nw *service.Network
		for _, n := range b.Svc.Networks() {
			if n.Name() == "research" {
				nw = n
			}
		}
		for _, err := range nw.Threads.Turn(t.Context(), "alice", "How did EV sales develop?", threads.TurnOptions{ThreadID: thread}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		live := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" })
		checkThreadIDs(t, "live", live)
		_, ch = b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events?after=0.0", nil)
		all := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" })
		sameEvents(t, "a run of another process", folded(live), folded(all))
		if all[0].Type != "run_start" {
			t.Fatalf("%s\n---\n%s", dump(all), dump(live))
		}
	})
}

// runStreamLess compares run stream ids ("S", "S.N", "S.N.V").
func runStreamLess(t testing.TB, a, b string) bool {
	t.Helper()
	ca, err := runlog.ParseCursor(a)
	if err != nil {
		t.Fatalf("run event id %q: %v", a, err)
	}
	cb, err := runlog.ParseCursor(b)
	if err != nil {
		t.Fatalf("run event id %q: %v", b, err)
	}
	return ca.Less(cb)
}

// drafts returns "message_id version" of the drafts in evs.
func drafts(evs []servertest.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == "draft" {
			out = append(out, fmt.Sprintf("%v %v", e.Data["message_id"], e.Data["version"]))
		}
	}
	return out
}

// durable returns evs without the events that are not stored: deltas and
// drafts (and a thread stream's snapshot).
func durable(evs []servertest.Event) []servertest.Event { return folded(evs) }

// TestThreadStreamWorkerIDs: a run handed to a background worker — its
// resumed run_start (the worker's claim, a checkpoint whose seq does not
// number it) and the drafts of the worker's progress — gets ids that no
// other event of the thread has, in the thread's stream and in the run's:
// a client that never dropped gets every event (the resumed run_start and
// every draft the run's own stream got), and a client that reconnects with
// any id, or reads the thread or the run after a restart, gets the same
// events with the same ids.
func TestThreadStreamWorkerIDs(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "research")
		events := "/v1/threads/" + thread + "/events"
		_, tch := b.Stream(t, b.KeyA, "GET", events, nil)
		snap := servertest.Collect(t, tch, func(e servertest.Event) bool { return e.Type == "thread" })
		from := snap[len(snap)-1].ID
		completed := func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" }

		resp, rch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "How did EV sales develop?", "stream": true})
		if resp.StatusCode != 200 {
			t.Fatalf("run: %d", resp.StatusCode)
		}
		runID := resp.Header.Get("Baton-Run-Id")
		runLive := servertest.Collect(t, rch, completed)
		resp.Body.Close()
		live := servertest.Collect(t, tch, completed)
		checkThreadIDs(t, "thread stream", live)
		for i := 1; i < len(runLive); i++ {
			if !runStreamLess(t, runLive[i-1].ID, runLive[i].ID) {
				t.Fatalf("run stream: ids not increasing at %d:\n%s", i, dump(runLive))
			}
		}
		kinds := map[string]int{}
		for _, e := range live {
			kinds[e.Type]++
			if e.Type == "run_start" && e.Data["resumed"] == true {
				kinds["resumed"]++
			}
		}
		if kinds["suspended"] != 1 || kinds["resumed"] != 1 || kinds["draft"] == 0 {
			t.Fatalf("the run did not go to a worker once, with drafts and its resumed run_start: %v\n%s", kinds, dump(live))
		}
		// Every draft the run's stream got, the thread's got too: none
		// lost to an id another event has.
		if got, want := strings.Join(drafts(live), ", "), strings.Join(drafts(runLive), ", "); got != want {
			t.Fatalf("drafts of the thread stream: %s; of the run stream: %s\nthread:\n%s\nrun:\n%s", got, want, dump(live), dump(runLive))
		}

		// Rebuilt from the store: the thread from the snapshot's id, and
		// from each draft's id (a client that dropped there).
		// afterDrafts: a stream of path on sb from each draft's id in evs
		// gets (what keep keeps of) the events after it.
		afterDrafts := func(sb *servertest.Bundle, name, path string, evs []servertest.Event, keep func([]servertest.Event) []servertest.Event) {
			for i, e := range evs {
				if e.Type != "draft" {
					continue
				}
				_, ch := sb.Stream(t, b.KeyA, "GET", path, nil, "Last-Event-ID", e.ID)
				sameEvents(t, name+" after draft "+e.ID, keep(servertest.Collect(t, ch, completed)), keep(evs[i+1:]))
			}
		}
		_, ch := b.Stream(t, b.KeyA, "GET", events, nil, "Last-Event-ID", from)
		sameEvents(t, "the thread rebuilt", durable(servertest.Collect(t, ch, completed)), durable(live))
		afterDrafts(b, "the thread", events, live, durable)

		// The run's stream: the same ids live and rebuilt (a new server
		// on the same store has nothing in memory), from the start and
		// from each draft.
		b2 := b.Replica(t, 100*time.Millisecond)
		runEvents := "/v1/threads/" + thread + "/runs/" + runID + "/events"
		noDeltas := func(evs []servertest.Event) []servertest.Event {
			var out []servertest.Event
			for _, e := range durable(evs) {
				if e.Type != "text_delta" && e.Type != "reasoning_delta" {
					out = append(out, e)
				}
			}
			return out
		}
		_, ch = b2.Stream(t, b.KeyA, "GET", runEvents, nil)
		sameEvents(t, "the run rebuilt", noDeltas(servertest.Collect(t, ch, completed)), noDeltas(runLive))
		afterDrafts(b2, "the run", runEvents, runLive, noDeltas)
		resp, ch = b2.Stream(t, b.KeyA, "GET", events, nil, "Last-Event-ID", from)
		defer resp.Body.Close() // before hs.Close
		sameEvents(t, "the thread after a restart", durable(servertest.Collect(t, ch, completed)), durable(live))
	})
}

// TestThreadStreamSignals: a run of another process (here run through the
// library, which checkpoints through the same service) reaches a thread's
// stream at the signal of its first checkpoint (in process on SQLite,
// NOTIFY on PostgreSQL), and its end at the signals of its next ones. The
// stream polls the store every FollowInterval (80 minutes with signals
// here, 10 minutes for a run it follows), so the events could not arrive
// within the test's generous bound of signalBound without the signals —
// however slow a loaded machine makes the run.
func TestThreadStreamSignals(t *testing.T) {
	t.Parallel()
	const signalBound = 2 * time.Minute // far below any poll
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		var nw *service.Network
		for _, n := range b.Svc.Networks() {
			if n.Name() == "research" {
				nw = n
			}
		}
		for i := range 2 {
			thread := b.Thread(t, b.KeyA, "research")
			resp, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
			servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })
			if i == 1 {
				// The interest the stream announced outlives the start
				// window: the sender signals because of it.
				time.Sleep(service.ThreadInterestTTL/3 + time.Second)
			}
			start := time.Now()
			turned := make(chan error, 1)
			go func() {
				for _, err := range nw.Threads.Turn(t.Context(), "alice", "How did EV sales develop?", threads.TurnOptions{ThreadID: thread}) {
					if err != nil {
						turned <- err
						return
					}
				}
				turned <- nil
			}()
			first := servertest.CollectWithin(t, ch, func(servertest.Event) bool { return true }, signalBound)
			took := time.Since(start)
			if first[0].Type != "run_start" {
				t.Fatalf("the stream's first event after the run started is %s, want run_start", first[0].Type)
			}
			servertest.CollectWithin(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" }, signalBound)
			t.Logf("run_start after %v, run_end after %v", took, time.Since(start))
			if err := <-turned; err != nil {
				t.Fatalf("the turn: %v", err)
			}
			resp.Body.Close()
		}
	}, servertest.WithServer(func(c *server.Config) { c.FollowInterval = 10 * time.Minute }))
}

// TestThreadReplayFromStart: GET /v1/threads/{id}/events?after=0 (and
// Last-Event-ID: 0) sends every event of the thread from its first run —
// the same events, with the same ids, as a client that followed it from the
// start — then follows it live; a thread longer than one catch-up page is
// replayed whole, a page at a time, never resynced. Not parallel: it
// shrinks the catch-up page.
func TestThreadReplayFromStart(t *testing.T) {
	for name, open := range testdb.Backends(t) {
		t.Run(name, func(t *testing.T) {
			b := servertest.SetupStore(t, open(t))
			thread := b.Thread(t, b.KeyA, "research")
			events := "/v1/threads/" + thread + "/events"
			_, live := b.Stream(t, b.KeyA, "GET", events, nil)
			servertest.Collect(t, live, func(e servertest.Event) bool { return e.Type == "thread" })
			turn := func(input string) {
				t.Helper()
				if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": input}); r.Status != 200 {
					t.Fatalf("run: %d %s", r.Status, r.Body)
				}
			}
			ended := func(n int) func(servertest.Event) bool {
				seen := 0
				return func(e servertest.Event) bool {
					if e.Type == "run_end" && e.Data["status"] == "completed" {
						seen++
					}
					return seen == n
				}
			}
			turn("How did EV sales develop?")
			// Messages that are no run's between the runs (an import).
			filler := make([]store.NewMessage, 30)
			for i := range filler {
				filler[i] = store.NewMessage{Message: message.User(fmt.Sprintf("note %d", i))}
			}
			if _, err := b.St.AppendMessages(t.Context(), &store.AppendMessagesParams{OwnerID: "alice", ThreadID: thread, Messages: filler}); err != nil {
				t.Fatal(err)
			}
			turn("And in 2024?")
			all := folded(servertest.Collect(t, live, ended(2)))
			replay := func(name, path string, hdr ...string) <-chan servertest.Event {
				t.Helper()
				_, ch := b.Stream(t, b.KeyA, "GET", path, nil, hdr...)
				got := servertest.Collect(t, ch, ended(2))
				if got[0].Type != "run_start" || got[0].ID != "1.1" {
					t.Fatalf("%s: the first event %s %s, want the first run's run_start at 1.1", name, got[0].ID, got[0].Type)
				}
				for _, e := range got {
					if e.Type == "thread" || e.Type == "resync" {
						t.Fatalf("%s: a %s event in a replay: %v", name, e.Type, servertest.Types(got))
					}
				}
				sameEvents(t, name, folded(got), all)
				return ch
			}
			byQuery := replay("?after=0", events+"?after=0")
			byHeader := replay("Last-Event-ID: 0", events, "Last-Event-ID", "0")
			// The catch-up reads 8 messages at once: the replay pages.
			restore := server.SetMaxCatchUp(8)
			paged := replay("?after=0, paged", events+"?after=0")
			restore()
			// Then live: the next run's events, on every replay.
			turn("And in 2025?")
			next := folded(servertest.Collect(t, live, ended(1)))
			for name, ch := range map[string]<-chan servertest.Event{"?after=0": byQuery, "Last-Event-ID: 0": byHeader, "paged": paged} {
				sameEvents(t, name+", then live", folded(servertest.Collect(t, ch, ended(1))), next)
			}
		})
	}
}
