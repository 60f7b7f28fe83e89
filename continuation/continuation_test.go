package continuation

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestHandover: an inline run stops at the slow tool; placeholder,
// checkpoint, job run and River job are written; a worker resumes the run
// and completes it with the transcript of an all-inline run.
func TestHandover(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		tools := newToolLog()
		b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, nil)
		thread, run, end := b.turn(t, "Where is my order 1234?")
		if end == nil || end.Status != runstate.StatusSuspended {
			t.Fatalf("inline run ended %+v, want suspended", end)
		}
		if keys, _ := tools.total(); keys != 0 {
			t.Fatal("the slow tool ran inline")
		}
		h, err := b.cont.Lookup(ctx, owner, run)
		if err != nil {
			t.Fatal(err)
		}
		ph, err := b.st.GetMessage(ctx, &store.GetMessageParams{OwnerID: owner, ID: h.MessageID})
		if err != nil {
			t.Fatal(err)
		}
		if ph.Status != message.StatusQueued || ph.Metadata[MetaContinuationID] != h.EventID || ph.ThreadID != thread || !IsPlaceholder(ph) {
			t.Fatalf("placeholder = %+v", ph)
		}
		if h.JobRun.Status != store.JobQueued || h.JobRun.IdempotencyKey != h.EventID || h.JobRun.Kind != Kind {
			t.Fatalf("job run = %+v", h.JobRun)
		}
		if jobs := riverJobs(t, b.st); jobs["available"] != 1 {
			t.Fatalf("river jobs = %v", jobs)
		}
		// The thread is busy until the worker is done.
		var busy *threads.BusyError
		for _, err := range b.svc.Turn(ctx, owner, "hello?", threads.TurnOptions{ThreadID: thread}) {
			if err != nil && !errors.As(err, &busy) {
				t.Fatalf("turn while handed over: %v", err)
			}
		}
		if busy == nil {
			t.Fatal("a turn while handed over was not refused")
		}

		b.start(t)
		final := b.waitMessage(t, h.MessageID, 30*time.Second)
		if final.Status != message.StatusCompleted || final.Text() != "Your order 1234 has shipped." {
			t.Fatalf("placeholder after the worker = %s %q", final.Status, final.Text())
		}
		if keys, calls := tools.total(); keys != 1 || calls != 1 {
			t.Errorf("tool executions: %d keys, %d calls", keys, calls)
		}
		if _, err := b.st.GetDraft(ctx, &store.GetDraftParams{OwnerID: owner, MessageID: h.MessageID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("draft after completion: %v", err)
		}
		jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
		if err != nil || jr.Status != store.JobCompleted || jr.Attempt != 1 {
			t.Errorf("job run = %+v, %v", jr, err)
		}
		if jobs := waitRiver(t, b.st, 10*time.Second); jobs["completed"] != 1 {
			t.Errorf("river jobs = %v", jobs)
		}
		got, phs := stored(t, b.st, thread)
		if len(phs) != 1 {
			t.Fatalf("%d placeholders", len(phs))
		}

		// The same conversation, all inline, on another store.
		itools := newToolLog()
		ib := setup(t, be, network(t, itools, "", scripted.Options{}), itools, nil)
		var ithread string
		for ev, err := range ib.svc.Turn(ctx, owner, "Where is my order 1234?", threads.TurnOptions{}) {
			if err != nil {
				t.Fatal(err)
			}
			if e, ok := ev.(*runner.RunStartEvent); ok {
				ithread = e.ThreadID
			}
		}
		want, _ := stored(t, ib.st, ithread)
		if shape(got) != shape(want) {
			t.Errorf("stored thread after the worker:\n%s\nwant (all inline):\n%s", shape(got), shape(want))
		}
		cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
		if err != nil || cp.Status != runstate.StatusCompleted {
			t.Fatalf("final checkpoint: %+v, %v", cp, err)
		}
		icp, _ := ib.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: ithread})
		if shape(cp.State.Transcript) != shape(icp.State.Transcript) {
			t.Errorf("run transcript:\n%s\nwant:\n%s", shape(cp.State.Transcript), shape(icp.State.Transcript))
		}
		if final.Metadata[MetaContinuation].(map[string]any)["final_message_id"] != cp.State.Transcript[len(cp.State.Transcript)-1].ID {
			t.Errorf("placeholder metadata = %v", final.Metadata)
		}
		// The next turn's history leaves the placeholder out, and the
		// thread takes turns again.
		for _, err := range b.svc.Turn(ctx, owner, "thanks", threads.TurnOptions{ThreadID: thread}) {
			if err != nil && errors.As(err, &busy) {
				t.Fatalf("thread still busy: %v", err)
			}
		}
	})
}

