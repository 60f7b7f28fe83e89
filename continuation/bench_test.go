package continuation

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/threads"
)

// Benchmark sizes.
const (
	benchLatencySamples = 200
	benchProducers      = 16
	benchBatonJobs      = 480
	benchRiverJobs      = 1600
	benchWorkers        = 16
	// benchFetchCooldown is River's FetchCooldown (and insert-notification
	// limit) for both systems: small, so that the measure is the systems',
	// not the throttle's (River's default is 100ms).
	benchFetchCooldown = 5 * time.Millisecond
)

// BenchmarkContinuation measures, on SQLite and PostgreSQL, in the same run
// and on the same database:
//
//   - River: River's bare round trip, a no-op job: latency from Insert
//     returning (committed) to Work starting, one job at a time; then jobs/s
//     from 16 producers, from the first insert to the last job worked.
//   - Inline (reference, not a target): the same turn run all inline, no
//     hand-over, from 16 producers: turns/s. What a continuation costs
//     beyond it is the hand-over, the claim and the finalisation.
//   - Baton: a continuation: latency from the hand-over's commit (the inline
//     run returns suspended) to the worker resuming the run (its slow tool
//     starting), one at a time; then continuations/s from 16 producers, end
//     to end (inline turn with hand-over, worker claim, tool, model, final
//     transaction).
//
// Run it with -benchtime=1x: each benchmark runs its scenario once and
// reports p50-ms, p99-ms and per-s.
func BenchmarkContinuation(b *testing.B) {
	pgMaxConns = 2*benchProducers + benchWorkers
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			st := be.open(b)
			if err := driverOf(b, st).Migrate(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			b.Run("River", func(b *testing.B) { benchRiver(b, st) })
			b.Run("RiverEquivalent", func(b *testing.B) { benchRiverEquivalent(b, st) })
			b.Run("Baton", func(b *testing.B) { benchBaton(b, st) })
			b.Run("Inline", func(b *testing.B) { benchInline(b, st) })
		})
	}
}

// bareArgs is River's bare job.
type bareArgs struct {
	N int `json:"n"`
}

func (bareArgs) Kind() string { return "bench.bare" }

type bareWorker struct {
	river.WorkerDefaults[bareArgs]
	started func(n int)
}

func (w *bareWorker) Work(_ context.Context, job *river.Job[bareArgs]) error {
	w.started(job.Args.N)
	return nil
}

// bareClient is River on the store's database with a bare worker.
type bareClient interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

type bare[TTx any] struct{ c *river.Client[TTx] }

func (b bare[TTx]) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	_, err := b.c.Insert(ctx, args, opts)
	return err
}
func (b bare[TTx]) Start(ctx context.Context) error { return b.c.Start(ctx) }
func (b bare[TTx]) Stop(ctx context.Context) error  { return b.c.Stop(ctx) }

func newBare(b *testing.B, st store.Store, started func(n int)) bareClient {
	b.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, &bareWorker{started: started})
	cfg := &river.Config{Workers: workers, Queues: map[string]river.QueueConfig{"bench_bare": {MaxWorkers: benchWorkers}},
		FetchCooldown: benchFetchCooldown, Logger: testLogger()}
	switch s := st.(type) {
	case *pgstore.Store:
		c, err := river.NewClient[pgx.Tx](riverpgxv5.New(s.Pool()), cfg)
		if err != nil {
			b.Fatal(err)
		}
		return bare[pgx.Tx]{c}
	case *sqlitestore.Store:
		c, err := river.NewClient(riversqlite.New(s.DB()), cfg)
		if err != nil {
			b.Fatal(err)
		}
		return bare[*sql.Tx]{c}
	}
	b.Fatalf("store %T", st)
	return nil
}

// stamps records start times by key.
type stamps struct {
	mu sync.Mutex
	at map[string]time.Time
	ch map[string]chan struct{}
}

func newStamps() *stamps {
	return &stamps{at: map[string]time.Time{}, ch: map[string]chan struct{}{}}
}

func (s *stamps) expect(key string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(chan struct{})
	s.ch[key] = c
	return c
}

func (s *stamps) mark(key string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[key]; ok {
		return
	}
	s.at[key] = now
	if c := s.ch[key]; c != nil {
		close(c)
	}
}

func (s *stamps) get(key string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[key]
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func report(b *testing.B, lat []time.Duration, n int, took time.Duration) {
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(n)/took.Seconds(), "per-s")
	b.ReportMetric(0, "ns/op")
}

func benchRiver(b *testing.B, st store.Store) {
	ctx := context.Background()
	marks := newStamps()
	var done atomic.Int64
	var last atomic.Int64
	c := newBare(b, st, func(n int) {
		marks.mark(fmt.Sprint(n))
		done.Add(1)
		last.Store(time.Now().UnixNano())
	})
	startUntilEnd(b, c.Start, c.Stop)
	opts := &river.InsertOpts{Queue: "bench_bare"}
	// Latency, one job at a time.
	var lat []time.Duration
	for i := range benchLatencySamples {
		started := marks.expect(fmt.Sprint(i))
		if err := c.Insert(ctx, bareArgs{N: i}, opts); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			b.Fatalf("job %d not worked", i)
		}
		lat = append(lat, marks.get(fmt.Sprint(i)).Sub(t0))
	}
	// Throughput, 16 producers.
	done.Store(0)
	start := time.Now()
	fanOut(b, benchRiverJobs, func(i int) error { return c.Insert(ctx, bareArgs{N: benchLatencySamples + i}, opts) })
	for done.Load() < benchRiverJobs {
		time.Sleep(time.Millisecond)
	}
	report(b, lat, benchRiverJobs, time.Unix(0, last.Load()).Sub(start))
}

