package store

import (
	"context"
	"log/slog"
	"time"
)

// Store is baton's persistence: threads, messages, drafts, checkpoints, job
// runs, thread summaries, memory documents, owners and API keys.
//
// Every row has an owner and every call is scoped by the OwnerID of its
// params: a row of another owner is reported as [ErrNotFound] and can never
// be read or changed. On PostgreSQL row-level security enforces the same rule
// in the database.
//
// Each [Ops] method called on a Store runs in a transaction of its own. A
// Store is safe for concurrent use by multiple goroutines. It is closed with
// Close by whoever opened it.
type Store interface {
	Ops

	// Tx runs fn in one transaction: if fn returns nil, everything written
	// through tx is committed; if fn returns an error or panics, nothing is.
	// Tx returns fn's error unchanged, or the commit error.
	//
	// fn must use tx, not the Store, for every call: on SQLite, whose single
	// write connection tx holds, a write through the Store inside fn would
	// wait for itself. tx must not be used after fn returns, nor by several
	// goroutines at once. Backends give access to the driver transaction
	// underneath (sqlitestore.SQLTx, pgstore.PgxTx) so that rows of other
	// libraries, such as a River job, commit together with the store's.
	//
	// Tx returns once the commit that holds fn's writes has. On SQLite,
	// transactions queued for the write connection commit together (group
	// commit: each in a savepoint, one sync for all), so Tx may return
	// only after transactions that began after fn ended: fn must not hold,
	// past its end, anything another transaction's fn may wait for (a
	// lock released when Tx returns would deadlock the group).
	Tx(ctx context.Context, fn func(tx Tx) error) error

	// Migrate applies the migrations the database lacks. It is safe to call
	// again and from several processes at once: they wait for each other and
	// the migrations run once.
	Migrate(ctx context.Context) error

	// RenewLeases extends, by params.TTL from now, the leases params.Holder
	// holds on params.RunIDs, across owners, and returns how many it
	// extended. A lease released or taken over meanwhile is not touched.
	RenewLeases(ctx context.Context, params *RenewLeasesParams) (int, error)
	// ExpiredLeases returns leases that have expired, across owners, oldest
	// expiry first: runs whose process is gone, to be adopted.
	ExpiredLeases(ctx context.Context, params *ExpiredLeasesParams) ([]*Lease, error)

	// SweepCallRecords deletes, across owners, the call records created
	// before params.Before (the inspector's retention), oldest first in
	// batches of params.Limit, each batch in a transaction of its own, and
	// returns how many it deleted. After an error the batches before it
	// stay deleted.
	SweepCallRecords(ctx context.Context, params *SweepCallRecordsParams) (int, error)

	// PruneCheckpoints deletes, across owners, the checkpoints of one batch
	// that retention no longer keeps: those written before params.Before
	// that are not the latest of their run. A run's latest checkpoint is
	// always kept (it is what resumes the run and what its status is read
	// from), and so is every checkpoint written since Before (what a fork
	// from an earlier step needs). A batch is the params.Limit checkpoints
	// after params.After in id order (ids are time-ordered UUIDv7s);
	// Result.Next continues the walk, "" once it has reached the end or
	// checkpoints written since Before. Each call is one short transaction.
	PruneCheckpoints(ctx context.Context, params *PruneCheckpointsParams) (*PruneCheckpointsResult, error)
	// PruneWebhookDeliveries deletes, across owners, of one batch of the
	// webhook delivery log in id order, the attempts of deliveries that
	// ended (their Final attempt) before params.Before; a pending
	// delivery's attempts stay. Its result is PruneCheckpoints'.
	PruneWebhookDeliveries(ctx context.Context, params *PruneWebhookDeliveriesParams) (*PruneCheckpointsResult, error)

	// Ping reports whether the database can be reached, wrapping
	// [ErrUnavailable] if not.
	Ping(ctx context.Context) error

	// Close releases the store's connections. Calls in progress may fail.
	Close() error
}

// Tx is a transaction of a [Store]: the same operations, all committed or
// rolled back together. See [Store.Tx].
type Tx interface {
	Ops
}

