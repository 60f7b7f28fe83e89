package handoff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/message"
)

// Handoff is a transfer of control to another agent of the same network,
// offered to the model as a tool. The zero values of the optional fields mean
// the defaults documented on each. A Handoff is read-only once its network is
// built and is then safe for concurrent use.
type Handoff struct {
	// To names the target agent.
	To string
	// ToolName is the tool the model calls. Defaults to "transfer_to_<To>".
	ToolName string
	// Description tells the model when to use this handoff. Defaults to
	// "Transfer the conversation to <To>." followed by the target's description.
	Description string
	// History is what the target sees of the source's history. Defaults to HistoryFull.
	History HistoryPolicy
	// SystemMessage, when true, carries the source's system prompt to the
	// target as a leading system message.
	SystemMessage bool
	// Transforms are applied in order to the history after the policy; one
	// that fails is skipped (the history it was given is kept) and logged.
	Transforms []Transform
	// ContextSchema is the JSON Schema of the tool's arguments: the typed
	// handoff context the model must fill. Arguments that do not validate go
	// back to the model as a tool error and the handoff does not happen.
	// Defaults to an object with optional "reason" and "expected_output" strings.
	ContextSchema json.RawMessage
	// Return makes this a return-to-caller handoff: when the target answers,
	// control goes back to the source with the answer in its history.
	Return bool
	// OnHandoff, if set, runs after the context validated and before control
	// moves. An error rejects the handoff; the model sees the error.
	OnHandoff func(ctx context.Context, hc *Context) error
	// Enabled, if set, decides per model call whether the tool is offered.
	Enabled func(ctx context.Context, info Info) bool

	schema *schemas.Schema
}

// Info is what an Enabled predicate can see of the run.
type Info struct {
	RunID    string
	ThreadID string
	// Agent is the agent that would hand off.
	Agent    string
	Turns    int
	Handoffs int
	Messages []message.Message
}

// DefaultContextSchema is the tool parameter schema of a handoff that declares none.
var DefaultContextSchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"Why the conversation is being transferred."},"expected_output":{"type":"string","description":"What the receiving agent should produce."}},"additionalProperties":true}`)

// ContextSchemaFor returns the JSON Schema of T for use as ContextSchema, so
// that a Go type declares the typed handoff context. It panics if T cannot be
// described, which is a programming error found at start-up.
func ContextSchemaFor[T any]() json.RawMessage {
	s, err := schemas.For[T]()
	if err != nil {
		panic("handoff: " + err.Error())
	}
	return s
}

// Decode decodes the typed context data delivered with hc into a T.
func Decode[T any](hc *Context) (T, error) {
	var v T
	if hc == nil || len(hc.Data) == 0 {
		return v, errors.New("handoff: no context data")
	}
	if err := json.Unmarshal(hc.Data, &v); err != nil {
		return v, fmt.Errorf("handoff: decode context: %w", err)
	}
	return v, nil
}

// Tool returns the name of the tool the model calls.
func (h *Handoff) Tool() string {
	if h.ToolName != "" {
		return h.ToolName
	}
	return "transfer_to_" + h.To
}

// Policy returns the history policy, defaulted.
func (h *Handoff) Policy() HistoryPolicy {
	if h.History == "" {
		return HistoryFull
	}
	return h.History
}

// Parameters returns the tool's parameter schema, defaulted.
func (h *Handoff) Parameters() json.RawMessage {
	if len(h.ContextSchema) == 0 {
		return DefaultContextSchema
	}
	return h.ContextSchema
}

// Compile validates h and compiles its context schema. Networks call it when
// they are built; it is idempotent.
func (h *Handoff) Compile() error {
	if h.To == "" {
		return errors.New("handoff: no target agent")
	}
	switch h.Policy() {
	case HistoryFull, HistoryLastUser, HistoryNone:
	default:
		return fmt.Errorf("handoff to %s: unknown history policy %q (want full, last_user or none)", h.To, h.History)
	}
	if h.schema != nil {
		return nil
	}
	s, err := schemas.Compile(h.Parameters())
	if err != nil {
		return fmt.Errorf("handoff to %s: context schema: %w", h.To, err)
	}
	h.schema = s
	return nil
}

// ContextError says why a handoff's arguments were refused. It goes back to
// the model as the tool's error result.
type ContextError struct {
	To     string
	Detail string
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("invalid handoff context for %s: %s", e.To, e.Detail)
}

// BuildContext validates the tool arguments args against the context schema
// and returns the context that will travel with the handoff. from is the
// source agent. The id, type and history are filled in; the caller sets ID.
func (h *Handoff) BuildContext(from string, args json.RawMessage) (*Context, error) {
	if h.schema == nil {
		if err := h.Compile(); err != nil {
			return nil, err
		}
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	// One decode serves validation and the well-known fields.
	v, err := schemas.Decode(args)
	if err != nil {
		return nil, &ContextError{To: h.To, Detail: err.Error()}
	}
	if err := h.schema.ValidateValue(v); err != nil {
		return nil, &ContextError{To: h.To, Detail: err.Error()}
	}
	hc := &Context{From: from, To: h.To, Type: TypeTransfer, Tool: h.Tool(), History: h.Policy()}
	if h.Return {
		hc.Type = TypeReturn
	}
	// Lift the well-known fields; the rest stays structured in Data.
	if m, ok := v.(map[string]any); ok {
		hc.Reason, _ = m["reason"].(string)
		hc.ExpectedOutput, _ = m["expected_output"].(string)
		if len(m) > 0 {
			hc.Data = args
		}
	}
	return hc, nil
}
