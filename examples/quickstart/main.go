// Command quickstart declares a support network in Go and runs one turn:
// triage transfers to billing with a typed context, billing looks the
// order up with a Go tool and answers. The agents run on baton's scripted
// model, so it needs no API key and no network access; give an agent a
// live model (provider.New) to run it for real. In a new module:
// go mod init demo && go get github.com/batonhq/baton && go run .
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/transfer"
)

// Issue is what triage hands billing: the model fills it in as the
// transfer tool's arguments, validated against its schema before control
// moves.
type Issue struct {
	OrderID string `json:"order_id" jsonschema:"pattern=^[0-9]+$"`
	Reason  string `json:"reason"`
}

// Order is the argument of the lookup_order tool.
type Order struct {
	OrderID string `json:"order_id"`
}

func main() {
	lookup := agent.FuncTool("lookup_order", "Look up an order by id.",
		func(ctx context.Context, o Order) (string, error) {
			return `{"order_id":"` + o.OrderID + `","total":49.90,"currency":"EUR","charges":2}`, nil
		})
	triage := &agent.Agent{
		Name:         "triage",
		Instructions: "Route the customer: billing for charges and invoices.",
		ModelName:    "scripted",
		Model: scripted.New("triage", []scripted.Step{{ToolCalls: []scripted.Call{{
			Name: "transfer_to_billing", Arguments: json.RawMessage(`{"order_id":"1234","reason":"charged twice"}`),
		}}}}, scripted.Options{}),
		Transfers: []*transfer.Transfer{{To: "billing", Description: "Charges and invoices.",
			ContextSchema: transfer.ContextSchemaFor[Issue]()}},
	}
	billing := &agent.Agent{
		Name:         "billing",
		Description:  "Resolves charges and invoices.",
		Instructions: "You resolve billing problems. Check the order before you answer.",
		ModelName:    "scripted",
		Tools:        []*agent.Tool{lookup},
		Model: scripted.New("billing", []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "lookup_order", Arguments: json.RawMessage(`{"order_id":"1234"}`)}}},
			{Text: "I can see two charges of 49.90 EUR on order 1234; the second one is a duplicate and will be reversed."},
		}, scripted.Options{}),
	}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support", Agents: []*agent.Agent{triage, billing}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{Network: net})
	if err != nil {
		log.Fatal(err)
	}
	res, err := r.Run(context.Background(), "I was charged twice for order 1234")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Output)
}
