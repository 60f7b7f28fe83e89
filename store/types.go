package store

import (
	"encoding/json"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
)

// MetadataThreadHandoff is the thread metadata namespace of thread → thread
// handoffs ("handoff": the parent and child threads, the thread handoff's
// ID, the seed flag).
const MetadataThreadHandoff = "handoff"

// Owner is a tenant. Every other row belongs to one.
type Owner struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// EnsureOwnerParams are the params of [Ops.EnsureOwner].
type EnsureOwnerParams struct {
	// ID is required; owners are named by their callers.
	ID   string
	Name string
}

// GetOwnerParams are the params of [Ops.GetOwner].
type GetOwnerParams struct {
	ID string
}

// APIKey is an API key as stored: its hash, never its secret.
type APIKey struct {
	ID      string
	OwnerID string
	Name    string
	// Prefix is the start of the secret, to tell keys apart in listings.
	Prefix string
	// Hash is the hex SHA-256 of the secret; see [HashAPIKey].
	Hash      string
	CreatedAt time.Time
	// RevokedAt is when the key was revoked; zero while it is valid.
	RevokedAt time.Time
}

// CreateAPIKeyParams are the params of [Ops.CreateAPIKey].
type CreateAPIKeyParams struct {
	OwnerID string
	Name    string
	// Secret is the key's secret. Defaults to a new random secret (see
	// [NewAPIKeySecret]).
	Secret string
}

// CreatedAPIKey is a new key with its secret, which is not stored.
type CreatedAPIKey struct {
	Key    *APIKey
	Secret string
}

// LookupAPIKeyParams are the params of [Ops.LookupAPIKey].
type LookupAPIKeyParams struct {
	// Hash is [HashAPIKey] of the presented secret.
	Hash string
}

// ListAPIKeysParams are the params of [Ops.ListAPIKeys].
type ListAPIKeysParams struct {
	OwnerID string
}

// RevokeAPIKeyParams are the params of [Ops.RevokeAPIKey].
type RevokeAPIKeyParams struct {
	OwnerID string
	ID      string
}

// Thread is a conversation.
type Thread struct {
	ID      string
	OwnerID string
	// ParentID is the thread this one was handed off from, or "".
	ParentID string
	Name     string
	// Network names the agent network that runs the thread.
	Network string
	// ActiveAgent is the agent that holds the thread (sticky picker).
	ActiveAgent string
	// Metadata maps a namespace (such as [MetadataThreadHandoff]) to its JSON value.
	Metadata map[string]json.RawMessage
	// Version starts at 1 and is incremented by every change of Metadata or
	// ActiveAgent; compare-and-swap writes name the version they read.
	Version   int64
	CreatedAt time.Time
	// UpdatedAt also moves when messages are appended.
	UpdatedAt time.Time
}

// CreateThreadParams are the params of [Ops.CreateThread].
type CreateThreadParams struct {
	OwnerID string
	// ID defaults to a new UUIDv7.
	ID          string
	ParentID    string
	Name        string
	Network     string
	ActiveAgent string
	// Metadata values must be valid JSON.
	Metadata map[string]json.RawMessage
	// Messages are the thread's first messages, created with it (sequence
	// numbers from 1), as AppendMessages would append them.
	Messages []NewMessage
}

// GetThreadParams are the params of [Ops.GetThread].
type GetThreadParams struct {
	OwnerID string
	ID      string
}

// ListThreadsParams are the params of [Ops.ListThreads].
type ListThreadsParams struct {
	OwnerID string
	// ParentID, when set, lists only the children of that thread.
	ParentID string
	// Limit is the page size. Defaults to 50; at most 1000.
	Limit int
	// Cursor is the NextCursor of the previous page; "" is the first page.
	Cursor string
}

// ThreadPage is a page of threads.
type ThreadPage struct {
	Threads []*Thread
	// NextCursor continues the listing; "" when this is the last page.
	NextCursor string
}

