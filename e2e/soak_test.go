package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testdb"
)

// soakBound is how long after the chaos stops every accepted turn must be
// final: --lease-ttl (6 s) × 1.5 for a dead process's runs and
// continuations, River's rescue as the last resort (--rescue-after 45 s +
// its 30 s interval + a leader failover), a turn's own time, and room for
// a loaded machine.
const soakBound = 2 * time.Minute

// TestSoak is the chaos soak (bench/soak: 5 minutes; here
// BATON_SOAK_DURATION, 60 s by default): three `baton serve` replicas
// behind HAProxy and two `baton worker`s on a private PostgreSQL server
// (testdb.Cluster), clients holding conversations (two turns: inline,
// tool calls handed to the background, transfers; one turn: a refund the
// client approves; a thread handoff: a turn, the handoff to shipping
// proposed and approved, a turn on the child thread) without pause through
// HAProxy, a SIGKILL of a random replica or worker every 2–5 s (restarted
// at once), and one PostgreSQL restart (fast) halfway. It reports the
// turns and thread handoffs accepted, answered, lost, duplicated and
// stuck (a handoff: see checkHandoffs), the longest stall
// (the longest time no turn was answered) and the p99 turn latency, and
// fails on any loss, duplicate or stuck turn. BATON_SOAK_REPORT, if set,
// names a file the report is appended to.
func TestSoak(t *testing.T) {
	batonBin(t)
	t.Parallel()
	d := 60 * time.Second
	if s := os.Getenv("BATON_SOAK_DURATION"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	pg := testdb.NewCluster(t)
	fx := newEffects(t, func(tool string) time.Duration {
		if tool == "ship" {
			return time.Second
		}
		return 200 * time.Millisecond
	})
	c := startCluster(t, openPostgres(t, pg.URL()+"&connect_timeout=3"), fx, clusterConfig{serveWorkers: 1, workers: 2, workerSlots: 2, replicas: 3,
		flags: []string{"--lease-ttl", "6s", "--job-timeout", "30s", "--rescue-after", "45s"}})
	ctx, cancel := context.WithTimeout(t.Context(), d+soakBound+2*time.Minute)
	defer cancel()
	sk := &soak{t: t, c: c, turns: map[string]*soakTurn{}}
	loadCtx, stopLoad := context.WithTimeout(ctx, d)
	defer stopLoad()
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() { sk.client(loadCtx, i) })
	}
	kills := 0
	restarted := false
	start := time.Now()
	for loadCtx.Err() == nil {
		if err := sleepCtx(loadCtx, time.Duration(2000+rand.IntN(3000))*time.Millisecond); err != nil {
			break
		}
		if !restarted && time.Since(start) > d/2 {
			restarted = true
			down := pg.Restart("fast")
			t.Logf("PostgreSQL restarted (fast) at %s: down %s", time.Since(start).Round(time.Second), down.Round(time.Millisecond))
			continue
		}
		victims := c.daemons()
		victims = slices.DeleteFunc(victims, func(p *proc) bool { return c.lb != nil && p == c.lb.proc })
		v := victims[rand.IntN(len(victims))]
		for _, s := range c.serves {
			if s.proc == v {
				s.kill()
			}
		}
		v.kill()
		kills++
		if err := c.ensure(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	chaosEnd := time.Now()
	sk.settle(ctx, chaosEnd)
	sk.report(kills, restarted, d)
}

// soakPaths are the soak's conversations: paths' two turns, one turn
// that waits for an approval, and a thread handoff (soak_handoff_test.go).
var soakPaths = []string{"inline", "background", "transfer", "approve", "handoff"}

const approveInput = "[approve] Please refund order 1234."

// soakTurn is one turn a client asked for.
type soakTurn struct {
	thread, input string
	accepted      time.Time
	answered      time.Time // zero while not answered
	status        string
}

// faultLog collects the faults a chaos test finds, from any goroutine.
type faultLog struct {
	mu     sync.Mutex
	faults []string
}

func (f *faultLog) add(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, fmt.Sprintf(format, args...))
}

// report fails t with each fault, in the order they were found.
func (f *faultLog) report(t *testing.T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.faults {
		t.Error(m)
	}
}

type soak struct {
	t *testing.T
	c *cluster

	mu      sync.Mutex
	turns   map[string]*soakTurn // by thread + "\x00" + input
	threads []string             // the conversations' threads, handoffs' children too
	// conversations counts the conversations begun.
	conversations int
	refused       int
	faults        faultLog
	// handoffs are the thread handoffs asked for, by parent thread.
	handoffs []*soakHandoff
}

