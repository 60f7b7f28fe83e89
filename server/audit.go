package server

import (
	"errors"
	"net/http"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
)

// auditKinds are the kinds GET /v1/audit filters by.
var auditKinds = map[string]bool{store.AuditRunDecision: true, store.AuditThreadHandoffDecision: true, store.AuditRunCancel: true,
	store.AuditKeyCreate: true, store.AuditKeyRevoke: true}

// listAudit is GET /v1/audit?thread_id=&kind=&limit=&cursor=: the caller's
// audit log, newest first (a key limited to networks sees the events of
// its networks' threads).
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, c *Caller) error {
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	kind := q.Get("kind")
	if kind != "" && !auditKinds[kind] {
		return BadParam("kind", "kind %q is not one of run.decision, thread_handoff.decision, run.cancel, key.create, key.revoke", kind)
	}
	p := &store.ListAuditParams{OwnerID: c.Owner, Kind: kind, Limit: limit, Cursor: q.Get("cursor"), Networks: c.Networks}
	if th := q.Get("thread_id"); th != "" {
		if _, err := s.thread(r.Context(), c, th); err != nil {
			return err
		}
		p.ThreadID = th
	}
	page, err := s.st.ListAudit(r.Context(), p)
	if errors.Is(err, store.ErrInvalid) {
		return BadParam("cursor", "cursor is not one this server returned")
	}
	if err != nil {
		return err
	}
	return writePage(w, page.Events, page.NextCursor, func(ev *store.AuditEvent) wire.AuditEvent {
		return wire.AuditEvent{ID: ev.ID, Object: "audit_event", Kind: ev.Kind, KeyID: ev.KeyID, Actor: ev.Actor, Owner: ev.OwnerID,
			RequestID: ev.RequestID, ThreadID: ev.ThreadID, RunID: ev.RunID, InterruptID: ev.InterruptID, Network: ev.Network, Detail: ev.Detail,
			CreatedAt: ev.CreatedAt}
	})
}
