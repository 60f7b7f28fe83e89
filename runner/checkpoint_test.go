package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// describe renders each checkpoint as "status/pending results/last
// transcript role", e.g. "running/0of1/assistant".
func describe(t *testing.T, ck *memCheckpoints) []string {
	t.Helper()
	var out []string
	for i, st := range ck.States(t) {
		if st.Step != i+1 {
			t.Errorf("checkpoint %d has step %d", i+1, st.Step)
		}
		done := 0
		for _, pc := range st.Pending {
			if pc.Result != nil {
				done++
			}
		}
		last := "-"
		if n := len(st.Transcript); n > 0 {
			last = string(st.Transcript[n-1].Role)
		}
		out = append(out, fmt.Sprintf("%s/%dof%d/%s", st.Status, done, len(st.Pending), last))
	}
	return out
}

// TestCheckpointBoundaries: the input is written before the first model
// call, every step boundary is written, and boundaries
// with nothing in between share one write: a model turn whose calls stop
// the run is written once, with the stop; the last tool result of a turn
// without transfers is written with the results joined.
func TestCheckpointBoundaries(t *testing.T) {
	t.Parallel()
	tool := func(name string) *agent.Tool {
		return &agent.Tool{Name: name, Func: func(context.Context, json.RawMessage) (string, error) { return name + " done", nil }}
	}
	// keyed is agent a with an idempotent lookup tool, answering steps.
	keyed := func(steps ...scripted.Step) *agent.Agent {
		a, _ := ag("a", steps...)
		lookup := tool("lookup")
		lookup.Idempotent = true
		a.Tools = []*agent.Tool{lookup}
		return a
	}
	for name, tc := range map[string]struct {
		build func() []*agent.Agent
		opts  []runner.RunOption
		want  []string
	}{
		"suspended at the boundary": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("report", `{}`), text("done"))
				slow := tool("report")
				slow.Slow = true
				a.Tools = []*agent.Tool{slow}
				return []*agent.Agent{a}
			},
			opts: []runner.RunOption{runner.WithBackgroundBoundary()},
			want: []string{"running/0of0/user", "suspended/0of1/assistant"},
		},
		"interrupted for approval": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("refund", `{}`), text("done"))
				ask := tool("refund")
				ask.RequireApproval = func(context.Context, json.RawMessage) bool { return true }
				a.Tools = []*agent.Tool{ask}
				return []*agent.Agent{a}
			},
			want: []string{"running/0of0/user", "interrupted/0of1/assistant"},
		},
		"one tool": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("lookup", `{}`), text("done"))
				a.Tools = []*agent.Tool{tool("lookup")}
				return []*agent.Agent{a}
			},
			// The input; the turn; its result joined; the answer.
			want: []string{"running/0of0/user", "running/0of1/assistant", "running/0of0/tool", "completed/0of0/assistant"},
		},
		"two tools": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("lookup", `{}`, "lookup", `{"again":true}`), text("done"))
				a.Tools = []*agent.Tool{tool("lookup")}
				return []*agent.Agent{a}
			},
			// The first result to return is written on its own.
			want: []string{"running/0of0/user", "running/0of2/assistant", "running/1of2/assistant", "running/0of0/tool", "completed/0of0/assistant"},
		},
		"tool and transfer": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("lookup", `{}`, "transfer_to_b", `{}`))
				a.Tools = []*agent.Tool{tool("lookup")}
				a.Transfers = []*transfer.Transfer{{To: "b"}}
				b, _ := ag("b", text("b here"))
				return []*agent.Agent{a, b}
			},
			// The tool's result is written before the transfer is prepared.
			want: []string{"running/0of0/user", "running/0of2/assistant", "running/1of2/assistant", "running/0of0/tool", "completed/0of0/assistant"},
		},
		"idempotent tool, results deferred": {
			build: func() []*agent.Agent {
				return []*agent.Agent{keyed(calls("lookup", `{}`), text("done"))}
			},
			opts: []runner.RunOption{runner.WithDeferredResults()},
			// The input; the turn; the result with the answer.
			want: []string{"running/0of0/user", "running/0of1/assistant", "completed/0of0/assistant"},
		},
		"two idempotent tools, results deferred": {
			build: func() []*agent.Agent {
				return []*agent.Agent{keyed(calls("lookup", `{}`, "lookup", `{"again":true}`), text("done"))}
			},
			opts: []runner.RunOption{runner.WithDeferredResults()},
			want: []string{"running/0of0/user", "running/0of2/assistant", "completed/0of0/assistant"},
		},
		"idempotent tool, results not deferred": {
			build: func() []*agent.Agent {
				return []*agent.Agent{keyed(calls("lookup", `{}`), text("done"))}
			},
			// Without WithDeferredResults, as any tool.
			want: []string{"running/0of0/user", "running/0of1/assistant", "running/0of0/tool", "completed/0of0/assistant"},
		},
		"tool not idempotent, results deferred": {
			build: func() []*agent.Agent {
				a, _ := ag("a", calls("lookup", `{}`), text("done"))
				a.Tools = []*agent.Tool{tool("lookup")}
				return []*agent.Agent{a}
			},
			opts: []runner.RunOption{runner.WithDeferredResults()},
			// Its result keeps its own checkpoint.
			want: []string{"running/0of0/user", "running/0of1/assistant", "running/0of0/tool", "completed/0of0/assistant"},
		},
		"idempotent tool and transfer, results deferred": {
			build: func() []*agent.Agent {
				a := keyed(calls("lookup", `{}`, "transfer_to_b", `{}`))
				a.Transfers = []*transfer.Transfer{{To: "b"}}
				b, _ := ag("b", text("b here"))
				return []*agent.Agent{a, b}
			},
			opts: []runner.RunOption{runner.WithDeferredResults()},
			// The transfer is checkpointed with the results.
			want: []string{"running/0of0/user", "running/0of2/assistant", "running/0of0/tool", "completed/0of0/assistant"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ck := &memCheckpoints{}
			r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, tc.build()...), Checkpointer: ck})
			res, err := r.Run(t.Context(), "go", append([]runner.RunOption{runner.WithRunID("r1")}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(t, ck); !slices.Equal(got, tc.want) {
				t.Fatalf("checkpoints:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if res.Interrupt != nil && res.Interrupt.ID != "r1-i2" {
				t.Errorf("interrupt id %s, want r1-i2 (the step of its checkpoint)", res.Interrupt.ID)
			}
		})
	}
}