// client holds conversations, one after another, until ctx ends: a new
// thread, then its path's two turns, each once: a request whose answer was
// lost is retried only if the thread does not hold its input (the client
// checks, as an idempotent client does).
func (sk *soak) client(ctx context.Context, i int) {
	for n := 0; ctx.Err() == nil; n++ {
		path := soakPaths[(i+n)%len(soakPaths)]
		var thread string
		for ctx.Err() == nil {
			th, err := sk.c.api.createThread(ctx)
			if err == nil {
				thread = th
				break
			}
			sk.refusal(ctx, err)
		}
		if thread == "" {
			return
		}
		sk.mu.Lock()
		sk.threads = append(sk.threads, thread)
		sk.conversations++
		sk.mu.Unlock()
		if path == "approve" {
			// One turn: a refund that waits for a person's approval, which
			// the client gives.
			sk.turn(ctx, thread, approveInput)
			continue
		}
		if path == "handoff" {
			// A turn, then a thread handoff to shipping, approved, and a
			// turn on the child thread.
			if sk.turn(ctx, thread, paths["inline"][0]) {
				sk.handoff(ctx, thread)
			}
			continue
		}
		for round := range 2 {
			if !sk.turn(ctx, thread, paths[path][round]) {
				break
			}
		}
	}
}

// turn asks for one turn and waits for its answer; false if it was not
// accepted before ctx ended or did not end well.
func (sk *soak) turn(ctx context.Context, thread, input string) bool {
	for ctx.Err() == nil {
		resp, err := sk.c.api.request(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs", map[string]any{"input": input, "stream": true})
		if err != nil {
			var he *httpError
			if errors.As(err, &he) && he.status == http.StatusConflict {
				// The thread is busy: its previous turn is still finishing
				// elsewhere (a killed replica's run being adopted).
				sleepCtx(ctx, 500*time.Millisecond)
				continue
			}
			if !errors.As(err, &he) && sk.holds(ctx, thread, input) {
				// The answer was lost, the input is on the thread.
				sk.accept(thread, input)
				return sk.await(ctx, thread, input)
			}
			sk.refusal(ctx, err)
			continue
		}
		sk.accept(thread, input)
		_, _ = readEvents(resp.Body, firstEnd)
		resp.Body.Close()
		return sk.await(ctx, thread, input)
	}
	return false
}

func (sk *soak) accept(thread, input string) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if k := thread + "\x00" + input; sk.turns[k] == nil {
		sk.turns[k] = &soakTurn{thread: thread, input: input, accepted: time.Now()}
	}
}

func (sk *soak) refusal(ctx context.Context, err error) {
	var he *httpError
	if errors.As(err, &he) && he.status != http.StatusServiceUnavailable && he.status != http.StatusBadGateway && he.status != http.StatusGatewayTimeout {
		sk.faults.add("a request answered %v, want 2xx or 503", err)
	}
	sk.mu.Lock()
	sk.refused++
	sk.mu.Unlock()
	sleepCtx(ctx, 200*time.Millisecond)
}

// holds reports whether the thread's messages hold input.
func (sk *soak) holds(ctx context.Context, thread, input string) bool {
	for range 20 {
		var page struct {
			Data []struct{ Role, Text string }
		}
		if err := sk.c.api.do(ctx, http.MethodGet, "/v1/threads/"+thread+"/messages?limit=1000", nil, &page); err == nil {
			for _, m := range page.Data {
				if m.Role == "user" && m.Text == input {
					return true
				}
			}
			return false
		}
		if sleepCtx(ctx, 250*time.Millisecond) != nil {
			return false
		}
	}
	return false
}

