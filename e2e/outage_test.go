package e2e_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testdb"
)

// The bounds of TestDatabaseOutage (docs/deploy.md, "The database goes
// away").
const (
	outageLease = 6 * time.Second // --lease-ttl
	// answerBound: while the database is down, a request is answered (503)
	// within this long — no hung request: the connection attempt is
	// refused at once, or, for a database that does not answer at all,
	// cut by the connect timeout the processes are given (3 s here).
	answerBound = 5 * time.Second
	// settleBound: every run in flight when the database went away is
	// final this long after it is back: --lease-ttl + 30 s.
	settleBound = outageLease + 30*time.Second
	// outageDown is how long the database stays stopped.
	outageDown = 30 * time.Second
)

// TestDatabaseOutage: two `baton serve` replicas (with workers) and a
// `baton worker` on a private PostgreSQL server (testdb.Cluster: the shared
// test database is never restarted), under load from clients that start
// inline and background runs on both replicas. The server is restarted in
// fast mode, then in immediate mode (a crash: recovery at start), then
// stopped for 30 s and started. While it is down every request is
// answered within answerBound: 503 unavailable with Retry-After (never a
// 500, never a hang); /readyz is 503 and /healthz says the database is
// unreachable. Once it is back, with nobody restarting anything: every
// process takes runs again (pools, LISTEN, River reconnect by themselves),
// every run accepted (its id given) is final within --lease-ttl + 30 s,
// completed, or failed with a reason; every thread holds its input once
// and a completed run's answer once; no tool effect applied twice for one
// call; and a run's stream resumed by Last-Event-ID carries on from where
// it was, with no gap and no repeat.
func TestDatabaseOutage(t *testing.T) {
	batonBin(t)
	t.Parallel()
	pg := testdb.NewCluster(t)
	url := pg.URL() + "&connect_timeout=3"
	fx := newEffects(t, func(tool string) time.Duration {
		if tool == "ship" {
			return 500 * time.Millisecond
		}
		return 2 * time.Second // lookup: the outages land mid call
	})
	c := startCluster(t, openPostgres(t, url), fx, clusterConfig{serveWorkers: 1, workers: 1, workerSlots: 2, replicas: 2,
		flags: []string{"--lease-ttl", outageLease.String(), "--job-timeout", "30s", "--rescue-after", "45s"}})
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Minute)
	defer cancel()
	o := &outage{t: t, c: c, key: c.api.key}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { o.client(loadCtx, i) })
	}
	// A stream across the outage: a long background run's events, read
	// until the database goes away, resumed after with Last-Event-ID.
	sleepCtx(ctx, 3*time.Second)

	for _, mode := range []string{"fast", "immediate"} {
		o.phase.Store(mode)
		down := pg.Restart(mode)
		o.phase.Store("up")
		t.Logf("PostgreSQL restarted (%s): down %s", mode, down.Round(time.Millisecond))
		sleepCtx(ctx, 5*time.Second)
	}
	streamThread, streamRun, streamed, live := o.streamUntil(ctx)
	o.phase.Store("stopped")
	stopped := time.Now()
	pg.Stop("fast")
	o.probeDown(ctx, outageDown)
	pg.Start()
	back := time.Now()
	o.phase.Store("up")
	t.Logf("PostgreSQL stopped for %s, then started", back.Sub(stopped).Round(time.Millisecond))
	sleepCtx(ctx, 5*time.Second)
	stopLoad()
	wg.Wait()

	// Every process serves again by itself: each replica's /readyz, and a
	// new background run started on each completes (its pool, River's
	// insert and a worker's delivery, the replica following it).
	after := map[string]string{} // run -> thread
	for _, s := range c.serves {
		if code, _ := get(ctx, s.url()+"/readyz"); code != http.StatusOK {
			t.Errorf("%s's /readyz after the outage: %d, want 200", s.name, code)
		}
		a := &api{key: o.key, base: s.url}
		thread, err := a.createThread(ctx)
		if err != nil {
			t.Errorf("%s: a new thread after the outage: %v", s.name, err)
			continue
		}
		var r struct {
			ID string `json:"id"`
		}
		input := paths["background"][0]
		if err := a.do(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs", map[string]any{"input": input}, &r); err != nil || r.ID == "" {
			t.Errorf("%s: a background run after the outage: %q, %v", s.name, r.ID, err)
			continue
		}
		after[r.ID] = thread
		o.mu.Lock()
		if o.accepted == nil {
			o.accepted, o.inputs = map[string]string{}, map[string]string{}
		}
		o.accepted[r.ID], o.inputs[thread] = thread, input
		o.mu.Unlock()
	}
	o.checkRuns(ctx, back)
	a := o.c.api
	a.base = c.serves[0].url
	for run, thread := range after {
		var r struct {
			Status string `json:"status"`
		}
		if err := a.do(ctx, http.MethodGet, "/v1/threads/"+thread+"/runs/"+run, nil, &r); err != nil || r.Status != "completed" {
			t.Errorf("the background run %s started after the outage: %q, %v; want completed", run, r.Status, err)
		}
	}
	o.checkStream(ctx, streamThread, streamRun, streamed)
	o.checkLive(ctx, streamThread, live)
	o.mu.Lock()
	defer o.mu.Unlock()
	t.Logf("%d runs accepted (%d during a restart), %d requests refused with 503, longest answer while down %s, %d runs completed, %d failed with a reason",
		len(o.accepted), o.acceptedInRestart, o.refused, o.longestDown.Round(time.Millisecond), o.completed, o.failed)
	o.faults.report(t)
	if len(o.accepted) < 8 {
		t.Errorf("only %d runs accepted: the load was too light to tell", len(o.accepted))
	}
}