// withNotice sets up a bundle on be whose inline run, when its hand-over
// fails, answers without the tool "Sorry, I cannot look orders up right
// now." after the notice "lookup unavailable"; *told is the error the
// notice was told (nil until then). change, if set, adjusts the config
// further.
func withNotice(t testing.TB, be backend, tools *toolLog, change func(*Config)) (b *bundle, told *error) {
	t.Helper()
	told = new(error)
	net := network(t, tools, "", scripted.Options{}, scripted.Step{Text: "Sorry, I cannot look orders up right now."})
	b = setup(t, be, net, tools, func(c *Config) {
		if change != nil {
			change(c)
		}
		c.Notice = func(_ context.Context, err error) string { *told = err; return "lookup unavailable" }
	})
	return b, told
}

// TestHandoverIsAtomic injects a failure between the writes of the
// hand-over: none of them is left, and the inline run answers without the
// tool, with a notice.
func TestHandoverIsAtomic(t *testing.T) {
	t.Parallel()
	for _, be := range backends(t) {
		for _, step := range []string{"job run", "placeholder", "river"} {
			t.Run(be.name+"/"+step, func(t *testing.T) {
				t.Parallel()
				tools := newToolLog()
				injected := errors.New("injected failure")
				b, told := withNotice(t, be, tools, func(c *Config) {
					c.testHook = func(s string) error {
						if s == step {
							return injected
						}
						return nil
					}
				})
				thread, run, end := b.turn(t, "Where is my order 1234?")
				if end == nil || end.Status != runstate.StatusCompleted {
					t.Fatalf("inline run ended %+v, want completed without the tool", end)
				}
				var ee *EnqueueError
				if !errors.As(*told, &ee) || !errors.Is(*told, injected) || ee.Step != step {
					t.Errorf("notice was told %v", *told)
				}
				for _, s := range statuses(t, b.st, run) {
					if s == runstate.StatusSuspended {
						t.Errorf("a suspended checkpoint was left: %v", statuses(t, b.st, run))
					}
				}
				msgs := nothingHandedOver(t, b, thread, run, "")
				var notice bool
				for _, m := range msgs {
					for _, p := range m.Parts {
						if p.Type == message.PartToolResult && p.Text == "lookup unavailable" && p.IsError {
							notice = true
						}
					}
				}
				if !notice || msgs[len(msgs)-1].Text() != "Sorry, I cannot look orders up right now." {
					t.Errorf("stored thread:\n%s", shape(msgs))
				}
			})
		}
	}
}

