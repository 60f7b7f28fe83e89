package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
)

// Timings of TestKillEverything's processes: short, so that the recovery
// paths are taken many times in a minute.
const (
	leaseTTL    = 2 * time.Second // --lease-ttl of serve and worker
	jobTimeout  = 5 * time.Second // --job-timeout
	rescueAfter = 6 * time.Second // --rescue-after
)

// The fixed timings the recovery bound depends on: baton's, and River's
// (v0.51.1, internal/maintenance and internal/leadership).
const (
	// cliLeaseTTL is the lease of a run of `baton run`, which has no
	// --lease-ttl flag: continuation.DefaultLeaseTTL.
	cliLeaseTTL = 30 * time.Second
	// rescuerInterval: River's JobRescuerIntervalDefault. The rescuer runs
	// on the elected leader only.
	rescuerInterval = 30 * time.Second
	// leaderFailover: a killed leader's lease lasts River's leader TTL (the
	// elect interval, 5s, + 10s of padding); the others try to be elected
	// every 5-6s and a new leader starts its maintenance services within a
	// staggered second, the rescuer running at once.
	leaderFailover = 15*time.Second + 6*time.Second + time.Second
	// schedulerInterval: River's JobSchedulerIntervalDefault, which makes
	// a retryable job available.
	schedulerInterval = 5 * time.Second
	// fetchInterval: River's FetchPollInterval (1s by default; 250ms on
	// SQLite, set by package service), when no notification wakes a
	// worker earlier.
	fetchInterval = time.Second
	// maxBackoff: baton's retry backoff (continuation.Config's
	// RetryBaseDelay 1s, doubled per attempt, with jitter under it) at the
	// fifth attempt of one continuation: 2^4 s.
	maxBackoff = 16 * time.Second
)

// recoveryBound is how long after the last kill every run must be final:
//
//	adopt  = max(lease-ttl, baton run's 30s) + lease-ttl/2 + fetch + job-timeout
//	         (a run whose process died inline: its lease expires, an adopter
//	         (serve, worker; every lease-ttl/2) hands it to River, a worker
//	         fetches it and finishes it)
//	rescue = max(rescue-after + rescuer interval (30s), leader failover (22s))
//	         + backoff (≤ 16s, up to the 5th attempt) + scheduler (5s) + fetch
//	         + job-timeout
//	         (a continuation whose worker died: River's rescuer, on the
//	         leader, retries it)
//	bound  = 1.5 × max(adopt, rescue)
//
// The factor 1.5 leaves room for a loaded 2-core machine. With the flags
// of this test: adopt = 37s, rescue = 63s, bound ≈ 95s.
func recoveryBound() time.Duration {
	adopt := max(leaseTTL, cliLeaseTTL) + leaseTTL/2 + fetchInterval + jobTimeout
	rescue := max(rescueAfter+rescuerInterval, leaderFailover) + maxBackoff + schedulerInterval + fetchInterval + jobTimeout
	return max(adopt, rescue) * 3 / 2
}

// paths are the paths through testdata/shop.yaml, and each one's input in
// a thread's first and second turn.
var paths = map[string][2]string{
	"inline":     {"[inline] Where is my order 1234?", "[inline] And where is it now?"},
	"background": {"[background] Please ship a replacement for order 1234.", "[background] It got lost; ship another one."},
	"transfer":   {"[transfer] My parcel of order 1234 arrived damaged.", "[transfer] The replacement is lost too."},
}

var pathNames = []string{"inline", "background", "transfer"}

// TestKillEverything is the durability proof. On each backend, concurrent
// clients submit runs — inline only, handed to the background, and with a
// transfer — to `baton serve` (with workers), and `baton run` processes
// start extra runs, while a chaos loop SIGKILLs, at moments it picks (a
// run's first model turn, after its first checkpoint, mid tool call, during
// a continuation, at random): serve (restarted on a new port, where the
// clients find it), the `baton worker` processes (restarted) and the
// `baton run` processes (not restarted: their runs must be adopted). Then,
// with the chaos stopped, no run is lost or stuck (every run is completed
// within recoveryBound), no tool effect ran twice (the tool service
// applies each Idempotency-Key once and every tool result in a run is the
// answer of its call's key), each thread equals a thread run without kills
// and takes a second turn, and nothing is left behind: no River job open,
// no lease, no placeholder queued or streaming.
//
// BATON_KILL_DATABASE (sqlite or a postgres:// URL) picks one backend
// instead of both, BATON_KILL_RUNS the number of client runs (default 50);
// scripts/killtest.sh sets them.
func TestKillEverything(t *testing.T) {
	batonBin(t)
	t.Parallel()
	runs := killRuns(t, 50)
	for _, be := range backends(t, os.Getenv("BATON_KILL_DATABASE")) {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			k := newKillTest(t, be.open(t), runs, 1)
			k.run()
		})
	}
}

