package bench

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

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
// With -count N the two alternate, N times each.
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