// TestApprovalAskedOnce: a tool's RequireApproval is asked once per call,
// also when the calls go on to run.
func TestApprovalAskedOnce(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	a, _ := ag("a", calls("lookup", `{}`), text("done"))
	a.Tools = []*agent.Tool{{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
		RequireApproval: func(context.Context, json.RawMessage) bool { asked.Add(1); return false }}}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: &memCheckpoints{}})
	if _, err := r.Run(t.Context(), "go"); err != nil {
		t.Fatal(err)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("RequireApproval asked %d times, want 1", n)
	}
}

// crashAtEnd is a checkpointer whose process dies before the run's final
// checkpoint: a write of a completed or failed state is lost, and so is
// every write after it.
type crashAtEnd struct {
	memCheckpoints
	crashed atomic.Bool
}

func (c *crashAtEnd) Checkpoint(ctx context.Context, st *runstate.State) error {
	if c.crashed.Load() || st.Status == runstate.StatusCompleted || st.Status == runstate.StatusFailed {
		c.crashed.Store(true)
		return errors.New("the process died")
	}
	return c.memCheckpoints.Checkpoint(ctx, st)
}

// TestDeferredResultRunsAgainWithItsKey: with WithDeferredResults, an
// idempotent tool's result is not written before the next model call; a
// crash before the next checkpoint loses it, and the run resumed from its
// last checkpoint calls the tool again with the same idempotency key, which
// the tool de-duplicates: one effect. A tool that is not idempotent keeps
// its result's own checkpoint: the resumed run does not call it again.
func TestDeferredResultRunsAgainWithItsKey(t *testing.T) {
	t.Parallel()
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("idempotent=%v", keyed), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var keys []string
			effects := map[string]int{} // applied once per key
			a, _ := ag("a", calls("ship", `{"order":"1"}`), text("shipped"))
			a.Tools = []*agent.Tool{{Name: "ship", Idempotent: keyed, Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
				ci, _ := agent.CallFromContext(ctx)
				mu.Lock()
				defer mu.Unlock()
				keys = append(keys, ci.IdempotencyKey)
				if _, done := effects[ci.IdempotencyKey]; !done {
					effects[ci.IdempotencyKey] = len(effects) + 1
				}
				return fmt.Sprintf("shipment %d", effects[ci.IdempotencyKey]), nil
			}}}
			r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
			ck := &crashAtEnd{}
			opts := []runner.RunOption{runner.WithRunID("r1"), runner.WithDeferredResults()}
			if _, err := r.Run(t.Context(), "ship it", append(opts, runner.WithCheckpointer(ck))...); err == nil {
				t.Fatal("the run completed through a crash")
			}
			last := ck.Latest(t)
			if keyed {
				if last.Step != 2 || len(last.Pending) != 1 || last.Pending[0].Result != nil {
					t.Fatalf("last checkpoint before the crash: step %d, pending %+v; want step 2, the call without its result", last.Step, last.Pending)
				}
			} else if last.Step != 3 || len(last.Pending) != 0 {
				t.Fatalf("last checkpoint before the crash: step %d, pending %+v; want step 3, the result joined", last.Step, last.Pending)
			}
			after := &memCheckpoints{}
			res, err := r.Resume(t.Context(), roundTrip(t, last), runner.WithDeferredResults(), runner.WithCheckpointer(after))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != runstate.StatusCompleted || res.Output != "shipped" {
				t.Fatalf("resumed run: %s %q", res.Status, res.Output)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{"r1:" + res.Messages[1].Parts[0].CallID}
			if keyed {
				want = append(want, want[0]) // run again with the same key
			}
			if !slices.Equal(keys, want) {
				t.Fatalf("tool called with keys %q, want %q", keys, want)
			}
			if len(effects) != 1 {
				t.Fatalf("%d effects, want 1", len(effects))
			}
			results := toolResults(after.Latest(t).Messages)
			if len(results) != 1 {
				t.Fatalf("results in the final state: %+v", results)
			}
			for _, p := range results {
				if p.Text != "shipment 1" {
					t.Fatalf("result %q, want shipment 1", p.Text)
				}
			}
		})
	}
}