// TestKillReplicas is TestKillEverything with three `baton serve` replicas
// on one PostgreSQL database behind HAProxy (round-robin, no stickiness;
// lb_test.go), the clients going through it: the chaos SIGKILLs replicas
// at the same moments (a run's first model turn, mid tool call, mid
// continuation, at random), and also restarts them one at a time with
// SIGTERM (a rolling restart: the replica drains, HAProxy takes it out of
// the rotation, it starts again). The same proofs follow: 0 runs lost, 0
// stuck past the bound, 0 tool effects twice, every thread as without
// kills and taking a second turn, nothing left behind. (SQLite is one
// process's database: replicas need PostgreSQL.)
func TestKillReplicas(t *testing.T) {
	batonBin(t)
	t.Parallel()
	runs := killRuns(t, 40)
	for _, be := range backends(t, os.Getenv("BATON_KILL_DATABASE")) {
		if be.name != "Postgres" {
			continue
		}
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			k := newKillTest(t, be.open(t), runs, 3)
			k.run()
		})
	}
}

// killRuns is the number of client runs of a kill test: BATON_KILL_RUNS,
// else def.
func killRuns(t *testing.T, def int) int {
	t.Helper()
	v := os.Getenv("BATON_KILL_RUNS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("BATON_KILL_RUNS=%q: want a positive number", v)
	}
	return n
}

// killTest is one backend's run of TestKillEverything.
type killTest struct {
	t     *testing.T
	c     *cluster
	fx    *effects
	runs  int
	start time.Time

	mu    sync.Mutex
	given map[string]givenRun // run id -> how it was learnt
	kills map[string]map[string]int
	// refs are the turns of a thread of each path run without kills, on
	// the threads refThreads.
	refs       map[string][]turn
	refThreads map[string]bool
	// started tells the chaos loop of runs that just started (Baton-Run-Id).
	started chan struct{}
	clis    int
	// minKills are the kills of each kind the chaos must reach.
	minKills map[string]int
}

// givenRun is a run id that a client or a `baton run` was given.
type givenRun struct {
	thread, path string
	// by says how: the Baton-Run-Id header, run_start of baton run, or
	// the thread's latest run after a request that the server's death cut
	// off (the run had started).
	by string
}

func newKillTest(t *testing.T, db *database, runs, replicas int) *killTest {
	fx := newEffects(t, func(tool string) time.Duration {
		if tool == "ship" {
			return time.Duration(250+rand.IntN(400)) * time.Millisecond
		}
		return time.Duration(150+rand.IntN(300)) * time.Millisecond
	})
	c := startCluster(t, db, fx, clusterConfig{serveWorkers: 2, workers: 2, workerSlots: 3, replicas: replicas, flags: []string{
		"--lease-ttl", leaseTTL.String(), "--job-timeout", jobTimeout.String(), "--rescue-after", rescueAfter.String()}})
	k := &killTest{t: t, c: c, fx: fx, runs: runs, given: map[string]givenRun{}, refThreads: map[string]bool{},
		kills: map[string]map[string]int{"serve": {}, "worker": {}, "cli": {}}, started: make(chan struct{}, 1),
		minKills: map[string]int{"serve": 5, "worker": 6, "cli": 3}}
	if replicas > 1 {
		// A rolling restart: every replica at least once.
		k.kills["restart"], k.minKills["restart"] = map[string]int{}, replicas
	}
	return k
}

