package continuation_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/bench/continuationbench"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
)

// BenchmarkResumeServeDefaults measures the resume latency of `baton
// serve` on its embedded default: the service opened with its defaults on
// an SQLite file (10 workers in the process), 60 hand-overs one at a time,
// spread over River's poll period; from the inline run's end (hand-over
// committed) to the slow tool starting in the worker. Run it with
// -benchtime=1x; it reports p50-ms, p90-ms and max-ms.
func BenchmarkResumeServeDefaults(b *testing.B) {
	var mu sync.Mutex
	started := map[string]time.Time{}
	tool := func(ctx context.Context, _ json.RawMessage) (string, error) {
		ci, _ := agent.CallFromContext(ctx)
		mu.Lock()
		started[ci.RunID] = time.Now()
		mu.Unlock()
		return `{"status":"shipped"}`, nil
	}
	net := continuationbench.Network(b, tool)
	ctx := context.Background()
	svc, err := service.Open(ctx, service.Config{Networks: []service.Definition{{Network: net}},
		Database: "sqlite:" + b.TempDir() + "/baton.db", Workers: 10, Adopt: true})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer svc.Stop(ctx)
	n, _ := svc.Network("bench")
	if _, err := svc.Store().EnsureOwner(ctx, &store.EnsureOwnerParams{ID: continuationbench.Owner}); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for i := range 60 {
		run, end := continuationbench.Turn(b, n.Threads, n.Continuation.RunOptions(), i)
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			at, ok := started[run]
			mu.Unlock()
			if ok {
				lat = append(lat, at.Sub(end))
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("run %s not resumed", run)
			}
			time.Sleep(100 * time.Microsecond)
		}
		// Spread the hand-overs over River's fetch poll (250ms on SQLite).
		time.Sleep(time.Duration(i%7) * 30 * time.Millisecond)
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*9/10]), "p90-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(0, "ns/op")
}
