package threadhandoff_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/summary"
	"github.com/batonhq/baton/threadhandoff"
)

// orderSummary answers a summary request with the summary of the order the
// transcript names: each parent thread of TestConcurrentHandoffsSameAgent
// talks about its own order.
func orderSummary(orders ...string) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		var text strings.Builder
		for _, m := range req.Messages {
			text.WriteString(m.Text())
		}
		order := "unknown"
		for _, o := range orders {
			if strings.Contains(text.String(), o) {
				order = o
			}
		}
		out := fmt.Sprintf(`{"title":"Refund for order %s","body":["Customer asked for a refund of order %s.","Refund approved.","Bank confirmation still open."],"tldr":"Order %s refunded."}`, order, order, order)
		return scripted.New(summary.DefaultAgent, []scripted.Step{{Text: out}}, scripted.Options{}).Stream(ctx, req)
	})
}

// TestConcurrentHandoffsSameAgent: two thread handoffs to the same
// assistant, approved at the same time, each seed their own child: each
// child's first model request carries its own summary and not the other's,
// whatever the order of the approvals and of the first turns, and each
// child's first turn clears its own seed only.
func TestConcurrentHandoffsSameAgent(t *testing.T) {
	t.Parallel()
	orders := []string{"1142", "7731"}
	eachVariant(t, setupOpts{mutate: func(c *threadhandoff.Config) { c.Model = orderSummary(orders...) }}, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		// A second parent thread, about another order.
		other, err := b.st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner, Name: "refund 2", Network: "support-net", ActiveAgent: assistant})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: other.ID, Messages: []store.NewMessage{
			{Message: message.User("I want a refund for order 7731")},
			{Message: message.Assistant(assistant, "Order 7731 is eligible.")},
		}}); err != nil {
			t.Fatal(err)
		}
		parents := []string{b.parent.ID, other.ID}
		pends := make([]*threadhandoff.Pending, len(parents))
		for i, id := range parents {
			if pends[i], err = b.svc.Propose(ctx, &threadhandoff.ProposeParams{Owner: owner, ThreadID: id}); err != nil {
				t.Fatal(err)
			}
			if want := "Refund for order " + orders[i]; pends[i].Proposal.Summary.Title != want {
				t.Fatalf("proposal %d: title %q; want %q", i, pends[i].Proposal.Summary.Title, want)
			}
		}

		// Both approvals at once.
		outs := make([]*threadhandoff.Outcome, len(parents))
		errs := make([]error, len(parents))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range parents {
			wg.Go(func() {
				<-start
				outs[i], errs[i] = b.decide(t, pends[i].Interrupt.ID, approve)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil || !outs[i].Applied || outs[i].ChildThreadID == "" {
				t.Fatalf("approval %d = %+v, %v", i, outs[i], err)
			}
		}

		// Both children's first turns at once; each request is
		// recorded under the turn's user message.
		r, seen := newRunner(t, b.svc)
		for i := range parents {
			wg.Go(func() {
				res, err := r.Run(store.ContextWithOwner(ctx, owner), "hello from child "+orders[i], runner.WithThread(outs[i].ChildThreadID))
				if err != nil || res.Status != "completed" {
					t.Errorf("first turn of child %d: %v, %v", i, res, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		for i := range parents {
			sys, ok := seen.firstFor("hello from child " + orders[i])
			if !ok {
				t.Fatalf("child %d made no model request", i)
			}
			mine, theirs := "Refund for order "+orders[i], "Refund for order "+orders[1-i]
			if !strings.Contains(sys, mine) || strings.Contains(sys, theirs) || strings.Contains(sys, memory.Placeholder) ||
				!strings.Contains(sys, "The customer prefers e-mail.") || strings.Contains(sys, "baton:handoff") {
				t.Fatalf("first request of child %d (%s): want %q only:\n%s", i, outs[i].ChildThreadID, mine, sys)
			}
		}

		// Each first turn cleared its own seed: none is left.
		if n := len(b.logs.all("thread handoff cleanup: summary cleared from memory")); n != 2 {
			t.Fatalf("%d cleanups; want 2", n)
		}
		if want := notes + "\n" + memory.Render(memory.Placeholder) + "\n"; b.doc(t) != want {
			t.Fatalf("memory after both first turns =\n%q\nwant\n%q", b.doc(t), want)
		}
		for i := range parents {
			if h := threadhandoff.HandoffOf(b.thread(t, outs[i].ChildThreadID)); h == nil || h.Pending || h.CleanupRequired {
				t.Fatalf("child %d flags = %+v", i, h)
			}
		}
	})
}

// TestSeedsClearedOneByOne: with two seeds pending, the first child's
// cleanup removes its seed only; the second child still sees its summary
// on its first turn; then the block is the placeholder again.
func TestSeedsClearedOneByOne(t *testing.T) {
	t.Parallel()
	eachVariant(t, setupOpts{}, func(t *testing.T, b *bundle) {
		ctx := t.Context()
		first, _ := b.approved(t)
		pend, err := b.svc.Propose(ctx, &threadhandoff.ProposeParams{Owner: owner, ThreadID: b.parent.ID})
		if err != nil {
			t.Fatal(err)
		}
		out, err := b.decide(t, pend.Interrupt.ID, threadhandoff.Decision{Type: threadhandoff.DecisionEdit, Title: "Second handoff"})
		if err != nil {
			t.Fatal(err)
		}
		second := out.ChildThreadID
		for _, c := range []struct{ thread, want, not string }{
			{first, "Refund for order 1142", "Second handoff"},
			{second, "Second handoff", "Refund for order 1142"},
			{b.parent.ID, memory.Placeholder, "Refund for order 1142"},
			{b.parent.ID, memory.Placeholder, "Second handoff"},
		} {
			got, err := b.svc.SystemText(ctx, owner, assistant, c.thread)
			if err != nil || !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
				t.Fatalf("SystemText on %s = %q, %v; want %q", c.thread, got, err, c.want)
			}
		}
		if done, err := b.svc.Cleanup(ctx, owner, first); err != nil || !done {
			t.Fatalf("cleanup of the first child = %v, %v", done, err)
		}
		if got, _ := b.svc.SystemText(ctx, owner, assistant, first); !strings.Contains(got, memory.Placeholder) || strings.Contains(got, "Refund for order") {
			t.Fatalf("first child after its cleanup: %q", got)
		}
		if got, _ := b.svc.SystemText(ctx, owner, assistant, second); !strings.Contains(got, "Second handoff") {
			t.Fatalf("second child after the first's cleanup: %q", got)
		}
		if done, err := b.svc.Cleanup(ctx, owner, second); err != nil || !done {
			t.Fatalf("cleanup of the second child = %v, %v", done, err)
		}
		if blk := block(t, b.doc(t)); blk != memory.Placeholder {
			t.Fatalf("block after both cleanups = %q", blk)
		}
	})
}