func (k *killTest) run() {
	t := k.t
	k.start = time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute+time.Duration(k.runs)*2*time.Second)
	defer cancel()

	// Clients and chaos.
	clientsDone := make(chan struct{})
	jobs := make(chan string)
	go func() {
		defer close(jobs)
		for i := range k.runs {
			select {
			case jobs <- pathNames[i%len(pathNames)]:
			case <-ctx.Done():
				return
			}
		}
	}()
	var clients sync.WaitGroup
	for range 6 {
		clients.Go(func() {
			for p := range jobs {
				if err := k.submit(ctx, p); err != nil {
					t.Errorf("client: %v", err)
					return
				}
				time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
			}
		})
	}
	go func() { clients.Wait(); close(clientsDone) }()
	k.chaos(ctx, cancel, clientsDone)
	<-clientsDone
	if err := k.c.ensure(); err != nil {
		t.Fatal(err)
	}
	chaosEnd := time.Now()
	if t.Failed() {
		return
	}

	// Threads run without kills, the reference of every thread's
	// transcript, while the runs of the chaos recover.
	refsDone := make(chan struct{})
	go func() { defer close(refsDone); k.references(ctx) }()

	// 0 stuck: every run in the database ends, completed, within the bound.
	bound := recoveryBound()
	all := k.waitRuns(ctx, chaosEnd, bound)
	settled := time.Since(chaosEnd)
	<-refsDone
	if t.Failed() {
		return
	}
	// 0 lost: every run id given exists, with its user message in its
	// thread.
	k.checkGiven(ctx, all)

	// Each thread takes a new run.
	secondStart := time.Now()
	k.secondTurns(ctx)
	second := time.Since(secondStart)
	if t.Failed() {
		return
	}

	// Nothing left behind; no effect twice; every thread as without kills.
	k.checkLeftovers()
	k.checkRuns(ctx)
	k.checkTranscripts()

	deliveries, applied, repeats := k.fx.counts()
	k.mu.Lock()
	defer k.mu.Unlock()
	t.Logf("%d client runs and %d baton run processes; %d runs in all after the second turns, on %d threads",
		k.runs, k.clis, len(k.c.db.column(t, "SELECT DISTINCT run_id FROM checkpoints")), len(k.c.db.threads(t)))
	for _, kind := range slices.Sorted(maps.Keys(k.kills)) {
		t.Logf("%s: %d %v", map[bool]string{true: "rolling restarts (SIGTERM)", false: "SIGKILLs of " + kind}[kind == "restart"], total(k.kills[kind]), k.kills[kind])
	}
	t.Logf("runs adopted from dead processes: %d; most attempts of one continuation: %s",
		k.c.adoptions(), strings.Join(k.c.db.column(t, "SELECT CAST(max(attempt) AS TEXT) FROM job_runs"), ""))
	t.Logf("tool service: %d deliveries of %d keys: %d repeated deliveries de-duplicated by Idempotency-Key, 0 effects twice", deliveries, applied, repeats)
	t.Logf("chaos %s; every run final %s after it (bound %s); second turns %s; total %s",
		chaosEnd.Sub(k.start).Round(time.Millisecond), settled.Round(time.Millisecond), bound, second.Round(time.Millisecond), time.Since(k.start).Round(time.Millisecond))
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// submit runs a first turn of path on a new thread through the API,
// finding serve again after kills, until the run has started; it reads the
// run's stream until its inline part ends (or the stream breaks).
func (k *killTest) submit(ctx context.Context, path string) error {
	var thread string
	for {
		var err error
		if thread, err = k.c.api.createThread(ctx); err == nil {
			break
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
	for {
		// A stream that breaks is fine (serve died); one that hangs is not.
		sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		run, _, err := k.c.api.stream(sctx, thread, paths[path][0], func(run string) {
			if run == "" {
				return
			}
			k.record(run, givenRun{thread: thread, path: path, by: "Baton-Run-Id"})
			select {
			case k.started <- struct{}{}:
			default:
			}
		}, firstEnd)
		cancel()
		if run != "" {
			if errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				return fmt.Errorf("run %s of thread %s: the inline part did not end within 90s", run, thread)
			}
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("thread %s: %w (last error %v)", thread, ctx.Err(), err)
		}
		// Cut off before the answer (serve died) or refused because the
		// thread is busy (an earlier attempt's run started): the run
		// started if the thread has one.
		for {
			r, err := k.c.api.latestRun(ctx, thread)
			if err == nil && r != nil {
				k.record(r.ID, givenRun{thread: thread, path: path, by: "thread's latest run"})
				return nil
			}
			if err == nil {
				break // no run: submit again
			}
			if err := pause(ctx); err != nil {
				return err
			}
		}
	}
}

func pause(ctx context.Context) error {
	return sleepCtx(ctx, time.Duration(100+rand.IntN(200))*time.Millisecond)
}

func (k *killTest) record(run string, g givenRun) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.given[run]; !ok {
		k.given[run] = g
	}
}

