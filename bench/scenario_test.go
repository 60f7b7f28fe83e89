package bench

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"strconv"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/transfer"
)

// input is the user message of every scenario.
const input = "I was charged twice for my March invoice, please refund one of the charges."

// answer is the final text of every scenario.
const answer = "I have refunded the duplicate charge of 42.00 EUR; it will appear on your statement in 3-5 days."

// transferArgs is the transfer call's arguments: a small typed context.
var transferArgs = json.RawMessage(`{"reason":"duplicate charge on the March invoice","account_id":"acct_42","priority":2}`)

// billingContext is the typed transfer context triage fills in.
type billingContext struct {
	Reason    string `json:"reason"`
	AccountID string `json:"account_id"`
	Priority  int    `json:"priority"`
}

// usage is what each instant answer reports, so that usage accounting runs.
var usage = message.Usage{InputTokens: 120, OutputTokens: 24}

// instant returns a model that answers every call with msg at once: no
// script lookup, no copying, no latency. The chunks are built once; each
// call only allocates its iterator closure. Text answers also yield one
// text delta first, as a streaming provider would.
func instant(msg message.Message) model.Model {
	finish := "stop"
	if msg.HasToolCalls() {
		finish = "tool_calls"
	}
	var chunks []model.Chunk
	if t := msg.Text(); t != "" {
		chunks = append(chunks, model.Chunk{Type: model.ChunkText, Text: t})
	}
	for i := range msg.Parts {
		if p := &msg.Parts[i]; p.Type == message.PartToolCall {
			chunks = append(chunks, model.Chunk{Type: model.ChunkToolCall, ToolCall: &message.ToolCall{ID: p.CallID, Name: p.Name, Arguments: p.Arguments}})
		}
	}
	chunks = append(chunks, model.Chunk{Type: model.ChunkDone, Message: &msg, Usage: usage, FinishReason: finish, Model: "instant"})
	return model.Func(func(_ context.Context, _ *model.Request) iter.Seq2[model.Chunk, error] {
		return func(yield func(model.Chunk, error) bool) {
			for _, c := range chunks {
				if !yield(c, nil) {
					return
				}
			}
		}
	})
}

// instantCall is an instant model that calls tool with args.
func instantCall(agentName, tool string, args json.RawMessage) model.Model {
	return instant(message.Message{Role: message.RoleAssistant, Agent: agentName, Parts: []message.Part{
		{Type: message.PartToolCall, CallID: "call_" + agentName + "_1", Name: tool, Arguments: args},
	}})
}

// instantText is an instant model that answers text.
func instantText(agentName, text string) model.Model {
	return instant(message.Assistant(agentName, text))
}

// scenario is a network ready to run and what its run must end with.
type scenario struct {
	r         *runner.Runner
	lastAgent string
	transfers int
	turns     int
}

// newRunner builds a runner with a discarding logger, so that benchmarks
// measure the runtime rather than log I/O (the runner logs every transfer).
func newRunner(tb testing.TB, net *agent.Network) *runner.Runner {
	tb.Helper()
	r, err := runner.New(runner.Config{Network: net, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// transferNetwork is triage + billing: triage hands off to billing with a
// typed context, billing answers. Models are instant unless scripted is set.
func transferNetwork(tb testing.TB, useScripted bool) scenario {
	tb.Helper()
	triageModel, billingModel := instantCall("triage", "transfer_to_billing", transferArgs), instantText("billing", answer)
	if useScripted {
		triageModel = scripted.New("triage", []scripted.Step{{ToolCalls: []scripted.Call{{Name: "transfer_to_billing", Arguments: transferArgs}}, Usage: &usage}}, scripted.Options{})
		billingModel = scripted.New("billing", []scripted.Step{{Text: answer, Usage: &usage}}, scripted.Options{})
	}
	triage := &agent.Agent{
		Name:         "triage",
		Description:  "Routes customer requests to the right specialist.",
		Instructions: "You are the triage agent of ACME support. Hand billing questions to billing.",
		Model:        triageModel,
		ModelName:    "instant",
		Transfers: []*transfer.Transfer{{
			To:            "billing",
			ContextSchema: transfer.ContextSchemaFor[billingContext](),
		}},
	}
	billing := &agent.Agent{
		Name:         "billing",
		Description:  "Handles invoices, charges and refunds.",
		Instructions: "You are the billing specialist of ACME support. Resolve the customer's billing problem.",
		Model:        billingModel,
		ModelName:    "instant",
	}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support", Agents: []*agent.Agent{triage, billing}})
	if err != nil {
		tb.Fatal(err)
	}
	return scenario{r: newRunner(tb, net), lastAgent: "billing", transfers: 1, turns: 2}
}

// chainLength is the number of transfers of the chain scenario.
const chainLength = 10

// chainNetwork is a0 → a1 → … → a10 (each with an instant transfer call),
// then a10 answers.
func chainNetwork(tb testing.TB) scenario {
	tb.Helper()
	agents := make([]*agent.Agent, chainLength+1)
	for i := range agents {
		name := "a" + strconv.Itoa(i)
		a := &agent.Agent{
			Name:         name,
			Description:  "Step " + strconv.Itoa(i) + " of the chain.",
			Instructions: "You are step " + strconv.Itoa(i) + " of a chain of specialists.",
			ModelName:    "instant",
		}
		if i < chainLength {
			next := "a" + strconv.Itoa(i+1)
			a.Transfers = []*transfer.Transfer{{To: next}}
			a.Model = instantCall(name, "transfer_to_"+next, json.RawMessage(`{"reason":"next step"}`))
		} else {
			a.Model = instantText(name, answer)
		}
		agents[i] = a
	}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "chain", Agents: agents,
		Limits: agent.Limits{MaxTransfers: chainLength, MaxTurns: chainLength + 1}})
	if err != nil {
		tb.Fatal(err)
	}
	return scenario{r: newRunner(tb, net), lastAgent: "a" + strconv.Itoa(chainLength), transfers: chainLength, turns: chainLength + 1}
}

// turnNetwork is one agent answering at once: the per-turn overhead.
func turnNetwork(tb testing.TB) scenario {
	tb.Helper()
	a := &agent.Agent{
		Name:         "assistant",
		Description:  "Answers questions.",
		Instructions: "You are a helpful assistant.",
		Model:        instantText("assistant", answer),
		ModelName:    "instant",
	}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "single", Agents: []*agent.Agent{a}})
	if err != nil {
		tb.Fatal(err)
	}
	return scenario{r: newRunner(tb, net), lastAgent: "assistant", turns: 1}
}
