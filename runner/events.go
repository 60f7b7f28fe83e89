package runner

import (
	"encoding/json"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// EventType names an event. It is the `type` field of `baton run --json`
// and the SSE `event:` name, and is stable.
type EventType string

// Event types.
const (
	TypeRunStart         EventType = "run_start"
	TypeAgentStart       EventType = "agent_start"
	TypeTextDelta        EventType = "text_delta"
	TypeReasoningDelta   EventType = "reasoning_delta"
	TypeReasoning        EventType = "reasoning"
	TypeMessage          EventType = "message"
	TypeToolCall         EventType = "tool_call"
	TypeToolResult       EventType = "tool_result"
	TypeTransfer         EventType = "transfer"
	TypeTransferRejected EventType = "transfer_rejected"
	TypeInterrupt        EventType = "interrupt"
	TypeSuspended        EventType = "suspended"
	TypeRunEnd           EventType = "run_end"
	TypeError            EventType = "error"
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

// ReasoningDeltaEvent is reasoning ("thinking") as the model streams it,
// never answer text. Like text deltas, a retried call may repeat them; the
// ReasoningEvent carries the whole reasoning.
type ReasoningDeltaEvent struct {
	Header
	Agent string `json:"agent"`
	Delta string `json:"delta"`
}

// ReasoningEvent is one reasoning part of an assistant message, before its
// MessageEvent: a reasoning summary (OpenAI Responses), a thinking block
// (Anthropic) or a compatible server's reasoning. Hidden is set when the
// provider kept the reasoning to itself (encrypted, redacted, or not
// summarised): Text is empty, the part is still sent back to the provider
// on the next turn.
type ReasoningEvent struct {
	Header
	Agent     string `json:"agent"`
	Text      string `json:"text,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	Hidden    bool   `json:"hidden,omitempty"`
}

// MessageEvent is a complete assistant message with text. FinishReason is
// why the model stopped ("stop", "length", "content_filter", "refusal" …;
// see model.Chunk) and RequestID the provider's id of the call, where it
// sent one.
type MessageEvent struct {
	Header
	Agent        string         `json:"agent"`
	Text         string         `json:"text"`
	MessageID    string         `json:"message_id,omitempty"`
	Usage        *message.Usage `json:"usage,omitempty"`
	FinishReason string         `json:"finish_reason,omitempty"`
	RequestID    string         `json:"request_id,omitempty"`
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

// TransferEvent is control moving from one agent to another.
type TransferEvent struct {
	Header
	ID            string                 `json:"transfer_id"`
	From          string                 `json:"from"`
	To            string                 `json:"to"`
	TransferType  transfer.Type          `json:"transfer_type"`
	Tool          string                 `json:"tool,omitempty"`
	Reason        string                 `json:"reason,omitempty"`
	Context       json.RawMessage        `json:"context,omitempty"`
	HistoryPolicy transfer.HistoryPolicy `json:"history_policy"`
	Transforms    []string               `json:"transforms,omitempty"`
}

// TransferRejectedEvent is a transfer that did not happen.
type TransferRejectedEvent struct {
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
	Transfers int             `json:"transfers"`
	Usage     message.Usage   `json:"usage"`
	Output    string          `json:"output,omitempty"`
	// Limit names the limit that ended the run with a final answer, if any.
	Limit string `json:"limit,omitempty"`
	// Stopped, on a run that ended cancelled, says what stopped it.
	Stopped *Stop `json:"stopped,omitempty"`
}

// ErrorEvent reports the failure that ended a run; RunEndEvent follows it.
// RequestID is the provider's request id when a model call or answer
// caused it.
type ErrorEvent struct {
	Header
	Kind      Kind   `json:"kind"`
	Message   string `json:"message"`
	Limit     string `json:"limit,omitempty"`
	Agent     string `json:"agent,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// SetSeq sets the Seq of ev, an event of this package, to seq, as
// [EventsBetween]'s caller numbers the events it derives. An event of
// another type is left as it is.
func SetSeq(ev Event, seq int) {
	if h, ok := ev.(interface{ hdr() *Header }); ok {
		h.hdr().Seq = seq
	}
}

func (h *Header) hdr() *Header { return h }

// streaming reports whether events are wanted.
func (x *run) streaming() bool { return x.sink != nil && !x.stopped }

// emit numbers and delivers e. It returns false once the consumer stopped.
func (x *run) emit(e Event) bool {
	if x.lazy && x.begun() != nil {
		return false
	}
	if x.sink == nil || x.stopped {
		return !x.stopped
	}
	x.st.Seq++
	SetSeq(e, x.st.Seq)
	if !x.sink(e) {
		x.stopped = true
		return false
	}
	return true
}

// EventsBetween returns the events that took a run from checkpoint state
// prev (nil: the run's start) to the next checkpoint state cur, so that a
// run's events can be replayed from its stored checkpoints: the same events
// as the runner emitted live between the two writes, built by the same
// code. Text deltas are folded into the message events; Seq is left 0 (see
// [SetSeq]; the live events of the step are numbered up to cur.Seq). prev
// and cur are only read, so calls may run concurrently on shared states.
//
// What the states do not record is not derived: the Reason of the run's
// first agent_start (the picker's), the Limit of a run_end (a limit that
// ended the run with a final answer), transfer_rejected events (the refused
// target is not stored), the run_start of a run resumed from a running
// state (after a crash), and the events of an execution after its last
// checkpoint (a cancelled run's error, a suspension whose checkpoint was
// refused). A derived suspended event names every call without a result;
// the live one names only the slow calls among them.
func EventsBetween(prev, cur *runstate.State) []Event {
	skip := 1 // a new run's input
	if prev != nil {
		skip = len(prev.Transcript)
	}
	evs := appendStartEvents(nil, prev, cur)
	for i := min(skip, len(cur.Transcript)); i < len(cur.Transcript); i++ {
		evs = appendAnswerEvents(evs, &cur.Transcript[i])
	}
	if tc := movedBetween(prev, cur); tc != nil {
		evs = appendMoveEvents(evs, tc)
	}
	return appendStopEvents(evs, cur)
}

// appendStartEvents appends the events that open the execution of the run
// that led to cur: a new run's run_start and agent_start, or the run_start
// of a run resumed after it stopped at prev (waiting, or failed).
func appendStartEvents(evs []Event, prev, cur *runstate.State) []Event {
	if prev == nil {
		first := cur.Agent
		if len(cur.Trail) > 0 {
			first = cur.Trail[0]
		}
		return append(evs, runStartEvent(cur, first, false), agentStartEvent(first, ""))
	}
	if prev.Status != runstate.StatusRunning {
		return append(evs, runStartEvent(cur, prev.Agent, true))
	}
	return evs
}

// movedBetween returns the transfer context of the move of control between
// prev and cur, nil if there was none. A step moves control at most once:
// every move is checkpointed.
func movedBetween(prev, cur *runstate.State) *transfer.Context {
	transfers := 0
	if prev != nil {
		if len(cur.Stack) < len(prev.Stack) {
			return returnContext(&prev.Stack[len(prev.Stack)-1], prev.Agent)
		}
		transfers = prev.Transfers
	}
	if cur.Transfers <= transfers {
		return nil
	}
	if tc := cur.Transfer; tc != nil && tc.To == cur.Agent {
		return tc
	}
	from := cur.Agent
	if n := len(cur.Trail); n >= 2 {
		from = cur.Trail[n-2]
	}
	return &transfer.Context{From: from, To: cur.Agent}
}

// appendStopEvents appends the events of cur's status when the run stopped
// there: the interrupt, the suspension or the failure, and run_end.
func appendStopEvents(evs []Event, cur *runstate.State) []Event {
	switch cur.Status {
	case runstate.StatusRunning:
		return evs
	case runstate.StatusInterrupted:
		if cur.Interrupt != nil {
			evs = append(evs, interruptEvent(cur.Interrupt))
		}
	case runstate.StatusSuspended:
		var calls []string
		for _, p := range cur.Pending {
			if p.Result == nil {
				calls = append(calls, p.Call.ID)
			}
		}
		evs = append(evs, suspendedEvent(cur.Agent, calls))
	case runstate.StatusFailed:
		if cur.Failure != nil {
			evs = append(evs, failureEvent(cur))
		}
	}
	return append(evs, runEndEvent(cur, cur.Status, ""))
}

// The constructors below build each event from what the state records;
// the live run and EventsBetween share them.

// runStartEvent opens the run of st with agent active.
func runStartEvent(st *runstate.State, agent string, resumed bool) *RunStartEvent {
	return &RunStartEvent{Header: Header{Type: TypeRunStart}, RunID: st.RunID, ThreadID: st.ThreadID, Network: st.Network,
		Fingerprint: st.Fingerprint, Agent: agent, Resumed: resumed}
}

func agentStartEvent(agent, reason string) *AgentStartEvent {
	return &AgentStartEvent{Header: Header{Type: TypeAgentStart}, Agent: agent, Reason: reason}
}

// appendAnswerEvents appends the events of a message of the transcript: an
// assistant's text and tool calls, or the results of a tool message. Other
// messages (the input, a request to fix an answer) have none.
func appendAnswerEvents(evs []Event, m *message.Message) []Event {
	switch m.Role {
	case message.RoleAssistant:
		for i := range m.Parts {
			if p := &m.Parts[i]; p.Type == message.PartReasoning {
				evs = append(evs, &ReasoningEvent{Header: Header{Type: TypeReasoning}, Agent: m.Agent, Text: p.Text, MessageID: m.ID, Hidden: p.Text == ""})
			}
		}
		if text := m.Text(); text != "" {
			evs = append(evs, &MessageEvent{Header: Header{Type: TypeMessage}, Agent: m.Agent, Text: text, MessageID: m.ID, Usage: m.Usage,
				FinishReason: m.FinishReason, RequestID: m.RequestID})
		}
		for i := range m.Parts {
			if p := &m.Parts[i]; p.Type == message.PartToolCall {
				evs = append(evs, &ToolCallEvent{Header: Header{Type: TypeToolCall}, Agent: m.Agent, Name: p.Name, ID: p.CallID, Arguments: p.Arguments})
			}
		}
	case message.RoleTool:
		for i := range m.Parts {
			if p := &m.Parts[i]; p.Type == message.PartToolResult {
				evs = append(evs, toolResultEvent(m.Agent, p))
			}
		}
	}
	return evs
}

// toolResultEvent is the event of result part p of agent's tool message.
func toolResultEvent(agent string, p *message.Part) *ToolResultEvent {
	ev := &ToolResultEvent{Header: Header{Type: TypeToolResult}, Agent: agent, Name: p.Name, ID: p.CallID}
	if p.IsError {
		ev.Error = p.Text
	} else {
		ev.Output = p.Text
	}
	return ev
}

// appendMoveEvents appends the events of control moving as tc says: the
// transfer and the target's agent_start.
func appendMoveEvents(evs []Event, tc *transfer.Context) []Event {
	both := &struct { // the two events in one allocation
		t TransferEvent
		a AgentStartEvent
	}{
		t: TransferEvent{Header: Header{Type: TypeTransfer}, ID: tc.ID, From: tc.From, To: tc.To, TransferType: tc.Type, Tool: tc.Tool,
			Reason: tc.Reason, Context: tc.Data, HistoryPolicy: tc.History, Transforms: tc.Transforms},
		a: AgentStartEvent{Header: Header{Type: TypeAgentStart}, Agent: tc.To, Reason: string(tc.Type)},
	}
	return append(evs, &both.t, &both.a)
}

// startEvents returns the run_start and agent_start events of a new run of
// st whose first agent is agent, chosen for reason.
func startEvents(st *runstate.State, agent, reason string) [2]Event {
	both := &struct { // the two events in one allocation
		r RunStartEvent
		a AgentStartEvent
	}{r: *runStartEvent(st, agent, false), a: AgentStartEvent{Header: Header{Type: TypeAgentStart}, Agent: agent, Reason: reason}}
	return [2]Event{&both.r, &both.a}
}

func interruptEvent(ir *runstate.Interrupt) *InterruptEvent {
	return &InterruptEvent{Header: Header{Type: TypeInterrupt}, Interrupt: ir}
}

func suspendedEvent(agent string, calls []string) *SuspendedEvent {
	return &SuspendedEvent{Header: Header{Type: TypeSuspended}, Agent: agent, Calls: calls}
}

// failureEvent reports st.Failure, which must be set.
func failureEvent(st *runstate.State) *ErrorEvent {
	f := st.Failure
	return &ErrorEvent{Header: Header{Type: TypeError}, Kind: Kind(f.Kind), Message: f.Message, Limit: f.Limit, Agent: st.Agent, RequestID: f.RequestID}
}

// runEndEvent closes the run of st with status; limit names the limit that
// ended it with a final answer, if any.
func runEndEvent(st *runstate.State, status runstate.Status, limit string) *RunEndEvent {
	return &RunEndEvent{Header: Header{Type: TypeRunEnd}, Status: status, LastAgent: st.Agent, Turns: st.Turns,
		Transfers: st.Transfers, Usage: st.Usage, Output: st.FinalOutput, Limit: limit, Stopped: StopOf(st)}
}
