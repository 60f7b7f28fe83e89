package summary_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/summary"
)

// summaryOut is what the scripted summary model answers.
const summaryOut = `{"title":"Refund for order 1142","body":["Customer asked for a refund of order 1142.","Refund of 42.10 EUR approved.","Bank confirmation still open."],"tldr":"Refund approved; waiting for the bank."}`

func conversation() []message.Message {
	return []message.Message{
		message.User("I want a refund for order 1142"),
		{Role: message.RoleAssistant, Agent: "support", Parts: []message.Part{{Type: message.PartToolCall, CallID: "c1", Name: "lookup_order", Arguments: json.RawMessage(`{"id":1142}`)}}},
		message.ToolResult("support", "c1", "lookup_order", `{"total":"42.10 EUR"}`, false),
		message.Assistant("support", "Order 1142 is eligible; the refund is approved."),
		message.User("When will the money arrive?"),
		message.Assistant("support", "Once the bank confirms, within 3 working days."),
	}
}

func ExampleSummarise() {
	ctx := context.Background()
	m := scripted.New(summary.DefaultAgent, []scripted.Step{{Text: summaryOut}}, scripted.Options{})
	r, err := summary.Summarise(ctx, m, conversation(), summary.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Markdown)
	// Output:
	// ### Refund for order 1142
	//
	// - Customer asked for a refund of order 1142.
	// - Refund of 42.10 EUR approved.
	// - Bank confirmation still open.
	//
	// **TL;DR:** Refund approved; waiting for the bank.
}
