package server

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
)

func TestRegistrySweep(t *testing.T) {
	t.Parallel()
	g := newRegistry(runlog.Limits{}, time.Minute)
	g.retain = 2
	now := time.Now()
	var runs []*Run
	for i := range 5 {
		r := g.newRun("o", "t", "run"+string(rune('a'+i)), "n")
		runs = append(runs, r)
	}
	runs[0].log.Close("completed") // finished: kept for the TTL, then gone
	runs[1].log.Close("completed")
	runs[2].log.Close("completed")
	runs[3].mu.Lock()
	runs[3].producing = true // executing: kept
	runs[3].mu.Unlock()
	runs[4].addReader(1) // read: kept
	runs[4].log.Close("completed")
	g.sweepOnce(now)
	if len(g.runs) != 4 || g.run("o", "runa") != nil {
		t.Fatalf("beyond the bound, the oldest finished run goes first: %d runs", len(g.runs))
	}
	g.sweepOnce(now.Add(2 * time.Minute))
	if len(g.runs) != 2 || g.run("o", "rund") == nil || g.run("o", "rune") == nil {
		t.Fatalf("after the TTL only busy runs stay: %d", len(g.runs))
	}
	if g.run("other", "rund") != nil {
		t.Fatal("a run is found for another owner")
	}
	te := g.thread("o", "t")
	te.setNetwork("n")
	if g.network("o", "t") != "n" || g.network("x", "t") != "" {
		t.Fatal("thread network cache")
	}
	g.sweepOnce(now.Add(10 * time.Minute))
	if g.network("o", "t") != "" {
		t.Fatal("idle thread kept")
	}
}

// TestSecondStartKeepsTheLogClosed: a queued run may be started twice (its
// thread's kick, its submit's kick, the durable kick); when the first
// start has run it to its end, the second fails at its gate, and must leave
// the run's log closed: its readers (a request waiting for its result)
// saw it end. It reopened it, and they waited until their timeout.
func TestSecondStartKeepsTheLogClosed(t *testing.T) {
	t.Parallel()
	s := &Server{reg: newRegistry(runlog.Limits{}, time.Minute)}
	nw := &Network{name: "n"}
	run := s.reg.newRun("o", "t", "r", "n")
	run.queued = true
	_, te, _, err := s.register(t.Context(), "o", "t", "r", nw, nil)
	if err != nil {
		t.Fatal(err)
	}
	release(run, te) // the first start ran it to its end
	run.log.Close("completed")
	if _, _, _, err := s.register(t.Context(), "o", "t", "r", nw, nil); err != nil {
		t.Fatal(err)
	}
	if closed, status, _ := run.log.Closed(); !closed || status != "completed" {
		t.Fatalf("after a second start the log is closed %v (%q), want closed completed", closed, status)
	}
	// A resumed run's log goes on.
	release(run, te)
	if _, _, _, err := s.register(t.Context(), "o", "t", "r", nw, &runlog.Cursor{Seq: 3}); err != nil {
		t.Fatal(err)
	}
	if closed, _, _ := run.log.Closed(); closed {
		t.Fatal("a resumed run's log stays closed")
	}
}

// TestPrev: the cursor prev gives a reader that lost the log's events
// before c is before c and not before the stored event c follows (Seq.Sub):
// that event is rebuilt from the store, a worker's delta (Ext) included.
func TestPrev(t *testing.T) {
	t.Parallel()
	for _, c := range []runlog.Cursor{
		{Seq: 5}, {Seq: 5, Sub: 2}, {Seq: 5, Ver: 3}, {Seq: 5, Sub: 2, Ver: 3},
		{Seq: 5, Ext: 1}, {Seq: 5, Sub: 2, Ext: 4}, {Seq: 5, Sub: 2, Ver: 3, Ext: 4},
	} {
		p := prev(c)
		if !p.Less(c) {
			t.Errorf("prev(%v) = %v, not before it", c, p)
		}
		if d := c.Durable(); d != c && p.Less(d) {
			t.Errorf("prev(%v) = %v, before its stored event %v", c, p, d)
		}
	}
}

// TestStartAfterRunEnd: a client that got a run's run_end (an interrupted
// run, say) may send its next request on the thread before the run's
// goroutine has freed it (its extensions run after the end): the new run
// waits for the thread instead of failing with thread_busy. A run that has
// not ended still makes it busy.
func TestStartAfterRunEnd(t *testing.T) {
	t.Parallel()
	s := &Server{reg: newRegistry(runlog.Limits{}, time.Minute)}
	nw := &Network{name: "n"}
	first, te, _, err := s.register(t.Context(), "o", "t", "r1", nw, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.register(t.Context(), "o", "t", "r2", nw, nil); err == nil {
		t.Fatal("a second run started while the first runs")
	}
	first.observe(&runner.RunEndEvent{Status: runstate.StatusInterrupted})
	freed := make(chan struct{})
	go func() {
		defer close(freed)
		time.Sleep(50 * time.Millisecond) // the extensions after the end
		release(first, te)
	}()
	second, _, _, err := s.register(t.Context(), "o", "t", "r2", nw, nil)
	if err != nil {
		t.Fatalf("the next run after run_end: %v", err)
	}
	<-freed
	if second.id != "r2" {
		t.Fatalf("registered %s", second.id)
	}
	// A request that goes while it waits stops waiting: the thread is
	// still busy for it.
	second.observe(&runner.RunEndEvent{Status: runstate.StatusCompleted})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, _, err := s.register(ctx, "o", "t", "r3", nw, nil); err == nil {
		t.Fatal("a gone request's run started while the thread's ended run holds it")
	}
}
