package continuationbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
)

// Pair sizes: rounds of two batches, one per side, the first round a
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
// the per-round ratios (B/A); with [ServerPIDVar], also of the PostgreSQL
// server's CPU alone (A-pg-cpu-ms, B-pg-cpu-ms, B/A-pg).
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
	a, bb := batonSide(b, pairStore(b, u, "")), batonSide(b, pairStore(b, ub, alter))
	pair(b, a, bb, PairRounds, PairBatch)
	b.ReportMetric(median(a.cpu), "A-cpu-ms")
	b.ReportMetric(median(bb.cpu), "B-cpu-ms")
	b.ReportMetric(medianRatio(bb.cpu, a.cpu), "B/A")
	if len(a.pg) > 0 {
		b.ReportMetric(median(a.pg), "A-pg-cpu-ms")
		b.ReportMetric(median(bb.pg), "B-pg-cpu-ms")
		b.ReportMetric(medianRatio(bb.pg, a.pg), "B/A-pg")
	}
	b.ReportMetric(0, "ns/op")
}

// Sizes of [VersusPair]: larger batches than [SchemaPair]'s, so that a
// batch's rate is its throughput more than its start and its tail.
const (
	VersusRounds = 21
	VersusBatch  = 192
)

// VersusPair measures issue 18's ratio — baton's continuations/s over
// RiverEquivalent's jobs/s, from [Producers] producers, end to end — paired,
// with [Versus].
func VersusPair(b *testing.B, st store.Store) {
	versusOn(b, st, "RiverEquivalent", equivalent)
}

// versusOn runs [Versus] against name, the River scenario that setup
// prepares on st.
func versusOn(b *testing.B, st store.Store, name string, setup jobsScenario) {
	var jobs finished
	produce, start, stop := setup(b, st, &jobs)
	backendtest.StartUntilEnd(b, start, stop)
	Versus(b, st, Side{Name: name, Run: func(n int) {
		if err := produce(n); err != nil {
			b.Error(err)
		}
	}, Done: jobs.count})
}

// Side is a system [Versus] measures baton against: Run starts unit i (it
// may return before the unit is worked); Done returns how many units have
// been worked and when the last one was (Unix nanoseconds).
type Side struct {
	Name string
	Run  func(i int)
	Done func() (n, last int64)
}

// Versus measures baton against other on st, paired: both set up at once,
// in one process, they run in alternating batches of [VersusBatch] from
// [Producers] producers (the order swapped every round, [VersusRounds]
// rounds, the first a warm-up), each batch worked to its end before the
// next starts; a batch's rate is its units over the time from its first
// Run to its last unit worked. Reported: each side's median rate
// (<name>-per-s, Baton-per-s), the median per-round ratio (Baton/<name>),
// each side's median machine CPU per unit (<name>-cpu-ms, Baton-cpu-ms;
// Linux) and, of it, this process's (<name>-go-cpu-ms, Baton-go-cpu-ms:
// the Go side; the rest is the database server's, on PostgreSQL, and the
// machine's other work) and, with [ServerPIDVar], the PostgreSQL server's
// (<name>-pg-cpu-ms, Baton-pg-cpu-ms, and their median per-round ratio).
// The machine's drift between runs falls on both
// sides of each round alike, where the sequential scenarios of [Scenarios]
// measure each side in its own span of a run.
func Versus(b *testing.B, st store.Store, other Side) {
	o := &pairSide{run: other.Run, done: other.Done}
	bt := batonSide(b, st)
	pair(b, o, bt, VersusRounds, VersusBatch)
	b.ReportMetric(median(o.rate), other.Name+"-per-s")
	b.ReportMetric(median(bt.rate), "Baton-per-s")
	b.ReportMetric(medianRatio(bt.rate, o.rate), "Baton/"+other.Name)
	if _, err := machineCPU(); err == nil {
		b.ReportMetric(median(o.cpu), other.Name+"-cpu-ms")
		b.ReportMetric(median(bt.cpu), "Baton-cpu-ms")
	}
	b.ReportMetric(median(o.own), other.Name+"-go-cpu-ms")
	b.ReportMetric(median(bt.own), "Baton-go-cpu-ms")
	if len(bt.pg) > 0 {
		b.ReportMetric(median(o.pg), other.Name+"-pg-cpu-ms")
		b.ReportMetric(median(bt.pg), "Baton-pg-cpu-ms")
		b.ReportMetric(medianRatio(bt.pg, o.pg), "Baton/"+other.Name+"-pg-cpu")
	}
	b.ReportMetric(0, "ns/op")
}

