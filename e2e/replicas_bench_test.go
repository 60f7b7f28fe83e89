package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/internal/testdb"
)

// benchNetwork is the network of BenchmarkReplicas: one scripted agent
// that, on every turn, looks the order up (an inline tool with a fixed
// result) and answers in a few text deltas, with no simulated latency — a
// run is two model turns, a tool call and four checkpoints, so that what is
// measured is baton (HTTP, runner, store, thread streams), not a model.
const benchNetwork = `version: 1
name: shop
entry: triage
tools:
  - name: lookup
    description: Look an order up.
    parameters:
      type: object
      properties:
        order_id: {type: string, pattern: "^[0-9]+$"}
      required: [order_id]
    result: {order_id: "1234", status: shipped, eta: tomorrow}
agents:
  - name: triage
    description: Looks the order up and answers.
    instructions: Look the order up, then answer.
    model: scripted
    stream: {chunk_words: 4}
    tools: [lookup]
    rules:
      - tool_calls: [{name: lookup, arguments: {order_id: "1234"}}]
        then:
          - text: Order 1234 has shipped and arrives tomorrow; the tracking number is in your mail.
    reply: Is there anything else about order 1234 I can check?
`

// The shape of BenchmarkReplicas.
const (
	// benchClients post runs concurrently through HAProxy, each on its own
	// thread, a new one every benchTurns runs (a short conversation: the
	// history a turn reads stays bounded whatever the -benchtime).
	benchClients = 16
	benchTurns   = 10
	// fanoutThreads threads are followed at once, fanoutRuns runs each,
	// one after the other, each after a pause drawn in [0, fanoutPause):
	// a conversation's pace, long enough for a poller to back off
	// (server.Config.FollowInterval 500 ms, to 4 s while nothing changes).
	fanoutThreads = 6
	fanoutRuns    = 8
	fanoutPause   = 4 * time.Second
)

// BenchmarkReplicas measures one, two and three `baton serve` replicas on
// one PostgreSQL database (a fresh schema per sub-benchmark), in one
// invocation: `replicas=1`, `replicas=2`, `replicas=3`, each behind
// HAProxy (docs/deploy.md's configuration: round-robin, no stickiness; one
// server line with one replica). Each sub-benchmark starts its own fleet,
// then:
//
//   - throughput: benchClients clients post streamed runs
//     (POST /v1/threads/{id}/runs, "stream": true) through HAProxy, each
//     read to its run_end, as fast as they can; one b.Loop iteration is one
//     completed run. Metrics: runs/s (end to end, the fleet's) and
//     run-p50-ms (a run's time, request to run_end, under that load);
//     ns/op is left out (it would be 1/throughput, not a latency).
//   - fan-out, with the load stopped: fanoutThreads threads, each followed
//     (GET /v1/threads/{id}/events) on replica X's own port while its runs
//     are posted to replica Y ≠ X's own port (X = Y with one replica: the
//     same-process baseline), fanoutRuns runs per thread one after the
//     other, each after a random pause (so that runs land at every phase of
//     a poller). Latency: from a durable event's arrival on Y's run stream
//     to the same event's (run_id, seq, type) arrival on X's thread stream,
//     over every durable event (run_start, agent_start, message, tool_call,
//     tool_result, run_end; not the deltas, which another process never
//     streams). Metrics: fanout-p50-ms, fanout-p99-ms.
//
// CI does not run it (no -bench). It needs BATON_TEST_DATABASE_URL and
// HAProxy, and skips without them. Run it with bench/README.md's command;
// a summary table of every sub-benchmark run is printed at the end.
func BenchmarkReplicas(b *testing.B) {
	url := os.Getenv(testdb.URLVar)
	if url == "" {
		b.Skip("PostgreSQL only (replicas share a database): set " + testdb.URLVar)
	}
	batonBin(b)
	haproxyBin(b)
	var rows []replicasRow
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			rows = append(rows, benchReplicas(b, url, n))
		})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-9s %8s %11s %14s %14s %14s %14s %7s\n", "replicas", "runs/s", "run-p50-ms", "fanout-p50-ms", "fanout-p99-ms", "start-p50-ms", "end-p50-ms", "events")
	for _, r := range rows {
		fmt.Fprintf(&sb, "%-9d %8.1f %11.1f %14.1f %14.1f %14.1f %14.1f %7d\n", r.replicas, r.runsPerSec, r.runP50, r.fanP50, r.fanP99, r.startP50, r.endP50, r.events)
	}
	// On stdout, not b.Log: a parent benchmark's log is shown only with -v.
	// benchstat skips these lines.
	fmt.Print(sb.String())
}