func (k *killTest) killed(name, kind, moment string) {
	k.mu.Lock()
	k.kills[kind][moment]++
	k.mu.Unlock()
	k.t.Logf("%6.2fs: SIGKILL %s (%s)", time.Since(k.start).Seconds(), name, moment)
}

// chaos runs a killer of each kind of process at once, each until the
// clients are done and it killed its minimum (which it must reach within
// two minutes of the clients' end). A killer that fails (a process does not
// start again) fails the test and cancels ctx with abort.
func (k *killTest) chaos(ctx context.Context, abort context.CancelFunc, clientsDone <-chan struct{}) {
	killers := []struct {
		kind  string
		kill  func(context.Context, <-chan callEvent) error
		pause int // ms between kills, and as much again at random
	}{
		{"serve", k.killServe, 1500},
		{"worker", k.killWorker, 1000},
		{"cli", k.killCLI, 2000},
	}
	if len(k.c.serves) > 1 {
		killers = append(killers, struct {
			kind  string
			kill  func(context.Context, <-chan callEvent) error
			pause int
		}{"restart", k.restartServe, 4000})
	}
	var wg sync.WaitGroup
	for _, kl := range killers {
		wg.Go(func() {
			calls, stop := k.fx.watch()
			defer stop()
			var deadline time.Time
			for ctx.Err() == nil {
				select {
				case <-clientsDone:
					k.mu.Lock()
					n := total(k.kills[kl.kind])
					k.mu.Unlock()
					if n >= k.minKills[kl.kind] {
						return
					}
					if deadline.IsZero() {
						deadline = time.Now().Add(2 * time.Minute)
					}
					if time.Now().After(deadline) {
						k.t.Errorf("chaos: %s was killed %d times, want %d", kl.kind, n, k.minKills[kl.kind])
						return
					}
				default:
				}
				time.Sleep(time.Duration(kl.pause+rand.IntN(kl.pause)) * time.Millisecond)
				if err := kl.kill(ctx, calls); err != nil {
					k.t.Error(err)
					abort()
					return
				}
			}
		})
	}
	wg.Wait()
}

