package eval_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
)

// TestExamples runs the eval set of every example network, offline (the
// scripted model, tools from the recordings), as CI does: each passes.
func TestExamples(t *testing.T) {
	t.Parallel()
	networks, err := filepath.Glob("../examples/*/network.yaml")
	if err != nil || len(networks) < 4 {
		t.Fatalf("example networks %v, %v", networks, err)
	}
	for _, network := range networks {
		dir := filepath.Dir(network)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, "eval.yaml")
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("example network %s has no eval set: %v", network, err)
			}
			set, err := evalset.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Join(dir, set.Network) != network {
				t.Errorf("the set names network %q", set.Network)
			}
			r, err := eval.Run(t.Context(), eval.Config{Set: set, Network: eval.Target{File: network}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Failed() || r.Summary.Unmatched != 0 || r.Summary.Replayed == 0 {
				t.Errorf("%s; %d replayed, %d unmatched tool calls:\n%s", r.Summary, r.Summary.Replayed, r.Summary.Unmatched, failures(r))
			}
		})
	}
}