// TestStaleSuspension: a suspension whose checkpoint is stale (another
// writer took the run's step first) hands nothing over — no job run,
// placeholder or River job — and stops the run with the checkpoint's
// error, not a failed hand-over's: no inline fallback, no model call
// without tools. Both backends answer alike (on PostgreSQL the checkpoint
// is deferred and refused with the hand-over's first statement).
func TestStaleSuspension(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		tools := newToolLog()
		b, told := withNotice(t, be, tools, nil)
		// Once the turn's start has committed, another writer takes the
		// step the suspension will write.
		var taken *store.Checkpoint
		b.afterStart(func(ctx context.Context, owner, _ string, st *runstate.State) {
			other := *st
			other.Step = 2
			var err error
			if taken, err = b.st.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: &other}); err != nil {
				t.Errorf("the other writer: %v", err)
			}
		})
		var thread, run string
		var runErr error
		for ev, err := range b.svc.Turn(ctx, owner, "Where is my order 1234?", threads.TurnOptions{RunOptions: b.cont.RunOptions()}) {
			if e, ok := ev.(*runner.RunStartEvent); ok {
				thread, run = e.ThreadID, e.RunID
			}
			if err != nil {
				runErr = err
			}
		}
		if taken == nil {
			t.Fatal("the other writer did not write")
		}
		var stale *store.StaleWriteError
		var ee *EnqueueError
		if !errors.As(runErr, &stale) || errors.As(runErr, &ee) || stale.LatestID != taken.ID || stale.Step != 2 {
			t.Errorf("the run ended with %v, want the suspension's StaleWriteError (the newest checkpoint %s), not an EnqueueError", runErr, taken.ID)
		}
		if *told != nil {
			t.Errorf("the fallback was told %v: the run answered without tools", *told)
		}
		if cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run}); err != nil || cp.ID != taken.ID {
			t.Errorf("the run's newest checkpoint %+v, %v; want the other writer's", cp, err)
		}
		nothingHandedOver(t, b, thread, run, "")
	})
}

// TestHandoverKeyTaken: a hand-over whose event already has a job run (its
// idempotency key taken, by a writer outside the run) writes nothing more;
// the inline run answers without the tool, and the notice is told the job
// run's conflict, on both backends alike (on PostgreSQL the job run is
// deferred to River's insert, whose statement reports the refusal).
func TestHandoverKeyTaken(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		tools := newToolLog()
		b, told := withNotice(t, be, tools, nil)
		var taken *store.JobRun
		b.afterStart(func(ctx context.Context, owner, thread string, st *runstate.State) {
			res, err := b.st.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: owner, IdempotencyKey: EventID(st.RunID, 2), Kind: Kind, ThreadID: thread})
			if err != nil {
				t.Errorf("the other writer: %v", err)
				return
			}
			taken = res.Run
		})
		thread, run, end := b.turn(t, "Where is my order 1234?")
		if taken == nil {
			t.Fatal("the other writer did not write")
		}
		if end == nil || end.Status != runstate.StatusCompleted {
			t.Fatalf("inline run ended %+v, want completed without the tool", end)
		}
		var ee *EnqueueError
		if !errors.As(*told, &ee) || ee.Step != "job run" || !errors.Is(*told, store.ErrConflict) {
			t.Errorf("notice was told %v, want the job run's conflict", *told)
		}
		nothingHandedOver(t, b, thread, run, taken.ID)
	})
}

// afterStart has write, a writer outside the run, write once the turn's
// start (its checkpoint of step 1) has committed, and only the first time.
func (b *bundle) afterStart(write func(ctx context.Context, owner, thread string, st *runstate.State)) {
	var once sync.Once
	b.svc.Committed = func(ctx context.Context, owner, thread string, st *runstate.State) {
		if st.Step == 1 {
			once.Do(func() { write(ctx, owner, thread, st) })
		}
	}
}

// nothingHandedOver checks that run, on thread, left no hand-over at its
// step 2 — no placeholder, job run (but jobRun, the id of one written by
// another writer, when not "") or River job — and that its slow tool did
// not run; it returns the thread's messages.
func nothingHandedOver(t *testing.T, b *bundle, thread, run, jobRun string) []message.Message {
	t.Helper()
	msgs, phs := stored(t, b.st, thread)
	if len(phs) != 0 {
		t.Errorf("placeholder left: %+v", phs[0])
	}
	jr, err := b.st.GetJobRun(t.Context(), &store.GetJobRunParams{OwnerID: owner, IdempotencyKey: EventID(run, 2)})
	switch {
	case jobRun == "" && !errors.Is(err, store.ErrNotFound):
		t.Errorf("job run left: %+v, %v", jr, err)
	case jobRun != "" && (err != nil || jr.ID != jobRun):
		t.Errorf("the event's job run %+v, %v; want the other writer's %s", jr, err, jobRun)
	}
	if jobs := riverJobs(t, b.st); len(jobs) != 0 {
		t.Errorf("river jobs left: %v", jobs)
	}
	if keys, _ := b.tools.total(); keys != 0 {
		t.Errorf("the slow tool ran")
	}
	return msgs
}