// replicasRow is one sub-benchmark's figures, for the summary table.
type replicasRow struct {
	replicas           int
	runsPerSec, runP50 float64
	fanP50, fanP99     float64
	startP50, endP50   float64 // fan-out of run_start (finding the run) and run_end
	events             int
}

// benchReplicas is one sub-benchmark: a fleet of n replicas, measured.
func benchReplicas(b *testing.B, url string, n int) replicasRow {
	c := startReplicas(b, url, n)
	cl := &benchClient{key: c.api.key, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * benchClients}}}
	lb := c.lb.url()

	// Throughput.
	ctx, cancel := context.WithCancel(b.Context())
	type done struct {
		took time.Duration
		err  error
	}
	results := make(chan done, benchClients)
	var wg sync.WaitGroup
	for range benchClients {
		wg.Go(func() {
			var thread string
			for i := 0; ctx.Err() == nil; i++ {
				var d done
				if i%benchTurns == 0 {
					thread, d.err = cl.createThread(ctx, lb)
				}
				if d.err == nil {
					start := time.Now()
					var evs []benchEvent
					_, evs, d.err = cl.stream(ctx, lb, thread, "[bench] Where is my order 1234?")
					d.took = time.Since(start)
					if d.err == nil && !endsCompleted(evs) {
						d.err = fmt.Errorf("run on thread %s did not complete: %v", thread, evs)
					}
				}
				if ctx.Err() != nil {
					return
				}
				select {
				case results <- d:
				case <-ctx.Done():
					return
				}
				if d.err != nil {
					return
				}
			}
		})
	}
	next := func() time.Duration {
		select {
		case d := <-results:
			if d.err != nil {
				cancel()
				b.Fatalf("a client: %v", d.err)
			}
			return d.took
		case <-time.After(time.Minute):
			cancel()
			b.Fatal("no run completed in a minute")
		}
		return 0
	}
	for range 2 * benchClients { // warm-up: connections, caches, every client's first thread
		next()
	}
	var took []time.Duration
	for b.Loop() {
		took = append(took, next())
	}
	cancel()
	wg.Wait()
	row := replicasRow{replicas: n, runsPerSec: float64(b.N) / b.Elapsed().Seconds(), runP50: ms(percentile(took, 0.50))}

	// Fan-out, on the idle fleet (the runs the clients left in flight end
	// within milliseconds).
	time.Sleep(200 * time.Millisecond)
	lat, starts, ends := fanout(b, c, cl, n)
	row.fanP50, row.fanP99 = ms(percentile(lat, 0.50)), ms(percentile(lat, 0.99))
	row.startP50, row.endP50 = ms(percentile(starts, 0.50)), ms(percentile(ends, 0.50))
	row.events = len(lat)

	b.ReportMetric(0, "ns/op")
	b.ReportMetric(row.runsPerSec, "runs/s")
	b.ReportMetric(row.runP50, "run-p50-ms")
	b.ReportMetric(row.fanP50, "fanout-p50-ms")
	b.ReportMetric(row.fanP99, "fanout-p99-ms")
	c.stop(b)
	return row
}

