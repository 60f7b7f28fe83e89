package continuation

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// stalled opens a store of be and returns it, a new stall network and the
// test config on the store with leases of ttl, adopted every adoptEvery (0:
// the default): an adoption test's fixture.
func stalled(t *testing.T, be backend, ttl, adoptEvery time.Duration) (store.Store, *runtest.Stall, Config) {
	t.Helper()
	st := be.open(t)
	cfg := testConfig(t, st)
	cfg.LeaseTTL, cfg.AdoptEvery = ttl, adoptEvery
	return st, newStallNet(t), cfg
}

// dyingTurn starts an inline turn that stalls in its tool, then "kills"
// its process: the run's context ends without a final checkpoint and its
// lease is no longer renewed. It returns the thread and the run.
func dyingTurn(t *testing.T, svc *threads.Service, n *runtest.Stall, opts ...runner.RunOption) (thread, run string) {
	t.Helper()
	ctx, kill := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range svc.Turn(ctx, owner, "Think about it.", threads.TurnOptions{RunOptions: opts}) {
			if err != nil {
				return
			}
			if e, ok := ev.(*runner.RunStartEvent); ok {
				thread, run = e.ThreadID, e.RunID
			}
		}
	}()
	select {
	case <-n.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool never started")
	}
	kill()
	<-done
	return thread, run
}

// TestAdoptOrphanedRun: a run whose process died mid-step keeps its lease
// until it expires; then the adopter hands it to a worker, which resumes it
// from its last checkpoint: the run completes, the interrupted call runs
// again under the same idempotency key, and the thread takes a new run.
func TestAdoptOrphanedRun(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		st, n, cfg := stalled(t, be, 300*time.Millisecond, 100*time.Millisecond)
		b := running(t, st, n.Network, cfg)
		// The process that dies: its run ends without its stop
		// recorded, as a SIGKILL leaves it (a process that does not
		// adopt does not hand its cancelled runs over either).
		victim := cfg
		victim.NoAdopt, victim.NoWorkers = true, true
		_, dying := wire(t, st, n.Network, victim)

		thread, run := dyingTurn(t, dying, n)
		// The dead run holds the thread until it is adopted.
		if _, err := st.GetLease(ctx, &store.GetLeaseParams{OwnerID: owner, RunID: run}); err != nil {
			t.Fatalf("the dead run's lease: %v", err)
		}
		var busy *threads.BusyError
		for _, err := range b.svc.Turn(ctx, owner, "Hello?", threads.TurnOptions{ThreadID: thread}) {
			if !errors.As(err, &busy) || busy.RunID != run {
				t.Fatalf("a turn on the dead run's thread: %v, want a BusyError naming %s", err, run)
			}
			break
		}
		close(n.Release) // the tool answers from now on
		h := waitHandover(t, b.cont, run, 10*time.Second)
		m := b.waitMessage(t, h.MessageID, 30*time.Second)
		if m.Status != message.StatusCompleted || m.Text() != "Done thinking." {
			t.Fatalf("placeholder %s %q, want completed with the answer", m.Status, m.Text())
		}
		if got := statuses(t, st, run); got[len(got)-1] != runstate.StatusCompleted {
			t.Fatalf("checkpoint statuses %v, want the run completed", got)
		}
		if k := run + ":" + firstCall(t, st, run); n.Executions(k) != 2 {
			t.Errorf("the interrupted call ran %d times under its key, want 2 (the dead attempt and the resume)", n.Executions(k))
		}
		if _, err := st.GetLease(ctx, &store.GetLeaseParams{OwnerID: owner, RunID: run}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the adopted run's lease: %v, want none", err)
		}
		waitRiver(t, st, 10*time.Second)
		var end *runner.RunEndEvent
		for ev, err := range b.svc.Turn(ctx, owner, "Thanks!", threads.TurnOptions{ThreadID: thread}) {
			if err != nil {
				t.Fatalf("a new turn after the adoption: %v", err)
			}
			if e, ok := ev.(*runner.RunEndEvent); ok {
				end = e
			}
		}
		if end == nil {
			t.Fatal("the new turn did not end")
		}
	})
}

