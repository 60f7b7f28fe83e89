package summary_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/summary"
)

func ExampleSummarise() {
	ctx := context.Background()
	m := scripted.New(summary.DefaultAgent, []scripted.Step{{Text: summaryOut}}, scripted.Options{})
	p, err := summary.Summarise(ctx, m, conversation(), summary.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Markdown)
	// Output:
	// ### Refund for order 1142
	//
	// - Customer asked for a refund of order 1142.
	// - Refund of 42.10 EUR approved.
	// - Bank confirmation still open.
	//
	// **TL;DR:** Refund approved; waiting for the bank.
}

// Example shows a whole handoff on an in-memory SQLite store.
func Example() {
	ctx := context.Background()
	st, _ := sqlitestore.Open(ctx, ":memory:", nil)
	defer st.Close()
	st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "acme"})
	parent, _ := st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "acme", ActiveAgent: "support"})
	st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "acme", ThreadID: parent.ID,
		Messages: []store.NewMessage{{Message: message.User("Refund order 1142, please.")}, {Message: message.Assistant("support", "Done: 42.10 EUR.")}}})

	svc, _ := summary.New(summary.Config{
		Store:  st,
		Model:  scripted.New(summary.DefaultAgent, []scripted.Step{{Text: summaryOut}}, scripted.Options{}),
		Logger: slog.New(slog.DiscardHandler),
	})
	// 1–3: summarise and show the proposal (no side effects).
	p, _ := svc.Preview(ctx, &summary.PreviewParams{Owner: "acme", ThreadID: parent.ID})
	fmt.Println("proposal:", p.Interrupt().ActionRequests[0].Args.Summary.Title)
	// 4: a person approves; the child thread is created and seeded.
	out, _ := svc.Decide(ctx, p, summary.Decision{Type: summary.DecisionApprove})
	fmt.Println(out.Message == "Handoff approved: continue in thread "+out.ChildThreadID+".", out.MirrorStatus)
	// 5: every model call injects the memory; the child sees the summary…
	text, _ := svc.SystemText(ctx, "acme", "support", out.ChildThreadID)
	fmt.Println("child sees summary:", strings.Contains(text, "Refund for order 1142"))
	// …and after its first complete turn the block is cleared, once.
	done, _ := svc.Cleanup(ctx, "acme", out.ChildThreadID)
	again, _ := svc.Cleanup(ctx, "acme", out.ChildThreadID)
	text, _ = svc.SystemText(ctx, "acme", "support", out.ChildThreadID)
	fmt.Println("cleanup:", done, again, strings.Contains(text, memory.Placeholder))
	// Output:
	// proposal: Refund for order 1142
	// true ok
	// child sees summary: true
	// cleanup: true false true
}
