package benchcontinuation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
)

// Pair sizes: rounds of two batches, one per schema, the first round a
// warm-up left out of the results.
const (
	PairRounds = 31
	PairBatch  = 96
)

// SchemaPair measures what a schema or connection change costs or saves a
// continuation on PostgreSQL, paired so that the machine's drift (±30%
// between runs here) falls on both sides alike: baton runs on two fresh
// schemas at once in one process, A as migrated and B changed by alter (SQL
// run on B after the migrations) and by params (run-time parameters of B's
// connections, as a URL query: "plan_cache_mode=force_generic_plan"); both
// "" make B a copy of A, the method's control. They run in alternating
// batches of [PairBatch] continuations from [Producers] producers, each
// batch worked to the end before the next starts. Each batch's cost is the
// machine's busy CPU time over it (/proc/stat, Linux) per continuation.
// Reported: the medians of A's and B's costs (A-cpu-ms, B-cpu-ms) and of
// the per-round ratios (B/A).
func SchemaPair(b *testing.B, alter, params string) {
	if _, err := machineCPU(); err != nil {
		b.Skipf("no CPU accounting: %v", err)
	}
	u := os.Getenv(testdb.URLVar)
	if u == "" {
		b.Skipf("%s not set: PostgreSQL only", testdb.URLVar)
	}
	ub := u
	if params != "" {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		ub = u + sep + params
	}
	a, bb := newPairSide(b, u, ""), newPairSide(b, ub, alter)
	n := 0
	for r := range PairRounds {
		order := []*pairSide{a, bb}
		if r%2 == 1 {
			order = []*pairSide{bb, a}
		}
		for _, sd := range order {
			sd.batch(b, n)
			n += PairBatch
		}
	}
	a.cpu, bb.cpu = a.cpu[1:], bb.cpu[1:]
	ratios := make([]float64, len(a.cpu))
	for i := range a.cpu {
		ratios[i] = bb.cpu[i] / a.cpu[i]
	}
	b.ReportMetric(median(a.cpu), "A-cpu-ms")
	b.ReportMetric(median(bb.cpu), "B-cpu-ms")
	b.ReportMetric(median(ratios), "B/A")
	b.ReportMetric(0, "ns/op")
}

// pairSide is baton on one schema of a pair.
type pairSide struct {
	turn func(i int)
	jobs finished
	cpu  []float64 // ms per continuation, per batch
}

func newPairSide(b *testing.B, u, alter string) *pairSide {
	ctx := context.Background()
	st := testdb.PostgresWith(b, u, store.Options{MaxConns: PGMaxConns})
	if err := driverOf(b, st).Migrate(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if alter != "" {
		if _, err := st.Pool().Exec(ctx, alter); err != nil {
			b.Fatalf("alter: %v", err)
		}
	}
	sd := &pairSide{}
	tool := func(context.Context, json.RawMessage) (string, error) { return `{"status":"shipped"}`, nil }
	cont, svc := started(b, st, tool, &sd.jobs)
	sd.turn = func(i int) { Turn(b, svc, cont.RunOptions(), i) }
	return sd
}

// batch runs [PairBatch] continuations, numbered from first, to their end
// and records their CPU cost.
func (sd *pairSide) batch(b *testing.B, first int) {
	want := sd.jobs.done.Load() + PairBatch
	busy0, _ := machineCPU()
	FanOut(b, PairBatch, func(i int) error {
		sd.turn(first + i)
		return nil
	})
	deadline := time.Now().Add(time.Minute)
	for sd.jobs.done.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d continuations of a batch done", PairBatch-(want-sd.jobs.done.Load()), PairBatch)
		}
		time.Sleep(time.Millisecond)
	}
	busy1, _ := machineCPU()
	sd.cpu = append(sd.cpu, float64((busy1-busy0).Microseconds())/1000/PairBatch)
}

// machineCPU returns the time the machine's CPUs have been busy (user,
// nice, system, irq, softirq; not steal, the hypervisor's), from /proc/stat.
func machineCPU() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system [idle iowait] irq softirq
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += v
	}
	return time.Duration(busy) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
}

func median(v []float64) float64 {
	w := slices.Clone(v)
	slices.Sort(w)
	return (w[(len(w)-1)/2] + w[len(w)/2]) / 2
}
