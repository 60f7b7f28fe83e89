// Package continuationbench is the scenario of the continuation's
// benchmarks, in one place for both sides that run it: BenchmarkContinuation
// (package continuation) and BenchmarkPeers (module bench/peers/dbos, beside
// DBOS). It holds the sizes, the stores (SQLite, and PostgreSQL when
// BATON_TEST_DATABASE_URL is set), River's bare job, RiverEquivalent (River
// making a continuation's durable writes with hand-written SQL), Baton's
// continuation, the producers and the percentile report.
//
// Each scenario runs once per benchmark: run them with -benchtime 1x. They
// report p50-ms, p99-ms and per-s (and ns/op 0).
package continuationbench

import (
	"context"
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

// Benchmark sizes.
const (
	LatencySamples = 200
	Producers      = 16
	BatonJobs      = 480
	RiverJobs      = 1600
	Workers        = 16
	// FetchCooldown is River's FetchCooldown (and insert-notification
	// limit) for every system (a peer's polling interval too): small, so
	// that the measure is the systems', not the throttle's (River's default
	// is 100ms).
	FetchCooldown = 5 * time.Millisecond
	// PGMaxConns is the pool size of every system on PostgreSQL: baton's
	// store (River's bare and equivalent jobs run on it too), a peer's.
	PGMaxConns = 2*Producers + Workers
)

// Owner is the owner of the benchmarks' runs.
const Owner = "acme"

// Backend opens a fresh store.
type Backend struct {
	Name string
	Open func(tb testing.TB) store.Store
}

// sqlitePaths maps an SQLite store of [Backends] to its file.
var sqlitePaths sync.Map

// Backends returns SQLite (a file in a temporary directory) and, when
// BATON_TEST_DATABASE_URL is set, PostgreSQL (a fresh schema per store, a
// pool of [PGMaxConns]); in CI PostgreSQL is required (testdb.Backends).
func Backends(tb testing.TB) []Backend {
	tb.Helper()
	out := []Backend{{"SQLite", func(tb testing.TB) store.Store {
		path := filepath.Join(tb.TempDir(), "baton.db")
		s, err := sqlitestore.Open(context.Background(), path, nil)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		sqlitePaths.Store(s, path)
		return s
	}}}
	if _, ok := testdb.Backends(tb)["Postgres"]; ok {
		u := os.Getenv(testdb.URLVar)
		out = append(out, Backend{"Postgres", func(tb testing.TB) store.Store {
			return testdb.PostgresWith(tb, u, store.Options{MaxConns: PGMaxConns})
		}})
	}
	return out
}

// SQLitePath returns the file of an SQLite store opened by [Backends].
func SQLitePath(st store.Store) (string, bool) {
	p, ok := sqlitePaths.Load(st)
	if !ok {
		return "", false
	}
	return p.(string), true
}

// Each runs bench as a sub-benchmark of b per backend (named after it), on
// one store with River's migrations: the scenarios bench runs share it.
func Each(b *testing.B, bench func(b *testing.B, st store.Store)) {
	for _, be := range Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			st := be.Open(b)
			if err := driverOf(b, st).Migrate(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			bench(b, st)
		})
	}
}

// Scenario is a sub-benchmark on one store.
type Scenario struct {
	Name string
	Run  func(b *testing.B, st store.Store)
}

// Benchmark runs, on each backend ([Each]), the [Scenarios] and then also,
// one after the other: BenchmarkContinuation (also Inline) and
// BenchmarkPeers (also DBOS).
func Benchmark(b *testing.B, also ...Scenario) {
	Each(b, func(b *testing.B, st store.Store) {
		Scenarios(b, st)
		for _, sc := range also {
			b.Run(sc.Name, func(b *testing.B) { sc.Run(b, st) })
		}
	})
}

// Scenarios runs, on st, one after the other, the sub-benchmarks River
// ([River]), RiverEquivalent ([RiverEquivalent]), Baton ([Baton]) and, on
// PostgreSQL, BatonWrites ([BatonWrites]): what
// BenchmarkContinuation and BenchmarkPeers both measure.
func Scenarios(b *testing.B, st store.Store) {
	b.Run("River", func(b *testing.B) { River(b, st) })
	b.Run("RiverEquivalent", func(b *testing.B) { RiverEquivalent(b, st) })
	b.Run("Baton", func(b *testing.B) { Baton(b, st) })
	if _, ok := st.(*pgstore.Store); ok {
		b.Run("BatonWrites", func(b *testing.B) { BatonWrites(b, st) })
	}
}

// driverOf returns River on st.
func driverOf(tb testing.TB, st store.Store) continuation.Driver {
	tb.Helper()
	switch s := st.(type) {
	case *pgstore.Store:
		return continuation.PostgresDriver(s)
	case *sqlitestore.Store:
		return continuation.SQLiteDriver(s)
	}
	tb.Fatalf("store %T", st)
	return nil
}

// Stamps records times by key, the first for each.
type Stamps struct {
	mu sync.Mutex
	at map[string]time.Time
	ch map[string]chan struct{}
}

// NewStamps returns empty stamps.
func NewStamps() *Stamps {
	return &Stamps{at: map[string]time.Time{}, ch: map[string]chan struct{}{}}
}

// Expect returns a channel closed when key is marked.
func (s *Stamps) Expect(key string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := make(chan struct{})
	s.ch[key] = c
	return c
}

// Mark records now for key, unless key has a time; it reports whether it
// recorded.
func (s *Stamps) Mark(key string) bool {
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

// Await calls do, which starts the work that marks key, and waits up to
// 30s for key's mark; it returns the time do returned (where a latency
// starts). It fails tb when do fails or key is not marked in time.
func (s *Stamps) Await(tb testing.TB, key string, do func() error) time.Time {
	tb.Helper()
	marked := s.Expect(key)
	if err := do(); err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	select {
	case <-marked:
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s not marked in 30s", key)
	}
	return t0
}

// Get returns key's time, zero if it has none.
func (s *Stamps) Get(key string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at[key]
}

// Percentile returns the p-th percentile (0 < p ≤ 1) of ds, nearest rank.
func Percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Report reports lat's p50-ms and p99-ms, n jobs in took as per-s, and
// ns/op 0.
func Report(b *testing.B, lat []time.Duration, n int, took time.Duration) {
	b.ReportMetric(float64(Percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(Percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(n)/took.Seconds(), "per-s")
	b.ReportMetric(0, "ns/op")
}

// FanOut calls do(0) … do(n-1) from [Producers] goroutines at once, each
// taking every Producers-th i, and returns when all are done. A goroutine
// stops at its first error, which fails tb.
func FanOut(tb testing.TB, n int, do func(i int) error) {
	var wg sync.WaitGroup
	for p := range Producers {
		wg.Go(func() {
			for i := p; i < n; i += Producers {
				if err := do(i); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
