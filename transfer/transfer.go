package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/jsonscan"
	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/message"
)

// Transfer is a move of control to another agent of the same network,
// offered to the model as a tool. The zero values of the optional fields mean
// the defaults documented on each. A Transfer is read-only once its network is
// built and is then safe for concurrent use.
type Transfer struct {
	// To names the target agent.
	To string
	// ToolName is the tool the model calls. Defaults to "transfer_to_<To>".
	ToolName string
	// Description tells the model when to use this transfer. Defaults to
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
	// transfer context the model must fill. Arguments that do not validate go
	// back to the model as a tool error and the transfer does not happen.
	// Defaults to an object with optional "reason" and "expected_output" strings.
	ContextSchema json.RawMessage
	// Return makes this a return-to-caller transfer: when the target answers,
	// control goes back to the source with the answer in its history.
	Return bool
	// OnTransfer, if set, runs after the context validated and before control
	// moves. An error rejects the transfer; the model sees the error.
	OnTransfer func(ctx context.Context, tc *Context) error
	// Enabled, if set, decides per model call whether the tool is offered.
	Enabled func(ctx context.Context, info Info) bool

	schema *schemas.Schema
	// tool is the default tool name, kept by Compile.
	tool string
}

// Info is what an Enabled predicate can see of the run.
type Info struct {
	RunID    string
	ThreadID string
	// Agent is the agent that would transfer.
	Agent     string
	Turns     int
	Transfers int
	Messages  []message.Message
}

// DefaultContextSchema is the tool parameter schema of a transfer that declares none.
var DefaultContextSchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"Why the conversation is being transferred."},"expected_output":{"type":"string","description":"What the receiving agent should produce."}},"additionalProperties":true}`)

// ContextSchemaFor returns the JSON Schema of T for use as ContextSchema, so
// that a Go type declares the typed transfer context. It panics if T cannot be
// described, which is a programming error found at start-up.
func ContextSchemaFor[T any]() json.RawMessage {
	s, err := schemas.For[T]()
	if err != nil {
		panic("transfer: " + err.Error())
	}
	return s
}

// Decode decodes the typed context data delivered with tc into a T.
func Decode[T any](tc *Context) (T, error) {
	var v T
	if tc == nil || len(tc.Data) == 0 {
		return v, errors.New("transfer: no context data")
	}
	if err := json.Unmarshal(tc.Data, &v); err != nil {
		return v, fmt.Errorf("transfer: decode context: %w", err)
	}
	return v, nil
}

// Tool returns the name of the tool the model calls.
func (tr *Transfer) Tool() string {
	if tr.ToolName != "" {
		return tr.ToolName
	}
	if len(tr.tool) == len("transfer_to_")+len(tr.To) && tr.tool[len("transfer_to_"):] == tr.To {
		return tr.tool // built once by Compile
	}
	return "transfer_to_" + tr.To
}

// Policy returns the history policy, defaulted.
func (tr *Transfer) Policy() HistoryPolicy {
	if tr.History == "" {
		return HistoryFull
	}
	return tr.History
}

// Parameters returns the tool's parameter schema, defaulted.
func (tr *Transfer) Parameters() json.RawMessage {
	if len(tr.ContextSchema) == 0 {
		return DefaultContextSchema
	}
	return tr.ContextSchema
}

// Compile validates h and compiles its context schema. Networks call it when
// they are built; it is idempotent.
func (tr *Transfer) Compile() error {
	if tr.To == "" {
		return errors.New("transfer: no target agent")
	}
	switch tr.Policy() {
	case HistoryFull, HistoryLastUser, HistoryNone:
	default:
		return fmt.Errorf("transfer to %s: unknown history policy %q (want full, last_user or none)", tr.To, tr.History)
	}
	if tr.schema != nil {
		return nil
	}
	tr.tool = "transfer_to_" + tr.To
	s, err := schemas.Compile(tr.Parameters())
	if err != nil {
		return fmt.Errorf("transfer to %s: context schema: %w", tr.To, err)
	}
	tr.schema = s
	return nil
}

// ContextError says why a transfer's arguments were refused. It goes back to
// the model as the tool's error result.
type ContextError struct {
	To     string
	Detail string
}

func (e *ContextError) Error() string {
	return fmt.Sprintf("invalid transfer context for %s: %s", e.To, e.Detail)
}

// BuildContext validates the tool arguments args against the context schema
// and returns the context that will travel with the transfer. from is the
// source agent. The id, type and history are filled in; the caller sets ID.
func (tr *Transfer) BuildContext(from string, args json.RawMessage) (*Context, error) {
	if tr.schema == nil {
		if err := tr.Compile(); err != nil {
			return nil, err
		}
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := tr.schema.Validate(args); err != nil {
		return nil, &ContextError{To: tr.To, Detail: err.Error()}
	}
	tc := &Context{From: from, To: tr.To, Type: TypeTransfer, Tool: tr.Tool(), History: tr.Policy()}
	if tr.Return {
		tc.Type = TypeReturn
	}
	tc.lift(args)
	return tc, nil
}

// lift sets the well-known fields of tc from args, the validated arguments,
// and keeps args as Data when it is an object with members: the rest stays
// structured in Data. Of a name given twice, the last counts, as in a
// decoded object.
func (tc *Context) lift(args json.RawMessage) {
	members := 0
	if !jsonscan.Members(args, func(key, value []byte) {
		members++
		switch {
		case named(key, "reason"):
			tc.Reason = stringValue(value)
		case named(key, "expected_output"):
			tc.ExpectedOutput = stringValue(value)
		}
	}) {
		// Valid JSON, but not an object: nothing to lift.
		tc.Reason, tc.ExpectedOutput = "", ""
		return
	}
	if members > 0 {
		tc.Data = args
	}
}

// named reports whether key, a member's key as written, names name.
func named(key []byte, name string) bool {
	if jsonscan.Plain(key) {
		return string(key) == name
	}
	return jsonscan.Unquote(key) == name
}

// stringValue is the string a JSON value holds, "" if it is not a string.
func stringValue(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	return jsonscan.Unquote(v[1 : len(v)-1])
}