type outage struct {
	t     *testing.T
	c     *cluster
	key   string
	phase atomic.Value // "up", "fast", "immediate", "stopped"

	mu                sync.Mutex
	accepted          map[string]string // run id -> thread
	inputs            map[string]string // thread -> input
	acceptedInRestart int
	refused           int
	longestDown       time.Duration
	completed, failed int
	faults            faultLog
}

// client starts runs one after another on replica i%2, a new thread each,
// until ctx ends.
func (o *outage) client(ctx context.Context, i int) {
	for n := 0; ctx.Err() == nil; n++ {
		s := o.c.serves[(i+n)%len(o.c.serves)]
		path := pathNames[(i+n)%2] // inline, background
		input := paths[path][0]
		a := &api{key: o.key, base: s.url}
		thread, err := a.createThread(ctx)
		if err != nil {
			o.refusal(ctx, err, "create thread")
			continue
		}
		resp, err := a.request(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs", map[string]any{"input": input, "stream": true})
		if err != nil {
			o.refusal(ctx, err, "start run")
			continue
		}
		run := resp.Header.Get("Baton-Run-Id")
		o.mu.Lock()
		if o.accepted == nil {
			o.accepted, o.inputs = map[string]string{}, map[string]string{}
		}
		o.accepted[run], o.inputs[thread] = thread, input
		if p := o.phase.Load(); p != "up" {
			o.acceptedInRestart++
		}
		o.mu.Unlock()
		_, _ = readEvents(resp.Body, nil) // may end early: the run is checked at the end
		resp.Body.Close()
	}
}

// refusal checks a refused request: 503 while the database is away
// (Retry-After checked by probeDown), nothing else; it waits a moment.
func (o *outage) refusal(ctx context.Context, err error, what string) {
	if ctx.Err() != nil {
		return
	}
	var he *httpError
	switch {
	case asHTTP(err, &he) && he.status == http.StatusServiceUnavailable:
		o.mu.Lock()
		o.refused++
		o.mu.Unlock()
	case asHTTP(err, &he):
		o.faults.add("%s (PostgreSQL %v): %v, want 2xx or 503", what, o.phase.Load(), err)
	}
	sleepCtx(ctx, 200*time.Millisecond)
}

func asHTTP(err error, he **httpError) bool {
	e, ok := err.(*httpError)
	*he = e
	return ok
}

// probeDown, while the database is stopped, asks every replica every
// second for a new thread, its runs list, /readyz and /healthz: each
// answered within answerBound, 503 unavailable with Retry-After (/healthz:
// 200, saying the database is unreachable).
func (o *outage) probeDown(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	// The first seconds: the replicas notice (their pools' connections
	// are closed by the server's fast shutdown at once).
	sleepCtx(ctx, time.Second)
	for time.Now().Before(end) && ctx.Err() == nil {
		for _, s := range o.c.serves {
			for _, req := range []struct{ method, path string }{
				{http.MethodPost, "/v1/threads"}, {http.MethodGet, "/v1/threads"}, {http.MethodGet, "/readyz"}, {http.MethodGet, "/healthz"},
			} {
				start := time.Now()
				code, h, body := o.raw(ctx, req.method, s.url()+req.path)
				took := time.Since(start)
				o.mu.Lock()
				o.longestDown = max(o.longestDown, took)
				o.mu.Unlock()
				if took > answerBound {
					o.faults.add("%s %s on %s while PostgreSQL is down: answered after %s, want within %s", req.method, req.path, s.name, took, answerBound)
				}
				switch req.path {
				case "/healthz":
					if code != http.StatusOK || !strings.Contains(body, `"database":"unreachable"`) || !strings.Contains(body, `"status":"unavailable"`) {
						o.faults.add("/healthz on %s while PostgreSQL is down: %d %s, want 200 saying the database is unreachable", s.name, code, body)
					}
				default:
					if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
						o.faults.add("%s %s on %s while PostgreSQL is down: %d (Retry-After %q) %s, want 503 with Retry-After", req.method, req.path, s.name, code, h.Get("Retry-After"), body)
					} else if req.path != "/readyz" && !strings.Contains(body, `"unavailable"`) {
						o.faults.add("%s %s on %s while PostgreSQL is down: %s, want the error type unavailable", req.method, req.path, s.name, body)
					}
				}
			}
		}
		sleepCtx(ctx, time.Second)
	}
}

