package store

import (
	"encoding/json"
	"time"
)

// JobStatus is the status of a job run. It is persisted as a stable string.
//
// Allowed moves: queued → processing | canceled; processing → processing
// (picked up again after a crash) | queued | completed | error | canceled;
// error → queued | processing | canceled. Completed and canceled are final.
type JobStatus string

// Job statuses.
const (
	JobQueued     JobStatus = "queued"
	JobProcessing JobStatus = "processing"
	JobCompleted  JobStatus = "completed"
	JobError      JobStatus = "error"
	JobCanceled   JobStatus = "canceled"
)

// Valid reports whether s is one of the job statuses.
func (s JobStatus) Valid() bool {
	switch s {
	case JobQueued, JobProcessing, JobCompleted, JobError, JobCanceled:
		return true
	}
	return false
}

// CanMoveTo reports whether a job run in status s may move to status to.
func (s JobStatus) CanMoveTo(to JobStatus) bool {
	switch s {
	case JobQueued:
		return to == JobProcessing || to == JobCanceled
	case JobProcessing:
		return to.Valid()
	case JobError:
		return to == JobQueued || to == JobProcessing || to == JobCanceled
	}
	return false
}

// JobRun is one background job (a continuation, a summary mirror …), keyed
// by an idempotency key so that a duplicate event creates nothing.
type JobRun struct {
	ID             string
	OwnerID        string
	IdempotencyKey string
	// Kind is a stable name of what the job does.
	Kind     string
	ThreadID string
	Status   JobStatus
	// Attempt counts the moves to processing.
	Attempt int
	// Error is the error of the last move to error or canceled.
	Error    string
	Metadata map[string]json.RawMessage
	// CreatedAt and UpdatedAt are set on every write. StartedAt is the start
	// of the current attempt, FinishedAt the end of the last; zero if none.
	CreatedAt  time.Time
	UpdatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
}

// CreateJobRunParams are the params of [Ops.CreateJobRun].
type CreateJobRunParams struct {
	OwnerID string
	// ID defaults to a new UUIDv7.
	ID             string
	IdempotencyKey string
	Kind           string
	// ThreadID, when set, must be a thread of the owner.
	ThreadID string
	Metadata map[string]json.RawMessage
	// Append, if set, is a message appended to the thread ThreadID (as
	// AppendMessages appends it) when the job run is created, not when it
	// is a Duplicate: on PostgreSQL in the same statement (a
	// continuation's placeholder, which names the job run: give ID).
	Append *NewMessage
	// Deferred, in a Store.Tx, lets the backend send the insert with the
	// transaction's next statement or its COMMIT (PostgreSQL: no round trip of
	// its own, and nothing read back); CreateJobRun then returns the job run
	// as it will be written, and its errors fail that statement or the commit
	// instead, and the transaction can then only roll back. A deferred
	// creation is never a Duplicate: on every backend a taken idempotency key
	// is refused with [ErrConflict], and nothing is written. Elsewhere, and on
	// SQLite, the insert runs at once.
	Deferred bool
}

// CreateJobRunResult is the result of [Ops.CreateJobRun].
type CreateJobRunResult struct {
	Run *JobRun
	// Duplicate reports that Run already existed with this idempotency key.
	Duplicate bool
}

// LockRunParams are the params of [Ops.LockRun].
type LockRunParams struct {
	OwnerID string
	RunID   string
}

// GetJobRunParams are the params of [Ops.GetJobRun]. Exactly one of ID and
// IdempotencyKey is required.
type GetJobRunParams struct {
	OwnerID        string
	ID             string
	IdempotencyKey string
}

// TransitionJobRunParams are the params of [Ops.TransitionJobRun].
type TransitionJobRunParams struct {
	OwnerID string
	ID      string
	To      JobStatus
	// Error is recorded when To is error or canceled.
	Error string
	// ExpectedAttempt, when not 0 or when Fence is set, must be the run's
	// current attempt, so a worker whose attempt was superseded cannot
	// finish the run.
	ExpectedAttempt int
	// Fence makes ExpectedAttempt binding even when it is 0: a job run
	// never claimed (attempt 0) moves only if no transition to processing
	// counted an attempt since it was read. A caller that passes the
	// attempt it read should set it; without it, 0 does not fence.
	Fence bool
	// Metadata is merged into the run's metadata key by key.
	Metadata map[string]json.RawMessage
	// ViaProcessing makes the move also a start, as if the run had moved
	// to processing first in the same statement: its attempt is counted and
	// its start time set. The run may then be in any status that may move
	// to processing (queued, error), and To must be a status processing may
	// move to. A continuation that claims its run with its final write
	// moves it from queued to completed at once.
	ViaProcessing bool
	// Hold asserts a claim instead of moving the run: To must be processing,
	// and the run must be processing at ExpectedAttempt (fenced, whatever
	// Fence says); nothing changes but its update time, and no attempt is
	// counted. It takes the run's row lock like a move, so that a
	// transaction that holds it commits only while the claim stands: a
	// continuation's delivery fences each of its writes with it, and one
	// whose run was taken over (moved to error, or claimed again) writes
	// nothing.
	Hold bool
	// ClearDraft, if set, is the id of a message whose draft is deleted
	// with the transition, in the same statement on PostgreSQL (a
	// continuation's placeholder, as its job run completes); a missing
	// draft is not an error. The deletion sees the drafts committed before
	// the transition's statement: a caller that must not leave a draft
	// behind updates the message first, in the same transaction, which
	// waits out a writer of the draft that checks the message under its
	// lock (draft.Writer does).
	ClearDraft string
	// Deferred, in a Store.Tx and without Metadata, lets the backend send the
	// transition with the transaction's next statement or its COMMIT
	// (PostgreSQL: no round trip of its own, and the row is not read back);
	// TransitionJobRun then returns a nil job run, and a refused move (a
	// *[TransitionError]) or a missing run ([ErrNotFound]) fails that
	// statement or the commit instead, and the transaction can then only roll
	// back. Elsewhere, and on SQLite, the transition runs at once.
	Deferred bool
}