// await waits up to d for a call event accepted by want, after dropping
// those already queued; it reports whether one came.
func await(ctx context.Context, calls <-chan callEvent, d time.Duration, want func(callEvent) bool) bool {
	for {
		select {
		case <-calls:
			continue
		default:
		}
		break
	}
	timeout := time.After(d)
	for {
		select {
		case ev := <-calls:
			if want(ev) {
				return true
			}
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func sleepUpTo(ms int) { time.Sleep(time.Duration(rand.IntN(ms+1)) * time.Millisecond) }

// moment is a point of a process's work to kill it at: wait returns once
// the process is there, or false if that did not come in time.
type moment struct {
	name string
	wait func() bool
}

// pick waits for one of moments, at random, and returns its name; ok is
// false if it did not come.
func pick(moments ...moment) (name string, ok bool) {
	m := moments[rand.IntN(len(moments))]
	return m.name, m.wait()
}

// atRandom is a moment from ms to ms+spread from now.
func atRandom(ms, spread int) moment {
	return moment{"at random", func() bool { time.Sleep(time.Duration(ms) * time.Millisecond); sleepUpTo(spread); return true }}
}

// onChan is the moment ch delivers, then up to after ms, within d and
// before done is closed.
func onChan(name string, ch, done <-chan struct{}, d time.Duration, after int) moment {
	return moment{name, func() bool {
		select {
		case <-ch:
			sleepUpTo(after)
			return true
		case <-done:
			return false
		case <-time.After(d):
			return false
		}
	}}
}

// onCall is the moment a call event accepted by want comes, then up to
// after ms, within d.
func onCall(ctx context.Context, calls <-chan callEvent, name string, d time.Duration, after int, want func(callEvent) bool) moment {
	return moment{name, func() bool {
		if !await(ctx, calls, d, want) {
			return false
		}
		sleepUpTo(after)
		return true
	}}
}

// killServe kills serve at a moment it picks (or at random when that does
// not come within 4s), then restarts it on a new port.
func (k *killTest) killServe(ctx context.Context, calls <-chan callEvent) error {
	select {
	case <-k.started: // an old one
	default:
	}
	moment, ok := pick(
		atRandom(0, 1000),
		// A client got its run's first event: the first checkpoint is
		// written and the first model turn under way.
		onChan("first model turn", k.started, nil, 4*time.Second, 200),
		onCall(ctx, calls, "mid inline tool call", 4*time.Second, 0, func(ev callEvent) bool {
			return ev.caller == "serve" && ev.tool == "lookup" && !ev.done
		}),
		onCall(ctx, calls, "mid continuation (tool call)", 4*time.Second, 0, func(ev callEvent) bool {
			return ev.caller == "serve" && ev.tool == "ship" && !ev.done
		}),
	)
	// One replica (with several, the moment is of any of them: the
	// victim is one at random).
	s := k.c.serves[rand.IntN(len(k.c.serves))]
	s.op.Lock()
	defer s.op.Unlock()
	return k.killRestart(s, s.name, "serve", moment, ok, 500)
}

// restartServe restarts the replicas one at a time, gracefully: SIGTERM
// (the replica drains: /readyz answers 503, new requests are refused with a
// retryable 503, runs in flight finish within --shutdown-timeout or stop
// at their last checkpoint, streams end with a shutdown event), then a new
// life once it exited. The next replica waits until this one is back in
// HAProxy's rotation.
func (k *killTest) restartServe(ctx context.Context, _ <-chan callEvent) error {
	k.mu.Lock()
	n := total(k.kills["restart"])
	k.mu.Unlock()
	s := k.c.serves[n%len(k.c.serves)]
	s.op.Lock()
	defer s.op.Unlock()
	k.mu.Lock()
	k.kills["restart"]["SIGTERM (rolling)"]++
	k.mu.Unlock()
	k.t.Logf("%6.2fs: SIGTERM %s (rolling restart)", time.Since(k.start).Seconds(), s.name)
	s.stop(30 * time.Second) // --shutdown-timeout is 5s
	if err := s.start(); err != nil {
		return err
	}
	time.Sleep(2 * time.Second) // HAProxy's rise: 2 checks 500ms apart
	return nil
}

// killWorker kills a `baton worker` at a moment it picks (or at random
// when that does not come within 4s), then restarts it.
func (k *killTest) killWorker(ctx context.Context, calls <-chan callEvent) error {
	w := k.c.workers[rand.IntN(len(k.c.workers))]
	moment, ok := pick(
		atRandom(0, 1000),
		onCall(ctx, calls, "mid continuation (tool call)", 4*time.Second, 0, func(ev callEvent) bool {
			return ev.caller == w.name && !ev.done
		}),
		// The tool answered: its result is being checkpointed, or the
		// continuation's next model turn runs.
		onCall(ctx, calls, "mid continuation (after a tool result)", 4*time.Second, 300, func(ev callEvent) bool {
			return ev.caller == w.name && ev.done
		}),
	)
	return k.killRestart(w, w.name, "worker", moment, ok, 300)
}

// killRestart SIGKILLs p, a process of kind named name, counting the kill
// at moment (ok: the moment came; else it was at random, none within 4s)
// if p was running, and starts it again after up to pauseMS milliseconds.
func (k *killTest) killRestart(p interface {
	kill() bool
	start() error
}, name, kind, moment string, ok bool, pauseMS int) error {
	if !ok {
		moment = "at random (no " + moment + " within 4s)"
	}
	if p.kill() {
		k.killed(name, kind, moment)
	}
	sleepUpTo(pauseMS)
	return p.start()
}

// killCLI starts a `baton run` of a new thread and kills it at a moment it
// picks; it is not restarted: its run must be adopted.
func (k *killTest) killCLI(ctx context.Context, calls <-chan callEvent) error {
	k.mu.Lock()
	k.clis++
	name := fmt.Sprintf("cli-%d", k.clis)
	k.mu.Unlock()
	path := pathNames[rand.IntN(len(pathNames))]
	started, result := make(chan struct{}, 1), make(chan struct{}, 8)
	p := k.c.cli(name, paths[path][0], "", func(ev runner.Event) {
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			k.record(e.RunID, givenRun{thread: e.ThreadID, path: path, by: "run_start of baton run"})
			started <- struct{}{}
		case *runner.ToolResultEvent:
			result <- struct{}{}
		}
	})
	exited := make(chan struct{})
	if err := p.start(); err != nil {
		return err
	}
	go func() { _ = p.wait(5 * time.Minute); close(exited) }()
	moment, ok := pick(
		// Anywhere: before its first checkpoint, too.
		atRandom(200, 2000),
		onChan("first model turn", started, exited, 8*time.Second, 250),
		onCall(ctx, calls, "mid tool call", 8*time.Second, 0, func(ev callEvent) bool { return ev.caller == name && !ev.done }),
		onChan("after a tool result", result, exited, 8*time.Second, 250),
	)
	if ok && p.kill() {
		k.killed(name, "cli", moment)
		return nil
	}
	<-exited // it finished first: a run of baton run without a kill
	return nil
}

// references runs, without kills, a thread of each path through both of
// its turns: what every thread of the chaos must equal.
func (k *killTest) references(ctx context.Context) {
	refs := map[string][]turn{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range pathNames {
		wg.Go(func() {
			thread, err := k.c.api.createThread(ctx)
			if err != nil {
				k.t.Errorf("reference thread: %v", err)
				return
			}
			var events [][]string
			for _, input := range paths[p] {
				run, evs, err := k.c.api.stream(ctx, thread, input, nil, nil)
				if err != nil || !completed(evs) {
					k.t.Errorf("reference thread %s, %q: %v, events %+v", thread, input, err, evs)
					return
				}
				// Read as every run's are, below: GET events (from
				// serve's log, or rebuilt from the store for the runs of
				// serve's earlier lives).
				if evs, err = k.c.api.events(ctx, thread, run); err != nil {
					k.t.Errorf("reference run %s: %v", run, err)
					return
				}
				events = append(events, substance(run, evs))
			}
			msgs, _ := k.c.db.messages(k.t, thread)
			tns := turns(msgs)
			for i := range tns {
				tns[i].events = events[i]
			}
			mu.Lock()
			refs[p] = tns
			mu.Unlock()
			k.mu.Lock()
			k.refThreads[thread] = true
			k.mu.Unlock()
		})
	}
	wg.Wait()
	k.mu.Lock()
	k.refs = refs
	k.mu.Unlock()
}

// turn is one turn of a thread: its input, and the transcript of its
// messages (the user's first); for a reference thread, the substance of
// its run's events too.
type turn struct {
	input  string
	lines  []string
	events []string
}

// turns splits a thread's messages at its user messages.
func turns(msgs []message.Message) []turn {
	var out []turn
	lines := transcript(msgs)
	for i, m := range msgs {
		if m.Role == message.RoleUser || len(out) == 0 {
			out = append(out, turn{input: m.Text()})
		}
		out[len(out)-1].lines = append(out[len(out)-1].lines, lines[i])
	}
	return out
}

// roundOf returns the path of a thread's input and its round (0: the
// first turn's input, 1: the second's); ok is false for another text.
func roundOf(input string) (path string, round int, ok bool) {
	for _, p := range pathNames {
		for r, in := range paths[p] {
			if in == input {
				return p, r, true
			}
		}
	}
	return "", 0, false
}

// waitRuns waits until every run of the database is final, at most bound
// after from, and checks that each completed; it returns the runs by id,
// with their threads.
func (k *killTest) waitRuns(ctx context.Context, from time.Time, bound time.Duration) map[string]string {
	t := k.t
	runs := map[string]string{}
	for _, rt := range k.c.db.column(t, "SELECT DISTINCT run_id || ' ' || thread_id FROM checkpoints") {
		run, thread, _ := strings.Cut(rt, " ")
		runs[run] = thread
	}
	pending := slices.Sorted(maps.Keys(runs))
	for len(pending) > 0 {
		var still []string
		for _, run := range pending {
			r, err := k.c.api.run(ctx, runs[run], run)
			switch {
			case err != nil:
				still = append(still, run)
			case r.Status == "completed":
			case r.Status == "failed" || r.Status == "interrupted":
				t.Errorf("run %s (thread %s) ended %s", run, runs[run], r.Status)
			default:
				still = append(still, run)
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		if time.Since(from) > bound {
			for _, run := range pending {
				r, err := k.c.api.run(ctx, runs[run], run)
				t.Errorf("stuck: run %s (thread %s) is not final %s after the chaos stopped (bound %s): %+v %v",
					run, runs[run], time.Since(from).Round(time.Second), bound, r, err)
			}
			t.Logf("river jobs: %v; job runs: %v", k.c.db.column(t, "SELECT state || ' attempt ' || CAST(attempt AS TEXT) FROM river_job"),
				k.c.db.column(t, "SELECT status || ' attempt ' || CAST(attempt AS TEXT) FROM job_runs WHERE status <> 'completed'"))
			return runs
		}
		if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
			t.Error(err)
			return runs
		}
	}
	return runs
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// waitUntil calls ok every interval until it returns true, failing the
// test with what failed says (read then) if within passes first or ctx
// ends.
func waitUntil(ctx context.Context, t *testing.T, within, interval time.Duration, ok func() bool, failed func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal(failed())
		}
		if err := sleepCtx(ctx, interval); err != nil {
			t.Fatalf("%s: %v", failed(), err)
		}
	}
}

// receive returns what ch gives, failing the test with the message (format,
// args) if ctx ends first.
func receive[T any](t *testing.T, ctx context.Context, ch <-chan T, format string, args ...any) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf(format, args...)
		panic("unreachable")
	}
}

// checkGiven checks that every run id given to a client or by baton run
// is a run of the database whose user message is in its thread, once.
func (k *killTest) checkGiven(ctx context.Context, all map[string]string) {
	t := k.t
	k.mu.Lock()
	given := make(map[string]givenRun, len(k.given))
	for id, g := range k.given {
		given[id] = g
	}
	k.mu.Unlock()
	for run, g := range given {
		if all[run] != g.thread {
			t.Errorf("lost: run %s (%s) of thread %s is not in the database", run, g.by, g.thread)
			continue
		}
		if _, err := k.c.api.run(ctx, g.thread, run); err != nil {
			t.Errorf("lost: GET run %s: %v", run, err)
			continue
		}
		cp, err := k.c.db.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
		if err != nil {
			t.Errorf("run %s: %v", run, err)
			continue
		}
		if len(cp.State.Transcript) == 0 {
			t.Errorf("run %s: its checkpoint has no transcript", run)
			continue
		}
		input := cp.State.Transcript[0]
		msgs, _ := k.c.db.messages(t, g.thread)
		n := 0
		for _, m := range msgs {
			if m.Role == message.RoleUser && m.ID == input.ID {
				n++
				if m.Text() != paths[g.path][0] {
					t.Errorf("run %s: user message %q, want %q", run, m.Text(), paths[g.path][0])
				}
			}
		}
		if n != 1 {
			t.Errorf("run %s: its user message %s is %d times in thread %s, want once", run, input.ID, n, g.thread)
		}
	}
	byHow := map[string]int{}
	for _, g := range given {
		byHow[g.by]++
	}
	t.Logf("run ids given: %d (%v), all in the database and completed", len(given), byHow)
}

// secondTurns runs a second turn on every thread but the references, ten
// at a time: each must complete.
func (k *killTest) secondTurns(ctx context.Context) {
	t := k.t
	threads := make(chan string)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for th := range threads {
				msgs, _ := k.c.db.messages(t, th)
				input := paths["inline"][0] // a thread whose first run never started
				for _, m := range msgs {
					if m.Role == message.RoleUser {
						path, _, _ := roundOf(m.Text())
						input = paths[path][1]
						break
					}
				}
				sctx, cancel := context.WithTimeout(ctx, recoveryBound())
				run, evs, err := k.c.api.stream(sctx, th, input, nil, nil)
				cancel()
				if err != nil || !completed(evs) {
					t.Errorf("second turn on thread %s (run %s): %v; events %+v", th, run, err, evs)
				}
			}
		})
	}
	n := 0
	for _, th := range k.c.db.threads(t) {
		k.mu.Lock()
		ref := k.refThreads[th]
		k.mu.Unlock()
		if ref {
			continue
		}
		threads <- th
		n++
	}
	close(threads)
	wg.Wait()
	t.Logf("second turns: %d threads took one", n)
}