// Ops are the reads and writes of a store. All take a context first and a
// params struct whose OwnerID scopes the call; OwnerID is required. Unless a
// method says otherwise, a missing row or a row of another owner is
// [ErrNotFound], invalid params are [ErrInvalid], an unreachable database is
// [ErrUnavailable]. Returned rows are new values the caller may keep and
// change.
type Ops interface {
	// EnsureOwner creates the owner if it does not exist and returns it.
	// An existing owner is returned unchanged.
	EnsureOwner(ctx context.Context, params *EnsureOwnerParams) (*Owner, error)
	// GetOwner returns an owner.
	GetOwner(ctx context.Context, params *GetOwnerParams) (*Owner, error)

	// CreateAPIKey creates an API key for an existing owner. Only the SHA-256
	// hash of the secret is stored; the secret is returned once.
	CreateAPIKey(ctx context.Context, params *CreateAPIKeyParams) (*CreatedAPIKey, error)
	// LookupAPIKey returns the unrevoked key whose hash is params.Hash (see
	// [HashAPIKey]). It is the one call not scoped by an owner: it is how the
	// owner of a request is found. A revoked or unknown key is [ErrNotFound].
	LookupAPIKey(ctx context.Context, params *LookupAPIKeyParams) (*APIKey, error)
	// ListAPIKeys returns the owner's keys, revoked ones included, oldest first.
	ListAPIKeys(ctx context.Context, params *ListAPIKeysParams) ([]*APIKey, error)
	// RevokeAPIKey revokes a key. Revoking a revoked key changes nothing.
	RevokeAPIKey(ctx context.Context, params *RevokeAPIKeyParams) (*APIKey, error)

	// AppendAudit appends an event to the owner's audit log.
	AppendAudit(ctx context.Context, params *AppendAuditParams) (*AuditEvent, error)
	// ListAudit lists the owner's audit events, newest first.
	ListAudit(ctx context.Context, params *ListAuditParams) (*AuditPage, error)

	// AppendWebhookDelivery records an attempt to deliver a webhook.
	AppendWebhookDelivery(ctx context.Context, params *AppendWebhookDeliveryParams) (*WebhookDelivery, error)
	// ListWebhookDeliveries lists the owner's delivery attempts, newest
	// first.
	ListWebhookDeliveries(ctx context.Context, params *ListWebhookDeliveriesParams) (*WebhookDeliveryPage, error)

	// PutPushConfig stores an A2A push notification config of a task,
	// replacing the task's config of the same ID.
	PutPushConfig(ctx context.Context, params *PutPushConfigParams) (*PushConfig, error)
	// GetPushConfig returns a config of a task.
	GetPushConfig(ctx context.Context, params *PushConfigKeyParams) (*PushConfig, error)
	// ListPushConfigs returns a task's configs (params.ID unused), oldest
	// first; none is an empty list.
	ListPushConfigs(ctx context.Context, params *PushConfigKeyParams) ([]*PushConfig, error)
	// DeletePushConfig deletes a config of a task.
	DeletePushConfig(ctx context.Context, params *PushConfigKeyParams) error

	// CreateThread creates a thread for an existing owner, with its first
	// messages when params has some. A parent thread must exist and belong
	// to the same owner. An ID that is taken is [ErrConflict].
	CreateThread(ctx context.Context, params *CreateThreadParams) (*Thread, error)
	// GetThread returns a thread.
	GetThread(ctx context.Context, params *GetThreadParams) (*Thread, error)
	// ListThreads returns a page of the owner's threads, newest first.
	ListThreads(ctx context.Context, params *ListThreadsParams) (*ThreadPage, error)
	// UpdateThreadMetadata merges a JSON merge patch (RFC 7396) into one
	// namespace of a thread's metadata, compare-and-swap on the thread's
	// version when params.ExpectedVersion is set (a mismatch is a
	// *[VersionConflictError]). It increments the version.
	UpdateThreadMetadata(ctx context.Context, params *UpdateThreadMetadataParams) (*Thread, error)
	// SetActiveAgent records the agent that holds a thread, compare-and-swap
	// like UpdateThreadMetadata. It increments the version.
	SetActiveAgent(ctx context.Context, params *SetActiveAgentParams) (*Thread, error)

	// AppendMessages appends messages to a thread, in order, atomically. Each
	// gets the next sequence number of the thread. A message without an ID
	// gets one; an ID that is taken is [ErrConflict].
	AppendMessages(ctx context.Context, params *AppendMessagesParams) ([]*Message, error)
	// GetMessage returns a message.
	GetMessage(ctx context.Context, params *GetMessageParams) (*Message, error)
	// ListMessages returns a thread's messages in sequence order. A thread
	// without messages gives an empty slice; a missing thread [ErrNotFound].
	ListMessages(ctx context.Context, params *ListMessagesParams) ([]*Message, error)
	// UpdateMessage changes a message's status, parts, usage or metadata.
	// With params.ExpectedStatus set, a message in another status is left
	// alone and a *[TransitionError] returned.
	UpdateMessage(ctx context.Context, params *UpdateMessageParams) (*Message, error)

	// UpsertDraft replaces the draft text of an existing message and
	// increments the draft's version (1 for a new draft).
	UpsertDraft(ctx context.Context, params *UpsertDraftParams) (*Draft, error)
	// GetDraft returns a message's draft.
	GetDraft(ctx context.Context, params *GetDraftParams) (*Draft, error)
	// DeleteDraft deletes a message's draft. Deleting a missing draft is not
	// an error.
	DeleteDraft(ctx context.Context, params *DeleteDraftParams) error

	// SaveCheckpoint writes a checkpoint of params.State, fenced: the write
	// succeeds only if params.State.Step is greater than the step of every
	// checkpoint of the run and, when params.ParentID is set, the run's
	// newest checkpoint is params.ParentID. Otherwise it returns a
	// *[StaleWriteError] and writes nothing. Concurrent writers of one run
	// are serialised, so exactly one of two writers of the same step wins.
	// A state that runstate.Decode would refuse is [ErrInvalid]. The
	// returned checkpoint's State is a shallow copy of params.State.
	SaveCheckpoint(ctx context.Context, params *SaveCheckpointParams) (*Checkpoint, error)
	// LockRun takes, in a transaction (a Store.Tx), the lock that serialises
	// the run's checkpoint writers, which SaveCheckpoint takes, until the
	// transaction ends; a SaveCheckpoint of the run later in the same
	// transaction does not take it again. A transaction that reads rows of
	// the run before it writes its checkpoint (a worker's claim) takes it
	// first: on PostgreSQL the lock then goes with the transaction's
	// scope, in the statement that sets it, instead of one of its own.
	// It is meant for a Store.Tx: called alone it locks nothing.
	LockRun(ctx context.Context, params *LockRunParams) error
	// GetCheckpoint returns a checkpoint. A state that cannot be decoded is a
	// *[CorruptError]; a fingerprint mismatch a *[runstate.IncompatibleError].
	GetCheckpoint(ctx context.Context, params *GetCheckpointParams) (*Checkpoint, error)
	// LatestCheckpoint returns the newest checkpoint of a run (highest step)
	// or of a thread (last written), with the errors of GetCheckpoint.
	LatestCheckpoint(ctx context.Context, params *LatestCheckpointParams) (*Checkpoint, error)

	// CreateJobRun records a job run unless the owner already has one with
	// the same idempotency key, in which case it returns that one with
	// Duplicate set and writes nothing. Concurrent creators of one key get
	// one row between them.
	CreateJobRun(ctx context.Context, params *CreateJobRunParams) (*CreateJobRunResult, error)
	// GetJobRun returns a job run by ID or by idempotency key.
	GetJobRun(ctx context.Context, params *GetJobRunParams) (*JobRun, error)
	// TransitionJobRun moves a job run to another status (see [JobStatus]
	// for the allowed moves), incrementing Attempt and setting StartedAt on
	// entering processing and setting FinishedAt on finishing. A move that is
	// not allowed, or an ExpectedAttempt that is not the current attempt, is
	// a *[TransitionError]. ExpectedAttempt 0 fences only with Fence set
	// (a job run read before any claim: attempt 0); without it, 0 means any
	// attempt.
	TransitionJobRun(ctx context.Context, params *TransitionJobRunParams) (*JobRun, error)

	// AcquireLease gives params.Holder the lease of a run for params.TTL
	// from now, replacing any lease the run has (the fenced checkpoint
	// written in the same transaction decides who runs it). A thread, when
	// set, must exist.
	AcquireLease(ctx context.Context, params *AcquireLeaseParams) (*Lease, error)
	// GetLease returns the lease of a run; a run without one is
	// [ErrNotFound].
	GetLease(ctx context.Context, params *GetLeaseParams) (*Lease, error)
	// ReleaseLease deletes the lease of a run — only if params.Holder holds
	// it, when set, and only if it has expired, when params.Expired — and
	// reports whether it deleted one. A run without a lease is not an error.
	ReleaseLease(ctx context.Context, params *ReleaseLeaseParams) (bool, error)

	// UpsertThreadSummary inserts or replaces the summary of a thread
	// handoff, unique by owner and handoff ID. CreatedAt is kept on replace.
	UpsertThreadSummary(ctx context.Context, params *UpsertThreadSummaryParams) (*ThreadSummary, error)
	// GetThreadSummary returns the summary of a thread handoff.
	GetThreadSummary(ctx context.Context, params *GetThreadSummaryParams) (*ThreadSummary, error)

	// CreateInterrupt stores a pending interrupt. An ID the owner has
	// already used is [ErrConflict], and so is a second pending
	// [InterruptThreadHandoff] of one thread; neither error aborts a
	// surrounding transaction. A thread, when set, must exist.
	CreateInterrupt(ctx context.Context, params *CreateInterruptParams) (*Interrupt, error)
	// GetInterrupt returns an interrupt.
	GetInterrupt(ctx context.Context, params *GetInterruptParams) (*Interrupt, error)
	// ListInterrupts returns a thread's interrupts, oldest first, filtered
	// by kind and status when set. A thread without any gives an empty
	// slice, even one that does not exist.
	ListInterrupts(ctx context.Context, params *ListInterruptsParams) ([]*Interrupt, error)
	// DecideInterrupt moves a pending interrupt to params.Status with its
	// decision and outcome, compare-and-swap on its status: of any number of
	// concurrent callers exactly one succeeds, and the others get a
	// *[NotPendingError] carrying the interrupt with the winner's decision
	// and outcome. That error does not abort a surrounding transaction.
	DecideInterrupt(ctx context.Context, params *DecideInterruptParams) (*Interrupt, error)

	// RecordCalls writes call records (a run's calls, for the
	// inspector), all or none.
	RecordCalls(ctx context.Context, params *RecordCallsParams) error
	// ListCallRecords returns a run's call records without their Detail,
	// oldest start first.
	ListCallRecords(ctx context.Context, params *ListCallRecordsParams) ([]*CallRecord, error)
	// GetCallRecord returns a call record with its Detail.
	GetCallRecord(ctx context.Context, params *GetCallRecordParams) (*CallRecord, error)

	// GetMemoryDocument returns an agent's memory document.
	GetMemoryDocument(ctx context.Context, params *GetMemoryDocumentParams) (*MemoryDocument, error)
	// PutMemoryDocument writes an agent's memory document, compare-and-swap
	// on its version: ExpectedVersion 0 creates it and fails if it exists,
	// ExpectedVersion n replaces version n with version n+1. A mismatch is a
	// *[VersionConflictError] and writes nothing.
	PutMemoryDocument(ctx context.Context, params *PutMemoryDocumentParams) (*MemoryDocument, error)
}

