package store

import (
	"context"
	"encoding/json"
	"time"
)

// Audit event kinds: what an [AuditEvent] records. Stable strings of the
// wire format.
const (
	// AuditRunDecision is a decision on a run's interrupt (approve, edit
	// with the edited arguments, reject); its detail is the decision.
	AuditRunDecision = "run.decision"
	// AuditThreadHandoffDecision is a decision on a thread handoff
	// proposal; its detail is the decision.
	AuditThreadHandoffDecision = "thread_handoff.decision"
	// AuditRunCancel is a run cancelled by a request.
	AuditRunCancel = "run.cancel"
	// AuditKeyCreate and AuditKeyRevoke are an API key created or revoked;
	// the event's KeyID is that key's, its detail the key's scopes,
	// networks and expiry.
	AuditKeyCreate = "key.create"
	AuditKeyRevoke = "key.revoke"
)

// Audit actors: who acted.
const (
	// ActorAPIKey is a request authenticated by an API key (KeyID).
	ActorAPIKey = "api_key"
	// ActorCLI is the baton command line (keys create, keys revoke).
	ActorCLI = "cli"
)

// Actor is who acts in a context: the API key of a request and the
// request's id. The server puts it in each request's context (and in the
// context of a run resumed by a decision), so that what the request
// decides is recorded as its doing.
type Actor struct {
	KeyID     string
	RequestID string
}

type actorKey struct{}

// ContextWithActor returns ctx carrying a.
func ContextWithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFromContext returns the actor ctx carries, if any.
func ActorFromContext(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// AuditEvent is a recorded decision, cancel or key change: the
// [AppendAuditParams] it was appended with, its ID and its time.
type AuditEvent struct {
	// ID is time-ordered (UUIDv7).
	ID string
	AppendAuditParams
	CreatedAt time.Time
}

// AppendAuditParams are the params of [Ops.AppendAudit], and what an
// [AuditEvent] records.
type AppendAuditParams struct {
	OwnerID string
	// Kind, required, is one of the Audit kinds above.
	Kind string
	// KeyID is the API key that acted ([ActorAPIKey]), or the key created
	// or revoked ([ActorCLI]).
	KeyID string
	// Actor is [ActorAPIKey] or [ActorCLI].
	Actor     string
	RequestID string
	// ThreadID, RunID, InterruptID and Network are what the event is
	// about, when it is about them.
	ThreadID    string
	RunID       string
	InterruptID string
	Network     string
	// Detail is the kind's JSON: the decision, the key's scopes …; when
	// set, it must be a JSON value.
	Detail json.RawMessage
}

// ListAuditParams are the params of [Ops.ListAudit].
type ListAuditParams struct {
	OwnerID string
	// ThreadID and Kind, when set, filter.
	ThreadID string
	Kind     string
	// Networks, when set, lists only the events about those networks.
	Networks []string
	// Limit is the page size. Defaults to 50; at most 1000.
	Limit int
	// Cursor is the NextCursor of the previous page; "" is the first page.
	Cursor string
}

// AuditPage is a page of audit events, newest first.
type AuditPage struct {
	Events []*AuditEvent
	// NextCursor continues the listing; "" when this is the last page.
	NextCursor string
}
