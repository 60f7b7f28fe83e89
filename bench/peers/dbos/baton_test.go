package dbospeer

// Baton's continuation: a copy of benchBaton in continuation/bench_test.go
// (keep them in step), wired through the public API.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/threads"
)

// backendOf returns River and a started draft broker on st (what package
// service chooses).
func backendOf(t testing.TB, st store.Store) (continuation.Driver, draft.Broker) {
	t.Helper()
	if s, ok := st.(*pgstore.Store); ok {
		br := pgbroker.New(s, &pgbroker.Options{Logger: testLogger()})
		if err := br.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { br.Close() })
		return driverOf(t, st), br
	}
	return driverOf(t, st), draft.NewHub(st)
}

// wire builds a continuation service from cfg and the threads service of
// net whose runner carries its extension, then extra.
func wire(t testing.TB, st store.Store, net *agent.Network, cfg continuation.Config, extra ...runner.Extension) (*continuation.Service, *threads.Service) {
	t.Helper()
	cont, err := continuation.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exts := append([]runner.Extension{cont.Extension()}, extra...)
	r, err := runner.New(runner.Config{Network: net, Logger: testLogger(), Extensions: exts})
	if err != nil {
		t.Fatal(err)
	}
	svc := threads.New(st, r, testLogger())
	cont.Work(svc)
	return cont, svc
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
		continuation.Config{Store: st, Driver: d, Broker: br, Workers: benchWorkers, FetchCooldown: benchFetchCooldown, Logger: testLogger(), NoMigrate: true}, count)
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
