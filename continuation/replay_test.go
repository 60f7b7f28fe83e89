package continuation

import (
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestSameEventManyTimes delivers one hand-over 100 times, as enqueue
// requests and as River deliveries: one job run, one execution.
func TestSameEventManyTimes(t *testing.T) {
	t.Parallel()
	for _, be := range backends(t) {
		t.Run(be.name+"/Enqueue", func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tools := newToolLog()
			net := network(t, tools, "", scripted.Options{})
			b := setup(t, be, net, tools, nil)
			// One run handed over by the hook, one suspended by a process
			// without the continuation service (no job yet).
			_, run1, _ := b.turn(t, "Where is my order 1234?")
			r, err := runner.New(runner.Config{Network: net, Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			var run2 string
			for ev, err := range threads.New(b.st, r, nil).Turn(ctx, owner, "And order 1234?", threads.TurnOptions{RunOptions: []runner.RunOption{runner.WithBackgroundBoundary()}}) {
				if err != nil {
					t.Fatal(err)
				}
				if e, ok := ev.(*runner.RunStartEvent); ok {
					run2 = e.RunID
				}
			}
			if jobs := riverJobs(t, b.st); jobs["available"] != 1 {
				t.Fatalf("river jobs before = %v", jobs)
			}
			for _, run := range []string{run1, run2} {
				var mu sync.Mutex
				created, events := 0, map[string]bool{}
				var wg sync.WaitGroup
				for range 10 {
					wg.Go(func() {
						for range 10 {
							h, err := b.cont.Enqueue(ctx, owner, run)
							if err != nil {
								t.Error(err)
								return
							}
							mu.Lock()
							events[h.EventID] = true
							if !h.Duplicate {
								created++
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				want := 0
				if run == run2 {
					want = 1
				}
				if created != want || len(events) != 1 {
					t.Errorf("run %s: %d hand-overs created, %d event ids", run, created, len(events))
				}
			}
			if jobs := riverJobs(t, b.st); jobs["available"] != 2 {
				t.Fatalf("river jobs after 200 enqueues = %v", jobs)
			}
			b.start(t)
			for _, run := range []string{run1, run2} {
				h, err := b.cont.Lookup(ctx, owner, run)
				if err != nil {
					t.Fatal(err)
				}
				if m := b.waitMessage(t, h.MessageID, 30*time.Second); m.Status != message.StatusCompleted {
					t.Errorf("placeholder = %s", m.Status)
				}
			}
			if keys, calls := tools.total(); keys != 2 || calls != 2 {
				t.Errorf("tool executions: %d keys, %d calls; want 2 and 2", keys, calls)
			}
		})
		t.Run(be.name+"/Deliveries", func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tools := newToolLog()
			// A lease long enough that no delivery outlives it, even on a
			// loaded machine: then exactly one delivery claims the run.
			b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, func(c *Config) {
				c.testNoUnique, c.Workers = true, 8
				c.JobTimeout, c.RescueStuckJobsAfter = 10*time.Second, 15*time.Second
			})
			_, run, _ := b.turn(t, "Where is my order 1234?")
			h, err := b.cont.Lookup(ctx, owner, run)
			if err != nil {
				t.Fatal(err)
			}
			// 99 more deliveries of the same job.
			cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
			if err != nil {
				t.Fatal(err)
			}
			args := Args{OwnerID: owner, ThreadID: cp.ThreadID, RunID: run, EventID: h.EventID, JobRunID: h.JobRun.ID, Fingerprint: cp.Fingerprint}
			for range 99 {
				err := b.st.Tx(ctx, func(tx store.Tx) error {
					_, err := b.cont.q.insertTx(ctx, tx, args, nil)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if jobs := riverJobs(t, b.st); jobs["available"] != 100 {
				t.Fatalf("river jobs = %v", jobs)
			}
			b.start(t)
			if m := b.waitMessage(t, h.MessageID, 30*time.Second); m.Status != message.StatusCompleted {
				t.Fatalf("placeholder = %s", m.Status)
			}
			jobs := waitRiver(t, b.st, 90*time.Second)
			if jobs["completed"] != 100 {
				t.Errorf("river jobs = %v, want 100 completed", jobs)
			}
			if keys, calls := tools.total(); keys != 1 || calls != 1 {
				t.Errorf("tool executions: %d keys, %d calls; want 1", keys, calls)
			}
			jr, _ := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
			if jr.Status != store.JobCompleted || jr.Attempt != 1 {
				t.Errorf("job run = %s attempt %d", jr.Status, jr.Attempt)
			}
			if cps := statuses(t, b.st, run); cps[len(cps)-1] != runstate.StatusCompleted {
				t.Errorf("checkpoints = %v", cps)
			}
		})
	}
}

// TestReplayOfCompletedJob works a finished continuation again: nothing
// happens.
func TestReplayOfCompletedJob(t *testing.T) {
	t.Parallel()
	be := backends(t)[0]
	ctx := t.Context()
	tools := newToolLog()
	b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, func(c *Config) { c.testNoUnique = true })
	_, run, _ := b.turn(t, "Where is my order 1234?")
	h, err := b.cont.Lookup(ctx, owner, run)
	if err != nil {
		t.Fatal(err)
	}
	b.start(t)
	b.waitMessage(t, h.MessageID, 30*time.Second)
	waitRiver(t, b.st, 10*time.Second)
	before := statuses(t, b.st, run)
	cp, _ := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
	args := Args{OwnerID: owner, ThreadID: cp.ThreadID, RunID: run, EventID: h.EventID, JobRunID: h.JobRun.ID, Fingerprint: cp.Fingerprint}
	if err := b.st.Tx(ctx, func(tx store.Tx) error { _, err := b.cont.q.insertTx(ctx, tx, args, nil); return err }); err != nil {
		t.Fatal(err)
	}
	if jobs := waitRiver(t, b.st, 10*time.Second); jobs["completed"] != 2 {
		t.Fatalf("river jobs = %v", jobs)
	}
	if after := statuses(t, b.st, run); len(after) != len(before) {
		t.Errorf("the replay wrote checkpoints: %v -> %v", before, after)
	}
	if _, calls := tools.total(); calls != 1 {
		t.Errorf("tool ran %d times", calls)
	}
}