// checkLeftovers checks that nothing of the background path is left open.
func (k *killTest) checkLeftovers() {
	t, db := k.t, k.c.db
	for what, q := range map[string]string{
		"River jobs left available, running, retryable, scheduled or pending": "SELECT count(*) FROM river_job WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')",
		"River jobs discarded or cancelled":                                   "SELECT count(*) FROM river_job WHERE state IN ('discarded', 'cancelled')",
		"leases left in run_leases":                                           "SELECT count(*) FROM run_leases",
		"messages left queued or streaming":                                   "SELECT count(*) FROM messages WHERE status IN ('queued', 'streaming')",
		"messages in error":                                                   "SELECT count(*) FROM messages WHERE status = 'error'",
		"job runs not completed":                                              "SELECT count(*) FROM job_runs WHERE status <> 'completed'",
		"drafts left":                                                         "SELECT count(*) FROM message_drafts",
	} {
		if n := db.count(t, q); n != 0 {
			t.Errorf("%d %s", n, what)
		}
	}
}

// checkRuns reads the events of every run (rebuilt from the store) and
// checks that they are those of the reference run of the same path and
// turn, that every tool result is the answer of its call's applied key,
// and that the tool service applied no key that no run's result shows.
func (k *killTest) checkRuns(ctx context.Context) {
	t := k.t
	seen := map[string]bool{}
	bad := 0
	for _, rt := range k.c.db.column(t, "SELECT DISTINCT run_id || ' ' || thread_id FROM checkpoints") {
		run, thread, _ := strings.Cut(rt, " ")
		evs, err := k.c.api.events(ctx, thread, run)
		if err != nil {
			t.Errorf("events of run %s: %v", run, err)
			continue
		}
		if ref, ok := k.reference(ctx, run); !ok {
			t.Errorf("run %s has no reference", run)
		} else if d := diff(substance(run, evs), ref.events); d != "" {
			if bad++; bad <= 5 {
				t.Errorf("events of run %s (thread %s) differ from those of the run of its path and turn without kills: %s", run, thread, d)
			}
		}
		var keys []string
		for _, res := range effectResults(evs) {
			if err := k.fx.checkResult(run, res.ID, res.Output); err != nil {
				t.Error(err)
			}
			keys = append(keys, run+":"+res.ID)
		}
		slices.Sort(keys)
		if applied := k.fx.keys(run); !slices.Equal(keys, applied) {
			t.Errorf("run %s: tool results of keys %v, effects applied for %v", run, keys, applied)
		}
		seen[run] = true
	}
	for _, d := range k.fx.all() {
		if !seen[d.run] {
			t.Errorf("an effect of key %s (by %s) belongs to no run", d.key, d.caller)
		}
	}
	if bad > 0 {
		t.Errorf("the events of %d runs differ from their reference", bad)
	}
}

