package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/transfer"
)

// Agent is one participant of a network. An Agent is read-only once its
// network is built and is then safe for concurrent use.
type Agent struct {
	// Name identifies the agent within its network.
	Name string
	// Description says what the agent does; transfer tools and pickers show it.
	Description string
	// Instructions is the system prompt. InstructionsFunc, if set, is used
	// instead and may depend on the run.
	Instructions     string
	InstructionsFunc func(ctx context.Context, rc *RunContext) (string, error)
	// Model answers for the agent; ModelName names it ("scripted",
	// "openai:gpt-4o", …) for fingerprints, logs and traces.
	Model     model.Model
	ModelName string
	Settings  model.Settings
	Tools     []*Tool
	// Transfers are the transfers this agent may make.
	Transfers []*transfer.Transfer
	// AgentTools are specialists this agent may call as tools, keeping control.
	AgentTools []*AgentTool
	// InputGuardrails check the user input when this agent receives it;
	// OutputGuardrails check this agent's final answer. Neither is inherited
	// by the target of a transfer.
	InputGuardrails  []Guardrail
	OutputGuardrails []Guardrail
	// OutputSchema, if set, asks the model for a JSON answer matching it; the
	// answer is validated.
	OutputSchema json.RawMessage
	// Background, when true, makes every tool of this agent run in a
	// background worker when the run is inline (see Tool.Slow).
	Background bool

	outputSchema *schemas.Schema
}

// OutputValidator returns the compiled output schema, or nil.
func (a *Agent) OutputValidator() *schemas.Schema { return a.outputSchema }

// RunContext is what an agent's instructions, tools and guardrails can see of
// the run. It is a read-only view; do not retain it after the call.
type RunContext struct {
	RunID    string
	ThreadID string
	Agent    string
	// Transfer is the context delivered to this agent, if control was transferred to it.
	Transfer  *transfer.Context
	Messages  []message.Message
	Turns     int
	Transfers int
	// Values are application values given to the run.
	Values map[string]json.RawMessage
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the argument object. Defaults to any object.
	Parameters json.RawMessage
	// Func runs the tool with the validated argument object. Its string result
	// goes to the model. An error goes to the model as an error result, unless
	// it is transient (see [Transient]): then it is retried with backoff.
	// [CallFromContext] gives the call id and idempotency key.
	Func func(ctx context.Context, args json.RawMessage) (string, error)
	// RequireApproval, if set, decides whether a call needs a human decision
	// before it runs; the run stops with an interrupt until then.
	RequireApproval func(ctx context.Context, args json.RawMessage) bool
	// Slow marks a tool whose calls are handed to a background worker when
	// the run is inline.
	Slow bool
	// Idempotent declares that the tool de-duplicates its effects on the
	// call's idempotency key ([CallInfo].IdempotencyKey), or has none: a
	// call run again with the same key changes nothing more. Its result
	// then need not be durable before the run goes on: a run that allows
	// it (runner.WithDeferredResults, a background worker's) writes the
	// result with its next checkpoint instead of one of its own, and a
	// crash in between runs the call again, with the same key.
	Idempotent bool
	// Timeout bounds one call. Zero means no timeout beyond the run's.
	Timeout time.Duration

	params *schemas.Schema
}

// Validator returns the compiled parameter schema.
func (t *Tool) Validator() *schemas.Schema { return t.params }

// AgentTool offers another agent of the network as a tool: the caller sends
// it an input, the specialist runs on its own history, and its final answer
// comes back as the tool result.
type AgentTool struct {
	// Agent names the specialist.
	Agent string
	// ToolName defaults to "ask_<Agent>".
	ToolName string
	// Description defaults to the specialist's description.
	Description string
}

// Tool returns the tool name.
func (t *AgentTool) Tool() string {
	if t.ToolName != "" {
		return t.ToolName
	}
	return "ask_" + t.Agent
}

// AgentToolParameters is the parameter schema of every agent tool.
var AgentToolParameters = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"The request for the specialist, self-contained."}},"required":["input"]}`)

// Guardrail checks input or output. Check returns nil to pass, or an error
// that stops the run (its message is reported).
type Guardrail struct {
	Name  string
	Check func(ctx context.Context, in GuardrailInput) error
}

// GuardrailInput is what a guardrail checks.
type GuardrailInput struct {
	Agent string
	// Text is the user input (input guardrails) or the answer (output guardrails).
	Text     string
	Messages []message.Message
}

// CallInfo identifies a tool call to the tool itself.
type CallInfo struct {
	RunID    string
	ThreadID string
	Agent    string
	CallID   string
	// IdempotencyKey is stable across retries and resumes of the same call
	// (run id + call id); tools with external effects should de-duplicate on it.
	IdempotencyKey string
	Run            *RunContext
}

type callKey struct{}

// WithCall returns ctx carrying ci; the runner calls it for every tool call.
func WithCall(ctx context.Context, ci *CallInfo) context.Context {
	return context.WithValue(ctx, callKey{}, ci)
}

// CallFromContext returns the call a tool is running for.
func CallFromContext(ctx context.Context) (*CallInfo, bool) {
	ci, ok := ctx.Value(callKey{}).(*CallInfo)
	return ci, ok
}

// transientError marks an error as worth retrying.
type transientError struct {
	err   error
	after time.Duration
}

func (e *transientError) Error() string             { return e.err.Error() }
func (e *transientError) Unwrap() error             { return e.err }
func (e *transientError) Temporary() bool           { return true }
func (e *transientError) RetryDelay() time.Duration { return e.after }

// Transient marks a tool error as transient: the runner retries the call with
// backoff, waiting at least after when it is positive.
func Transient(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &transientError{err: err, after: after}
}
