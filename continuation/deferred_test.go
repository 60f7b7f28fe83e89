package continuation

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// TestDeferredResultAfterCrash: the worker writes an idempotent tool's
// result with the run's final checkpoint (runner.WithDeferredResults), not
// in a transaction of its own. A worker cut off between the tool's result
// and that checkpoint (the model's answer hangs past JobTimeout: the run
// records nothing, as when its process dies) leaves the claim as the run's
// last checkpoint: the retry calls the tool again with the same idempotency
// key, which the tool de-duplicates (one key; the continuation completes
// with the transcript of a run without the crash). A tool that is not
// idempotent keeps its result's own checkpoint: the retry resumes after it
// and does not call the tool again.
func TestDeferredResultAfterCrash(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		name := "Idempotent"
		if !keyed {
			name = "NotIdempotent"
		}
		t.Run(name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be backend) {
				ctx := t.Context()
				tools := newToolLog()
				// The answer after the tool's result hangs once, until the
				// job's context ends.
				var hung atomic.Bool
				steps := scripted.New("assistant", []scripted.Step{
					{Text: "Let me look that up.", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
					{Text: "Your order 1234 has shipped."},
				}, scripted.Options{})
				m := model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
					if last := req.Messages[len(req.Messages)-1]; last.Role == message.RoleTool && !hung.Swap(true) {
						return func(yield func(model.Chunk, error) bool) {
							<-ctx.Done()
							yield(model.Chunk{}, ctx.Err())
						}
					}
					return steps.Stream(ctx, req)
				})
				a := &agent.Agent{Name: "assistant", ModelName: "scripted", Model: m,
					Tools: []*agent.Tool{{Name: "lookup", Description: "Look an order up.", Slow: true, Idempotent: keyed, Func: tools.fn}}}
				net, err := agent.NewNetwork(agent.NetworkConfig{Name: "shop", Agents: []*agent.Agent{a}})
				if err != nil {
					t.Fatal(err)
				}
				b := setup(t, be, net, tools, func(c *Config) { c.JobTimeout = time.Second; c.RescueStuckJobsAfter = 2 * time.Second })
				thread, runID, h := b.handOver(t)
				b.start(t)
				msg := b.waitMessage(t, h.MessageID, 60*time.Second)
				if msg.Status != message.StatusCompleted || msg.Text() != "Your order 1234 has shipped." {
					t.Fatalf("placeholder = %s %q", msg.Status, msg.Text())
				}
				if !hung.Load() {
					t.Fatal("the answer never hung")
				}
				jr, _ := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
				if jr.Status != store.JobCompleted || jr.Attempt != 2 {
					t.Errorf("job run = %s attempt %d, want completed at attempt 2", jr.Status, jr.Attempt)
				}
				keys, calls := tools.total()
				wantCalls := 1
				if keyed {
					wantCalls = 2 // again, with the same key
				}
				if keys != 1 || calls != wantCalls {
					t.Errorf("tool: %d keys, %d calls; want 1 key, %d calls", keys, calls, wantCalls)
				}
				// The checkpoints: the claim is followed by the result's own
				// checkpoint only when the tool is not idempotent. A run
				// resumed at an idempotent tool's call is claimed with its
				// first write (lazyClaim): the first delivery's claim is its
				// draft flush, which writes no checkpoint, and the second
				// delivery, resuming a job run in error, claims durably.
				sts := statuses(t, b.st, runID)
				want := []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended, runstate.StatusRunning, runstate.StatusCompleted}
				if !keyed {
					want = []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended, runstate.StatusRunning, runstate.StatusRunning, runstate.StatusRunning, runstate.StatusCompleted}
				}
				if !slices.Equal(sts, want) {
					t.Errorf("checkpoints %v, want %v", sts, want)
				}
				msgs, _ := stored(t, b.st, thread)
				var roles []string
				for _, m := range msgs {
					roles = append(roles, string(m.Role))
				}
				if got := strings.Join(roles, " "); got != "user assistant tool assistant" {
					t.Errorf("thread: %s", shape(msgs))
				}
			})
		})
	}
}