// await waits until the thread's latest run is final and records it; it
// gives up when ctx ends (settle checks the turn then).
func (sk *soak) await(ctx context.Context, thread, input string) bool {
	for ctx.Err() == nil {
		if r, err := sk.c.api.latestRun(ctx, thread); err == nil && r != nil {
			if r.Status == "interrupted" {
				sk.approve(ctx, thread, r.ID)
			}
			switch r.Status {
			case "completed", "failed", "cancelled":
				sk.mu.Lock()
				if tr := sk.turns[thread+"\x00"+input]; tr != nil && tr.answered.IsZero() {
					tr.answered, tr.status = time.Now(), r.Status
				}
				sk.mu.Unlock()
				return r.Status == "completed"
			}
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return false
}

// approve approves the interrupt of run (an answer lost is retried: a
// second decision is refused as a conflict).
func (sk *soak) approve(ctx context.Context, thread, run string) {
	var r struct {
		Interrupt *struct {
			ID string `json:"interrupt_id"`
		} `json:"interrupt"`
	}
	if err := sk.c.api.do(ctx, http.MethodGet, "/v1/threads/"+thread+"/runs/"+run, nil, &r); err != nil || r.Interrupt == nil {
		return
	}
	err := sk.c.api.do(ctx, http.MethodPost, "/v1/interrupts/"+r.Interrupt.ID+"/decision", map[string]any{"type": "approve"}, nil)
	var he *httpError
	if err != nil && errors.As(err, &he) && he.status != http.StatusConflict && he.status != http.StatusServiceUnavailable && he.status != http.StatusBadGateway && he.status != http.StatusGatewayTimeout {
		sk.faults.add("approving run %s: %v", run, err)
	}
}

// settle waits, within soakBound of the chaos's end, for every accepted
// turn to be answered.
func (sk *soak) settle(ctx context.Context, end time.Time) {
	sk.mu.Lock()
	var open []*soakTurn
	for _, tr := range sk.turns {
		if tr.answered.IsZero() {
			open = append(open, tr)
		}
	}
	sk.mu.Unlock()
	for _, tr := range open {
		sctx, cancel := context.WithDeadline(ctx, end.Add(soakBound))
		sk.await(sctx, tr.thread, tr.input)
		cancel()
	}
	sk.settleHandoffs(ctx, end)
}

// report counts and checks the turns against the threads' messages.
func (sk *soak) report(kills int, restarted bool, d time.Duration) {
	t := sk.t
	sk.mu.Lock()
	defer sk.mu.Unlock()
	var accepted, answered, completed, lost, duplicated, stuck int
	var lat []time.Duration
	var done []time.Time
	for _, tr := range sk.turns {
		accepted++
		if tr.answered.IsZero() {
			stuck++
			sk.faults.add("stuck: thread %s, turn %q not answered %s after the chaos", tr.thread, tr.input, soakBound)
			continue
		}
		answered++
		if tr.status == "completed" {
			completed++
		} else {
			// Answered, not a fault, but worth a look.
			t.Logf("turn %q on thread %s ended %s", tr.input, tr.thread, tr.status)
		}
		lat = append(lat, tr.answered.Sub(tr.accepted))
		done = append(done, tr.answered)
	}
	for _, th := range sk.threads {
		msgs, _ := sk.c.db.messages(t, th)
		inputs, answers := map[string]int{}, map[string]int{}
		for _, m := range msgs {
			switch {
			case m.Role == "user":
				inputs[m.Text()]++
			case m.Role == "assistant" && m.Text() != "" && len(m.ToolCalls()) == 0:
				answers[m.Text()]++
			}
		}
		for k, tr := range sk.turns {
			if tr.thread == th && inputs[tr.input] == 0 {
				lost++
				sk.faults.add("lost: thread %s holds no turn %q (%s)", th, tr.input, k)
			}
		}
		for in, n := range inputs {
			if n > 1 {
				duplicated += n - 1
				sk.faults.add("duplicated: thread %s holds %q %d times", th, in, n)
			}
		}
		for a, n := range answers {
			if n > 1 {
				duplicated += n - 1
				sk.faults.add("duplicated: thread %s holds the answer %q %d times", th, a, n)
			}
		}
	}
	// The thread handoffs count as items of their own: accepted when their
	// proposal is stored, answered when their child thread is given.
	ha := sk.checkHandoffs(&done)
	accepted, answered, lost, duplicated, stuck = accepted+ha.accepted, answered+ha.answered, lost+ha.lost, duplicated+ha.duplicated, stuck+ha.stuck
	for k, n := range sk.c.fx.appliedByRunTool() {
		if n > 1 {
			sk.faults.add("a tool effect twice: %s applied %d times", k, n)
		}
	}
	slices.Sort(lat)
	slices.SortFunc(done, func(a, b time.Time) int { return a.Compare(b) })
	var stall time.Duration
	for i := 1; i < len(done); i++ {
		stall = max(stall, done[i].Sub(done[i-1]))
	}
	p := func(q float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(float64(len(lat))*q))]
	}
	line := fmt.Sprintf("soak %s: %d conversations (%d threads), %d SIGKILLs, PostgreSQL restarted: %v; turns and thread handoffs accepted %d, answered %d (turns completed %d), lost %d, duplicated %d, stuck %d; of them thread handoffs %s; refused requests %d; longest stall %s; turn latency p50 %s, p99 %s",
		d, sk.conversations, len(sk.threads), kills, restarted, accepted, answered, completed, lost, duplicated, stuck, ha, sk.refused, stall.Round(time.Millisecond), p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond))
	t.Log(line)
	if f := os.Getenv("BATON_SOAK_REPORT"); f != "" {
		if fh, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(fh, time.Now().UTC().Format(time.RFC3339)+" "+line)
			fh.Close()
		}
	}
	sk.faults.report(t)
	if accepted < 20 {
		t.Errorf("only %d turns accepted: the load was too light to tell", accepted)
	}
}
