package bench

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/threads"
)

// BenchmarkTransferStored is BenchmarkTransfer's triage → billing transfer
// run as a thread's turn on a store (SQLite on a file; PostgreSQL when
// BATON_TEST_DATABASE_URL is set): four checkpoints, each a transaction.
// Its sub-benchmarks Record=off and Record=on run the same turn without
// and with the inspector's recording (runner.Config.RecordCalls and
// inspect.Extension, as package service assembles every network): two
// model calls and a transfer recorded, in the checkpoints' transactions.
// Allocations are exact; for time, BenchmarkTransferStoredPaired.
func BenchmarkTransferStored(b *testing.B) {
	backends := map[string]func(testing.TB) store.Store{"SQLite": func(tb testing.TB) store.Store {
		st, err := sqlitestore.Open(tb.Context(), filepath.Join(tb.TempDir(), "baton.db"), nil)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { st.Close() })
		return st
	}}
	if os.Getenv(testdb.URLVar) != "" {
		backends["Postgres"] = func(tb testing.TB) store.Store {
			return testdb.Postgres(tb, testdb.URL(tb), testdb.Schema(tb, testdb.URL(tb)))
		}
	}
	for _, name := range []string{"SQLite", "Postgres"} {
		open, ok := backends[name]
		if !ok {
			continue
		}
		b.Run(name, func(b *testing.B) {
			st := open(b)
			if _, err := st.EnsureOwner(b.Context(), &store.EnsureOwnerParams{ID: "bench"}); err != nil {
				b.Fatal(err)
			}
			for _, record := range []bool{false, true} {
				mode := "Record=off"
				if record {
					mode = "Record=on"
				}
				b.Run(mode, func(b *testing.B) {
					s := transferNetwork(b, false)
					// An extension either way: the checkpoints are transactions
					// with the extensions inside, as in every assembled network.
					cfg := runner.Config{Network: s.r.Network(), Logger: slog.New(slog.DiscardHandler), Extensions: []runner.Extension{runner.NopExtension{}}}
					if record {
						cfg.RecordCalls, cfg.Extensions = true, []runner.Extension{inspect.Extension(inspect.Config{})}
					}
					r, err := runner.New(cfg)
					if err != nil {
						b.Fatal(err)
					}
					svc := threads.New(st, r, slog.New(slog.DiscardHandler))
					turn := func() {
						for ev, err := range svc.Turn(b.Context(), "bench", input, threads.TurnOptions{}) {
							if err != nil {
								b.Fatal(err)
							}
							if e, ok := ev.(*runner.RunEndEvent); ok && e.Status != runstate.StatusCompleted {
								b.Fatalf("turn ended %s", e.Status)
							}
						}
					}
					turn()
					b.ReportAllocs()
					for b.Loop() {
						turn()
					}
				})
			}
		})
	}
}

// BenchmarkTransferStoredPaired measures the time the recording adds to
// BenchmarkTransferStored's turn, paired: on one store, rounds of
// pairedTurns turns without and with the recording, alternating (the
// order reversed every other round), pairedRounds rounds. It reports the
// median per-turn time of each (off-ms, on-ms) and the median of the
// per-round ratios (on/off). Run it with -benchtime=1x.
func BenchmarkTransferStoredPaired(b *testing.B) {
	for _, name := range []string{"SQLite", "Postgres"} {
		b.Run(name, func(b *testing.B) {
			var st store.Store
			if name == "SQLite" {
				s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "baton.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				st = s
			} else {
				if os.Getenv(testdb.URLVar) == "" {
					b.Skip(testdb.URLVar + " is not set")
				}
				st = testdb.Postgres(b, testdb.URL(b), testdb.Schema(b, testdb.URL(b)))
			}
			if _, err := st.EnsureOwner(b.Context(), &store.EnsureOwnerParams{ID: "bench"}); err != nil {
				b.Fatal(err)
			}
			var svcs [2]*threads.Service
			for i := range svcs {
				s := transferNetwork(b, false)
				cfg := runner.Config{Network: s.r.Network(), Logger: slog.New(slog.DiscardHandler), Extensions: []runner.Extension{runner.NopExtension{}}}
				if i == 1 {
					cfg.RecordCalls, cfg.Extensions = true, []runner.Extension{inspect.Extension(inspect.Config{})}
				}
				r, err := runner.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				svcs[i] = threads.New(st, r, slog.New(slog.DiscardHandler))
			}
			turns := func(svc *threads.Service) time.Duration {
				start := time.Now()
				for range pairedTurns {
					for _, err := range svc.Turn(b.Context(), "bench", input, threads.TurnOptions{}) {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
				return time.Since(start) / pairedTurns
			}
			turns(svcs[0])
			turns(svcs[1])
			var off, on, ratio []float64
			for round := range pairedRounds {
				var d [2]time.Duration
				if round%2 == 0 {
					d[0], d[1] = turns(svcs[0]), turns(svcs[1])
				} else {
					d[1], d[0] = turns(svcs[1]), turns(svcs[0])
				}
				off, on = append(off, ms(d[0])), append(on, ms(d[1]))
				ratio = append(ratio, float64(d[1])/float64(d[0]))
			}
			b.ReportMetric(medianOf(off), "off-ms")
			b.ReportMetric(medianOf(on), "on-ms")
			b.ReportMetric(medianOf(ratio), "on/off")
			b.ReportMetric(0, "ns/op")
		})
	}
}

const (
	pairedRounds = 12
	pairedTurns  = 40
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// medianOf is the median of v (the mean of the middle two for an even
// count).
func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
