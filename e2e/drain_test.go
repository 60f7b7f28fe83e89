package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/sse"
)

// The timings of TestDrain: a short --shutdown-timeout, a lookup slower than
// it, and a lease far longer than both, so that a run finishing on the other
// replica within drainBound cannot have waited for its lease to expire.
const (
	drainTimeout = 3 * time.Second  // --shutdown-timeout of the replicas
	drainLease   = 60 * time.Second // --lease-ttl
	slowLookup   = 5 * time.Second  // a lookup call outlives drainTimeout
	// exitMargin is how long after --shutdown-timeout a draining replica
	// may take to exit: the runs cut handed to River, the streams ended,
	// its River client stopped, the database closed.
	exitMargin = 3 * time.Second
	// drainBound is how long after the SIGTERM the run cut at
	// --shutdown-timeout takes to complete on the other replica: the
	// timeout, the hand-over (one transaction) and a River fetch (the
	// other replica's workers are woken by LISTEN/NOTIFY, else poll every
	// second), then the rest of the run — the lookup again (slowLookup:
	// the effects service holds every delivery) and a model turn (under
	// a second) — and 3 s of room for a loaded machine. Far below
	// drainLease: the hand-over does not wait for the lease.
	drainBound = drainTimeout + time.Second + slowLookup + time.Second + 3*time.Second
	// resumeBound is how long after the SIGTERM the other replica resumes
	// the cut run: --shutdown-timeout, then the hand-over and a River
	// fetch (about a second at most), and a second of room.
	resumeBound = drainTimeout + 2*time.Second
)

// TestDrain is a rolling restart's SIGTERM, forced and deterministic, on two
// `baton serve` replicas on one PostgreSQL database behind HAProxy
// (docs/deploy.md, Rolling restarts):
//
//   - a run whose tool call outlives --shutdown-timeout: while the replica
//     drains, /readyz and new runs answer 503 with Retry-After; the run's
//     stream ends with a `shutdown` event; the replica exits within the
//     timeout and exitMargin; the run, handed to River at the timeout from
//     its last checkpoint, completes on the other replica within drainBound
//     (--lease-ttl is 60 s); the tool's effect happened once; a client
//     reconnecting with Last-Event-ID through HAProxy gets the rest of the
//     run's events, no gap, no repeat;
//   - a run that finishes within the timeout completes on the draining
//     replica, its stream with it, and is not handed over.
//
// SQLite is one process's database: the test needs PostgreSQL.
func TestDrain(t *testing.T) {
	batonBin(t)
	t.Parallel()
	ran := false
	for _, be := range backends(t, "") {
		if be.name != "Postgres" {
			t.Run(be.name, func(t *testing.T) {
				t.Skip("SQLite is one process's database: replicas, and a drain that hands runs to another, need PostgreSQL")
			})
			continue
		}
		ran = true
		t.Run(be.name, func(t *testing.T) {
			var lookupHold atomic.Int64
			fx := newEffects(t, func(tool string) time.Duration {
				if tool == "lookup" {
					return time.Duration(lookupHold.Load())
				}
				return 0
			})
			c := startCluster(t, be.open(t), fx, clusterConfig{serveWorkers: 2, replicas: 2,
				flags:      []string{"--lease-ttl", drainLease.String()},
				serveFlags: []string{"--shutdown-timeout", drainTimeout.String()}})
			t.Run("FinishesWithinTimeout", func(t *testing.T) {
				lookupHold.Store(0)
				drainFinishes(t, c, fx)
			})
			if t.Failed() {
				return
			}
			t.Run("OutlivesTimeout", func(t *testing.T) {
				lookupHold.Store(int64(slowLookup))
				drainOutlives(t, c, fx)
			})
		})
	}
	if !ran {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL only (replicas share a database), and no PostgreSQL URL is set in CI")
		}
		t.Skip("PostgreSQL only (replicas share a database; SQLite is one process's), and no PostgreSQL URL is set")
	}
}

