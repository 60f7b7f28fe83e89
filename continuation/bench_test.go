package continuation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/bench/continuationbench"
	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// BenchmarkContinuation measures, on SQLite and PostgreSQL, in the same run
// and on the same database, the scenarios of bench/continuationbench
// (which bench/peers/dbos runs too, beside DBOS):
//
//   - River: River's bare round trip, a no-op job: latency from Insert
//     returning (committed) to Work starting, one job at a time; then jobs/s
//     from 16 producers, from the first insert to the last job worked.
//   - RiverEquivalent: River making a continuation's durable writes with
//     hand-written SQL, from 16 producers: jobs/s.
//   - Baton: a continuation: latency from the hand-over's commit (the inline
//     run returns suspended) to the worker resuming the run (its slow tool
//     starting), one at a time; then continuations/s from 16 producers, end
//     to end (inline turn with hand-over, worker claim, tool, model, final
//     transaction).
//   - Inline (reference, not a target): the same turn run all inline, no
//     hand-over, from 16 producers: turns/s. What a continuation costs
//     beyond it is the hand-over, the claim and the finalisation.
//
// Run it with -benchtime=1x: each benchmark runs its scenario once and
// reports p50-ms, p99-ms and per-s.
func BenchmarkContinuation(b *testing.B) {
	continuationbench.Benchmark(b, continuationbench.Scenario{Name: "Inline", Run: benchInline})
}

func benchInline(b *testing.B, st store.Store) {
	ctx := context.Background()
	rc := runner.Config{Network: continuationbench.Network(b, func(context.Context, json.RawMessage) (string, error) {
		return `{"status":"shipped"}`, nil
	}), Logger: backendtest.Logger()}
	if continuationbench.RecordCalls() {
		rc.RecordCalls, rc.Extensions = true, []runner.Extension{inspect.Extension(inspect.Config{})}
	}
	r, err := runner.New(rc)
	if err != nil {
		b.Fatal(err)
	}
	svc := threads.New(st, r, backendtest.Logger())
	start := time.Now()
	continuationbench.FanOut(b, continuationbench.BatonJobs, func(i int) error {
		for ev, err := range svc.Turn(ctx, continuationbench.Owner, fmt.Sprintf("Where is order %d?", i), threads.TurnOptions{}) {
			if err != nil {
				return err
			}
			if e, ok := ev.(*runner.RunEndEvent); ok && e.Status != runstate.StatusCompleted {
				b.Errorf("turn %d ended %s", i, e.Status)
			}
		}
		return nil
	})
	b.ReportMetric(float64(continuationbench.BatonJobs)/time.Since(start).Seconds(), "per-s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkVersusPair measures issue 18's ratio, baton's continuations/s
// over RiverEquivalent's jobs/s, on SQLite and PostgreSQL, paired in one
// process (see continuationbench.VersusPair): both on one store, in
// alternating batches, the median of the per-round ratios reported. Run it
// with -benchtime=1x.
func BenchmarkVersusPair(b *testing.B) {
	continuationbench.Each(b, continuationbench.VersusPair)
}

// BenchmarkVersusWrites measures baton against BatonWrites, its own writes
// made by hand, paired (see continuationbench.VersusWrites; PostgreSQL).
// Run it with -benchtime=1x.
func BenchmarkVersusWrites(b *testing.B) {
	continuationbench.Each(b, continuationbench.VersusWrites)
}

// BenchmarkSchemaPair measures a schema or connection change on PostgreSQL,
// paired in one process (see continuationbench.SchemaPair):
// BENCH_PAIR_ALTER is the SQL that makes schema B from A, BENCH_PAIR_PARAMS
// the run-time parameters of B's connections (a URL query); both unset, B
// is A (the method's control). Run it with -benchtime=1x.
func BenchmarkSchemaPair(b *testing.B) {
	continuationbench.SchemaPair(b, os.Getenv("BENCH_PAIR_ALTER"), os.Getenv("BENCH_PAIR_PARAMS"))
}
