package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Interrupt kinds: what a stored [Interrupt] asks a person to decide. They
// are stable strings of the wire format.
const (
	// InterruptRun is a run waiting for approvals (its tools'): the payload
	// is the run's runstate.Interrupt, and a decision resumes the run.
	InterruptRun = "run"
	// InterruptThreadHandoff is a thread → thread handoff proposal: the
	// payload is the summary to approve, edit or reject (package
	// threadhandoff), and an approval creates the child thread. A thread has
	// at most one pending.
	InterruptThreadHandoff = "thread_handoff"
)

// Interrupt statuses.
const (
	// InterruptPending waits for a decision.
	InterruptPending = "pending"
	// InterruptDecided has its decision and outcome.
	InterruptDecided = "decided"
	// InterruptSuperseded was replaced by a newer interrupt before anyone
	// decided it (a thread handoff proposed again); its outcome says by
	// which.
	InterruptSuperseded = "superseded"
)

// Interrupt is a stored request for a person's decision — a run's approvals
// or a thread handoff proposal — and, once decided, the decision and what
// it did. Every approval surface reads and decides interrupts the same way.
type Interrupt struct {
	ID      string
	OwnerID string
	// Kind is [InterruptRun] or [InterruptThreadHandoff].
	Kind string
	// ThreadID is the thread the interrupt is about; "" for a run without a
	// thread. RunID is the run waiting ([InterruptRun] only).
	ThreadID string
	RunID    string
	// Network and Agent are the thread's network and the agent concerned:
	// the run's active agent, or the handoff's assistant.
	Network string
	Agent   string
	// Status is [InterruptPending], [InterruptDecided] or
	// [InterruptSuperseded].
	Status string
	// Payload is what the person is shown, a JSON object of the kind's
	// versioned format.
	Payload json.RawMessage
	// Decision and Outcome are JSON values recorded when the status left
	// pending; nil before.
	Decision json.RawMessage
	Outcome  json.RawMessage
	// CreatedAt is when it was stored, DecidedAt when it left pending
	// (zero before).
	CreatedAt time.Time
	DecidedAt time.Time
}

// CreateInterruptParams are the params of [Ops.CreateInterrupt].
type CreateInterruptParams struct {
	OwnerID string
	// ID is required: run interrupts have the id of their runstate.Interrupt,
	// thread handoff proposals their handoff id.
	ID string
	// Kind is required, one of the kinds above.
	Kind string
	// ThreadID, when set, must be a thread of the owner; it is required
	// for [InterruptThreadHandoff].
	ThreadID string
	// RunID is required for [InterruptRun].
	RunID   string
	Network string
	Agent   string
	// Payload is required, a JSON object.
	Payload json.RawMessage
}

// GetInterruptParams are the params of [Ops.GetInterrupt].
type GetInterruptParams struct {
	OwnerID string
	ID      string
}

// ListInterruptsParams are the params of [Ops.ListInterrupts].
type ListInterruptsParams struct {
	OwnerID string
	// ThreadID is required.
	ThreadID string
	// Kind and Status, when set, filter.
	Kind   string
	Status string
	// Limit bounds the interrupts returned, oldest first. Defaults to 100;
	// at most 1000.
	Limit int
}

// DecideInterruptParams are the params of [Ops.DecideInterrupt].
type DecideInterruptParams struct {
	OwnerID string
	ID      string
	// Status is the new status: [InterruptDecided] or
	// [InterruptSuperseded].
	Status string
	// Decision and Outcome, JSON values, are recorded with it; Outcome is
	// required.
	Decision json.RawMessage
	Outcome  json.RawMessage
	// DecidedBy, when set on a decision (Status [InterruptDecided]), is who
	// decided: the outcome, a JSON object, gains "decided_by" ({"key_id",
	// "request_id"}), and an [AuditEvent] of AuditKind is appended in the
	// same transaction, its detail the decision.
	DecidedBy *Actor
	// AuditKind is the kind of that event: [AuditRunDecision] or
	// [AuditThreadHandoffDecision].
	AuditKind string
}

// NotPendingError is returned by [Ops.DecideInterrupt] for an interrupt that
// is no longer pending: someone decided it first (or it was superseded).
// Interrupt is the row as stored, with the first decision and its outcome.
// Nothing was written. It unwraps to [ErrConflict].
type NotPendingError struct {
	Interrupt *Interrupt
}

func (e *NotPendingError) Error() string {
	return fmt.Sprintf("store: interrupt %s is %s, not pending", e.Interrupt.ID, e.Interrupt.Status)
}

// Unwrap returns [ErrConflict].
func (e *NotPendingError) Unwrap() error { return ErrConflict }