func benchBaton(b *testing.B, st store.Store) {
	ctx := context.Background()
	resumed := newStamps()
	tool := func(ctx context.Context, _ json.RawMessage) (string, error) {
		ci, _ := agent.CallFromContext(ctx)
		resumed.mark(ci.RunID)
		return `{"status":"shipped"}`, nil
	}
	var done atomic.Int64
	var last atomic.Int64
	count := runner.ExtensionFuncs{Boundary: func(_ context.Context, bd *runner.Boundary) error {
		if bd.State.Status == runstate.StatusCompleted {
			done.Add(1)
			last.Store(time.Now().UnixNano())
		}
		return nil
	}}
	d, br := backendOf(b, st)
	cont, svc := wire(b, st, benchNetwork(b, tool),
		Config{Store: st, Driver: d, Broker: br, Workers: benchWorkers, FetchCooldown: benchFetchCooldown, Logger: testLogger(), NoMigrate: true}, count)
	startUntilEnd(b, cont.Start, cont.Stop)
	if _, err := st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}); err != nil {
		b.Fatal(err)
	}
	turn := func(i int) (string, time.Time) { return benchTurn(b, svc, cont.RunOptions(), i) }
	// Latency, one continuation at a time.
	var lat, full []time.Duration
	for i := range benchLatencySamples {
		want := done.Load() + 1
		run, t0 := turn(i)
		for done.Load() < want {
			time.Sleep(100 * time.Microsecond)
		}
		lat = append(lat, resumed.get(run).Sub(t0))
		full = append(full, time.Unix(0, last.Load()).Sub(t0))
	}
	b.ReportMetric(float64(percentile(full, 0.5).Microseconds())/1000, "finish-p50-ms")
	// Throughput, 16 producers, end to end.
	done.Store(0)
	start := time.Now()
	fanOut(b, benchBatonJobs, func(i int) error {
		turn(benchLatencySamples + i)
		return nil
	})
	deadline := time.Now().Add(5 * time.Minute)
	for done.Load() < benchBatonJobs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if done.Load() < benchBatonJobs {
		b.Fatalf("%d of %d continuations done", done.Load(), benchBatonJobs)
	}
	report(b, lat, benchBatonJobs, time.Unix(0, last.Load()).Sub(start))

	// The workers alone: continuations handed over while the workers were
	// stopped, worked by 16 workers.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cont.Stop(sctx); err != nil {
		b.Fatal(err)
	}
	fanOut(b, benchBatonJobs, func(i int) error {
		turn(benchLatencySamples + benchBatonJobs + i)
		return nil
	})
	done.Store(0)
	start = time.Now()
	if err := cont.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for done.Load() < benchBatonJobs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(benchBatonJobs)/time.Unix(0, last.Load()).Sub(start).Seconds(), "worker-per-s")
}

// benchTurn runs turn i on a new thread of svc with opts, which hands the
// run over, and returns the run and the time its hand-over had committed.
func benchTurn(b *testing.B, svc *threads.Service, opts []runner.RunOption, i int) (string, time.Time) {
	var run string
	for ev, err := range svc.Turn(context.Background(), owner, fmt.Sprintf("Where is order %d?", i), threads.TurnOptions{RunOptions: opts}) {
		if err != nil {
			b.Fatal(err)
		}
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			run = e.RunID
		case *runner.RunEndEvent:
			if e.Status != runstate.StatusSuspended {
				b.Fatalf("turn %d ended %s", i, e.Status)
			}
			// The hand-over committed before run_end.
			return run, time.Now()
		}
	}
	b.Fatal("no run_end")
	return "", time.Time{}
}

// benchNetwork is the benchmarks' network: a call of the slow tool, then
// the answer.
func benchNetwork(b *testing.B, tool func(context.Context, json.RawMessage) (string, error)) *agent.Network {
	a := &agent.Agent{Name: "assistant", ModelName: "scripted",
		Model: scripted.New("assistant", []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
			{Text: "Your order 1234 has shipped."},
		}, scripted.Options{}),
		Tools: []*agent.Tool{{Name: "lookup", Slow: true, Func: tool}}}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "bench", Agents: []*agent.Agent{a}})
	if err != nil {
		b.Fatal(err)
	}
	return net
}

// fanOut calls do(0) … do(n-1) from benchProducers goroutines at once,
// each taking every benchProducers-th i, and returns when all are done. A
// goroutine stops at its first error, which fails b.
func fanOut(b *testing.B, n int, do func(i int) error) {
	var wg sync.WaitGroup
	for p := range benchProducers {
		wg.Go(func() {
			for i := p; i < n; i += benchProducers {
				if err := do(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func benchInline(b *testing.B, st store.Store) {
	ctx := context.Background()
	r, err := runner.New(runner.Config{Network: benchNetwork(b, func(context.Context, json.RawMessage) (string, error) {
		return `{"status":"shipped"}`, nil
	}), Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	svc := threads.New(st, r, testLogger())
	start := time.Now()
	fanOut(b, benchBatonJobs, func(i int) error {
		for ev, err := range svc.Turn(ctx, owner, fmt.Sprintf("Where is order %d?", i), threads.TurnOptions{}) {
			if err != nil {
				return err
			}
			if e, ok := ev.(*runner.RunEndEvent); ok && e.Status != runstate.StatusCompleted {
				b.Errorf("turn %d ended %s", i, e.Status)
			}
		}
		return nil
	})
	b.ReportMetric(float64(benchBatonJobs)/time.Since(start).Seconds(), "per-s")
	b.ReportMetric(0, "ns/op")
}