// pair runs a's and bb's batches of size, alternating, the order swapped
// every round, for rounds, and drops the first round's (a warm-up).
func pair(b *testing.B, a, bb *pairSide, rounds, size int) {
	n := 0
	for r := range rounds {
		order := []*pairSide{a, bb}
		if r%2 == 1 {
			order = []*pairSide{bb, a}
		}
		for _, sd := range order {
			sd.batch(b, n, size)
			n += size
		}
	}
	for _, sd := range []*pairSide{a, bb} {
		sd.cpu, sd.own, sd.rate = sd.cpu[1:], sd.own[1:], sd.rate[1:]
		if len(sd.pg) > 0 {
			sd.pg = sd.pg[1:]
		}
	}
}

// pairStore opens a fresh PostgreSQL schema at u, migrated (River too),
// then changed by alter.
func pairStore(b *testing.B, u, alter string) store.Store {
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
	return st
}

// pairSide is one side of a pair: run(i) starts unit i, done tells the
// units worked and when the last one was; per batch, the machine's CPU per
// unit (ms, when /proc/stat is there) and the units per second.
type pairSide struct {
	run  func(i int)
	done func() (n, last int64)
	// diagnose, when set, logs what became of units first to first+size-1
	// of a batch not done in time.
	diagnose func(first, size int)
	cpu      []float64
	own      []float64 // this process's CPU per unit (ms): the Go side
	pg       []float64 // the PostgreSQL server's CPU per unit (ms), with ServerPIDVar
	rate     []float64
}

// batonSide is baton's continuation on st.
func batonSide(b *testing.B, st store.Store) *pairSide {
	var jobs finished
	var runs sync.Map // unit → run id
	sd := &pairSide{done: jobs.count}
	tool := func(context.Context, json.RawMessage) (string, error) { return `{"status":"shipped"}`, nil }
	cont, svc := started(b, st, tool, &jobs)
	sd.run = func(i int) {
		run, _ := Turn(b, svc, cont.RunOptions(), i)
		runs.Store(i, run)
	}
	sd.diagnose = func(first, size int) {
		var of []string
		for i := first; i < first+size; i++ {
			if r, ok := runs.Load(i); ok {
				of = append(of, r.(string))
			}
		}
		Diagnose(b, st, jobs.missing(of))
	}
	return sd
}

// batch runs size units, numbered from first, to their end and records
// their CPU cost and rate.
func (sd *pairSide) batch(b *testing.B, first, size int) {
	n, _ := sd.done()
	want := n + int64(size)
	busy0, _ := machineCPU()
	own0 := processCPU()
	pg0, pgOK := serverCPU()
	t0 := time.Now()
	FanOut(b, size, func(i int) error {
		sd.run(first + i)
		return nil
	})
	deadline := time.Now().Add(time.Minute)
	for {
		n, _ := sd.done()
		if n >= want {
			break
		}
		if time.Now().After(deadline) {
			if sd.diagnose != nil {
				sd.diagnose(first, size)
			}
			b.Fatalf("%d of %d units of a batch done", int64(size)-(want-n), size)
		}
		time.Sleep(time.Millisecond)
	}
	busy1, _ := machineCPU()
	sd.cpu = append(sd.cpu, float64((busy1-busy0).Microseconds())/1000/float64(size))
	sd.own = append(sd.own, float64((processCPU()-own0).Microseconds())/1000/float64(size))
	if pg1, ok := serverCPU(); ok && pgOK {
		sd.pg = append(sd.pg, float64((pg1-pg0).Microseconds())/1000/float64(size))
	}
	_, last := sd.done()
	sd.rate = append(sd.rate, float64(size)/time.Unix(0, last).Sub(t0).Seconds())
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

// processCPU returns the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// medianRatio returns the median of num[i]/den[i], the per-round ratios.
func medianRatio(num, den []float64) float64 {
	r := make([]float64, len(num))
	for i := range num {
		r[i] = num[i] / den[i]
	}
	return median(r)
}

func median(v []float64) float64 {
	w := slices.Clone(v)
	slices.Sort(w)
	return (w[(len(w)-1)/2] + w[len(w)/2]) / 2
}