func (o *outage) raw(ctx context.Context, method, url string) (int, http.Header, string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"network":"shop"}`)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, body)
	req.Header.Set("Authorization", "Bearer "+o.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Header, string(b)
}

func get(ctx context.Context, url string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// streamUntil starts an inline run on replica 0 and reads its stream
// until its lookup call: the events read so far are returned, and the
// stream is left for the outage to cut.
func (o *outage) streamUntil(ctx context.Context) (thread, run string, got []threadEvent, live *runStream) {
	a := &api{key: o.key, base: o.c.serves[0].url}
	thread, err := a.createThread(ctx)
	if err != nil {
		o.t.Fatal(err)
	}
	s := startStream(ctx, a, thread, paths["inline"][0])
	if err := s.await(ctx, "tool_call"); err != nil {
		o.t.Fatal(err)
	}
	o.mu.Lock()
	o.accepted[s.runID()], o.inputs[thread] = thread, paths["inline"][0]
	o.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return thread, s.run, slices.Clone(s.evs), s
}

// checkLive: the stream cut by the outage stayed open — no error, no
// failed end — and, following the run through the store once it was back
// (handed to a worker: run_end suspended, then the resumed run), ends
// with the run's completion; each message it carried is in the store with
// the same id and text.
func (o *outage) checkLive(ctx context.Context, thread string, s *runStream) {
	t := o.t
	wctx, cancel := context.WithTimeout(ctx, settleBound)
	defer cancel()
	evs, err := s.wait(wctx)
	if err != nil {
		t.Errorf("the stream open across the outage: %v; got:\n%s", err, listing(evs))
		return
	}
	for _, e := range evs {
		if e.typ == "error" || e.typ == "run_end" && e.data["status"] != "completed" && e.data["status"] != "suspended" {
			t.Errorf("the stream open across the outage got %s: the run is not over", comparable(e))
		}
	}
	if len(evs) == 0 || evs[len(evs)-1].typ != "run_end" || evs[len(evs)-1].data["status"] != "completed" {
		t.Errorf("the stream open across the outage does not end with run_end completed:\n%s", listing(evs))
		return
	}
	all, err := runEvents(ctx, &api{key: o.key, base: o.c.serves[1].url}, thread, s.runID(), "")
	if err != nil {
		t.Errorf("the run's events: %v", err)
		return
	}
	checkMessages(t, evs, all)
	t.Logf("the stream open across the outage stayed open: %d events, ending with run_end completed", len(evs))
}

// checkMessages checks that each message event of got is in stored with
// the same id and text.
func checkMessages(t *testing.T, got, stored []threadEvent) {
	texts := map[string]string{}
	for _, e := range stored {
		if e.typ == "message" {
			texts[fmt.Sprint(e.data["message_id"])] = fmt.Sprint(e.data["text"])
		}
	}
	for _, e := range got {
		if e.typ != "message" {
			continue
		}
		if id, text := fmt.Sprint(e.data["message_id"]), fmt.Sprint(e.data["text"]); texts[id] != text {
			t.Errorf("message %s %q streamed across the outage is not in the store as sent (%q)", id, text, texts[id])
		}
	}
}

// checkStream resumes the run's events after the last id read before the
// outage, on the other replica: the rest is what the store has after that
// id, ending with the run's end. Events streamed live for a step whose
// checkpoint had not committed when the database went away are not in
// the store as they were sent: the run resumes from its last checkpoint
// and sends that step again — each message the client saw before the
// outage is in the store with the same id and text.
func (o *outage) checkStream(ctx context.Context, thread, run string, first []threadEvent) {
	t := o.t
	last := ""
	for _, e := range first {
		if e.id != "" {
			last = e.id
		}
	}
	rest, err := runEvents(ctx, &api{key: o.key, base: o.c.serves[1].url}, thread, run, last)
	if err != nil {
		t.Errorf("resuming run %s's stream after %s on the other replica: %v", run, last, err)
		return
	}
	// Replica 1 never executed the run: it rebuilds its events from the
	// store (replica 0's log holds what it streamed live).
	all, err := runEvents(ctx, &api{key: o.key, base: o.c.serves[1].url}, thread, run, "")
	if err != nil {
		t.Errorf("run %s's events: %v", run, err)
		return
	}
	var after []threadEvent
	for _, e := range all {
		if idLess(last, e.id) {
			after = append(after, e)
		}
	}
	if g, w := listing(durable(rest)), listing(durable(after)); g != w {
		t.Errorf("run %s's stream, resumed after %s across the outage:\n%s\nthe run's events after %s from the store:\n%s", run, last, g, last, w)
	}
	if len(rest) == 0 || rest[len(rest)-1].typ != "run_end" {
		t.Errorf("run %s's resumed stream does not end with run_end:\n%s", run, listing(rest))
	}
	checkMessages(t, first, all)
	t.Logf("run %s's stream: %d events before the outage, %d after resuming from %s", run, len(first), len(rest), last)
}

// checkRuns waits until every accepted run is final, within settleBound
// of back, and checks each thread's messages and the tool effects.
func (o *outage) checkRuns(ctx context.Context, back time.Time) {
	t := o.t
	o.mu.Lock()
	accepted := maps.Clone(o.accepted)
	inputs := maps.Clone(o.inputs)
	o.mu.Unlock()
	a := o.c.api
	a.base = o.c.serves[0].url
	pending := maps.Clone(accepted)
	completed := map[string]bool{} // threads whose run completed
	var lastFinal time.Time
	for len(pending) > 0 {
		for run, thread := range pending {
			var r struct {
				Status string `json:"status"`
				Error  *struct {
					Kind    string `json:"kind"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := a.do(ctx, http.MethodGet, "/v1/threads/"+thread+"/runs/"+run, nil, &r); err != nil {
				continue
			}
			switch r.Status {
			case "completed":
				o.mu.Lock()
				o.completed++
				o.mu.Unlock()
				completed[thread] = true
			case "failed", "cancelled":
				o.mu.Lock()
				o.failed++
				o.mu.Unlock()
				if r.Error == nil || r.Error.Message == "" {
					o.faults.add("run %s ended %s without a reason", run, r.Status)
				}
			default:
				continue
			}
			delete(pending, run)
			lastFinal = time.Now()
		}
		if len(pending) == 0 {
			break
		}
		if time.Since(back) > settleBound {
			for run := range pending {
				o.faults.add("run %s is not final %s after PostgreSQL came back (bound: --lease-ttl + 30 s)", run, settleBound)
			}
			break
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	t.Logf("every accepted run final %s after PostgreSQL came back", lastFinal.Sub(back).Round(time.Millisecond))
	// Each thread: its input once, a completed run's answer once.
	for thread, input := range inputs {
		msgs, _ := o.c.db.messages(t, thread)
		users, answers := 0, map[string]int{}
		for _, m := range msgs {
			switch m.Role {
			case "user":
				if m.Text() == input {
					users++
				}
			case "assistant":
				if m.Text() != "" && len(m.ToolCalls()) == 0 {
					answers[m.Text()]++
				}
			}
		}
		if users != 1 {
			o.faults.add("thread %s holds its input %d times, want once", thread, users)
		}
		for text, n := range answers {
			if n > 1 {
				o.faults.add("thread %s holds the answer %q %d times, want once", thread, text, n)
			}
		}
		if completed[thread] && len(answers) == 0 {
			o.faults.add("thread %s: its run completed, and it holds no answer", thread)
		}
	}
	// No effect twice: one applied key per tool per run (each path calls
	// each tool once).
	for k, n := range o.c.fx.appliedByRunTool() {
		if n > 1 {
			o.faults.add("%s: %d effects applied, want 1", k, n)
		}
	}
}
