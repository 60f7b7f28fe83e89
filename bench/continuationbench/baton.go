package continuationbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// backendOf returns River and a started draft broker on st (what package
// service chooses when it opens a database).
func backendOf(tb testing.TB, st store.Store) (continuation.Driver, draft.Broker) {
	tb.Helper()
	return driverOf(tb, st), backendtest.Broker(tb, st)
}

// wire builds a continuation service from cfg and the threads service of
// net whose runner carries its extension, then extra.
func wire(tb testing.TB, st store.Store, net *agent.Network, cfg continuation.Config, extra ...runner.Extension) (*continuation.Service, *threads.Service) {
	tb.Helper()
	cont, err := continuation.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	exts := append([]runner.Extension{cont.Extension()}, extra...)
	rc := runner.Config{Network: net, Logger: backendtest.Logger(), Extensions: exts}
	if RecordCalls() {
		// The inspector's recording, as package service assembles it.
		rc.RecordCalls = true
		rc.Extensions = append(rc.Extensions, inspect.Extension(inspect.Config{}))
	}
	r, err := runner.New(rc)
	if err != nil {
		tb.Fatal(err)
	}
	svc := threads.New(st, r, backendtest.Logger())
	cont.Work(svc)
	return cont, svc
}

// Baton is a continuation: latency from the hand-over's commit (the
// inline run returns suspended) to the worker resuming the run (its slow
// tool starting), one at a time (p50-ms, p99-ms; finish-p50-ms to the
// final checkpoint); then continuations/s from [Producers] producers, end
// to end (inline turn with hand-over, worker claim, tool, model, final
// transaction: per-s); then the producers alone, inline turns handing over
// while the workers are stopped (handover-per-s); then the workers alone,
// working those (worker-per-s).
func Baton(b *testing.B, st store.Store) {
	ctx := context.Background()
	resumed := NewStamps()
	tool := func(ctx context.Context, _ json.RawMessage) (string, error) {
		ci, _ := agent.CallFromContext(ctx)
		resumed.Mark(ci.RunID)
		return `{"status":"shipped"}`, nil
	}
	var jobs finished
	cont, svc := started(b, st, tool, &jobs)
	turn := func(i int) (string, time.Time) { return Turn(b, svc, cont.RunOptions(), i) }
	// Latency, one continuation at a time.
	var lat, full []time.Duration
	for i := range LatencySamples {
		want := jobs.done.Load() + 1
		run, t0 := turn(i)
		for jobs.done.Load() < want {
			time.Sleep(100 * time.Microsecond)
		}
		lat = append(lat, resumed.Get(run).Sub(t0))
		full = append(full, time.Unix(0, jobs.last.Load()).Sub(t0))
	}
	b.ReportMetric(float64(Percentile(full, 0.5).Microseconds())/1000, "finish-p50-ms")
	// Throughput, 16 producers, end to end.
	jobs.done.Store(0)
	start := time.Now()
	runs := make([]string, BatonJobs)
	FanOut(b, BatonJobs, func(i int) error {
		runs[i], _ = turn(LatencySamples + i)
		return nil
	})
	deadline := time.Now().Add(5 * time.Minute)
	for jobs.done.Load() < BatonJobs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if jobs.done.Load() < BatonJobs {
		Diagnose(b, st, jobs.missing(runs))
		b.Fatalf("%d of %d continuations done", jobs.done.Load(), BatonJobs)
	}
	Report(b, lat, BatonJobs, time.Unix(0, jobs.last.Load()).Sub(start))

	// The workers alone: continuations handed over while the workers were
	// stopped, worked by 16 workers.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cont.Stop(sctx); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	FanOut(b, BatonJobs, func(i int) error {
		turn(LatencySamples + BatonJobs + i)
		return nil
	})
	b.ReportMetric(float64(BatonJobs)/time.Since(t0).Seconds(), "handover-per-s")
	jobs.done.Store(0)
	start = time.Now()
	if err := cont.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for jobs.done.Load() < BatonJobs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(BatonJobs)/time.Unix(0, jobs.last.Load()).Sub(start).Seconds(), "worker-per-s")
}

// started wires baton on st (the benchmarks' network calling tool), whose
// completed runs jobs counts, starts its workers until the benchmark ends
// and makes the benchmarks' owner.
func started(tb testing.TB, st store.Store, tool func(context.Context, json.RawMessage) (string, error), jobs *finished) (*continuation.Service, *threads.Service) {
	count := runner.ExtensionFuncs{Boundary: func(_ context.Context, bd *runner.Boundary) error {
		if bd.State.Status == runstate.StatusCompleted {
			jobs.finishRun(bd.State.RunID)
		}
		return nil
	}}
	d, br := backendOf(tb, st)
	cont, svc := wire(tb, st, Network(tb, tool),
		continuation.Config{Store: st, Driver: d, Broker: br, Workers: Workers, FetchCooldown: FetchCooldown, Logger: backendtest.Logger(), NoMigrate: true}, count)
	backendtest.StartUntilEnd(tb, cont.Start, cont.Stop)
	if _, err := st.EnsureOwner(context.Background(), &store.EnsureOwnerParams{ID: Owner}); err != nil {
		tb.Fatal(err)
	}
	return cont, svc
}

// Turn runs turn i on a new thread of svc with opts, which hands the run
// over, and returns the run and the time its hand-over had committed.
func Turn(tb testing.TB, svc *threads.Service, opts []runner.RunOption, i int) (string, time.Time) {
	var run string
	for ev, err := range svc.Turn(context.Background(), Owner, fmt.Sprintf("Where is order %d?", i), threads.TurnOptions{RunOptions: opts}) {
		if err != nil {
			tb.Fatal(err)
		}
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			run = e.RunID
		case *runner.RunEndEvent:
			if e.Status != runstate.StatusSuspended {
				tb.Fatalf("turn %d ended %s", i, e.Status)
			}
			// The hand-over committed before run_end.
			return run, time.Now()
		}
	}
	tb.Fatal("no run_end")
	return "", time.Time{}
}

// Network is the benchmarks' network: a call of the slow tool, then the
// answer. The tool is idempotent (it has no effect to repeat), so a
// worker writes its result with the final checkpoint.
func Network(tb testing.TB, tool func(context.Context, json.RawMessage) (string, error)) *agent.Network {
	a := &agent.Agent{Name: "assistant", ModelName: "scripted",
		Model: scripted.New("assistant", []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
			{Text: "Your order 1234 has shipped."},
		}, scripted.Options{}),
		Tools: []*agent.Tool{{Name: "lookup", Slow: true, Idempotent: true, Func: tool}}}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "bench", Agents: []*agent.Agent{a}})
	if err != nil {
		tb.Fatal(err)
	}
	return net
}

// RecordCalls reports whether BENCH_RECORD_CALLS=1: the Baton scenarios
// then record every call for the inspector (issue 35), as every network
// package service assembles does by default, to measure its cost (before:
// unset; after: 1, alternating in one run: bench/inspect-ab.sh).
func RecordCalls() bool { return os.Getenv("BENCH_RECORD_CALLS") == "1" }
