package dbospeer

import (
	"fmt"
	"testing"

	"github.com/batonhq/baton/bench/continuationbench"
	"github.com/batonhq/baton/store"
)

// BenchmarkPeers runs, on SQLite and on PostgreSQL, on one database each
// (one SQLite file; one PostgreSQL database, baton's and River's tables in
// one schema, DBOS's in another), one after the other in the same process:
//
//   - River: River's bare round trip, a no-op job (latency insert → work,
//     one at a time; jobs/s from 16 producers);
//   - RiverEquivalent: River making, with hand-written SQL, the durable
//     writes of a continuation (jobs/s from 16 producers);
//   - Baton: a continuation (latency hand-over commit → the slow tool
//     starting; continuations/s from 16 producers, end to end);
//   - DBOS: the same agent turn as a DBOS workflow on a DBOS queue
//     (latency enqueue → workflow start and → tool start; workflows/s from
//     16 producers, end to end).
//
// The first three are baton's BenchmarkContinuation's own scenarios
// (bench/continuationbench), with its sizes. Run with -benchtime 1x.
func BenchmarkPeers(b *testing.B) {
	continuationbench.Benchmark(b, continuationbench.Scenario{Name: "DBOS", Run: benchDBOS})
}

// BenchmarkVersusDBOS measures baton against DBOS on SQLite and on
// PostgreSQL paired (continuationbench.Versus): both on one database, in
// alternating batches of the same agent turn from 16 producers, end to
// end; the median per-round ratio Baton/DBOS and each side's rate and
// machine CPU per unit. Run with -benchtime 1x.
func BenchmarkVersusDBOS(b *testing.B) {
	continuationbench.Each(b, func(b *testing.B, st store.Store) {
		dctx, p, q := openDBOS(b, st)
		enqueue := enqueuer(dctx, p, q, fmt.Sprintf("v%d-", dbosRound.Add(1)))
		continuationbench.Versus(b, st, continuationbench.Side{Name: "DBOS",
			Run: func(i int) {
				if _, err := enqueue(i); err != nil {
					b.Error(err)
				}
			},
			Done: func() (int64, int64) { return p.done.Load(), p.last.Load() }})
	})
}
