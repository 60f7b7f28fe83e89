package runstate

import (
	"encoding/json"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/transfer"
)

// SchemaVersion is the version of the JSON encoding written by [Encode].
// Version 2 gave agent → agent transfers their own names (transfer,
// transfers, transfer_id, the call kind "transfer"), which version 1 called
// handoffs; [Decode] reads both.
const SchemaVersion = 2

// Status is a run's lifecycle state. It is persisted as a stable string.
type Status string

// Run statuses.
const (
	StatusRunning     Status = "running"
	StatusInterrupted Status = "interrupted" // waiting for a human decision
	StatusSuspended   Status = "suspended"   // handed to a background worker
	StatusCompleted   Status = "completed"
	StatusFailed      Status = "failed"
	StatusCancelled   Status = "cancelled" // stopped on request, keeping what it did
)

// Terminal reports whether s is completed, failed or cancelled.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// CallKind is what a pending call will do when it runs.
type CallKind string

// Call kinds.
const (
	CallTool      CallKind = "tool"       // an ordinary tool
	CallTransfer  CallKind = "transfer"   // a transfer to another agent
	CallAgentTool CallKind = "agent_tool" // a specialist called as a tool
)

// PendingCall is a tool call of the last model turn that has not yet been
// answered in the history. Result is recorded the moment the call returns, so
// a resumed run never executes a call whose result is stored.
type PendingCall struct {
	Call message.ToolCall `json:"call"`
	Kind CallKind         `json:"kind"`
	// Result is the recorded result, nil while the call has not run.
	Result *Result `json:"result,omitempty"`
	// Approved is set when a human approved this call after an interrupt.
	Approved bool `json:"approved,omitempty"`
}

// Result is the recorded outcome of a call.
type Result struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error,omitempty"`
}

// Frame is a caller waiting for a return-to-caller transfer to come back.
type Frame struct {
	// Agent is the caller that gets control back.
	Agent string `json:"agent"`
	// Messages is the caller's history at the time of the transfer.
	Messages []message.Message `json:"messages"`
	// Transfer is the transfer context the caller itself had, restored on return.
	Transfer *transfer.Context `json:"transfer,omitempty"`
	// TransferID is the id of the return transfer this frame waits for.
	TransferID string `json:"transfer_id"`
}

// Interrupt is a stable, versioned payload that stops a run until a human
// decides. It is part of the public wire format.
type Interrupt struct {
	SchemaVersion  int             `json:"schema_version"`
	ID             string          `json:"interrupt_id"`
	Source         string          `json:"source"`
	ActionRequests []ActionRequest `json:"action_requests"`
}

// ActionRequest is one thing a human is asked to approve.
type ActionRequest struct {
	Name        string          `json:"name"`
	Args        json.RawMessage `json:"args"`
	CallID      string          `json:"call_id,omitempty"`
	Description string          `json:"description,omitempty"`
}

// Failure records why a run failed.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Limit   string `json:"limit,omitempty"`
	// RequestID is the provider's request id of the model call that caused
	// the failure, if one did.
	RequestID string `json:"request_id,omitempty"`
}

// State is the whole serialisable state of a run.
type State struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
	ThreadID      string `json:"thread_id,omitempty"`
	Network       string `json:"network"`
	// Fingerprint is the network version the state was written under.
	Fingerprint string `json:"fingerprint"`
	// Agent is the active agent.
	Agent string `json:"agent"`
	// Messages is the active agent's working history, as its model sees it.
	Messages []message.Message `json:"messages"`
	// Transcript is every message of the run in order: the input and
	// everything every agent produced (agent-tool sub-runs excepted).
	Transcript []message.Message `json:"transcript"`
	// Pending are the calls of the last model turn not yet answered.
	Pending []PendingCall `json:"pending,omitempty"`
	// Transfer is the context delivered to the active agent, if control was transferred to it.
	Transfer *transfer.Context `json:"transfer,omitempty"`
	// Stack holds callers of return-to-caller transfers, innermost last.
	Stack []Frame `json:"stack,omitempty"`
	// Trail is the sequence of agents that held control, for ping-pong detection.
	Trail []string `json:"trail"`
	// Turns counts model calls; Transfers counts transfers taken.
	Turns     int           `json:"turns"`
	Transfers int           `json:"transfers"`
	Usage     message.Usage `json:"usage"`
	// Step counts checkpoints written for this run; stores use it to fence writes.
	Step   int    `json:"step"`
	Status Status `json:"status"`
	// Interrupt is set while Status is interrupted.
	Interrupt *Interrupt `json:"interrupt,omitempty"`
	Failure   *Failure   `json:"failure,omitempty"`
	// FinalOutput is the last agent's answer once completed.
	FinalOutput string    `json:"final_output,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	// Elapsed is the run's active wall-clock time so far, excluding time
	// spent interrupted or suspended; the timeout limit applies to it.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Seq is the sequence number of the last event emitted, so that a resumed
	// run's events continue the numbering.
	Seq int `json:"seq"`
	// Values carries small, JSON-encodable application values across resumes.
	Values map[string]json.RawMessage `json:"values,omitempty"`
	// Memos are the small values that a turn or tool call in progress saved
	// (agent.Memo), by key: a remote agent's task id, the mark of a
	// non-idempotent call that was sent. They are dropped when the turn or
	// call's outcome is recorded.
	Memos map[string]json.RawMessage `json:"memos,omitempty"`
}
