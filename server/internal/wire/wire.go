// Package wire holds the JSON shapes of the HTTP API (docs/api.md): request
// and response bodies, kept apart from the runtime's own types so that the
// API changes only on purpose.
package wire

import (
	"encoding/json"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
)

// Error types: the "type" of an [ErrorBody].
const (
	ErrInvalidRequest = "invalid_request"
	ErrUnauthorized   = "unauthorized"
	// ErrForbidden refuses a request its key's scopes or networks do not
	// allow (403); the error's scope names the scope it lacks.
	ErrForbidden = "forbidden"
	ErrNotFound  = "not_found"
	ErrConflict  = "conflict"
	// ErrThreadBusy refuses a run on a thread with a run in progress, one
	// waiting for a decision or a worker, or runs in its queue.
	ErrThreadBusy = "thread_busy"
	// ErrRunFinished refuses the cancel of a run that completed or failed.
	ErrRunFinished = "run_finished"
	ErrTooLarge    = "request_too_large"
	ErrRateLimited = "rate_limited"
	ErrOverloaded  = "overloaded"
	ErrUnavailable = "unavailable"
	ErrTimeout     = "timeout"
	ErrUnsupported = "unsupported"
	ErrUpstream    = "upstream_error"
	ErrInternal    = "internal_error"
	// ErrStaleProposal refuses the approval of a thread handoff proposal
	// whose thread has gained messages since the summary.
	ErrStaleProposal = "stale_proposal"
)

// ErrorBody is every error response: {"error": {"type", "message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the content of an [ErrorBody]. Code repeats Type for
// OpenAI clients, which read "code".
type ErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	Code    string `json:"code,omitempty"`
	// ErrorExtra, when set, adds its fields to the error object.
	*ErrorExtra
}

// ErrorExtra are the fields some errors add to their [ErrorDetail].
type ErrorExtra struct {
	// Outcome, on the 409 of a decision on an interrupt already decided, is
	// what the first decision did (a [ThreadHandoffOutcome] for a thread
	// handoff: the same child thread).
	Outcome any `json:"outcome,omitempty"`
	// Scope, on a 403, is the scope the request's key lacks.
	Scope string `json:"scope,omitempty"`
	// ThroughSeq and LastSeq, on a 409 stale_proposal, are the last message
	// the summary covers and the thread's last message now.
	ThroughSeq int64 `json:"through_seq,omitempty"`
	LastSeq    int64 `json:"last_seq,omitempty"`
}

// Network is a network the server runs (GET /v1/networks).
type Network struct {
	Object      string  `json:"object"`
	Name        string  `json:"name"`
	Fingerprint string  `json:"fingerprint"`
	Entry       string  `json:"entry"`
	Agents      []Agent `json:"agents"`
	// ThreadHandoff says whether POST /v1/threads/{id}/handoff works
	// (the network declares a summary model).
	ThreadHandoff bool `json:"thread_handoff"`
}

// Agent describes an agent of a [Network].
type Agent struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Transfers   []string `json:"transfers,omitempty"`
}

// List is a page of items.
type List[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
	// NextCursor continues the listing; absent on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
	HasMore    bool   `json:"has_more"`
}

// CreateThread is the body of POST /v1/threads.
type CreateThread struct {
	Network  string                     `json:"network"`
	Name     string                     `json:"name,omitempty"`
	ParentID string                     `json:"parent_id,omitempty"`
	Metadata map[string]json.RawMessage `json:"metadata,omitempty"`
}

// Thread is a conversation.
type Thread struct {
	ID          string                     `json:"id"`
	Object      string                     `json:"object"`
	Network     string                     `json:"network"`
	Name        string                     `json:"name,omitempty"`
	ParentID    string                     `json:"parent_id,omitempty"`
	ActiveAgent string                     `json:"active_agent,omitempty"`
	Metadata    map[string]json.RawMessage `json:"metadata"`
	Version     int64                      `json:"version"`
	CreatedAt   time.Time                  `json:"created_at"`
	UpdatedAt   time.Time                  `json:"updated_at"`
	// Run is the thread's latest run (GET /v1/threads/{id} only).
	Run *RunStatus `json:"run,omitempty"`
}

// RunStatus is the state of a thread's latest run.
type RunStatus struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// Active is set while the run is executing in this server (inline or
	// on its in-process worker).
	Active    bool                `json:"active"`
	Agent     string              `json:"agent,omitempty"`
	Interrupt *runstate.Interrupt `json:"interrupt,omitempty"`
	// EventsURL resumes the run's event stream.
	EventsURL string `json:"events_url"`
}