// TestLiveLeaseNotAdopted: a run that takes longer than many lease TTLs is
// not adopted while its process renews the lease, and its stop releases it.
func TestLiveLeaseNotAdopted(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		// Renewals every 400ms must win the database's write lock in time
		// on a loaded machine: a lease is lost only if none does for 1.2s.
		st, n, cfg := stalled(t, be, 1200*time.Millisecond, 100*time.Millisecond)
		b := running(t, st, n.Network, cfg)
		// A second process's adopter on the same database.
		other := running(t, st, n.Network, cfg).cont

		done := make(chan *runner.RunEndEvent, 1)
		go func() {
			var end *runner.RunEndEvent
			for ev, err := range b.svc.Turn(ctx, owner, "Think about it.", threads.TurnOptions{}) {
				if err != nil {
					t.Error(err)
					break
				}
				if e, ok := ev.(*runner.RunEndEvent); ok {
					end = e
				}
			}
			done <- end
		}()
		<-n.Started
		time.Sleep(4 * cfg.LeaseTTL)
		if n, err := other.AdoptExpired(ctx); err != nil || n != 0 {
			t.Fatalf("adopted %d runs (%v) of a live process", n, err)
		}
		close(n.Release)
		end := <-done
		if end == nil || end.Status != runstate.StatusCompleted {
			t.Fatalf("run end %+v, want completed inline", end)
		}
		if ids := b.cont.leases.ids(); len(ids) != 0 {
			t.Errorf("the process still renews %v", ids)
		}
	})
}

// TestAdoptOnce: of concurrent adopters of one orphan, one hands it over.
func TestAdoptOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		st, n, cfg := stalled(t, be, 100*time.Millisecond, 0)
		cfg.NoAdopt = true
		cont, svc := wire(t, st, n.Network, cfg)
		if err := cont.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, run := dyingTurn(t, svc, n)
		time.Sleep(3 * cfg.LeaseTTL)
		var wg sync.WaitGroup
		var handed, orphanless atomic.Int32
		for range 6 {
			other, _ := wire(t, st, n.Network, cfg)
			wg.Go(func() {
				h, err := other.Adopt(t.Context(), owner, run)
				switch {
				case errors.Is(err, ErrNotOrphan):
					orphanless.Add(1)
				case err != nil:
					t.Error(err)
				case h != nil:
					handed.Add(1)
				}
			})
		}
		wg.Wait()
		if handed.Load() != 1 || orphanless.Load() != 5 {
			t.Fatalf("%d hand-overs and %d refusals, want 1 and 5", handed.Load(), orphanless.Load())
		}
	})
}

// waitHandover waits until the run is handed to a worker.
func waitHandover(t *testing.T, cont *Service, run string, d time.Duration) *Handover {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		h, err := cont.Lookup(t.Context(), owner, run)
		if err == nil {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not handed over after %s: %v", run, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// firstCall returns the id of the run's first tool call.
func firstCall(t *testing.T, st store.Store, run string) string {
	t.Helper()
	cp, err := st.LatestCheckpoint(t.Context(), &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cp.State.Transcript {
		for _, c := range m.ToolCalls() {
			return c.ID
		}
	}
	t.Fatal("no tool call")
	return ""
}

// TestCancelledRunHandedOver: in a process that adopts (serve, worker), an
// inline run cancelled mid-flight (a shutdown) is handed to a worker at
// once, long before its lease would expire; in a one-shot command's
// process it keeps its lease, for the user to resume.
func TestCancelledRunHandedOver(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		st, n, cfg := stalled(t, be, time.Hour, 0)
		b := running(t, st, n.Network, cfg)
		_, run := dyingTurn(t, b.svc, n)
		close(n.Release)
		h := waitHandover(t, b.cont, run, 5*time.Second)
		if m := b.waitMessage(t, h.MessageID, 30*time.Second); m.Status != message.StatusCompleted {
			t.Fatalf("placeholder %s, want completed", m.Status)
		}

		cli := cfg
		cli.NoAdopt, cli.NoWorkers = true, true
		n2 := newStallNet(t)
		_, svc2 := wire(t, st, n2.Network, cli)
		_, run2 := dyingTurn(t, svc2, n2)
		if _, err := st.GetLease(ctx, &store.GetLeaseParams{OwnerID: owner, RunID: run2}); err != nil {
			t.Fatalf("the one-shot command's cancelled run: %v, want it to keep its lease", err)
		}
		if _, err := b.cont.Lookup(ctx, owner, run2); !errors.Is(err, ErrNotSuspended) {
			t.Fatalf("the one-shot command's cancelled run was handed over: %v", err)
		}
	})
}
