package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

// TestRunSeesThreadHandoffSummary checks the memory wiring of `baton run`:
// after a thread handoff is approved, `baton run --thread CHILD` starts with
// the agent that holds the summary and its model call sees the summary; the
// next turn does not. The memory lives in a --memory-dir.
func TestRunSeesThreadHandoffSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	billing := newFakeBilling(t)
	network := filepath.Join(dir, "network.yaml")
	writeChatNetwork(t, network, billing.URL+"/v1")
	db := "sqlite:" + filepath.Join(dir, "baton.db")
	memDir := filepath.Join(dir, "memory")
	baton := func(args ...string) string {
		t.Helper()
		var out, errOut logtest.Buffer
		args = append([]string{"run", "--database", db, "--owner", "ann", "--memory-dir", memDir}, args...)
		if code := run(t.Context(), args, &out, &errOut); code != 0 {
			t.Fatalf("baton %s: exit code %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		return out.String()
	}

	out := baton(network, "I was charged twice for order 1234")
	if !strings.Contains(out, "Billing answer #1: no summary in my memory.") {
		t.Fatalf("first turn:\n%s", out)
	}
	parent := regexp.MustCompile(`thread (\S+) ·`).FindStringSubmatch(out)[1]

	// Approve a handoff of the thread, as /handoff does.
	spec, err := service.Load(network, service.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := openTestStore(t, db)
	svc, err := threadhandoff.New(threadhandoff.Config{Store: st, Model: spec.Summary, Memory: &memory.Dir{Path: memDir}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Propose(t.Context(), &threadhandoff.ProposeParams{Owner: "ann", ThreadID: parent})
	if err != nil {
		t.Fatal(err)
	}
	o, err := svc.Decide(t.Context(), &threadhandoff.DecideParams{Owner: "ann", InterruptID: p.Interrupt.ID, Decision: threadhandoff.Decision{Type: threadhandoff.DecisionApprove}})
	if err != nil {
		t.Fatal(err)
	}

	out = baton("--thread", o.ChildThreadID, network, "Any news?")
	for _, want := range []string{"▶ billing is active (thread handoff)", "Billing answer #2: the summary «Double charge on order 1234» is in my memory."} {
		if !strings.Contains(out, want) {
			t.Errorf("the child's first turn lacks %q:\n%s", want, out)
		}
	}
	out = baton("--thread", o.ChildThreadID, network, "Is the charge reversed yet?")
	if !strings.Contains(out, "▶ triage is active (entry)") || !strings.Contains(out, "Billing answer #3: no summary in my memory.") {
		t.Errorf("the child's second turn:\n%s", out)
	}
	th, err := st.GetThread(t.Context(), &store.GetThreadParams{OwnerID: "ann", ID: o.ChildThreadID})
	if err != nil {
		t.Fatal(err)
	}
	if h := threadhandoff.HandoffOf(th); h == nil || h.CleanupRequired || h.Pending {
		t.Errorf("the child's thread handoff metadata after its turns: %+v, want it cleaned up", h)
	}
	b, err := os.ReadFile(filepath.Join(memDir, "ann", "billing.md"))
	if err != nil || !strings.Contains(string(b), memory.Placeholder) || strings.Contains(string(b), "###") {
		t.Errorf("billing's memory file: %q (%v), want the placeholder", b, err)
	}
}
