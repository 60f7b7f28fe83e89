package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInspect: baton inspect RUN_ID prints the steps of a run that baton
// run made (model calls, the transfer, the tool call, the approval it waits
// for) as a table, --json as the API gives them, RUN_ID STEP_ID one step in
// full; an unknown run or another owner's is an error.
func TestInspect(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
	code, out, errOut := runCLI(t, "run", "--database", db, "--json", filepath.Join("..", "..", "examples", "support", "network.yaml"), "I want a refund for order 1234")
	if code != 0 {
		t.Fatalf("run: %d %s", code, errOut)
	}
	run := regexp.MustCompile(`run_[a-z0-9]{20,}`).FindString(out)
	code, out, errOut = runCLI(t, "inspect", "--database", db, run)
	if code != 0 {
		t.Fatalf("inspect: %d %s", code, errOut)
	}
	for _, want := range []string{"model_call  triage", "transfer    triage   → refunds", "tool_call   refunds  lookup_order", "approval    refunds  issue_refund", "interrupted"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = runCLI(t, "inspect", "--database", db, "--json", run)
	var steps struct {
		Data []struct{ ID, Type string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &steps) != nil || len(steps.Data) != 6 || steps.Data[0].Type != "model_call" {
		t.Fatalf("--json: %d %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "inspect", "--database", db, run, steps.Data[0].ID)
	if code != 0 || !strings.Contains(out, `"request"`) || !strings.Contains(out, "first line of support") {
		t.Fatalf("one step: %d %s %s", code, out, errOut)
	}
	for _, args := range [][]string{{run, "--owner", "someone-else"}, {"run_nope"}} {
		if code, _, errOut := runCLI(t, append([]string{"inspect", "--database", db}, args...)...); code == 0 || !strings.Contains(errOut, "not found") {
			t.Errorf("inspect %v: %d %s", args, code, errOut)
		}
	}
}
