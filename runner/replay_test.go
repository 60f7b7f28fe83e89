package runner_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// TestReplayable: a state is replayable when every pending call without a
// result is of an idempotent tool or needs no tool; calls with results,
// which do not run again, do not count.
func TestReplayable(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, json.RawMessage) (string, error) { return "", nil }
	a, _ := ag("a", text("hi"))
	a.Tools = []*agent.Tool{{Name: "keyed", Idempotent: true, Func: noop}, {Name: "effect", Func: noop}}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
	call := func(name string, done bool) runstate.PendingCall {
		pc := runstate.PendingCall{Call: message.ToolCall{ID: "c-" + name, Name: name}, Kind: runstate.CallTool}
		if done {
			pc.Result = &runstate.Result{Output: "ok"}
		}
		return pc
	}
	for _, c := range []struct {
		name    string
		agent   string
		pending []runstate.PendingCall
		ir      bool
		want    bool
	}{
		{"nothing pending", "a", nil, false, true},
		{"idempotent", "a", []runstate.PendingCall{call("keyed", false)}, false, true},
		{"unknown tool", "a", []runstate.PendingCall{call("gone", false)}, false, true},
		{"effect with its result", "a", []runstate.PendingCall{call("keyed", false), call("effect", true)}, false, true},
		{"effect", "a", []runstate.PendingCall{call("keyed", false), call("effect", false)}, false, false},
		{"transfer", "a", []runstate.PendingCall{{Call: message.ToolCall{ID: "t", Name: "transfer_to_b"}, Kind: runstate.CallTransfer}}, false, false},
		{"agent tool", "a", []runstate.PendingCall{{Call: message.ToolCall{ID: "t", Name: "ask_b"}, Kind: runstate.CallAgentTool}}, false, false},
		{"interrupted", "a", []runstate.PendingCall{call("keyed", false)}, true, false},
		{"unknown agent", "zz", nil, false, false},
	} {
		st := &runstate.State{Agent: c.agent, Pending: c.pending}
		if c.ir {
			st.Interrupt = &runstate.Interrupt{ID: "i"}
		}
		if got := r.Replayable(st); got != c.want {
			t.Errorf("%s: Replayable = %v, want %v", c.name, got, c.want)
		}
	}
}
