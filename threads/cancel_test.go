package threads_test

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestCancel: a run cancelled where it runs, elsewhere (another process,
// signalled or not), waiting for a decision, waiting in the queue; twice;
// after it finished. SQLite and PostgreSQL.
func TestCancel(t *testing.T) {
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		testCancel(t, func(t *testing.T) store.Store { return open(t) })
	})
}

// cancel cancels run of f's thread through svc and checks it ended
// cancelled.
func cancel(t *testing.T, f *fixture, svc *threads.Service, run string) *runstate.State {
	t.Helper()
	cp, err := svc.Cancel(t.Context(), owner, f.thread, run)
	if err != nil {
		t.Fatalf("cancel %s: %v", run, err)
	}
	if cp.RunID != run || cp.State.Status != runstate.StatusCancelled || runner.Stopped(cp.State) != runner.StopCancel {
		t.Fatalf("cancelled run: %s %s stopped %q", cp.RunID, cp.State.Status, runner.Stopped(cp.State))
	}
	return cp.State
}

func testCancel(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Here", func(t *testing.T) {
		f := newFixture(t, open, "question")
		st := cancel(t, f, f.svc, f.r0)
		end := <-f.done
		if end.Status != runstate.StatusCancelled || end.Output == "" || end.Output == longAnswer || st.FinalOutput != end.Output {
			t.Fatalf("the cancelled run's end: %+v (stored output %q)", end, st.FinalOutput)
		}
		// What it said is kept, marked partial; the thread is free.
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question",
			"assistant:" + end.Output + " [partial]"})
		again := cancel(t, f, f.svc, f.r0)
		if again.Step != st.Step {
			t.Fatalf("a second cancel wrote again: step %d, then %d", st.Step, again.Step)
		}
		if sub, err := submit(t, f.svc, f.thread, "next", threads.Reject); err != nil || sub.Queued {
			t.Fatalf("the thread after a cancel: %+v, %v", sub, err)
		}
	})
	t.Run("Finished", func(t *testing.T) {
		f := newFixture(t, open, "question")
		<-f.done
		_, err := f.svc.Cancel(t.Context(), owner, f.thread, f.r0)
		var fe *threads.FinishedError
		if !errors.As(err, &fe) || fe.Status != runstate.StatusCompleted || !errors.Is(err, store.ErrConflict) {
			t.Fatalf("cancel a completed run: %v", err)
		}
		if _, err := f.svc.Cancel(t.Context(), owner, f.thread, "run_unknown"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cancel an unknown run: %v", err)
		}
		other := newThread(t, f.svc)
		if _, err := f.svc.Cancel(t.Context(), owner, other, f.r0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cancel a run of another thread: %v", err)
		}
	})
	t.Run("WaitingForDecision", func(t *testing.T) {
		f := newFixture(t, open, "refund please")
		if end := <-f.done; end.Status != runstate.StatusInterrupted {
			t.Fatalf("the run waiting for a decision: %+v", end)
		}
		cancel(t, f, f.svc, f.r0)
		ints, err := f.st.ListInterrupts(t.Context(), &store.ListInterruptsParams{OwnerID: owner, ThreadID: f.thread})
		if err != nil || len(ints) != 1 || ints[0].Status != store.InterruptSuperseded {
			t.Fatalf("interrupts: %+v, %v", ints, err)
		}
	})
	t.Run("Queued", func(t *testing.T) {
		// A run waiting in the queue leaves it without running; the one
		// behind it runs after the busy one.
		f := newFixture(t, open, "question")
		s1 := f.post(t, "second", threads.Enqueue)
		s2 := f.post(t, "third", threads.Enqueue)
		cancel(t, f, f.svc, s1.RunID)
		<-f.done
		states := settled(t, f.st, f.thread, f.r0, s1.RunID, s2.RunID)
		if states[f.r0].Status != runstate.StatusCompleted || states[s2.RunID].Status != runstate.StatusCompleted {
			t.Fatalf("the other runs: %s, %s", states[f.r0].Status, states[s2.RunID].Status)
		}
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question", "assistant:" + longAnswer,
			"user:third", "assistant:" + longAnswer})
	})
	t.Run("QueueBehindStarts", func(t *testing.T) {
		f := newFixture(t, open, "question")
		s1 := f.post(t, "second", threads.Enqueue)
		cancel(t, f, f.svc, f.r0)
		end := <-f.done
		settled(t, f.st, f.thread, f.r0, s1.RunID)
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question",
			"assistant:" + end.Output + " [partial]", "user:second", "assistant:" + longAnswer})
	})
	t.Run("ElsewhereSignalled", func(t *testing.T) {
		// Two processes on one store: the run executes in the fixture's,
		// the cancel comes to another; the signal stops it at its next
		// safe boundary, keeping what it said.
		f := newFixture(t, open, "question")
		hub := draft.NewHub(f.st)
		f.svc.Listen(hub)
		other := threads.New(f.st, f.svc.Runner(), nil)
		other.Listen(hub)
		other.StopWait = time.Minute // the signal must do it
		cancel(t, f, other, f.r0)
		end := <-f.done
		if end.Status != runstate.StatusCancelled || end.Output == "" || end.Output == longAnswer {
			t.Fatalf("the cancelled run's end: %+v", end)
		}
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question",
			"assistant:" + end.Output + " [partial]"})
	})
	t.Run("ElsewhereUnreachable", func(t *testing.T) {
		// The executing process does not hear (gone, or the signal lost):
		// after StopWait the run is ended in the store, and its executor
		// loses its next checkpoint.
		f := newFixture(t, open, "question")
		other := threads.New(f.st, f.svc.Runner(), nil)
		other.Listen(draft.NewHub(f.st))
		// Well under the answer's 320 ms of streaming, so that the run is
		// still executing when it is ended in the store, also on a loaded
		// machine (200 ms left too little: CI saw the run complete first).
		other.StopWait = 100 * time.Millisecond
		began := time.Now()
		cancel(t, f, other, f.r0)
		if d := time.Since(began); d < other.StopWait {
			t.Fatalf("ended in the store after %s, before StopWait", d)
		}
		end := <-f.done
		var stale *store.StaleWriteError
		if end.Status == runstate.StatusCompleted && end.Output == longAnswer {
			t.Fatalf("the executor finished the cancelled run: %+v", end)
		}
		cp, err := f.st.LatestCheckpoint(t.Context(), &store.LatestCheckpointParams{OwnerID: owner, RunID: f.r0})
		if err != nil || cp.State.Status != runstate.StatusCancelled {
			t.Fatalf("the run in the store: %v %v (executor's end %+v, stale %v)", cp, err, end, stale)
		}
	})
	t.Run("InterruptElsewhere", func(t *testing.T) {
		// Double-texting's interrupt posted to another process stops the
		// run where it executes, keeping its partial answer.
		f := newFixture(t, open, "question")
		hub := draft.NewHub(f.st)
		f.svc.Listen(hub)
		other := threads.New(f.st, f.svc.Runner(), nil)
		t.Cleanup(other.Wait)
		other.Listen(hub)
		other.StopWait = time.Minute
		sub, err := submit(t, other, f.thread, "second", threads.Interrupt)
		if err != nil || !sub.Queued || sub.Busy != f.r0 {
			t.Fatalf("interrupt: %+v, %v", sub, err)
		}
		end := <-f.done
		if end.Status != runstate.StatusCancelled || end.Output == "" || end.Output == longAnswer ||
			end.Stopped == nil || *end.Stopped != (runner.Stop{Reason: "interrupt", RunID: sub.RunID}) {
			t.Fatalf("the interrupted run's end: %+v", end)
		}
		settled(t, f.st, f.thread, f.r0, sub.RunID)
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question",
			"assistant:" + end.Output + " [partial]", "user:second", "assistant:" + longAnswer})
	})
}
