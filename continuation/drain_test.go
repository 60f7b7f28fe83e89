package continuation

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestStopWhileDraining is a process that drains (baton serve on SIGTERM):
// Stop is called while a run executes inline in the process, with the
// deadline the run gets. Until the run stops its lease is still renewed
// (no other process adopts it, however long past its TTL); its workers take
// nothing new, so that the run, cut at the deadline and handed to River at
// once, is left to another process's workers, which complete it; and Stop
// returns as soon as the run has stopped, long before its deadline.
func TestStopWhileDraining(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		// A lease TTL long enough that its renewals (every third of it)
		// hold on a loaded machine: the test is that they go on while
		// the process drains.
		st, n, cfg := stalled(t, be, 3*time.Second, 100*time.Millisecond)
		draining := running(t, st, n.Network, cfg)

		runCtx, cut := context.WithCancel(ctx)
		defer cut()
		ran := make(chan string, 1)
		go func() {
			run := ""
			for ev, err := range draining.svc.Turn(runCtx, owner, "Think about it.", threads.TurnOptions{RunOptions: draining.cont.RunOptions()}) {
				if err != nil {
					break
				}
				if e, ok := ev.(*runner.RunStartEvent); ok {
					run = e.RunID
				}
			}
			ran <- run
		}()
		select {
		case <-n.Started:
		case <-time.After(time.Minute):
			t.Fatal("the tool never started")
		}

		stopped := make(chan error, 1)
		// The drain's deadline, far beyond the bounds below: Stop must
		// return because the run stopped, not because of it.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
		defer cancel()
		go func() { stopped <- draining.cont.Stop(stopCtx) }()

		// Four TTLs into the drain the run's lease still holds: another
		// process's adopter leaves it alone.
		adopter, _ := wire(t, st, n.Network, cfg)
		time.Sleep(4 * cfg.LeaseTTL)
		if got, err := adopter.AdoptExpired(ctx); err != nil || got != 0 {
			t.Fatalf("adopted %d runs (%v) of a process that drains", got, err)
		}
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while the process executes a run inline", err)
		default:
		}

		// The deadline: the run is cut at its last checkpoint and handed
		// over at once; Stop returns.
		cut()
		run := <-ran
		h := waitHandover(t, draining.cont, run, time.Minute)
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("Stop: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("Stop did not return once the inline run stopped")
		}

		// The draining process's workers did not take it: it waits in
		// the queue for another process.
		time.Sleep(4 * cfg.FetchPollInterval)
		if m, err := st.GetMessage(ctx, &store.GetMessageParams{OwnerID: owner, ID: h.MessageID}); err != nil || m.Status != message.StatusQueued {
			t.Fatalf("the placeholder after the drain: %+v %v, want queued (nobody works it)", m, err)
		}
		next := running(t, st, n.Network, cfg)
		if m := next.waitMessage(t, h.MessageID, time.Minute); m.Status != message.StatusCompleted || m.Text() != "Done thinking." {
			t.Fatalf("placeholder %s %q, want completed with the answer by the next process", m.Status, m.Text())
		}
	})
}
