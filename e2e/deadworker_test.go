package e2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// deadLease is --lease-ttl of TestDeadWorker's processes. --job-timeout and
// --rescue-after are minutes: River's rescuer cannot be what resumes the
// continuation within the bound.
const deadLease = 6 * time.Second

// deadBound is how long after the SIGKILL of the process working a
// continuation another process resumes it (docs/continuation.md): the
// lease expires within --lease-ttl of the kill (it was renewed every
// --lease-ttl/3), an adopter notices within --lease-ttl/6 and makes the
// River job available again, and a worker fetches it (within a second).
const deadBound = deadLease * 3 / 2

// TestDeadWorker: a continuation whose executing process is SIGKILLed
// mid tool call — a `baton worker`, or `baton serve` with its in-process
// workers — is resumed by a live process within --lease-ttl × 1.5 (its
// lease on the run, renewed while it works, expires and an adopter
// delivers its River job again), not after River's rescue (minutes here).
// The resumed run completes; the interrupted call's effect happened once
// (its second delivery carries the same idempotency key); nothing is left
// open: no lease, no River job, no placeholder streaming.
func TestDeadWorker(t *testing.T) {
	batonBin(t)
	eachBackend(t, func(t *testing.T, be backend) {
		for _, victim := range []string{"worker", "serve"} {
			t.Run(victim, func(t *testing.T) { deadWorker(t, be, victim) })
		}
	})
}

func deadWorker(t *testing.T, be backend, victim string) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var shipHold atomic.Int64
	shipHold.Store(int64(10 * time.Minute))
	fx := newEffects(t, func(tool string) time.Duration {
		if tool == "ship" {
			return time.Duration(shipHold.Load())
		}
		return 0
	})
	cfg := clusterConfig{serveWorkers: 0, workers: 2, workerSlots: 2,
		flags: []string{"--lease-ttl", deadLease.String(), "--job-timeout", "3m", "--rescue-after", "10m"}}
	if victim == "serve" {
		// serve works the continuation; the worker starts once it does.
		cfg.serveWorkers, cfg.workers = 2, 1
	}
	c := startCluster(t, be.open(t), fx, cfg)
	if victim == "serve" {
		c.workers[0].stop(15 * time.Second)
	}
	thread, err := c.api.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls, stopWatch := fx.watch()
	defer stopWatch()
	go func() {
		_, _, _ = c.api.stream(ctx, thread, paths["background"][0], nil, firstEnd)
	}()
	first, ok := nextCall(ctx, calls, time.Minute, func(ev callEvent) bool { return ev.tool == "ship" && !ev.done })
	if !ok {
		t.Fatal("no ship call within a minute")
	}
	run, _, _ := strings.Cut(first.key, ":")
	var dead *proc
	switch {
	case victim == "serve" && first.caller == "serve":
		dead = c.serve.proc
		if err := startAndWait(ctx, c.workers[0], "baton worker: started"); err != nil {
			t.Fatal(err)
		}
	case victim == "worker" && strings.HasPrefix(first.caller, "worker-"):
		for _, w := range c.workers {
			if w.name == first.caller {
				dead = w
			}
		}
	}
	if dead == nil {
		t.Fatalf("the continuation's ship call came from %s, want a %s", first.caller, victim)
	}
	dead.kill()
	killed := time.Now()
	shipHold.Store(0)
	again, ok := nextCall(ctx, calls, 2*deadBound, func(ev callEvent) bool { return ev.key == first.key && !ev.done })
	if !ok {
		t.Fatalf("the continuation of run %s was not resumed within %s of the SIGKILL of %s", run, 2*deadBound, dead.name)
	}
	resumed := time.Since(killed)
	t.Logf("SIGKILL of %s mid continuation: %s resumed it after %s (bound: --lease-ttl %s × 1.5 = %s)", dead.name, again.caller, resumed.Round(time.Millisecond), deadLease, deadBound)
	if resumed > deadBound {
		t.Errorf("the continuation was resumed %s after the SIGKILL, want within %s", resumed, deadBound)
	}
	if again.caller == first.caller {
		t.Errorf("the continuation was resumed by %s, the process killed", again.caller)
	}
	if victim == "serve" {
		if err := c.ensure(); err != nil { // the API again
			t.Fatal(err)
		}
	}
	var r *runResult
	waitUntil(ctx, t, time.Minute, 100*time.Millisecond, func() bool {
		r, err = c.api.run(ctx, thread, run)
		return err == nil && r.Status == "completed"
	}, func() string {
		return fmt.Sprintf("run %s: %+v %v, want completed within a minute of its resume", run, r, err)
	})
	if _, applied, _ := fx.counts(); applied != 1 {
		t.Errorf("%d effects applied, want 1 (the ship call once, under its key)", applied)
	}
	adopted := 0
	for _, p := range c.daemons() {
		b, _ := os.ReadFile(p.logPath)
		adopted += strings.Count(string(b), "a continuation whose worker died is delivered again")
	}
	if adopted != 1 {
		t.Errorf("%d logs of a continuation delivered again, want 1", adopted)
	}
	// Nothing left open, once the run's last writes are in.
	var left string
	waitUntil(ctx, t, 30*time.Second, 200*time.Millisecond, func() bool {
		left = leftovers(t, c.db)
		return left == ""
	}, func() string { return "left open 30s after the run completed: " + left })
}

// nextCall waits up to d for a call event accepted by want.
func nextCall(ctx context.Context, calls <-chan callEvent, d time.Duration, want func(callEvent) bool) (callEvent, bool) {
	timeout := time.After(d)
	for {
		select {
		case ev := <-calls:
			if want(ev) {
				return ev, true
			}
		case <-timeout:
			return callEvent{}, false
		case <-ctx.Done():
			return callEvent{}, false
		}
	}
}

// startAndWait starts p and waits until it logs a line containing ready.
func startAndWait(ctx context.Context, p *proc, ready string) error {
	count := func() int {
		b, _ := os.ReadFile(p.logPath)
		return strings.Count(string(b), ready)
	}
	before := count()
	if err := p.start(); err != nil {
		return err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if count() > before {
			return nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s did not log %q within 30s", p.name, ready)
}

// leftovers describes what is left open in db: leases, River jobs not
// finished, placeholders queued or streaming, job runs not completed; ""
// when nothing is.
func leftovers(t *testing.T, db *database) string {
	var out []string
	for _, q := range []struct{ what, query string }{
		{"leases", "SELECT count(*) FROM run_leases"},
		{"River jobs not finished", "SELECT count(*) FROM river_job WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')"},
		{"placeholders queued or streaming", "SELECT count(*) FROM messages WHERE status IN ('queued', 'streaming')"},
		{"job runs not completed", "SELECT count(*) FROM job_runs WHERE status <> 'completed'"},
	} {
		if n := db.count(t, q.query); n != 0 {
			out = append(out, fmt.Sprintf("%d %s", n, q.what))
		}
	}
	return strings.Join(out, ", ")
}