// Part is one piece of a [Message].
type Part struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Message is a stored message of a thread.
type Message struct {
	ID       string         `json:"id"`
	Object   string         `json:"object"`
	ThreadID string         `json:"thread_id"`
	Seq      int64          `json:"seq"`
	Role     string         `json:"role"`
	Agent    string         `json:"agent,omitempty"`
	Status   string         `json:"status"`
	Text     string         `json:"text"`
	Parts    []Part         `json:"parts"`
	Usage    *message.Usage `json:"usage,omitempty"`
	// Draft is the text streamed so far into a message that is not final.
	Draft     string         `json:"draft,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
}

// CreateRun is the body of POST /v1/threads/{id}/runs.
type CreateRun struct {
	Input  string `json:"input"`
	Stream bool   `json:"stream,omitempty"`
	// Agent starts the run with this agent instead of the picker's choice.
	Agent string `json:"agent,omitempty"`
	// MultitaskStrategy is what to do when the thread is busy: reject (the
	// default), enqueue, interrupt or rollback.
	MultitaskStrategy string `json:"multitask_strategy,omitempty"`
	// Webhook is a URL that gets this run's events (run.completed,
	// run.failed, run.cancelled, run.interrupted), signed like the
	// server-wide webhooks' (docs/api.md, "Webhooks").
	Webhook string `json:"webhook,omitempty"`
}

// Run is the outcome of a run, or its state while it waits.
type Run struct {
	ID        string              `json:"id"`
	Object    string              `json:"object"`
	ThreadID  string              `json:"thread_id"`
	Network   string              `json:"network"`
	Status    string              `json:"status"`
	LastAgent string              `json:"last_agent,omitempty"`
	Output    string              `json:"output,omitempty"`
	Turns     int                 `json:"turns"`
	Transfers int                 `json:"transfers"`
	Usage     message.Usage       `json:"usage"`
	Interrupt *runstate.Interrupt `json:"interrupt,omitempty"`
	Error     *RunError           `json:"error,omitempty"`
	Limit     string              `json:"limit,omitempty"`
	// Stopped, on a run that ended cancelled, says what stopped it.
	Stopped   *RunStop `json:"stopped,omitempty"`
	EventsURL string   `json:"events_url"`
	// Position is a queued run's place in its thread's queue (1: next), in
	// the answer that queued it.
	Position int `json:"position,omitempty"`
}

// RunStop is what stopped a run that ended cancelled: reason "cancel", or
// the multitask_strategy ("interrupt", "rollback") of the run, run_id, whose
// start stopped it.
type RunStop struct {
	Reason string `json:"reason"`
	RunID  string `json:"run_id,omitempty"`
}

// RunError is why a run failed.
type RunError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Limit   string `json:"limit,omitempty"`
}

// Decision answers an interrupt: one decision for every action, or one per
// call in Decisions. A thread handoff proposal has one action: one
// decision, whose Args (for an edit) are {"summary_md", "title"}.
type Decision struct {
	Type string `json:"type,omitempty"`
	// Args are the edited arguments of an edit decision.
	Args json.RawMessage `json:"args,omitempty"`
	// Message is a reason shown to the model on rejection (recorded with a
	// rejected thread handoff).
	Message   string         `json:"message,omitempty"`
	Decisions []CallDecision `json:"decisions,omitempty"`
	// Force approves a thread handoff proposal that its thread has
	// outgrown.
	Force bool `json:"force,omitempty"`
	// Stream answers with the resumed run's events (SSE) instead of its
	// result (run interrupts).
	Stream bool `json:"stream,omitempty"`
}

// CallDecision answers one action of an interrupt.
type CallDecision struct {
	Type    string          `json:"type"`
	CallID  string          `json:"call_id,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Message string          `json:"message,omitempty"`
	Force   bool            `json:"force,omitempty"`
}

// Interrupt is a stored request for a decision: a run's approvals (kind
// "run") or a thread handoff proposal (kind "thread_handoff").
type Interrupt struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Kind     string `json:"kind"`
	RunID    string `json:"run_id,omitempty"`
	ThreadID string `json:"thread_id"`
	Network  string `json:"network"`
	Agent    string `json:"agent"`
	// Status is pending, decided or superseded.
	Status         string                   `json:"status"`
	SchemaVersion  int                      `json:"schema_version"`
	Source         string                   `json:"source"`
	ActionRequests []runstate.ActionRequest `json:"action_requests"`
	// Payload is the kind's versioned payload: a run's interrupt, a thread
	// handoff's proposal.
	Payload json.RawMessage `json:"payload"`
	// Stale, for a pending thread handoff, says that its thread has gained
	// messages since the summary: approving needs force.
	Stale bool `json:"stale,omitempty"`
	// Decision and Outcome are set once decided.
	Decision    json.RawMessage `json:"decision,omitempty"`
	Outcome     json.RawMessage `json:"outcome,omitempty"`
	DecisionURL string          `json:"decision_url"`
	CreatedAt   time.Time       `json:"created_at"`
	DecidedAt   *time.Time      `json:"decided_at,omitempty"`
}

// ThreadDetail is a thread as GET /v1/threads/{id} shows it: with its
// latest run and its pending interrupts.
type ThreadDetail struct {
	Thread
	Interrupts []Interrupt `json:"interrupts"`
}