// startReplicas starts n `baton serve` replicas (--workers 2, logs at
// warn) on a fresh schema of the PostgreSQL database at url, each on a
// fixed port, behind HAProxy — with one replica too, so that every
// sub-benchmark's clients take the same path.
func startReplicas(b *testing.B, url string, n int) *cluster {
	b.Helper()
	schema := testdb.Schema(b, url)
	testdb.Postgres(b, url, schema) // migrated before the replicas start
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db := &database{url: url + sep + "search_path=" + schema}
	c := newCluster(b, db, nil)
	path := filepath.Join(c.dir, "bench.yaml")
	if err := os.WriteFile(path, []byte(benchNetwork), 0o644); err != nil {
		b.Fatal(err)
	}
	out, err := exec.Command(c.bin, "keys", "create", "--owner", owner, "--database", db.url).Output()
	if err != nil {
		b.Fatalf("baton keys create: %v", err)
	}
	c.api = &api{key: strings.TrimSpace(string(out))}
	ports := freePorts(b, n+1)
	for i, port := range ports[1:] {
		c.serves = append(c.serves, newServeNamed(c.dir, fmt.Sprintf("serve-%d", i), c.bin,
			"--network", path, "--database", db.url, "--shutdown-timeout", "5s", "--workers", "2", "--log-level", "warn",
			"--addr", fmt.Sprintf("127.0.0.1:%d", port)))
	}
	c.serve = c.serves[0]
	c.lb = newBalancer(b, c.dir, ports[0], ports[1:])
	c.api.base = c.lb.url
	if err := c.ensure(); err != nil {
		b.Fatal(err)
	}
	// HAProxy sends to a replica once two health checks passed (rise 2,
	// inter 500ms); and a process counts every thread as wanted for the
	// first 10 s after it starts listening for thread signals
	// (draft.Interest: ttl/3), signalling every checkpoint: measure the
	// steady state, after both.
	time.Sleep(11 * time.Second)
	return c
}

