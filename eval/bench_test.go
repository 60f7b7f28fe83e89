package eval_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
)

// BenchmarkSupport measures cases per second on the support example,
// offline: its eval set's four cases copied to 100 (ids apart), run on the
// support network (every turn a checkpointed run), -j 1 and -j 4;
// "replayed" as the set is (its recordings answer the tools and the
// unchanged agents), "scripted" without the recordings (every agent on its
// scripted model, the tools run: --live-tools); on the default private
// in-memory database ("memory") and on a temporary SQLite file ("file",
// fsync'd at every checkpoint). The figure includes opening the service
// (its database, River's migrations) once per run of the set.
//
//	go test -run '^$' -bench BenchmarkSupport -benchtime 3x -count 6 ./eval
func BenchmarkSupport(b *testing.B) {
	base, err := evalset.Load("../examples/support/eval.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"replayed", "scripted"} {
		set := copies(base, 100, mode == "replayed")
		for _, j := range []int{1, 4} {
			for _, db := range []string{"memory", "file"} {
				b.Run(fmt.Sprintf("%s/j%d/%s", mode, j, db), func(b *testing.B) {
					database := ""
					if db == "file" {
						database = "sqlite:" + filepath.Join(b.TempDir(), "eval.db")
					}
					runSet(b, set, j, mode == "scripted", database)
				})
			}
		}
	}
}

// runSet runs set b.N times and reports the cases per second.
func runSet(b *testing.B, set *evalset.Set, j int, liveTools bool, database string) {
	var cases int
	var spent time.Duration
	for b.Loop() {
		start := time.Now()
		r, err := eval.Run(b.Context(), eval.Config{Set: set, Network: eval.Target{File: supportFile}, Concurrency: j, LiveTools: liveTools, Database: database})
		spent += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if r.Failed() {
			b.Fatalf("%s", r.Summary)
		}
		cases += len(r.Cases)
	}
	b.ReportMetric(float64(cases)/spent.Seconds(), "cases/s")
}

// copies returns a set of n cases, base's cases over and over, with or
// without their recordings.
func copies(base *evalset.Set, n int, recorded bool) *evalset.Set {
	out := &evalset.Set{Version: base.Version, Name: base.Name}
	for i := range n {
		c := base.Cases[i%len(base.Cases)]
		c.ID = fmt.Sprintf("%s-%d", c.ID, i)
		if !recorded {
			c.Recording = nil
		}
		out.Cases = append(out.Cases, c)
	}
	return out
}
