package e2e_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// TestControlAcrossReplicas: control reaches a run wherever it executes.
// Two `baton serve` replicas on one PostgreSQL, each addressed directly so
// that the request lands on the replica that does not execute the run:
//   - a cancel posted to replica 0 stops a run streaming on replica 1 at its
//     next safe boundary (its own stream ends cancelled, with what it said:
//     the signal reached it, it was not ended from outside), and the thread
//     takes a new run on either replica;
//   - double-texting's interrupt posted to replica 0 stops the run streaming
//     on replica 1 the same way, keeping its partial answer, and the new run
//     follows;
//   - a decision posted to replica 1 resumes a run that waits for it after
//     replica 0 started it, and replica 0 then reads the run completed; a
//     cancel posted to replica 1 ends another one waiting, and replica 0 reads
//     it cancelled;
//   - cancels, decisions and reads through HAProxy, landing on either
//     replica, do the same;
//   - a cancel of a run whose replica was SIGKILLed mid-run ends it (after
//     StopWait), and the run is not adopted afterwards.
func TestControlAcrossReplicas(t *testing.T) {
	batonBin(t)
	t.Parallel()
	onPostgres(t, func(t *testing.T, be backend) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		c := startCluster(t, be.open(t), newEffects(t, nil), clusterConfig{serveWorkers: 2, replicas: 2})
		a := &api{key: c.api.key, base: c.serves[0].url}
		b := &api{key: c.api.key, base: c.serves[1].url}

		t.Run("Cancel", func(t *testing.T) {
			thread, run, end := streamNew(ctx, t, b)
			var got runResult
			if err := a.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs/"+run+"/cancel", nil, &got); err != nil {
				t.Fatalf("cancel on replica 0: %v", err)
			}
			if got.Status != "cancelled" {
				t.Fatalf("cancel on replica 0: %+v", got)
			}
			e := <-end
			if e == nil || e.Status != runstate.StatusCancelled || e.Output != got.Output {
				t.Fatalf("the run's own stream on replica 1 ended %+v, want cancelled with %q", e, got.Output)
			}
			for i, on := range []*api{a, b} {
				if r, err := on.run(ctx, thread, run); err != nil || r.Status != "cancelled" {
					t.Fatalf("GET the run on replica %d: %+v %v", i, r, err)
				}
			}
			// Cancelling again answers the same; the thread is free.
			if err := b.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs/"+run+"/cancel", nil, &got); err != nil || got.Status != "cancelled" {
				t.Fatalf("second cancel on replica 1: %+v %v", got, err)
			}
			if _, evs, err := a.stream(ctx, thread, paths["inline"][1], nil, nil); err != nil || !completed(evs) {
				t.Fatalf("a run after the cancel: %v", err)
			}
		})

		t.Run("Interrupt", func(t *testing.T) {
			thread, run, end := streamNew(ctx, t, b)
			var queued runResult
			if err := a.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs",
				map[string]any{"input": paths["inline"][1], "multitask_strategy": "interrupt"}, &queued); err != nil {
				t.Fatalf("interrupt on replica 0: %v", err)
			}
			e := <-end
			if e == nil || e.Status != runstate.StatusCancelled || e.Output == "" || e.Stopped == nil || e.Stopped.RunID != queued.ID {
				t.Fatalf("the interrupted run's own stream on replica 1 ended %+v", e)
			}
			waitStatus(ctx, t, a, thread, queued.ID, "completed")
			if r, err := b.run(ctx, thread, run); err != nil || r.Status != "cancelled" || r.Output != e.Output {
				t.Fatalf("the interrupted run on replica 1: %+v %v", r, err)
			}
		})

		t.Run("ThroughTheBalancer", func(t *testing.T) {
			// The same through HAProxy (round-robin, no stickiness):
			// each request lands on either replica.
			lb := c.api
			for i := range 4 {
				thread, run, end := streamNew(ctx, t, lb)
				var got runResult
				if err := lb.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs/"+run+"/cancel", nil, &got); err != nil || got.Status != "cancelled" {
					t.Fatalf("cancel %d through the balancer: %+v %v", i, got, err)
				}
				if e := <-end; e == nil || e.Status != runstate.StatusCancelled {
					t.Fatalf("run %d's own stream ended %+v, want cancelled", i, e)
				}
				var r struct {
					ID, Status string
					Interrupt  *runstate.Interrupt
				}
				if err := lb.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs", map[string]any{"input": "[approve] Please refund order 1234."}, &r); err != nil || r.Interrupt == nil {
					t.Fatalf("refund %d through the balancer: %+v %v", i, r, err)
				}
				var out runResult
				if err := lb.do(ctx, http.MethodPost, "/v1/interrupts/"+r.Interrupt.ID+"/decision", map[string]any{"type": "approve"}, &out); err != nil || out.Status != "completed" {
					t.Fatalf("approve %d through the balancer: %+v %v", i, out, err)
				}
				for k := range 2 {
					if got, err := lb.run(ctx, thread, r.ID); err != nil || got.Status != "completed" {
						t.Fatalf("GET %d.%d through the balancer: %+v %v", i, k, got, err)
					}
				}
			}
		})

		t.Run("Decisions", func(t *testing.T) {
			for _, decide := range []string{"approve", "cancel"} {
				var th struct{ ID string }
				var err error
				if th.ID, err = a.createThread(ctx); err != nil {
					t.Fatal(err)
				}
				var r struct {
					ID, Status string
					Interrupt  *runstate.Interrupt
				}
				if err := a.do(ctx, http.MethodPost, "/v1/threads/"+th.ID+"/runs", map[string]any{"input": "[approve] Please refund order 1234."}, &r); err != nil {
					t.Fatal(err)
				}
				if r.Status != "interrupted" || r.Interrupt == nil {
					t.Fatalf("refund on replica 0: %+v", r)
				}
				// A stream of the thread on replica 0 sees the run's
				// end, wherever it is decided. The decision waits for
				// the stream's first event (the thread as it is: the run
				// interrupted), or a stream that connected after it would
				// only find the run ended in that first event.
				var onA threadReader
				seen := make(chan error, 1)
				first := make(chan struct{})
				var once sync.Once
				go func() {
					seen <- onA.follow(ctx, a, th.ID, "", nil, func(e threadEvent) bool {
						once.Do(func() { close(first) })
						return e.typ == "run_end" && e.data["run_id"] == r.ID && e.data["status"] != "interrupted"
					})
				}()
				select {
				case <-first:
				case err := <-seen:
					t.Fatalf("the thread's stream on replica 0 ended before its first event: %v", err)
				}
				want := "cancelled"
				var out runResult
				if decide == "approve" {
					want = "completed"
					err = b.do(ctx, http.MethodPost, "/v1/interrupts/"+r.Interrupt.ID+"/decision", map[string]any{"type": "approve"}, &out)
				} else {
					err = b.do(ctx, http.MethodPost, "/v1/threads/"+th.ID+"/runs/"+r.ID+"/cancel", nil, &out)
				}
				if err != nil || out.Status != want {
					t.Fatalf("%s on replica 1: %+v %v", decide, out, err)
				}
				// Replica 0 knew the run waiting: it reads it as it is now.
				if got, err := a.run(ctx, th.ID, r.ID); err != nil || got.Status != want {
					t.Fatalf("after %s on replica 1, replica 0 reads %+v %v", decide, got, err)
				}
				if err := <-seen; err != nil {
					t.Fatalf("the thread's stream on replica 0 did not see the run end after %s on replica 1: %v; it got:\n%s", decide, err, listing(onA.events()))
				}
				if end := onA.events()[len(onA.events())-1]; end.data["status"] != want {
					t.Fatalf("the thread's stream on replica 0 ended the run %s, want %s", end.raw, want)
				}
			}
		})

		t.Run("CancelOnADeadReplica", func(t *testing.T) {
			// The replica executing the run is SIGKILLed mid-run: the
			// cancel on the other ends it in the database after
			// StopWait, and nothing adopts it afterwards.
			thread, run, end := streamNew(ctx, t, b)
			c.serves[1].kill()
			<-end
			var got runResult
			if err := a.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs/"+run+"/cancel", nil, &got); err != nil || got.Status != "cancelled" {
				t.Fatalf("cancel of a dead replica's run: %+v %v", got, err)
			}
			if err := c.serves[1].start(); err != nil {
				t.Fatal(err)
			}
			if n := c.db.count(t, `SELECT count(*) FROM run_leases`); n != 0 {
				t.Fatalf("%d leases left after the cancel", n)
			}
			if r, err := b.run(ctx, thread, run); err != nil || r.Status != "cancelled" {
				t.Fatalf("the run on the restarted replica: %+v %v", r, err)
			}
			if _, evs, err := b.stream(ctx, thread, paths["inline"][1], nil, nil); err != nil || !completed(evs) {
				t.Fatalf("a run after the cancel: %v", err)
			}
		})
	})
}

