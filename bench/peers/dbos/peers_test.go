package dbospeer

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// Benchmark sizes: those of baton's BenchmarkContinuation
// (continuation/bench_test.go), so that the numbers of both compare.
const (
	benchLatencySamples = 200
	benchProducers      = 16
	benchBatonJobs      = 480
	benchRiverJobs      = 1600
	benchWorkers        = 16
	// benchFetchCooldown is River's FetchCooldown (and insert-notification
	// limit) and DBOS's queue polling interval.
	benchFetchCooldown = 5 * time.Millisecond
	// pgMaxConns is the pool size of every system on PostgreSQL: baton's
	// store (River's bare and equivalent jobs run on it too) and DBOS's
	// system database.
	pgMaxConns = 2*benchProducers + benchWorkers
)

const owner = "acme"

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
// The first three are copies of continuation/bench_test.go and
// bench_equiv_test.go (which are in a _test package and cannot be
// imported). Run with -benchtime 1x.
func BenchmarkPeers(b *testing.B) {
	for _, be := range backends(b) {
		b.Run(be.name, func(b *testing.B) {
			st := be.open(b)
			if err := driverOf(b, st).Migrate(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			b.Run("River", func(b *testing.B) { benchRiver(b, st) })
			b.Run("RiverEquivalent", func(b *testing.B) { benchRiverEquivalent(b, st) })
			b.Run("Baton", func(b *testing.B) { benchBaton(b, st) })
			b.Run("DBOS", func(b *testing.B) { benchDBOS(b, st) })
		})
	}
}

type backend struct {
	name string
	open func(t testing.TB) store.Store
}

// sqlitePaths maps an SQLite store to its file, where DBOS's system
// database goes too.
var sqlitePaths sync.Map

// backends: SQLite (a temporary file), and PostgreSQL in a fresh schema
// when BATON_TEST_DATABASE_URL is set.
func backends(t testing.TB) []backend {
	out := []backend{{"SQLite", func(t testing.TB) store.Store {
		path := filepath.Join(t.TempDir(), "baton.db")
		s, err := sqlitestore.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		sqlitePaths.Store(s, path)
		return s
	}}}
	if u := os.Getenv(testdb.URLVar); u != "" {
		out = append(out, backend{"Postgres", func(t testing.TB) store.Store {
			return testdb.PostgresWith(t, u, store.Options{MaxConns: pgMaxConns})
		}})
	}
	return out
}

func driverOf(t testing.TB, st store.Store) continuation.Driver {
	switch s := st.(type) {
	case *pgstore.Store:
		return continuation.PostgresDriver(s)
	case *sqlitestore.Store:
		return continuation.SQLiteDriver(s)
	}
	t.Fatalf("store %T", st)
	return nil
}

func testLogger() *slog.Logger {
	if os.Getenv("BATON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startUntilEnd calls start, and stop when tb ends, allowing it 10s.
func startUntilEnd(tb testing.TB, start, stop func(context.Context) error) {
	tb.Helper()
	if err := start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
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

// mark records now for key, unless key has a time; it reports whether it
// recorded.
func (s *stamps) mark(key string) bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[key]; ok {
		return false
	}
	s.at[key] = now
	if c := s.ch[key]; c != nil {
		close(c)
	}
	return true
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

// fanOut calls do(0) … do(n-1) from benchProducers goroutines at once,
// each taking every benchProducers-th i, and returns when all are done. A
// goroutine stops at its first error, which fails b.
func fanOut(b testing.TB, n int, do func(i int) error) {
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