// UpdateThreadMetadataParams are the params of [Ops.UpdateThreadMetadata].
type UpdateThreadMetadataParams struct {
	OwnerID  string
	ThreadID string
	// Namespace is the metadata key to change, such as [MetadataThreadHandoff].
	Namespace string
	// Patch is merged into the namespace's value as an RFC 7396 JSON merge
	// patch: object members are merged recursively, a null member removes
	// the member, anything else replaces the value. A null Patch removes the
	// namespace.
	Patch json.RawMessage
	// ExpectedVersion, when not 0, must be the thread's current version.
	ExpectedVersion int64
}

// SetActiveAgentParams are the params of [Ops.SetActiveAgent].
type SetActiveAgentParams struct {
	OwnerID  string
	ThreadID string
	Agent    string
	// ExpectedVersion, when not 0, must be the thread's current version.
	ExpectedVersion int64
}

// Message is a stored message: a [message.Message] in a thread.
type Message struct {
	message.Message
	OwnerID  string
	ThreadID string
	// ParentID is the message this one answers or continues, or "".
	ParentID string
	// Seq orders the thread's messages: 1, 2, 3 …
	Seq       int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewMessage is a message to append.
type NewMessage struct {
	// Message is stored as given; an empty ID is assigned a UUIDv7 and an
	// empty Status is stored as completed.
	Message  message.Message
	ParentID string
}

// AppendMessagesParams are the params of [Ops.AppendMessages].
type AppendMessagesParams struct {
	OwnerID  string
	ThreadID string
	Messages []NewMessage
	// Thread, when not nil, is set to the thread as the append leaves it,
	// by the statement that numbers the messages (no second read). That
	// statement locks the thread's row until the transaction ends: a
	// change of the thread committed before it is seen, any other commits
	// after the transaction.
	Thread *Thread
}

// GetMessageParams are the params of [Ops.GetMessage].
type GetMessageParams struct {
	OwnerID string
	ID      string
}

// ListMessagesParams are the params of [Ops.ListMessages].
type ListMessagesParams struct {
	OwnerID  string
	ThreadID string
	// AfterSeq lists only messages with a greater sequence number.
	AfterSeq int64
	// Limit caps the number of messages; 0 means all.
	Limit int
	// Last takes the last Limit messages instead of the first, still
	// returned in sequence order.
	Last bool
}

// UpdateMessageParams are the params of [Ops.UpdateMessage]. Zero fields are
// left unchanged.
type UpdateMessageParams struct {
	OwnerID string
	ID      string
	Status  message.Status
	// Parts replaces the parts when not nil.
	Parts []message.Part
	Usage *message.Usage
	// Metadata is merged into the message's metadata key by key; a key with
	// a nil value is removed.
	Metadata map[string]any
	// ExpectedStatus, when set, must be the message's current status: the
	// status as the last transaction to change it left it, compared once
	// the row is locked, so that an update racing a transaction that moves
	// the message to ExpectedStatus waits for it and is made if it commits.
	ExpectedStatus message.Status
	// Deferred, in a Store.Tx, lets the backend send the update with the
	// transaction's next statement (PostgreSQL: no round trip of its own, and
	// the row is not read back); UpdateMessage then returns a nil message, and
	// a missing message ([ErrNotFound]) or one not in ExpectedStatus (a
	// *[TransitionError]) fails that statement instead, or the commit, and the
	// transaction can then only roll back. Elsewhere, and on SQLite, the
	// update runs at once.
	Deferred bool
}

// Draft is the text streamed so far into a message that is not final.
type Draft struct {
	OwnerID   string
	MessageID string
	Text      string
	// Version counts the writes of this draft, from 1.
	Version   int64
	UpdatedAt time.Time
}

// UpsertDraftParams are the params of [Ops.UpsertDraft].
type UpsertDraftParams struct {
	OwnerID   string
	MessageID string
	Text      string
}

// GetDraftParams are the params of [Ops.GetDraft].
type GetDraftParams struct {
	OwnerID   string
	MessageID string
}

// DeleteDraftParams are the params of [Ops.DeleteDraft].
type DeleteDraftParams struct {
	OwnerID   string
	MessageID string
}

// Checkpoint is a saved [runstate.State].
type Checkpoint struct {
	ID      string
	OwnerID string
	// ThreadID is State.ThreadID, or "".
	ThreadID string
	RunID    string
	// ParentID is the run's previous checkpoint, or "" for its first.
	ParentID string
	Step     int
	// Fingerprint is the network version the state was written under.
	Fingerprint string
	Status      runstate.Status
	State       *runstate.State
	CreatedAt   time.Time
}

// SaveCheckpointParams are the params of [Ops.SaveCheckpoint].
type SaveCheckpointParams struct {
	OwnerID string
	// ID defaults to a new UUIDv7.
	ID string
	// State is required, with RunID, Fingerprint and a valid Status; the
	// checkpoint's run, thread, step and fingerprint are taken from it.
	State *runstate.State
	// ParentID, when set, fences the write: it must be the run's newest
	// checkpoint. When empty, the newest checkpoint, if any, becomes the
	// parent and only the step fences the write.
	ParentID string
	// Messages, when not empty, are appended to the state's thread
	// (State.ThreadID is then required) in the same write and only if the
	// checkpoint is written, numbered as [Ops.AppendMessages] numbers them;
	// the rows are not read back. On PostgreSQL the checkpoint, the
	// thread's sequence numbers and the messages are one statement.
	Messages []NewMessage
	// Thread, when not nil and Messages is not empty, is set to the thread
	// as the append leaves it, as [AppendMessagesParams.Thread] is; with
	// NewThread, to the thread created.
	Thread *Thread
	// NewThread, when not nil, creates the state's thread (State.ThreadID,
	// required; NewThread's OwnerID and ID, when set, must be the same) in
	// the same write, before the checkpoint, as [Ops.CreateThread] creates
	// it and with the same errors; its first messages are
	// NewThread.Messages (Messages must then be empty). On PostgreSQL the
	// thread, its messages and the checkpoint are one statement.
	NewThread *CreateThreadParams
	// Deferred, without Thread, in a Store.Tx, lets the backend send the
	// write with the transaction's next statement or its COMMIT
	// (PostgreSQL: the checkpoint, its messages or new thread, and the
	// transaction's other deferred writes in one round trip, and nothing
	// read back). SaveCheckpoint then returns the checkpoint as it will be
	// written but for its ParentID (as given: with ParentID empty, the
	// newest checkpoint it gets as parent is not known), and its errors —
	// a *[StaleWriteError]; [ErrNotFound] for a missing thread, or with
	// NewThread a missing owner or parent thread; [ErrConflict] for a
	// taken thread id — fail that statement or the commit instead, and the
	// transaction can then only roll back. Elsewhere, and on SQLite, the
	// write runs at once.
	Deferred bool
}

// GetCheckpointParams are the params of [Ops.GetCheckpoint].
type GetCheckpointParams struct {
	OwnerID string
	ID      string
	// Fingerprint, when set, is the current network version: a checkpoint
	// written under another is refused with a *[runstate.IncompatibleError].
	Fingerprint string
}

// LatestCheckpointParams are the params of [Ops.LatestCheckpoint]. Exactly
// one of RunID and ThreadID is required.
type LatestCheckpointParams struct {
	OwnerID  string
	RunID    string
	ThreadID string
	// Fingerprint is as in [GetCheckpointParams].
	Fingerprint string
}

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

// ThreadSummary is an approved thread → thread handoff summary.
type ThreadSummary struct {
	ID        string
	OwnerID   string
	HandoffID string
	// AgentID is the assistant whose memory holds the summary.
	AgentID string
	// ThreadID is the source thread, ChildThreadID the thread it seeded.
	ThreadID      string
	ChildThreadID string
	// Summary is the structured summary ({title, body, tldr}).
	Summary json.RawMessage
	// Markdown is the summary as rendered into the agent's memory.
	Markdown  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// UpsertThreadSummaryParams are the params of [Ops.UpsertThreadSummary].
// Threads are not required to exist in this store, so that summaries can be
// mirrored from another one.
type UpsertThreadSummaryParams struct {
	OwnerID       string
	HandoffID     string
	AgentID       string
	ThreadID      string
	ChildThreadID string
	// Summary must be valid JSON.
	Summary  json.RawMessage
	Markdown string
}

// GetThreadSummaryParams are the params of [Ops.GetThreadSummary].
type GetThreadSummaryParams struct {
	OwnerID   string
	HandoffID string
}

// MemoryDocument is an agent's memory: free text injected into its system
// prompt, written compare-and-swap.
type MemoryDocument struct {
	OwnerID string
	AgentID string
	Content string
	// Version is 1 for a new document and incremented by each write.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// GetMemoryDocumentParams are the params of [Ops.GetMemoryDocument].
type GetMemoryDocumentParams struct {
	OwnerID string
	AgentID string
}

// PutMemoryDocumentParams are the params of [Ops.PutMemoryDocument].
type PutMemoryDocumentParams struct {
	OwnerID string
	AgentID string
	Content string
	// ExpectedVersion is the version being replaced; 0 creates the document.
	ExpectedVersion int64
}

// Lease is a process's claim on a run it executes inline (not as a
// background job): held from the run's first checkpoint to its stop and
// renewed while it runs. A run whose lease expired has lost its process and
// is adopted by another (package continuation). Leases compare the clocks of
// the processes that write and read them: keep the machines' clocks in sync.
type Lease struct {
	OwnerID  string
	RunID    string
	ThreadID string
	// Holder names the process: host, pid and a random part.
	Holder    string
	ExpiresAt time.Time
}

// AcquireLeaseParams are the params of [Ops.AcquireLease].
type AcquireLeaseParams struct {
	OwnerID  string
	RunID    string
	ThreadID string
	Holder   string
	// TTL is how long the lease holds without a renewal; required.
	TTL time.Duration
	// Deferred, in a Store.Tx, lets the backend send the write with the
	// transaction's next statement or its COMMIT (PostgreSQL: no round trip of
	// its own; the lease is the one written, which AcquireLease returns as the
	// params say it), and an error of the write fails that statement or the
	// commit. Elsewhere, and on SQLite, it runs at once.
	Deferred bool
}

// GetLeaseParams are the params of [Ops.GetLease].
type GetLeaseParams struct {
	OwnerID string
	RunID   string
}

// ReleaseLeaseParams are the params of [Ops.ReleaseLease].
type ReleaseLeaseParams struct {
	OwnerID string
	RunID   string
	// Holder, if set, releases the lease only if that process holds it.
	Holder string
	// Expired releases the lease only if it has expired: an adopter's
	// claim.
	Expired bool
	// Deferred, in a Store.Tx, lets the backend send the delete with the
	// transaction's next statement or its COMMIT (PostgreSQL: no round trip of
	// its own); ReleaseLease then reports false, and an error of the delete
	// fails that statement or the commit. Elsewhere, and on SQLite, the delete
	// runs at once.
	Deferred bool
}

// RenewLeasesParams are the params of [Store.RenewLeases].
type RenewLeasesParams struct {
	Holder string
	// RunIDs are the runs the holder still executes; its other leases are
	// left to expire.
	RunIDs []string
	TTL    time.Duration
}

// ExpiredLeasesParams are the params of [Store.ExpiredLeases].
type ExpiredLeasesParams struct {
	// Limit bounds the leases returned, oldest expiry first. Defaults to 100.
	Limit int
}
