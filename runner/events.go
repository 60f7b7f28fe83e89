package runner

import (
	"encoding/json"

	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
)

// EventType names an event. It is the `type` field of `baton run --json`
// and the SSE `event:` name, and is stable.
type EventType string

// Event types.
const (
	TypeRunStart        EventType = "run_start"
	TypeAgentStart      EventType = "agent_start"
	TypeTextDelta       EventType = "text_delta"
	TypeMessage         EventType = "message"
	TypeToolCall        EventType = "tool_call"
	TypeToolResult      EventType = "tool_result"
	TypeHandoff         EventType = "handoff"
	TypeHandoffRejected EventType = "handoff_rejected"
	TypeInterrupt       EventType = "interrupt"
	TypeSuspended       EventType = "suspended"
	TypeRunEnd          EventType = "run_end"
	TypeError           EventType = "error"
)

// Event is one typed event of a run: one of the *…Event types of this
// package. Encode it with encoding/json: the JSON has `type` and `seq`.
type Event interface {
	EventType() EventType
	Sequence() int
}

// Header is the part every event has. Seq numbers a run's events from 1,
// continuing across resumes.
type Header struct {
	Type EventType `json:"type"`
	Seq  int       `json:"seq"`
}

// EventType returns h.Type.
func (h *Header) EventType() EventType { return h.Type }

// Sequence returns h.Seq.
func (h *Header) Sequence() int { return h.Seq }

// RunStartEvent opens a run (or a resumed run).
type RunStartEvent struct {
	Header
	RunID       string `json:"run_id"`
	ThreadID    string `json:"thread_id,omitempty"`
	Network     string `json:"network"`
	Fingerprint string `json:"fingerprint"`
	Agent       string `json:"agent"`
	Resumed     bool   `json:"resumed,omitempty"`
}

// AgentStartEvent says an agent took control.
type AgentStartEvent struct {
	Header
	Agent  string `json:"agent"`
	Reason string `json:"reason,omitempty"`
}

// TextDeltaEvent is answer text as the model streams it. A model call that
// is retried may repeat deltas; the MessageEvent carries the final text.
type TextDeltaEvent struct {
	Header
	Agent string `json:"agent"`
	Delta string `json:"delta"`
}

// MessageEvent is a complete assistant message with text.
type MessageEvent struct {
	Header
	Agent     string         `json:"agent"`
	Text      string         `json:"text"`
	MessageID string         `json:"message_id,omitempty"`
	Usage     *message.Usage `json:"usage,omitempty"`
}

// ToolCallEvent is a call the model made.
type ToolCallEvent struct {
	Header
	Agent     string          `json:"agent"`
	Name      string          `json:"name"`
	ID        string          `json:"id"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResultEvent is the result of a call: Output, or Error when it failed.
type ToolResultEvent struct {
	Header
	Agent  string `json:"agent"`
	Name   string `json:"name"`
	ID     string `json:"id"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// HandoffEvent is control moving from one agent to another.
type HandoffEvent struct {
	Header
	ID            string                `json:"handoff_id"`
	From          string                `json:"from"`
	To            string                `json:"to"`
	HandoffType   handoff.Type          `json:"handoff_type"`
	Tool          string                `json:"tool,omitempty"`
	Reason        string                `json:"reason,omitempty"`
	Context       json.RawMessage       `json:"context,omitempty"`
	HistoryPolicy handoff.HistoryPolicy `json:"history_policy"`
	Transforms    []string              `json:"transforms,omitempty"`
}

// HandoffRejectedEvent is a handoff that did not happen.
type HandoffRejectedEvent struct {
	Header
	From  string `json:"from"`
	To    string `json:"to"`
	Tool  string `json:"tool"`
	Error string `json:"error"`
}

// InterruptEvent stops the run until a human decides.
type InterruptEvent struct {
	Header
	Interrupt *runstate.Interrupt `json:"interrupt"`
}

// SuspendedEvent says the run was handed to a background worker before the
// named calls run.
type SuspendedEvent struct {
	Header
	Agent string   `json:"agent"`
	Calls []string `json:"calls"`
}

// RunEndEvent closes a run, whatever its status.
type RunEndEvent struct {
	Header
	Status    runstate.Status `json:"status"`
	LastAgent string          `json:"last_agent"`
	Turns     int             `json:"turns"`
	Handoffs  int             `json:"handoffs"`
	Usage     message.Usage   `json:"usage"`
	Output    string          `json:"output,omitempty"`
	// Limit names the limit that ended the run with a final answer, if any.
	Limit string `json:"limit,omitempty"`
}

// ErrorEvent reports the failure that ended a run; RunEndEvent follows it.
type ErrorEvent struct {
	Header
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	Limit   string `json:"limit,omitempty"`
	Agent   string `json:"agent,omitempty"`
}
