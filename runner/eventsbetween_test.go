package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// TestEventsBetweenMatchesLive runs networks with a checkpointer and checks
// that the events EventsBetween derives from each pair of consecutive
// checkpoints are the live events of that step (those numbered after the
// first checkpoint's seq up to the second's), text and reasoning deltas
// excepted.
func TestEventsBetweenMatchesLive(t *testing.T) {
	t.Parallel()
	tool := func(name string) *agent.Tool {
		return &agent.Tool{Name: name, Func: func(_ context.Context, args json.RawMessage) (string, error) {
			return name + " of " + string(args), nil
		}}
	}
	for name, tc := range map[string]struct {
		build  func() []*agent.Agent
		limits agent.Limits
		retry  runner.RetryPolicy
		opts   []runner.RunOption
		// resume, if set, resumes the run from its last checkpoint with
		// these options.
		resume []runner.RunOption
		// failed is set when the first execution fails.
		failed bool
		// notDerived are live event types EventsBetween does not derive.
		notDerived []runner.EventType
	}{
		"transfer with typed context": {
			build: func() []*agent.Agent {
				triage, _ := ag("triage", calls("lookup", `{"order":"1234"}`, "transfer_to_billing", `{"order_id":"1234","reason":"charged twice"}`))
				triage.Tools = []*agent.Tool{tool("lookup")}
				triage.Transfers = []*transfer.Transfer{{To: "billing", ContextSchema: orderSchema}}
				billing, _ := ag("billing", text("refunded the duplicate"))
				return []*agent.Agent{triage, billing}
			},
		},
		"return to caller": {
			build: func() []*agent.Agent {
				lead, _ := ag("lead", calls("transfer_to_expert", `{"reason":"need numbers"}`), text("final: 42"))
				lead.Transfers = []*transfer.Transfer{{To: "expert", Return: true}}
				expert, _ := ag("expert", text("the answer is 42"))
				return []*agent.Agent{lead, expert}
			},
		},
		"tools and an agent tool": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("lookup", `{}`, "lookup", `{"again":true}`, "ask_b", `{"input":"what?"}`), text("done"))
				a.Tools = []*agent.Tool{tool("lookup")}
				a.AgentTools = []*agent.AgentTool{{Agent: "b"}}
				b, _ := ag("b", text("b says hi"))
				return []*agent.Agent{a, b}
			},
		},
		"approval interrupt and resume": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("refund", `{"amount":10}`, "lookup", `{}`), text("refund done"))
				refund := tool("refund")
				refund.RequireApproval = func(context.Context, json.RawMessage) bool { return true }
				a.Tools = []*agent.Tool{refund, tool("lookup")}
				return []*agent.Agent{a}
			},
			resume: []runner.RunOption{runner.WithDecisions(runner.Decision{Type: runner.DecisionEdit, Args: json.RawMessage(`{"amount":5}`)})},
		},
		"background suspension and resume": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("report", `{"q":1}`), text("report ready"))
				slow := tool("report")
				slow.Slow = true
				a.Tools = []*agent.Tool{slow}
				return []*agent.Agent{a}
			},
			opts:   []runner.RunOption{runner.WithBackgroundBoundary()},
			resume: []runner.RunOption{},
		},
		"transient failure and resume": {
			build: func() []*agent.Agent {
				a, _ := ag("a", scripted.Step{Text: "back", Fail: &scripted.Fail{Status: 503, Transient: true, Times: 3}})
				return []*agent.Agent{a}
			},
			retry:  runner.RetryPolicy{MaxAttempts: 2},
			failed: true,
			resume: []runner.RunOption{},
		},
		"limit failure": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("lookup", `{}`), calls("lookup", `{}`), text("never"))
				a.Tools = []*agent.Tool{tool("lookup")}
				return []*agent.Agent{a}
			},
			limits: agent.Limits{MaxTurns: 1},
			failed: true,
		},
		"rejected transfer": {
			build: func() []*agent.Agent {
				triage, _ := ag("triage", calls("transfer_to_billing", `{"order_id":"x"}`), text("sorry"))
				triage.Transfers = []*transfer.Transfer{{To: "billing", ContextSchema: orderSchema}}
				billing, _ := ag("billing", text("unused"))
				return []*agent.Agent{triage, billing}
			},
			notDerived: []runner.EventType{runner.TypeTransferRejected},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ck := &memCheckpoints{}
			r, _ := newRunner(t, runner.Config{Network: network(t, tc.limits, tc.build()...), Checkpointer: ck, Retry: tc.retry})
			live, err := collect(r.Stream(t.Context(), "go", tc.opts...))
			if (err != nil) != tc.failed {
				t.Fatalf("run: err = %v, want failed %v", err, tc.failed)
			}
			if tc.resume != nil {
				more, err := collect(r.ResumeStream(t.Context(), roundTrip(t, ck.Latest(t)), tc.resume...))
				if err != nil {
					t.Fatalf("resume: %v", err)
				}
				live = append(live, more...)
			}
			checkEventsBetween(t, ck.States(t), live, tc.notDerived)
		})
	}
}

// checkEventsBetween compares the events derived from each pair of
// consecutive states with the live events of that step.
func checkEventsBetween(t *testing.T, states []*runstate.State, live []runner.Event, notDerived []runner.EventType) {
	t.Helper()
	if n := len(live); n == 0 || live[n-1].Sequence() != states[len(states)-1].Seq {
		t.Fatalf("the last checkpoint's seq is %d; the live events end with %+v", states[len(states)-1].Seq, live[n-1])
	}
	skip := map[runner.EventType]bool{}
	for _, typ := range notDerived {
		skip[typ] = true
	}
	var prev *runstate.State
	skipped := 0
	for i, cur := range states {
		var want []string
		from := 0
		if prev != nil {
			from = prev.Seq
		}
		for _, ev := range live {
			if s := ev.Sequence(); s > from && s <= cur.Seq {
				if t := ev.EventType(); t == runner.TypeTextDelta || t == runner.TypeReasoningDelta {
					continue // folded into the message and reasoning events
				}
				if skip[ev.EventType()] {
					skipped++
					continue
				}
				want = append(want, eventKey(t, ev, prev == nil))
			}
		}
		var got []string
		for _, ev := range runner.EventsBetween(prev, cur) {
			if ev.Sequence() != 0 {
				t.Errorf("step %d: derived %s has seq %d, want 0", i+1, ev.EventType(), ev.Sequence())
			}
			got = append(got, eventKey(t, ev, false))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("step %d (%s, seq %d..%d): derived events\n%s\nwant the live ones\n%s", i+1, cur.Status, from, cur.Seq, lines(got), lines(want))
		}
		prev = cur
	}
	if len(notDerived) > 0 && skipped == 0 {
		t.Errorf("no live event of the types %v: the case does not show what it is for", notDerived)
	}
}

// eventKey is ev's JSON without its seq. The reason of a run's first
// agent_start (the picker's) is not in the state: start drops it.
func eventKey(t *testing.T, ev runner.Event, start bool) string {
	t.Helper()
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "seq")
	if start && ev.EventType() == runner.TypeAgentStart {
		delete(m, "reason")
	}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lines(ss []string) string {
	out := ""
	for _, s := range ss {
		out += "  " + s + "\n"
	}
	return out
}
