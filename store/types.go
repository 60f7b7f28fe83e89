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
	Hash string
	// Scopes are what the key may do ([ScopeRead] … [ScopeAdmin]); a key
	// made before scopes existed has [ScopeAdmin].
	Scopes []Scope
	// Networks, when not empty, limits the key to those networks' threads.
	Networks  []string
	CreatedAt time.Time
	// RevokedAt is when the key was revoked; zero while it is valid.
	RevokedAt time.Time
	// ExpiresAt is when the key stops working; zero never.
	ExpiresAt time.Time
}

// CreateAPIKeyParams are the params of [Ops.CreateAPIKey].
type CreateAPIKeyParams struct {
	OwnerID string
	Name    string
	// Secret is the key's secret. Defaults to a new random secret (see
	// [NewAPIKeySecret]).
	Secret string
	// Scopes are the key's scopes. Defaults to [ScopeAdmin], every right.
	Scopes []Scope
	// Networks, when set, limits the key to those networks (names without
	// spaces).
	Networks []string
	// ExpiresAt, when set, is when the key stops working.
	ExpiresAt time.Time
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
	// numbers from 1, or from ForkSeq+1 for a fork), as AppendMessages
	// would append them.
	Messages []NewMessage
	// ForkOf, when set, makes the thread a fork of that thread of the same
	// owner that shares its stored messages instead of copying them: the
	// thread's messages are ForkOf's up to position ForkSeq (as
	// ListMessages of ForkOf gives them, through ForkOf's own source if it
	// is a fork), then its own, numbered after ForkSeq. Every reader of the
	// thread's messages sees them so; deleting ForkOf (in SQL: the store
	// deletes no thread) first copies the shared rows into the fork, with
	// new ids at the same positions. ForkSeq must not be past ForkOf's
	// last position.
	ForkOf  string
	ForkSeq int64
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
	// Networks, when set, lists only the threads of those networks.
	Networks []string
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
	// Rows names the messages of State that are rows of its thread, read
	// with it when the checkpoint was stored referring to them (nil when
	// it holds the whole state): give them back as
	// [SaveCheckpointParams.Rows] to write the run's next checkpoints the
	// same way.
	Rows      *runstate.Rows
	CreatedAt time.Time
}

// SaveCheckpointParams are the params of [Ops.SaveCheckpoint].
type SaveCheckpointParams struct {
	OwnerID string
	// ID defaults to a new UUIDv7.
	ID string
	// State is required, with RunID, Fingerprint and a valid Status; the
	// checkpoint's run, thread, step and fingerprint are taken from it.
	State *runstate.State
	// Rows, when not nil, names the messages of State that are rows of
	// State.ThreadID's messages (Messages and NewThread.Messages included:
	// they are written with it): the checkpoint refers to them by position
	// instead of copying them (runstate.EncodeStored), and is rebuilt from
	// them when read. Nil stores the whole state.
	Rows *runstate.Rows
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
	// transaction can then only roll back. On SQLite, a checkpoint alone
	// (no messages, no new thread) fenced on its ParentID that comes
	// first in the transaction is held so: with nothing after it, it runs
	// on its own at the commit, without BEGIN and COMMIT (a run's step).
	// Elsewhere, and on SQLite otherwise, the write runs at once.
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
	// NoState leaves the checkpoint's State (and Rows) nil: its columns
	// alone — run, step, status — without decoding its state or reading
	// the rows it refers to, for a caller that asks only whether the run
	// is still going (a turn's start on a thread).
	NoState bool
	// Lease, with RunID, takes the run's lease before the read, as
	// [Ops.AcquireLease] with Free (a live lease of another holder is left
	// as it is, and the read does not say so): its Holder, TTL and ThreadID
	// are used, the read's owner and run. On PostgreSQL, outside a
	// Store.Tx, the lease goes in the read's round trip, in its implicit
	// transaction, whose commit does not wait for the WAL flush (a crash of
	// the server may lose the lease, never one of its holder); elsewhere it
	// is written just before the read. An error writing it fails the read.
	// A continuation's delivery takes its lease so (continuation.holdJob).
	Lease *AcquireLeaseParams
}

// PruneCheckpointsParams are the params of [Store.PruneCheckpoints].
type PruneCheckpointsParams struct {
	// Before is the retention's horizon: checkpoints written before it are
	// deleted unless they are the latest of their run. Required.
	Before time.Time
	// After continues a walk: only checkpoints whose id sorts after it are
	// looked at. "" starts from the first.
	After string
	// Limit is how many checkpoints the call looks at. Defaults to
	// [DefaultPruneLimit].
	Limit int
}

// DefaultPruneLimit is the batch of [Store.PruneCheckpoints] by default.
const DefaultPruneLimit = 500

// PruneCheckpointsResult is what [Store.PruneCheckpoints] did.
type PruneCheckpointsResult struct {
	// Deleted is how many checkpoints it deleted.
	Deleted int
	// Next is the After of the walk's next call; "" when the walk is done.
	Next string
}