// Options configure a store. The zero value means the defaults; a nil
// *Options is the zero value. Fields marked SQLite or PostgreSQL are ignored
// by the other backend.
type Options struct {
	// NoMigrate skips applying migrations when the store is opened. The store
	// then refuses to open a database whose schema is older than this build,
	// with a *[SchemaVersionError]. A newer schema is accepted.
	NoMigrate bool

	// Logger receives migration logs. Defaults to discarding them.
	Logger *slog.Logger

	// Now returns the current time; the store assigns every timestamp with
	// it, in UTC, truncated to microseconds. Defaults to time.Now.
	Now func() time.Time

	// BusyTimeout is how long an SQLite statement waits for a lock held by
	// another process before failing with [ErrUnavailable]. Defaults to 10
	// seconds. (SQLite)
	BusyTimeout time.Duration

	// MaxReadConns is the number of SQLite connections used for reads
	// outside transactions, beside the single write connection. Defaults to
	// 4. In-memory databases use the write connection only. (SQLite)
	MaxReadConns int

	// Schema is the PostgreSQL schema holding baton's tables. It is created
	// by Migrate and put first on each connection's search_path. Defaults to
	// the connection's search_path (usually public). (PostgreSQL)
	Schema string

	// AppRole is the PostgreSQL role each transaction switches to (SET LOCAL
	// ROLE) so that row-level security applies even when connected as a
	// superuser or the tables' owner. Migrate creates it NOLOGIN and grants
	// it what the store needs. Defaults to "baton_app". (PostgreSQL)
	AppRole string

	// NoAppRole keeps transactions in the connecting role. Row-level
	// security then applies only if that role is neither a superuser nor has
	// BYPASSRLS (FORCE ROW LEVEL SECURITY covers the tables' owner).
	// (PostgreSQL)
	NoAppRole bool

	// MaxConns is the size of the PostgreSQL connection pool. Defaults to
	// the pool_max_conns URL parameter, else 10. (PostgreSQL)
	MaxConns int32
}