// TestAfterRunOnce: an extension of the worker's runner is told once, in
// the worker, after the final transaction committed, that the
// continuation's run completed (a thread handoff's seed is cleared there).
func TestAfterRunOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		type call struct {
			owner, thread, run string
			status             runstate.Status
			resumed            bool
		}
		var mu sync.Mutex
		var calls []call
		var b *bundle
		tools := newToolLog()
		after := runner.ExtensionFuncs{After: func(ctx context.Context, o *runner.Outcome) {
			if o.State.Status != runstate.StatusCompleted {
				return
			}
			owner, _ := store.OwnerFromContext(ctx)
			// The final transaction is committed: the placeholder is final.
			m, err := b.st.GetMessage(ctx, &store.GetMessageParams{OwnerID: owner, ID: EventID(o.State.RunID, 2)})
			if err != nil || m.Status != message.StatusCompleted {
				t.Errorf("placeholder when the run ends: %+v, %v", m, err)
			}
			mu.Lock()
			calls = append(calls, call{owner, o.State.ThreadID, o.State.RunID, o.State.Status, o.Resumed})
			mu.Unlock()
		}}
		b = setup(t, be, network(t, tools, "", scripted.Options{}), tools, nil, after)
		thread, run, _ := b.turn(t, "Where is my order 1234?")
		b.start(t)
		b.waitMessage(t, EventID(run, 2), 30*time.Second)
		waitRiver(t, b.st, 10*time.Second)
		// The final transaction (placeholder and River job included) has
		// committed; the worker's AfterRun follows it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			n := len(calls)
			mu.Unlock()
			if n > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // room for a wrong second call
		mu.Lock()
		defer mu.Unlock()
		if want := (call{owner, thread, run, runstate.StatusCompleted, true}); len(calls) != 1 || calls[0] != want {
			t.Fatalf("completed runs = %+v, want one %+v", calls, want)
		}
	})
}

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
			r, err := runner.New(runner.Config{Network: net, Logger: backendtest.Logger()})
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
			// A lease long enough that no delivery outlives it: then
			// exactly one delivery claims the run (the others find it
			// claimed, or lose the race to claim it: TestClaimRace).
			logger, logs := logtest.New()
			b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, func(c *Config) {
				c.testNoUnique, c.Workers = true, 8
				c.JobTimeout, c.RescueStuckJobsAfter = 10*time.Second, 15*time.Second
				c.Logger = logger
			})
			defer func() {
				// A second claim has a cause in the log (a transient
				// failure, a delivery past its lease): show it.
				if t.Failed() {
					t.Logf("the continuation's log:\n%s", logs)
				}
			}()
			_, run, h := b.handOver(t)
			// 99 more deliveries of the same job.
			cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
			if err != nil {
				t.Fatal(err)
			}
			args := Args{OwnerID: owner, ThreadID: cp.ThreadID, RunID: run, EventID: h.EventID, JobRunID: h.JobRun.ID, Fingerprint: cp.Fingerprint}
			for range 99 {
				err := b.st.Tx(ctx, func(tx store.Tx) error {
					// In the owner's scope, as the hand-over inserts it:
					// on PostgreSQL River's jobs are under row-level
					// security (pgstore's IsolateRiverJobs).
					if _, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: cp.ThreadID}); err != nil {
						return err
					}
					_, _, err := b.cont.q.insertTx(ctx, tx, args, nil)
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
	_, run, h := b.handOver(t)
	b.start(t)
	b.waitMessage(t, h.MessageID, 30*time.Second)
	waitRiver(t, b.st, 10*time.Second)
	before := statuses(t, b.st, run)
	cp, _ := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
	args := Args{OwnerID: owner, ThreadID: cp.ThreadID, RunID: run, EventID: h.EventID, JobRunID: h.JobRun.ID, Fingerprint: cp.Fingerprint}
	if err := b.st.Tx(ctx, func(tx store.Tx) error { _, _, err := b.cont.q.insertTx(ctx, tx, args, nil); return err }); err != nil {
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

// TestClaimRace: two deliveries claim the run at once. A claim takes the
// run's checkpoint lock before it reads anything, so they are serialised:
// the delivery that read the job run first (never claimed, attempt 0) holds
// the lock, the other waits for it to commit, then finds the job run
// claimed and leaves the run to it (comes back after its lease), without
// writing a checkpoint or counting a second attempt. (PostgreSQL: SQLite
// runs one write transaction at a time, so the second claim cannot even
// start.) Before the lock came first, the second claim read the job run
// before the first committed and lost at its checkpoint or its fenced
// transition, which the claim still refuses (isLost).
func TestClaimRace(t *testing.T) {
	t.Parallel()
	var pg *backend
	for _, be := range backends(t) {
		if be.name == "Postgres" {
			pg = &be
		}
	}
	if pg == nil {
		t.Skip("PostgreSQL only, and no PostgreSQL URL is set (" + testdb.URLVar + ")")
	}
	ctx := t.Context()
	tools := newToolLog()
	read, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b := setup(t, *pg, network(t, tools, "", scripted.Options{}), tools, func(c *Config) {
		c.testHook = func(step string) error {
			if step != "claim read" {
				return nil
			}
			first := false
			once.Do(func() { first = true })
			if first {
				close(read)
				<-release
			}
			return nil
		}
	})
	_, run, h := b.handOver(t)
	cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	args := Args{OwnerID: owner, ThreadID: cp.ThreadID, RunID: run, EventID: h.EventID, JobRunID: h.JobRun.ID, Fingerprint: cp.Fingerprint}
	job := func(id int64) *river.Job[Args] {
		return &river.Job[Args]{JobRow: &rivertype.JobRow{ID: id, Attempt: 1}, Args: args}
	}
	type result struct {
		c   *claim
		err error
	}
	first := make(chan result, 1)
	go func() {
		j := job(1)
		c, err := b.cont.claim(ctx, j, new(bool), &deliveryLog{base: b.cont.log, job: j})
		first <- result{c, err}
	}()
	<-read // the first delivery has read the job run at attempt 0, under the run's lock
	second := make(chan result, 1)
	go func() {
		j := job(2)
		c, err := b.cont.claim(ctx, j, new(bool), &deliveryLog{base: b.cont.log, job: j})
		second <- result{c, err}
	}()
	select {
	case r := <-second:
		t.Fatalf("the second claim ended while the first held the run's lock: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	won := <-first
	if won.err != nil || won.c.cp == nil || won.c.attempt != 1 {
		t.Fatalf("first claim: %+v", won)
	}
	lost := <-second
	if lost.err != nil || lost.c.cp != nil || lost.c.lease <= 0 {
		t.Fatalf("second claim: %+v (error %v), want the run left to the first claim for its lease", lost.c, lost.err)
	}
	jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
	if err != nil {
		t.Fatal(err)
	}
	if jr.Status != store.JobProcessing || jr.Attempt != 1 {
		t.Errorf("job run %s attempt %d, want processing at attempt 1", jr.Status, jr.Attempt)
	}
	latest, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	if latest.ID != won.c.cp.ID {
		t.Errorf("latest checkpoint %s (step %d), want the first claim's %s", latest.ID, latest.Step, won.c.cp.ID)
	}
}
