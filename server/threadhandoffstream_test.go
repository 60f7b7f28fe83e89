package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
)

// TestThreadStreamHandoffs: thread handoff events have durable ids, after
// the thread's events they follow, and are rebuilt from the store. A
// thread runs a turn, gets a proposal, runs a second turn, gets a second
// proposal (superseding the first) which is approved, and runs a third
// turn. A stream that follows it from the start; one that drops and
// reconnects with Last-Event-ID before and after each handoff event; one
// on a second Server on the same store (another replica: it sees the
// first's handoffs through the store and the thread's signal); and, on a
// fresh server (a restart), streams from the start and from after each
// handoff event: all see the same events with the same strictly
// increasing ids.
func TestThreadStreamHandoffs(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "support")
		hs2 := b.Replica(t, 100*time.Millisecond)

		steady := &threadClient{t: t, thread: thread, key: b.KeyA}
		dropper := &threadClient{t: t, thread: thread, key: b.KeyA}
		other := &threadClient{t: t, thread: thread, key: b.KeyA}
		completed := func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" }
		var wg sync.WaitGroup
		ready := make(chan struct{}, 3)
		for _, c := range []*threadClient{steady, dropper, other} {
			url := b.URL
			if c == other {
				url = hs2.URL
			}
			var drop func(servertest.Event) bool
			if c == dropper {
				drop = dropAt(completed, ofType("thread_handoff_proposed"), completed, ofType("thread_handoff_decided"),
					ofType("thread_handoff_proposed"), ofType("thread_handoff_decided"))
			}
			wg.Go(func() {
				c.read(b, func() string { return url }, "", func(e servertest.Event) bool {
					if e.Type == "thread" {
						ready <- struct{}{}
					}
					return drop != nil && drop(e)
				}, runEnds(3))
			})
		}
		for range 3 {
			<-ready
		}
		run := func(input string) { t.Helper(); completeTurn(t, b, thread, input) }
		run("I was charged twice for order 1234")
		p1 := propose(t, b, thread, "", nil, http.StatusCreated)
		run("It was on my credit card")
		p2 := propose(t, b, thread, "", map[string]any{"replace": true}, http.StatusCreated)
		if r := decision(t, b, b.KeyA, p2.InterruptID, map[string]any{"type": "approve"}); r.Status != 200 {
			t.Fatalf("approve: %d %s", r.Status, r.Body)
		}
		run("Thanks, one more question")
		wg.Wait()

		all := steady.events()
		checkThreadIDs(t, "never dropped", all)
		checkThreadIDs(t, "reconnected", dropper.events())
		checkThreadIDs(t, "another replica", other.events())
		want := folded(all)
		var handoffs []string
		var at []int // the indexes in want of the handoff events
		for i, e := range want {
			if strings.HasPrefix(e.Type, "thread_handoff_") {
				id, _ := e.Data["id"].(string)
				if id == "" {
					id, _ = e.Data["interrupt_id"].(string)
				}
				st, _ := e.Data["status"].(string)
				handoffs = append(handoffs, e.Type+":"+id+":"+st)
				at = append(at, i)
			}
		}
		wantHandoffs := []string{
			"thread_handoff_proposed:" + p1.InterruptID + ":pending",
			"thread_handoff_decided:" + p1.InterruptID + ":superseded",
			"thread_handoff_proposed:" + p2.InterruptID + ":pending",
			"thread_handoff_decided:" + p2.InterruptID + ":decided",
		}
		if strings.Join(handoffs, " ") != strings.Join(wantHandoffs, " ") {
			t.Fatalf("handoff events: %v, want %v\n%s", handoffs, wantHandoffs, dump(all))
		}
		// Each after the run it follows, before the next.
		if countEnds(want[:at[0]]) != 1 || countEnds(want[:at[1]]) != 2 || countEnds(want[:at[3]+1]) != 2 || countEnds(want) != 3 {
			t.Fatalf("handoff events out of place:\n%s", dump(want))
		}
		if dropper.reconnected < 6 {
			t.Fatalf("the client reconnected %d times only: %s", dropper.reconnected, dump(dropper.events()))
		}
		sameEvents(t, "reconnected vs never dropped", folded(dropper.events()), want)
		sameEvents(t, "another replica vs this one", folded(other.events()), want)

		// A new server on the same store (a restart: nothing in memory):
		// from the first id, and from before and after each handoff event.
		froms := []int{0}
		for _, i := range at {
			froms = append(froms, i, i+1)
		}
		readAfterRestart(t, b, thread, all, want, 3, froms...)
	})
}

// TestThreadStreamHandoffsAcrossReplicasPostgres: two services and servers
// on one PostgreSQL store (two replicas, signals by NOTIFY): a stream on
// the second sees the thread handoffs proposed and decided on the first,
// with the same events and ids as a stream of the first rebuilt from the
// store.
func TestThreadStreamHandoffsAcrossReplicasPostgres(t *testing.T) {
	t.Parallel()
	u := testdb.URL(t)
	schema := testdb.Schema(t, u)
	a := servertest.SetupStore(t, testdb.PostgresWith(t, u, store.Options{Schema: schema}))
	b := servertest.SetupStore(t, testdb.PostgresWith(t, u, store.Options{Schema: schema}))
	thread := a.Thread(t, a.KeyA, "support")
	other := &threadClient{t: t, thread: thread, key: b.KeyA}
	ready := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		other.read(b, func() string { return b.URL }, "", func(e servertest.Event) bool {
			if e.Type == "thread" {
				ready <- struct{}{}
			}
			return false
		}, runEnds(2))
	})
	<-ready
	run := func(input string) { t.Helper(); completeTurn(t, a, thread, input) }
	run("I was charged twice for order 1234")
	p := propose(t, a, thread, "", nil, http.StatusCreated)
	if r := decision(t, a, a.KeyA, p.InterruptID, map[string]any{"type": "reject", "message": "not now"}); r.Status != 200 {
		t.Fatalf("reject: %d %s", r.Status, r.Body)
	}
	run("It was on my credit card")
	wg.Wait()
	got := other.events()
	checkThreadIDs(t, "the other replica", got)
	if types := strings.Join(servertest.Types(folded(got)), " "); !strings.Contains(types, "run_end thread_handoff_proposed thread_handoff_decided run_start") {
		t.Fatalf("the other replica's stream: %s", dump(got))
	}
	rebuilt := &threadClient{t: t, thread: thread, key: a.KeyA}
	rebuilt.read(a, func() string { return a.URL }, got[0].ID, nil, runEnds(2))
	sameEvents(t, "the other replica vs rebuilt", folded(got), folded(rebuilt.events()))
}
