// Command threadhandoff hands a support conversation off to a new thread,
// through the library calls that `baton chat`'s /handoff, the web UI and
// the HTTP API (POST /v1/threads/{id}/handoff, POST
// /v1/interrupts/{id}/decision) make: the parent's turn, its summary stored
// as a proposal, a person's edit and approval, and the child's first turn,
// which starts at the agent the summary names with the summary in its
// prompt, after which the seed is cleared. It runs offline on the scripted
// model with a temporary SQLite database. Run it from the repository's
// root: go run ./examples/threadhandoff
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer) error {
	dir, err := os.MkdirTemp("", "baton-threadhandoff-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	svc, err := service.Open(ctx, service.Config{
		Files:    []string{"examples/support/network.yaml"},
		Database: "sqlite:" + filepath.Join(dir, "baton.db"),
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Stop(context.WithoutCancel(ctx))
	n, _ := svc.Network("support")
	const owner = "demo"

	// 1. The parent thread: triage transfers to billing, which answers.
	res, err := n.Threads.Run(ctx, owner, "I was charged twice for order 1234", threads.TurnOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "parent: %s answered: %s\n", res.LastAgent, res.Output)

	// 2. The summary, stored as the thread's pending proposal: any surface
	// (another request, the web UI on another device) shows and decides it.
	pend, err := n.ThreadHandoff.Propose(ctx, &threadhandoff.ProposeParams{Owner: owner, ThreadID: res.ThreadID})
	if err != nil {
		return err
	}
	p := pend.Proposal
	fmt.Fprintf(w, "proposal (%s, %s takes over):\n%s\n", pend.Interrupt.Status, p.AssistantID, indent(p.Markdown))

	// 3. A person edits the title and the summary, and approves: the child
	// thread, the seed in billing's memory and the decision are one
	// transaction.
	edited := "### Double charge on order 1234, refund promised\n\n" +
		"- The customer was charged twice (2 x 49.90 EUR) for order 1234.\n" +
		"- Billing promised the duplicate is reversed within 3-5 days.\n\n" +
		"**TL;DR:** Reversal of the duplicate charge due within 3-5 days."
	out, err := n.ThreadHandoff.Decide(ctx, &threadhandoff.DecideParams{Owner: owner, InterruptID: pend.Interrupt.ID,
		Decision: threadhandoff.Decision{Type: threadhandoff.DecisionEdit, Title: "Double charge on order 1234, refund promised", Markdown: edited}})
	if err != nil {
		return err
	}
	child, err := svc.Store().GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: out.ChildThreadID})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "approved (edited %v): child thread %q, a child of the parent: %v\n", out.Edited, child.Name, child.ParentID == res.ThreadID)
	if err := seeded(ctx, w, n, owner, out.ChildThreadID); err != nil {
		return err
	}

	// 4. The child's first turn starts at billing, the agent the summary
	// names, with the summary in its system prompt; when it completes, the
	// seed is cleared.
	for ev, err := range n.Threads.Turn(ctx, owner, "Any news on the double charge?", threads.TurnOptions{ThreadID: out.ChildThreadID}) {
		if err != nil {
			return err
		}
		switch ev := ev.(type) {
		case *runner.AgentStartEvent:
			fmt.Fprintf(w, "child's first turn: starts at %s (%s)\n", ev.Agent, ev.Reason)
		case *runner.MessageEvent:
			fmt.Fprintf(w, "child's first turn: %s answered: %s\n", ev.Agent, ev.Text)
		}
	}
	if err := seeded(ctx, w, n, owner, out.ChildThreadID); err != nil {
		return err
	}
	child, err = svc.Store().GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: out.ChildThreadID})
	if err != nil {
		return err
	}
	h := threadhandoff.HandoffOf(child)
	fmt.Fprintf(w, "child's metadata.handoff: pending %v, last_cleanup_at set %v\n", h.Pending, h.LastCleanupAt != nil)
	return nil
}

// seeded prints whether billing's system prompt on the child thread holds
// the summary.
func seeded(ctx context.Context, w io.Writer, n *service.Network, owner, child string) error {
	text, err := n.ThreadHandoff.SystemText(ctx, owner, "billing", child)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "billing's prompt on the child holds the summary: %v (placeholder: %v)\n",
		strings.Contains(text, "refund promised"), strings.Contains(text, memory.Placeholder))
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
