package store

import (
	"encoding/json"
	"time"
)

// ThreadSummary is an approved thread → thread handoff summary: the
// [UpsertThreadSummaryParams] it was last written with, its ID and times.
type ThreadSummary struct {
	ID string
	UpsertThreadSummaryParams
	CreatedAt time.Time
	UpdatedAt time.Time
}

// UpsertThreadSummaryParams are the params of [Ops.UpsertThreadSummary],
// and what a [ThreadSummary] records. Threads are not required to exist in
// this store, so that summaries can be mirrored from another one.
type UpsertThreadSummaryParams struct {
	OwnerID   string
	HandoffID string
	// AgentID is the assistant whose memory holds the summary.
	AgentID string
	// ThreadID is the source thread, ChildThreadID the thread it seeded.
	ThreadID      string
	ChildThreadID string
	// Summary is the structured summary ({title, body, tldr}); it must be
	// valid JSON.
	Summary json.RawMessage
	// Markdown is the summary as rendered into the agent's memory.
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
	// Free takes the lease only if no other holder's lease of the run is
	// alive: none, expired, or Holder's own. A lease another holder still
	// holds is left as it is and AcquireLease returns [ErrConflict] (a
	// continuation delivered twice at once: the second does not take the
	// first's lease). Not with Deferred.
	Free bool
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