// drainFinishes: replica 1 gets SIGTERM while a run streams on it; the run
// needs less than --shutdown-timeout and completes there.
func drainFinishes(t *testing.T, c *cluster, fx *effects) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	victim := c.serves[1]
	on := &api{key: c.api.key, base: victim.url}
	thread, other := twoThreads(ctx, t, on)
	s := startStream(ctx, on, thread, paths["inline"][0])
	if err := s.await(ctx, "run_start"); err != nil {
		t.Fatal(err)
	}
	termed := sigterm(t, victim)
	checkRefused(ctx, t, on, other)
	evs, err := s.wait(ctx)
	if err != nil {
		t.Fatalf("the stream on the draining replica: %v; got:\n%s", err, listing(evs))
	}
	if last := evs[len(evs)-1]; last.typ != "run_end" || last.data["status"] != "completed" {
		t.Errorf("the stream on the draining replica ends with %s, want run_end completed:\n%s", comparable(last), listing(evs))
	}
	for _, e := range evs {
		if e.typ == "shutdown" || e.typ == "error" {
			t.Errorf("a run that finished within --shutdown-timeout: its stream got %s", comparable(e))
		}
	}
	exited := checkExit(t, victim, termed)
	t.Logf("the run finished on the draining replica %s after the SIGTERM, which exited after %s", time.Since(termed).Round(time.Millisecond), exited.Round(time.Millisecond))
	run := s.runID()
	if r, err := c.api.run(ctx, thread, run); err != nil || r.Status != "completed" {
		t.Fatalf("run %s: %+v %v, want completed", run, r, err)
	}
	if _, ph := c.db.messages(t, thread); len(ph) != 0 {
		t.Errorf("run %s was handed to a worker (%d placeholders): it had time to finish inline", run, len(ph))
	}
	checkEffects(t, fx, run, evs)
	restart(ctx, t, victim)
}

// drainOutlives: replica 0 gets SIGTERM while a run's lookup call, slower
// than --shutdown-timeout, is under way; the run is cut at the timeout,
// handed to River, and replica 1 finishes it.
func drainOutlives(t *testing.T, c *cluster, fx *effects) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	victim := c.serves[0]
	on := &api{key: c.api.key, base: victim.url}
	thread, other := twoThreads(ctx, t, on)
	calls, stop := fx.watch()
	defer stop()
	s := startStream(ctx, on, thread, paths["inline"][0])
	if !await(ctx, calls, 30*time.Second, func(ev callEvent) bool { return ev.tool == "lookup" && !ev.done }) {
		t.Fatal("no lookup call within 30s")
	}
	termed := sigterm(t, victim)
	// The run resumes where the lookup call was cut: the call again, under
	// its idempotency key, by a worker of the other replica.
	resumed := make(chan time.Duration, 1)
	go func() {
		if await(ctx, calls, drainBound, func(ev callEvent) bool { return ev.tool == "lookup" && !ev.done }) {
			resumed <- time.Since(termed)
		}
		close(resumed)
	}()
	checkRefused(ctx, t, on, other)
	checkBalanced(ctx, t, c)
	first, err := s.wait(ctx)
	if err != nil {
		t.Fatalf("the stream on the draining replica: %v; got:\n%s", err, listing(first))
	}
	if len(first) == 0 || first[len(first)-1].typ != "shutdown" {
		t.Fatalf("the stream on the draining replica does not end with a shutdown event:\n%s", listing(first))
	}
	for _, e := range first[:len(first)-1] {
		if e.typ == "run_end" || e.typ == "error" {
			t.Errorf("the stream of a run cut by the shutdown got %s: the run is not over", comparable(e))
		}
	}
	exited := checkExit(t, victim, termed)
	run := s.runID()

	// Reconnect through HAProxy (replica 0 is out of the rotation, or
	// down: HAProxy retries on replica 1) after the last id.
	last := ""
	for _, e := range first {
		if e.id != "" {
			last = e.id
		}
	}
	rest, err := runEvents(ctx, c.api, thread, run, last)
	if err != nil {
		t.Fatalf("reconnecting after %s: %v; got:\n%s", last, err, listing(rest))
	}
	done := time.Since(termed)
	resumedAfter, ok := <-resumed
	if !ok {
		t.Fatalf("the cut lookup call was not made again within %s", drainBound)
	}
	if resumedAfter > resumeBound {
		t.Errorf("the run resumed %s after the SIGTERM, want within %s (--shutdown-timeout, the hand-over, a River fetch)", resumedAfter, resumeBound)
	}
	if len(rest) == 0 || rest[len(rest)-1].typ != "run_end" || rest[len(rest)-1].data["status"] != "completed" {
		t.Fatalf("the reconnected stream does not end with run_end completed:\n%s", listing(rest))
	}
	t.Logf("SIGTERM mid lookup: the replica exited after %s; the other replica resumed the run %s after the SIGTERM (bound %s) and completed it after %s (bound %s; --lease-ttl %s)",
		exited.Round(time.Millisecond), resumedAfter.Round(time.Millisecond), resumeBound, done.Round(time.Millisecond), drainBound, drainLease)
	if done > drainBound {
		t.Errorf("the run completed %s after the SIGTERM, want within %s (it must not wait for its lease, %s)", done, drainBound, drainLease)
	}
	if n := c.adoptions(); n != 0 {
		t.Errorf("%d runs adopted after their lease expired, want 0: the draining replica hands its run over itself", n)
	}
	b, _ := os.ReadFile(victim.logPath)
	if !strings.Contains(string(b), "a cancelled run was handed to a worker") {
		t.Errorf("the draining replica's log does not say it handed the run over")
	}

	// No gap, no repeat: the events the client got, over both
	// connections, are the run's events as the store has them.
	got := append(append([]threadEvent(nil), first[:len(first)-1]...), rest...)
	for i := 1; i < len(got); i++ {
		if !idLess(got[i-1].id, got[i].id) {
			t.Fatalf("ids not increasing across the reconnect: %s then %s:\n%s", got[i-1].id, got[i].id, listing(got))
		}
	}
	all, err := runEvents(ctx, c.api, thread, run, "")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := listing(durable(got)), listing(durable(all)); g != w {
		t.Errorf("the client got (live, then reconnected after %s):\n%s\nthe run's events from the store:\n%s", last, g, w)
	}
	if r, err := c.api.run(ctx, thread, run); err != nil || r.Status != "completed" {
		t.Fatalf("run %s: %+v %v, want completed", run, r, err)
	}
	checkEffects(t, fx, run, got)
	// The cut call was delivered twice under one key (the cut attempt and
	// the resume) and applied once.
	for _, k := range fx.keys(run) {
		n := 0
		for _, d := range fx.all() {
			if d.key == k {
				n++
			}
		}
		if d, _ := fx.effect(k); d.tool == "lookup" && n != 2 {
			t.Errorf("the cut lookup call %s was delivered %d times, want 2 (cut, then resumed under its key)", k, n)
		}
	}
	restart(ctx, t, victim)
}

