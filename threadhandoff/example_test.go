package threadhandoff_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/summary"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

// Example shows a whole handoff on an in-memory SQLite store.
func Example() {
	ctx := context.Background()
	st, _ := sqlitestore.Open(ctx, ":memory:", nil)
	defer st.Close()
	st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "acme"})
	parent, _ := st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "acme", ActiveAgent: "support"})
	st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "acme", ThreadID: parent.ID,
		Messages: []store.NewMessage{{Message: message.User("Refund order 1142, please.")}, {Message: message.Assistant("support", "Done: 42.10 EUR.")}}})

	svc, _ := threadhandoff.New(threadhandoff.Config{
		Store:  st,
		Model:  scripted.New(summary.DefaultAgent, []scripted.Step{{Text: summaryOut}}, scripted.Options{}),
		Logger: slog.New(slog.DiscardHandler),
	})
	// 1–3: summarise and store the proposal as the thread's pending
	// interrupt: any surface shows it and decides it.
	pend, _ := svc.Propose(ctx, &threadhandoff.ProposeParams{Owner: "acme", ThreadID: parent.ID})
	fmt.Println("proposal:", pend.Payload.Title, pend.Interrupt.Status)
	// 4: a person edits the title and approves; the child thread is
	// created and seeded, and the proposal decided, in one transaction.
	out, _ := svc.Decide(ctx, &threadhandoff.DecideParams{Owner: "acme", InterruptID: pend.Interrupt.ID,
		Decision: threadhandoff.Decision{Type: threadhandoff.DecisionEdit, Title: "Refund for order 1142 (bank pending)"}})
	fmt.Println(out.Message == "Thread handoff approved: continue in thread "+out.ChildThreadID+".", out.MirrorStatus)
	// A second decision gets the first one's outcome.
	_, err := svc.Decide(ctx, &threadhandoff.DecideParams{Owner: "acme", InterruptID: pend.Interrupt.ID,
		Decision: threadhandoff.Decision{Type: threadhandoff.DecisionApprove}})
	var decided *threadhandoff.DecidedError
	fmt.Println("decided again:", errors.As(err, &decided) && decided.Outcome.ChildThreadID == out.ChildThreadID)
	// 5: every model call injects the memory (svc.Extension() in the
	// runner); the child sees the summary…
	text, _ := svc.SystemText(ctx, "acme", "support", out.ChildThreadID)
	fmt.Println("child sees summary:", strings.Contains(text, "Refund for order 1142"))
	// …and after its first complete turn the block is cleared, once (the
	// extension calls Cleanup after every completed run).
	done, _ := svc.Cleanup(ctx, "acme", out.ChildThreadID)
	again, _ := svc.Cleanup(ctx, "acme", out.ChildThreadID)
	text, _ = svc.SystemText(ctx, "acme", "support", out.ChildThreadID)
	fmt.Println("cleanup:", done, again, strings.Contains(text, memory.Placeholder))
	// Output:
	// proposal: Refund for order 1142 pending
	// true ok
	// decided again: true
	// child sees summary: true
	// cleanup: true false true
}

// ExampleService_Extension wires a runner for thread handoffs: the
// extension injects the agents' memory and clears a child's seed after its
// first completed turn, and the picker starts that turn at the agent whose
// memory holds the summary, here rather than at the entry agent.
func ExampleService_Extension() {
	ctx := context.Background()
	st, _ := sqlitestore.Open(ctx, ":memory:", nil)
	defer st.Close()
	st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "acme"})
	parent, _ := st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "acme", Network: "support-net", ActiveAgent: "support"})
	st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "acme", ThreadID: parent.ID,
		Messages: []store.NewMessage{{Message: message.User("Refund order 1142, please.")}, {Message: message.Assistant("support", "Done: 42.10 EUR.")}}})
	net, _ := agent.NewNetwork(agent.NetworkConfig{Name: "support-net", Agents: []*agent.Agent{
		{Name: "triage", Model: scripted.New("triage", []scripted.Step{{Text: "Triage here."}}, scripted.Options{})},
		{Name: "support", Model: scripted.New("support", []scripted.Step{{Text: "Support here."}}, scripted.Options{})},
	}})

	svc, _ := threadhandoff.New(threadhandoff.Config{
		Store:   st,
		Model:   scripted.New(summary.DefaultAgent, []scripted.Step{{Text: summaryOut}}, scripted.Options{}),
		Network: net,
		Logger:  slog.New(slog.DiscardHandler),
	})
	r, _ := runner.New(runner.Config{Network: net, Extensions: []runner.Extension{svc.Extension()}, Picker: svc.Picker(nil)})
	turns := threads.New(st, r, slog.New(slog.DiscardHandler))

	pend, _ := svc.Propose(ctx, &threadhandoff.ProposeParams{Owner: "acme", ThreadID: parent.ID})
	out, _ := svc.Decide(ctx, &threadhandoff.DecideParams{Owner: "acme", InterruptID: pend.Interrupt.ID,
		Decision: threadhandoff.Decision{Type: threadhandoff.DecisionApprove}})
	for _, input := range []string{"Any news?", "Thanks."} {
		res, _ := turns.Run(ctx, "acme", input, threads.TurnOptions{ThreadID: out.ChildThreadID})
		child, _ := st.GetThread(ctx, &store.GetThreadParams{OwnerID: "acme", ID: out.ChildThreadID})
		fmt.Printf("%s answered; seed pending: %v\n", res.LastAgent, threadhandoff.HandoffOf(child).CleanupRequired)
	}
	// Output:
	// support answered; seed pending: false
	// triage answered; seed pending: false
}
