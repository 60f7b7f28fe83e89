// Package eino is the peer benchmark of baton's core runtime: the same
// triage → billing transfer and chain of 10 transfers, built with
// github.com/cloudwego/eino's ADK (ChatModelAgent, SetSubAgents and its
// transfer_to_agent tool, adk.Runner) and instant fake chat models. It is a
// separate module so that baton's own module does not depend on eino; CI
// does not build it.
package eino

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
)

// Input is the user message of every scenario (the same as baton's).
const Input = "I was charged twice for my March invoice, please refund one of the charges."

// Answer is the final text of every scenario (the same as baton's).
const Answer = "I have refunded the duplicate charge of 42.00 EUR; it will appear on your statement in 3-5 days."

// transferArgs carries the same small context as baton's typed transfer
// context; eino's transfer tool only reads agent_name and ignores the rest.
const transferArgs = `{"agent_name":%q,"reason":"duplicate charge on the March invoice","account_id":"acct_42","priority":2}`

// usage is what each instant answer reports.
var usage = &schema.TokenUsage{PromptTokens: 120, CompletionTokens: 24, TotalTokens: 144}

// instantModel answers every call with a copy of msg at once. It implements
// model.ToolCallingChatModel. The copy is shallow (one allocation): the
// framework owns the message it gets back, as it would a provider's.
type instantModel struct{ msg *schema.Message }

var _ model.ToolCallingChatModel = (*instantModel)(nil)

func (m *instantModel) Generate(_ context.Context, _ []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	c := *m.msg
	return &c, nil
}

func (m *instantModel) Stream(_ context.Context, _ []*schema.Message, _ ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	c := *m.msg
	return schema.StreamReaderFromArray([]*schema.Message{&c}), nil
}

func (m *instantModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	return m, nil
}

// transferModel calls eino's transfer tool towards dest.
func transferModel(dest string) *instantModel {
	return &instantModel{msg: &schema.Message{
		Role: schema.Assistant,
		ToolCalls: []schema.ToolCall{{
			ID:       "call_transfer_" + dest,
			Type:     "function",
			Function: schema.FunctionCall{Name: adk.TransferToAgentToolName, Arguments: fmt.Sprintf(transferArgs, dest)},
		}},
		ResponseMeta: &schema.ResponseMeta{FinishReason: "tool_calls", Usage: usage},
	}}
}

// textModel answers text.
func textModel(text string) *instantModel {
	return &instantModel{msg: &schema.Message{Role: schema.Assistant, Content: text,
		ResponseMeta: &schema.ResponseMeta{FinishReason: "stop", Usage: usage}}}
}

func newAgent(ctx context.Context, name, desc, instruction string, m model.ToolCallingChatModel) (*adk.ChatModelAgent, error) {
	return adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{Name: name, Description: desc, Instruction: instruction, Model: m})
}

// Scenario is a runner ready to run and the agent that must answer.
type Scenario struct {
	Runner    *adk.Runner
	LastAgent string
	// Transfers is the number of transfers a run makes.
	Transfers int
}

// Transfer builds triage + billing: triage transfers to billing, which answers.
func Transfer(ctx context.Context) (*Scenario, error) {
	triage, err := newAgent(ctx, "triage", "Routes customer requests to the right specialist.",
		"You are the triage agent of ACME support. Hand billing questions to billing.", transferModel("billing"))
	if err != nil {
		return nil, err
	}
	billing, err := newAgent(ctx, "billing", "Handles invoices, charges and refunds.",
		"You are the billing specialist of ACME support. Resolve the customer's billing problem.", textModel(Answer))
	if err != nil {
		return nil, err
	}
	root, err := adk.SetSubAgents(ctx, triage, []adk.Agent{billing})
	if err != nil {
		return nil, err
	}
	return &Scenario{Runner: adk.NewRunner(ctx, adk.RunnerConfig{Agent: root}), LastAgent: "billing", Transfers: 1}, nil
}

// ChainLength is the number of transfers of the chain scenario.
const ChainLength = 10

// Chain builds a0 → a1 → … → a10 (each a sub-agent of the one before it,
// each transferring to the next), then a10 answers.
func Chain(ctx context.Context) (*Scenario, error) {
	var next adk.Agent
	for i := ChainLength; i >= 0; i-- {
		name := "a" + strconv.Itoa(i)
		var m *instantModel
		if i == ChainLength {
			m = textModel(Answer)
		} else {
			m = transferModel("a" + strconv.Itoa(i+1))
		}
		a, err := newAgent(ctx, name, "Step "+strconv.Itoa(i)+" of the chain.", "You are step "+strconv.Itoa(i)+" of a chain of specialists.", m)
		if err != nil {
			return nil, err
		}
		if next == nil {
			next = a
			continue
		}
		if next, err = adk.SetSubAgents(ctx, a, []adk.Agent{next}); err != nil {
			return nil, err
		}
	}
	return &Scenario{Runner: adk.NewRunner(ctx, adk.RunnerConfig{Agent: next}), LastAgent: "a" + strconv.Itoa(ChainLength), Transfers: ChainLength}, nil
}

// Outcome is what a drained run produced.
type Outcome struct {
	Events    int
	Transfers int
	// LastAgent and Text are the agent and content of the last assistant message.
	LastAgent string
	Text      string
}

// Run runs s once with Input and drains its event iterator.
func (s *Scenario) Run(ctx context.Context) (Outcome, error) {
	var o Outcome
	it := s.Runner.Query(ctx, Input)
	for {
		ev, ok := it.Next()
		if !ok {
			break
		}
		o.Events++
		if ev.Err != nil {
			return o, ev.Err
		}
		if ev.Action != nil && ev.Action.TransferToAgent != nil {
			o.Transfers++
		}
		if mo := ev.Output; mo != nil && mo.MessageOutput != nil && mo.MessageOutput.Role == schema.Assistant {
			msg, err := mo.MessageOutput.GetMessage()
			if err != nil {
				return o, err
			}
			o.LastAgent, o.Text = ev.AgentName, msg.Content
		}
	}
	if o.Events == 0 {
		return o, errors.New("eino: no events")
	}
	return o, nil
}