// reference returns the reference turn of a run: the one of the same path
// and round.
func (k *killTest) reference(ctx context.Context, run string) (turn, bool) {
	cp, err := k.c.db.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
	if err != nil || len(cp.State.Transcript) == 0 {
		return turn{}, false
	}
	path, round, ok := roundOf(cp.State.Transcript[0].Text())
	k.mu.Lock()
	defer k.mu.Unlock()
	if !ok || round >= len(k.refs[path]) {
		return turn{}, false
	}
	return k.refs[path][round], true
}

// checkTranscripts checks that every thread's messages (placeholders left
// out) equal those of the reference thread of its path, turn by turn.
func (k *killTest) checkTranscripts() {
	t := k.t
	bad := 0
	for _, th := range k.c.db.threads(t) {
		msgs, placeholders := k.c.db.messages(t, th)
		for _, p := range placeholders {
			if p.Status != message.StatusCompleted {
				t.Errorf("thread %s: placeholder %s is %s", th, p.ID, p.Status)
			}
		}
		var got, want []string
		for i, tn := range turns(msgs) {
			got = append(got, tn.lines...)
			path, round, ok := roundOf(tn.input)
			k.mu.Lock()
			ref := k.refs[path]
			k.mu.Unlock()
			if !ok || round >= len(ref) {
				t.Errorf("thread %s: turn %d (%q) has no reference", th, i+1, tn.input)
				continue
			}
			want = append(want, ref[round].lines...)
		}
		if d := diff(got, want); d != "" {
			bad++
			if bad <= 5 {
				t.Errorf("thread %s differs from the thread of its path run without kills: %s", th, d)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d threads differ from their reference", bad)
	}
}
