package sqlcore

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/batonhq/baton/store"
)

const auditCols = `id, owner_id, kind, key_id, actor, request_id, thread_id, run_id, interrupt_id, network, detail, created_at`

func scanAudit(r Row) (*store.AuditEvent, error) {
	var ev store.AuditEvent
	var detail []byte
	var created nullTime
	if err := r.Scan(&ev.ID, &ev.OwnerID, &ev.Kind, &ev.KeyID, &ev.Actor, &ev.RequestID, &ev.ThreadID, &ev.RunID, &ev.InterruptID,
		&ev.Network, &detail, &created); err != nil {
		return nil, err
	}
	ev.CreatedAt = created.T
	if detail != nil {
		if !json.Valid(detail) {
			return nil, &store.CorruptError{Table: "audit_events", ID: ev.ID, Column: "detail", Err: errors.New("not valid JSON")}
		}
		ev.Detail = json.RawMessage(detail)
	}
	return &ev, nil
}

// AppendAudit implements [store.Ops].
func (e *Engine) AppendAudit(ctx context.Context, p *store.AppendAuditParams) (*store.AuditEvent, error) {
	const op = "append audit event"
	if err := need(p, "OwnerID", p.OwnerID, "Kind", p.Kind); err != nil {
		return nil, e.wrap(op, err)
	}
	detail, err := nullJSON("Detail", p.Detail)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op, func(q Querier) (*store.AuditEvent, error) {
		last(q)
		return e.appendAudit(ctx, q, p, detail)
	})
}

// appendAudit inserts an audit event in q's transaction; detail is p's
// checked by nullJSON.
func (e *Engine) appendAudit(ctx context.Context, q Querier, p *store.AppendAuditParams, detail any) (*store.AuditEvent, error) {
	return scanAudit(q.QueryRow(ctx, `INSERT INTO audit_events (id, owner_id, kind, key_id, actor, request_id, thread_id, run_id, interrupt_id, network, detail, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING `+auditCols,
		newID(), p.OwnerID, p.Kind, p.KeyID, p.Actor, p.RequestID, p.ThreadID, p.RunID, p.InterruptID, p.Network, detail, e.Dialect.Time(e.now())))
}

// ListAudit implements [store.Ops].
func (e *Engine) ListAudit(ctx context.Context, p *store.ListAuditParams) (*store.AuditPage, error) {
	q := listQuery{params: p, owner: p.OwnerID, networks: p.Networks, limit: p.Limit, cursor: p.Cursor}
	events, next, err := listOwned(ctx, e, "list audit events", auditCols, "audit_events", q, func(k *keyset) {
		k.eq("thread_id", p.ThreadID)
		k.eq("kind", p.Kind)
	}, scanAudit, func(ev *store.AuditEvent) string { return ev.ID })
	if err != nil {
		return nil, err
	}
	return &store.AuditPage{Events: events, NextCursor: next}, nil
}

// decidedBy returns outcome, a JSON object, with "decided_by" set to a.
func decidedBy(outcome json.RawMessage, a *store.Actor) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(outcome, &m); err != nil || m == nil {
		return nil, invalid("Outcome is not a JSON object, which DecidedBy needs")
	}
	by, _ := json.Marshal(struct {
		KeyID     string `json:"key_id"`
		RequestID string `json:"request_id,omitempty"`
	}{a.KeyID, a.RequestID})
	m["decided_by"] = by
	return json.Marshal(m)
}