// fanout runs the fan-out measurement on c (n replicas) and returns the
// latencies of every durable event, of the runs' run_start and of their
// run_end.
func fanout(b *testing.B, c *cluster, cl *benchClient, n int) (all, starts, ends []time.Duration) {
	ctx, cancel := context.WithTimeout(b.Context(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, fanoutThreads)
	for i := range fanoutThreads {
		x, y := c.serves[i%n].url(), c.serves[(i+1)%n].url()
		// The same pauses with any number of replicas, and in every run of
		// the benchmark: the latencies differ by the fleet alone.
		rnd := rand.New(rand.NewPCG(21, uint64(i)))
		wg.Go(func() {
			a, s, e, err := fanoutThread(ctx, cl, x, y, rnd)
			mu.Lock()
			all, starts, ends = append(all, a...), append(starts, s...), append(ends, e...)
			mu.Unlock()
			if err != nil {
				errs <- err
				cancel()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Errorf("fan-out: %v", err)
	}
	if b.Failed() {
		b.FailNow()
	}
	return all, starts, ends
}

// durableTypes are the run events that every thread stream carries, from
// any process.
var durableTypes = map[string]bool{"run_start": true, "agent_start": true, "message": true, "tool_call": true, "tool_result": true, "run_end": true}

// fanoutThread follows a new thread on x and posts fanoutRuns runs to y,
// one after the other, and returns the latencies of their durable events
// from y's run stream to x's thread stream.
func fanoutThread(ctx context.Context, cl *benchClient, x, y string, rnd *rand.Rand) (all, starts, ends []time.Duration, err error) {
	thread, err := cl.createThread(ctx, y)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]time.Time{} // event key -> arrival on x
	ended := make(chan string, fanoutRuns)
	subscribed := make(chan struct{})
	followErr := make(chan error, 1)
	go func() {
		followErr <- cl.follow(ctx, x, thread, func(e benchEvent) {
			if e.typ == "thread" {
				close(subscribed)
				return
			}
			if !durableTypes[e.typ] {
				return
			}
			mu.Lock()
			_, dup := seen[e.key()]
			if !dup {
				seen[e.key()] = e.at
			}
			mu.Unlock()
			if e.typ == "run_end" && !dup {
				select {
				case ended <- e.run:
				case <-ctx.Done():
				}
			}
		})
	}()
	select {
	case <-subscribed:
	case err := <-followErr:
		return nil, nil, nil, fmt.Errorf("thread stream on %s: %v", x, err)
	case <-ctx.Done():
		return nil, nil, nil, fmt.Errorf("no snapshot from the thread stream on %s", x)
	}
	for range fanoutRuns {
		time.Sleep(time.Duration(rnd.Int64N(int64(fanoutPause))))
		run, evs, err := cl.stream(ctx, y, thread, "[bench] Where is my order 1234?")
		if err != nil || !endsCompleted(evs) {
			return all, starts, ends, fmt.Errorf("run %s on %s: %v %v", run, y, err, evs)
		}
		deadline := time.After(30 * time.Second)
	wait:
		for {
			select {
			case r := <-ended:
				if r == run {
					break wait
				}
			case <-deadline:
				return all, starts, ends, fmt.Errorf("run %s (posted to %s) did not end on %s's thread stream in 30 s", run, y, x)
			case err := <-followErr:
				return all, starts, ends, fmt.Errorf("thread stream on %s: %v", x, err)
			}
		}
		mu.Lock()
		for _, e := range evs {
			if !durableTypes[e.typ] {
				continue
			}
			at, ok := seen[e.key()]
			if !ok {
				mu.Unlock()
				return all, starts, ends, fmt.Errorf("event %s of run %s (posted to %s) never came on %s's thread stream", e.key(), run, y, x)
			}
			d := at.Sub(e.at)
			all = append(all, d)
			switch e.typ {
			case "run_start":
				starts = append(starts, d)
			case "run_end":
				ends = append(ends, d)
			}
		}
		mu.Unlock()
	}
	return all, starts, ends, nil
}

// benchClient is a client of baton serve's API with a pool of connections
// large enough for the benchmark's clients (http.DefaultClient keeps two
// idle connections per host).
type benchClient struct {
	key  string
	http *http.Client
}

// benchEvent is an SSE event of a run or thread stream, with the time it
// was read.
type benchEvent struct {
	typ, run string
	seq      int64
	at       time.Time
	data     map[string]any
}

// key names an event of a run in every stream: its run, seq and type.
func (e benchEvent) key() string { return fmt.Sprintf("%s/%d/%s", e.run, e.seq, e.typ) }

func endsCompleted(evs []benchEvent) bool {
	return len(evs) > 0 && evs[len(evs)-1].typ == "run_end" && evs[len(evs)-1].data["status"] == "completed"
}

func (c *benchClient) request(ctx context.Context, method, url string, body any) (*http.Response, error) {
	return send(ctx, c.http, c.key, method, url, body)
}

func (c *benchClient) createThread(ctx context.Context, base string) (string, error) {
	resp, err := c.request(ctx, http.MethodPost, base+"/v1/threads", map[string]string{"network": "shop"})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var th struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&th)
	return th.ID, err
}

// stream posts a streamed run of input on thread to base and reads its
// events to the end of the stream, each stamped with the time it was read.
func (c *benchClient) stream(ctx context.Context, base, thread, input string) (string, []benchEvent, error) {
	resp, err := c.request(ctx, http.MethodPost, base+"/v1/threads/"+thread+"/runs", map[string]any{"input": input, "stream": true})
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	run := resp.Header.Get("Baton-Run-Id")
	var evs []benchEvent
	err = readBenchEvents(resp.Body, func(e benchEvent) {
		e.run = run
		evs = append(evs, e)
	})
	return run, evs, err
}

// follow reads the thread's events on base (a new subscription: a thread
// snapshot first) until ctx is done, telling on each (run_id from the
// event's data).
func (c *benchClient) follow(ctx context.Context, base, thread string, on func(benchEvent)) error {
	resp, err := c.request(ctx, http.MethodGet, base+"/v1/threads/"+thread+"/events", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	err = readBenchEvents(resp.Body, func(e benchEvent) {
		e.run, _ = e.data["run_id"].(string)
		on(e)
	})
	if err == nil {
		err = errors.New("the stream ended")
	}
	return err
}

// readBenchEvents reads an SSE stream to its end (nil at EOF).
func readBenchEvents(body io.Reader, on func(benchEvent)) error {
	rd := sse.NewReader(body, 0)
	for {
		se, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		e := benchEvent{typ: se.Type, at: time.Now()}
		if len(se.Data) == 0 {
			continue
		}
		if err := json.Unmarshal(se.Data, &e.data); err != nil {
			return fmt.Errorf("event %s %s: %w", se.Type, se.Data, err)
		}
		if s, ok := e.data["seq"].(float64); ok {
			e.seq = int64(s)
		}
		on(e)
	}
}

// percentile returns the p-th quantile of ds (nearest rank), 0 if empty.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