// streamNew creates a thread on on and streams its first inline input
// there (streamOn).
func streamNew(ctx context.Context, t *testing.T, on *api) (thread, run string, end <-chan *runner.RunEndEvent) {
	t.Helper()
	thread, err := on.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	run, end = streamOn(ctx, t, on, thread, paths["inline"][0])
	return thread, run, end
}

// streamOn starts a run of input on thread through on and returns its id
// once its answer streams; end gets its run_end (nil if the stream ended
// without one).
func streamOn(ctx context.Context, t *testing.T, on *api, thread, input string) (string, <-chan *runner.RunEndEvent) {
	t.Helper()
	ids := make(chan string, 1)
	streaming := make(chan struct{})
	end := make(chan *runner.RunEndEvent, 1)
	go func() {
		var last *runner.RunEndEvent
		_, evs, err := on.stream(ctx, thread, input, func(run string) { ids <- run }, func(ev runner.Event) bool {
			if _, ok := ev.(*runner.TextDeltaEvent); ok {
				select {
				case <-streaming:
				default:
					close(streaming)
				}
			}
			return false
		})
		for _, ev := range evs {
			if e, ok := ev.(*runner.RunEndEvent); ok {
				last = e
			}
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("stream of %q: %v", input, err)
		}
		end <- last
	}()
	run := receive(t, ctx, ids, "the run did not start")
	receive(t, ctx, streaming, "run %s did not stream", run)
	return run, end
}

// waitStatus waits until run reads status on on.
func waitStatus(ctx context.Context, t *testing.T, on *api, thread, run, status string) {
	t.Helper()
	for {
		r, err := on.run(ctx, thread, run)
		if err == nil && r.Status == status {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s: %+v %v, want %s", run, r, err, status)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