// runStream is a run started with stream: true, read in the background.
type runStream struct {
	mu    sync.Mutex
	run   string
	evs   []threadEvent
	err   error
	seen  chan struct{} // a new event came
	ended chan struct{}
}

// startStream starts a run of input on thread through a and reads its
// stream until it ends.
func startStream(ctx context.Context, a *api, thread, input string) *runStream {
	s := &runStream{seen: make(chan struct{}, 1), ended: make(chan struct{})}
	go func() {
		defer close(s.ended)
		resp, err := a.request(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs", map[string]any{"input": input, "stream": true})
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		defer resp.Body.Close()
		s.mu.Lock()
		s.run = resp.Header.Get("Baton-Run-Id")
		s.mu.Unlock()
		err = readStream(resp.Body, func(e threadEvent) bool {
			s.mu.Lock()
			s.evs = append(s.evs, e)
			s.mu.Unlock()
			select {
			case s.seen <- struct{}{}:
			default:
			}
			return false
		})
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	return s
}

// await waits for an event of type typ.
func (s *runStream) await(ctx context.Context, typ string) error {
	for {
		s.mu.Lock()
		for _, e := range s.evs {
			if e.typ == typ {
				s.mu.Unlock()
				return nil
			}
		}
		s.mu.Unlock()
		select {
		case <-s.seen:
		case <-s.ended:
			s.mu.Lock()
			defer s.mu.Unlock()
			return fmt.Errorf("the stream ended (%v) without %s:\n%s", s.err, typ, listing(s.evs))
		case <-ctx.Done():
			return fmt.Errorf("no %s: %w", typ, ctx.Err())
		}
	}
}

// wait waits for the stream's end and returns its events.
func (s *runStream) wait(ctx context.Context) ([]threadEvent, error) {
	select {
	case <-s.ended:
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		return append([]threadEvent(nil), s.evs...), fmt.Errorf("the stream did not end: %w", ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]threadEvent(nil), s.evs...), s.err
}

func (s *runStream) runID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

// readStream reads SSE events (data decoded, comments skipped) and gives
// them to f until f returns true or the stream ends (nil error).
func readStream(body io.Reader, f func(threadEvent) bool) error {
	rd := sse.NewReader(body, 0)
	for {
		se, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		e := threadEvent{id: se.ID, typ: se.Type, raw: string(se.Data)}
		_ = json.Unmarshal(se.Data, &e.data)
		if f(e) {
			return nil
		}
	}
}

// runEvents reads GET /v1/threads/{id}/runs/{run_id}/events after last (""
// from the first) until the run's final run_end.
func runEvents(ctx context.Context, a *api, thread, run, last string) ([]threadEvent, error) {
	ctx, cancel := context.WithTimeout(ctx, drainBound+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base()+"/v1/threads/"+thread+"/runs/"+run+"/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &httpError{status: resp.StatusCode}
	}
	var evs []threadEvent
	err = readStream(resp.Body, func(e threadEvent) bool {
		evs = append(evs, e)
		return e.typ == "run_end" && e.data["status"] != "suspended"
	})
	return evs, err
}

// sigterm sends SIGTERM to the replica's running life and returns when.
func sigterm(t *testing.T, s *serveProc) time.Time {
	t.Helper()
	s.proc.mu.Lock()
	cmd := s.cmd
	s.proc.mu.Unlock()
	if cmd == nil {
		t.Fatalf("%s is not running", s.name)
	}
	at := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return at
}

// checkRefused checks, while the replica drains, that /readyz and a new run
// (on thread, idle) answer 503 with Retry-After, the run with error code
// unavailable (docs/deploy.md: HAProxy retries it on another replica).
func checkRefused(ctx context.Context, t *testing.T, a *api, thread string) {
	t.Helper()
	deadline := time.Now().Add(drainTimeout / 2)
	for {
		resp, err := http.Get(a.base() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				if resp.Header.Get("Retry-After") == "" {
					t.Error("/readyz 503 without Retry-After while draining")
				}
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz does not answer 503 within %s of the SIGTERM (last: %v)", drainTimeout/2, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base()+"/v1/threads/"+thread+"/runs",
		strings.NewReader(`{"input":"`+paths["inline"][0]+`","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a new run while draining: %v", err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || body.Error.Code != "unavailable" {
		t.Errorf("a new run while draining: %d, Retry-After %q, code %q; want 503, Retry-After, unavailable",
			resp.StatusCode, resp.Header.Get("Retry-After"), body.Error.Code)
	}
}

// checkBalanced checks, while a replica drains, that runs started through
// HAProxy are not refused: HAProxy retries a 503 on another replica
// (docs/deploy.md's retry-on), or has taken the draining one out of its
// rotation already. The runs go to the background (their inline part is
// short); the stream is read until their hand-over.
func checkBalanced(ctx context.Context, t *testing.T, c *cluster) {
	t.Helper()
	for range 2 {
		thread, err := c.api.createThread(ctx)
		if err != nil {
			t.Fatal(err)
		}
		run, evs, err := c.api.stream(ctx, thread, paths["background"][0], nil, firstEnd)
		if err != nil || run == "" || len(evs) == 0 || !firstEnd(evs[len(evs)-1]) {
			t.Errorf("a run through HAProxy while a replica drains: %q %v (%d events), want it started and handed over", run, err, len(evs))
		}
	}
}

// checkExit waits for the replica to exit after the SIGTERM at termed,
// within --shutdown-timeout and exitMargin, and returns how long it took.
func checkExit(t *testing.T, s *serveProc, termed time.Time) time.Duration {
	t.Helper()
	err := s.wait(drainTimeout + exitMargin + 10*time.Second)
	took := time.Since(termed)
	s.mu.Lock()
	s.addr = ""
	s.mu.Unlock()
	var ee interface{ ExitCode() int }
	switch {
	case err != nil && !errors.As(err, &ee):
		t.Fatalf("%s after SIGTERM: %v", s.name, err)
	case err != nil:
		t.Errorf("%s exited with %v after SIGTERM, want 0", s.name, err)
	}
	if took > drainTimeout+exitMargin {
		t.Errorf("%s exited %s after SIGTERM, want within --shutdown-timeout %s + %s", s.name, took, drainTimeout, exitMargin)
	}
	return took
}

// checkEffects checks that each tool call of run had its effect once, and
// that the results in evs are those effects' answers.
func checkEffects(t *testing.T, fx *effects, run string, evs []threadEvent) {
	t.Helper()
	keys := fx.keys(run)
	if len(keys) == 0 {
		t.Errorf("run %s applied no effect", run)
	}
	applied := map[string]int{}
	for _, d := range fx.all() {
		if d.run == run && !d.repeat {
			applied[d.key]++
		}
	}
	for k, n := range applied {
		if n != 1 {
			t.Errorf("key %s applied %d times", k, n)
		}
	}
	for _, e := range evs {
		if e.typ != "tool_result" || (e.data["name"] != "lookup" && e.data["name"] != "ship") {
			continue
		}
		call, _ := e.data["id"].(string)
		out, _ := e.data["output"].(string)
		if err := fx.checkResult(run, call, out); err != nil {
			t.Error(err)
		}
	}
}

// restart starts the replica again and waits until it is ready.
func restart(ctx context.Context, t *testing.T, s *serveProc) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		resp, err := http.Get(s.url() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				time.Sleep(time.Second) // HAProxy's rise: 2 checks 500ms apart
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(ctx.Err())
}

// twoThreads creates two threads through on: the run's, and another.
func twoThreads(ctx context.Context, t *testing.T, on *api) (thread, other string) {
	t.Helper()
	thread, err := on.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if other, err = on.createThread(ctx); err != nil {
		t.Fatal(err)
	}
	return thread, other
}