// ThreadHandoffRequest is the body of POST /v1/threads/{id}/handoff.
type ThreadHandoffRequest struct {
	AssistantID string `json:"assistant_id,omitempty"`
	// Replace proposes again although one is pending (superseding it).
	Replace bool `json:"replace,omitempty"`
	// Interrupt and Decision are refused with a pointer to the decision
	// route: proposals are decided as interrupts.
	Interrupt json.RawMessage `json:"interrupt,omitempty"`
	Decision  json.RawMessage `json:"decision,omitempty"`
}

// ThreadHandoffProposal is a stored thread handoff proposal: the answer of
// POST /v1/threads/{id}/handoff.
type ThreadHandoffProposal struct {
	Object      string `json:"object"`
	InterruptID string `json:"interrupt_id"`
	ThreadID    string `json:"thread_id"`
	Kind        string `json:"kind"`
	Status      string `json:"status"`
	// Payload is the approval payload (threadhandoff.Interrupt).
	Payload json.RawMessage `json:"payload"`
	Stale   bool            `json:"stale"`
	// Superseded is the proposal a replace superseded.
	Superseded   string    `json:"superseded_interrupt_id,omitempty"`
	InterruptURL string    `json:"interrupt_url"`
	DecisionURL  string    `json:"decision_url"`
	CreatedAt    time.Time `json:"created_at"`
}

// ThreadHandoffOutcome is the result of a decision on a thread handoff
// proposal (and the first outcome a second decision's 409 carries).
type ThreadHandoffOutcome struct {
	Object         string `json:"object"`
	InterruptID    string `json:"interrupt_id"`
	Kind           string `json:"kind"`
	Status         string `json:"status"`
	HandoffID      string `json:"handoff_id"`
	Decision       string `json:"decision,omitempty"`
	Applied        bool   `json:"applied"`
	ParentThreadID string `json:"parent_thread_id"`
	ChildThreadID  string `json:"child_thread_id,omitempty"`
	AssistantID    string `json:"assistant_id,omitempty"`
	Title          string `json:"title,omitempty"`
	Markdown       string `json:"summary_md,omitempty"`
	Edited         bool   `json:"edited,omitempty"`
	SupersededBy   string `json:"superseded_by,omitempty"`
	MirrorStatus   string `json:"mirror_status,omitempty"`
	Message        string `json:"message"`
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks,omitempty"`
}

// ForkRequest is the body of POST /v1/threads/{id}/fork.
type ForkRequest struct {
	// At is a checkpoint id or a message id of the thread.
	At string `json:"at"`
	// Edit replaces the last message at the point.
	Edit *ForkEdit `json:"edit,omitempty"`
	Name string    `json:"name,omitempty"`
}

// ContentPart is a part of a message's content as the protocols that
// front a network receive it (OpenAI's chat messages, AG-UI's messages):
// its type and, for a text part, the text. Other fields are not read.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ForkEdit is the new text of the last message at a fork's point (a tool
// result's output, with is_error).
type ForkEdit struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
}

// WebhookDelivery is an attempt of GET /v1/webhooks/deliveries.
type WebhookDelivery struct {
	ID        string `json:"id"`
	Object    string `json:"object"` // "webhook_delivery"
	WebhookID string `json:"webhook_id"`
	Type      string `json:"type"`
	URL       string `json:"url"`
	// Target tells a run's own target from others of the same URL (an A2A
	// push notification config's id).
	Target   string `json:"target,omitempty"`
	ThreadID string `json:"thread_id,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Network  string `json:"network,omitempty"`
	Attempt  int    `json:"attempt"`
	// StatusCode is the receiver's HTTP status, 0 when none answered.
	StatusCode int    `json:"status_code"`
	Error      string `json:"error,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Final is set on the delivery's last attempt: answered 2xx, or not
	// tried again.
	Final     bool      `json:"final"`
	CreatedAt time.Time `json:"created_at"`
}

// AuditEvent is an event of GET /v1/audit: a decision, a cancel, an API key
// created or revoked.
type AuditEvent struct {
	ID          string          `json:"id"`
	Object      string          `json:"object"` // "audit_event"
	Kind        string          `json:"kind"`
	KeyID       string          `json:"key_id"`
	Actor       string          `json:"actor"`
	Owner       string          `json:"owner"`
	RequestID   string          `json:"request_id,omitempty"`
	ThreadID    string          `json:"thread_id,omitempty"`
	RunID       string          `json:"run_id,omitempty"`
	InterruptID string          `json:"interrupt_id,omitempty"`
	Network     string          `json:"network,omitempty"`
	Detail      json.RawMessage `json:"detail,omitempty"`
	CreatedAt   time.Time       `json:"created_at"`
}

// WebhookSecret is the request ({"url"}) and answer ({"url", "secret"}) of
// POST /v1/webhooks/secret: the whsec_ secret that signs the caller's
// deliveries to URL.
type WebhookSecret struct {
	URL    string `json:"url"`
	Secret string `json:"secret,omitempty"`
}
