package mcptool_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/checkpointtest"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

const runnerNetwork = `version: 1
name: notes
mcp_servers:
  - name: test
    command: %s
    env: {MCP_LOG: %s/log, MCP_SECRET: x}
    tools: [append, echo]
    approval: [echo]
agents:
  - name: scribe
    model: scripted
    mcp: [test]
    script:
      - when: approve
        tool_calls: [{name: echo, arguments: {text: approved}}]
      - when: append
        tool_calls: [{name: append, arguments: {line: one, wait_ms: 3000}}]
      - text: done
`

func runnerFor(t *testing.T, b *bundle, ck runner.Checkpointer) *runner.Runner {
	t.Helper()
	spec, err := netspec.Parse(fmt.Appendf(nil, runnerNetwork, serverBin, b.dir), "notes.yaml", netspec.Options{MCP: b.s.Resolve})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Network: spec.Network, Checkpointer: ck, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func lastResult(msgs []message.Message) message.Part {
	var out message.Part
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == message.PartToolResult {
				out = p
			}
		}
	}
	return out
}

// TestApproval: an MCP tool marked approval: stops the run until a person
// decides; approved, it is called.
func TestApproval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ck := &checkpointtest.Memory{}
	r := runnerFor(t, b, ck)
	res, err := r.Run(t.Context(), "please approve")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runstate.StatusInterrupted || res.Interrupt == nil || res.Interrupt.ActionRequests[0].Name != "echo" {
		t.Fatalf("run: %s %+v", res.Status, res.Interrupt)
	}
	res, err = r.Resume(t.Context(), res.State, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove}))
	if err != nil {
		t.Fatal(err)
	}
	if p := lastResult(res.Messages); res.Status != runstate.StatusCompleted || p.Text != "approved" || p.IsError {
		t.Errorf("after approval: %s, result %+v", res.Status, p)
	}
}

// TestNotTwiceAcrossACrash: the process running a non-idempotent MCP call
// dies while the call is in flight; the run resumed from its last
// checkpoint does not send it again and tells the model its outcome is
// unknown.
func TestNotTwiceAcrossACrash(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ck := &checkpointtest.Memory{}
	r := runnerFor(t, b, ck)
	ctx, crash := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Run(ctx, "append please")
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ck.Len() > 0 && len(ck.Latest(t).Memos) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call's mark was never checkpointed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	crash()
	<-done
	st := ck.Latest(t)
	if len(st.Pending) != 1 || st.Pending[0].Result != nil {
		t.Fatalf("state at the crash: pending %+v", st.Pending)
	}
	res, err := runnerFor(t, b, ck).Resume(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	p := lastResult(res.Messages)
	if res.Status != runstate.StatusCompleted || !p.IsError || !strings.Contains(p.Text, "not sent again") {
		t.Errorf("resumed: %s, result %+v", res.Status, p)
	}
	if lines := b.logLines(t); len(lines) > 1 {
		t.Errorf("the call ran %d times: %v", len(lines), lines)
	}
}
