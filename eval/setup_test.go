package eval_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/service/servicetest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

const supportFile = "../examples/support/network.yaml"

// conversation is a thread to record: its user turns, approved when a
// turn stops for an approval.
type conversation []string

var conversations = []conversation{
	{"I was charged twice for order 1234", "How long until it is reversed?"},
	{"I want a refund for order 1234"},
	{"The app crashes when I log in"},
}

// record runs conversations on the support network, stored in st, and
// returns their threads.
func record(t *testing.T, st store.Store, convs ...conversation) []string {
	t.Helper()
	return recordOn(t, st, supportFile, convs...)
}

// recordOn runs conversations on a network, stored in st, and returns
// their threads.
func recordOn(t *testing.T, st store.Store, file string, convs ...conversation) []string {
	t.Helper()
	ctx := t.Context()
	svc := servicetest.Started(t, service.Config{Files: []string{file}, Store: st})
	n := svc.Networks()[0]
	var ids []string
	for _, conv := range convs {
		thread := ""
		for _, input := range conv {
			res := runtest.Collect(t, n.Threads.Turn(ctx, "acme", input, threads.TurnOptions{ThreadID: thread}), nil)
			thread = res.ThreadID()
			if res.Status() == runstate.StatusInterrupted {
				runtest.Collect(t, n.Threads.Resume(ctx, "acme", res.RunID(), runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})), nil)
			}
		}
		ids = append(ids, thread)
	}
	return ids
}

// support loads the support network as export takes it.
func support(t *testing.T, file string) *netspec.Spec {
	t.Helper()
	spec, err := service.Load(file, service.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// exported records the conversations on SQLite and exports them with the
// support network: every case with its recording.
func exported(t *testing.T) *evalset.Set {
	t.Helper()
	st := testdb.SQLite(t)
	ids := record(t, st, conversations...)
	res, err := eval.Export(t.Context(), st, eval.ExportOptions{Owner: "acme", Threads: ids, Network: support(t, supportFile), Name: "support"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Set
}

// forbidden wraps every model with one that fails the test when called:
// inside the replay, it is what answers an agent that is not replayed.
func forbidden(t *testing.T) func(string, model.Model) model.Model {
	return func(name string, _ model.Model) model.Model {
		return model.Func(func(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
			t.Errorf("the model of agent %s was called", name)
			return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, context.Canceled) }
		})
	}
}

// counting implements the support network's tools with functions that
// count their runs.
func counting(runs *atomic.Int32) map[string]service.ToolFunc {
	f := func(context.Context, json.RawMessage) (string, error) {
		runs.Add(1)
		return `{"ran": true}`, nil
	}
	return map[string]service.ToolFunc{"lookup_order": f, "issue_refund": f, "check_status_page": f}
}

// variant writes the support network with old replaced by new (once) to a
// temporary file and returns its path.
func variant(t *testing.T, old, new string) string {
	t.Helper()
	b, err := os.ReadFile(supportFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("the support network has no %q", old)
	}
	path := filepath.Join(t.TempDir(), "network.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parse parses a YAML set.
func parse(t *testing.T, src string) *evalset.Set {
	t.Helper()
	s, err := evalset.Parse([]byte(src), "set.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// counted wraps m counting its calls by agent in called.
func counted(name string, m model.Model, mu *sync.Mutex, called map[string]int) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		mu.Lock()
		called[name]++
		mu.Unlock()
		return m.Stream(ctx, req)
	})
}
