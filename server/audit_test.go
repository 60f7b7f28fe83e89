package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
)

type auditEvent struct {
	ID, Kind, Actor, Owner string
	KeyID                  string `json:"key_id"`
	RequestID              string `json:"request_id"`
	ThreadID               string `json:"thread_id"`
	RunID                  string `json:"run_id"`
	InterruptID            string `json:"interrupt_id"`
	Network                string
	Detail                 json.RawMessage
}

type auditList struct {
	Data       []auditEvent
	NextCursor string `json:"next_cursor"`
	HasMore    bool   `json:"has_more"`
}

// TestAudit: a decision (an edit, with its arguments), a cancel and a
// thread handoff decision are in the owner's audit log with the key that
// made them and their request ids; the interrupt's outcome names the
// deciding key; the log pages and filters by thread and kind, needs the
// admin scope, and is the owner's alone. On every backend.
func TestAudit(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		ctx := t.Context()
		dk, err := b.St.CreateAPIKey(ctx, &store.CreateAPIKeyParams{OwnerID: "alice", Scopes: []store.Scope{store.ScopeDecide}})
		if err != nil {
			t.Fatal(err)
		}
		thread, run, intr := b.Interrupted(t, b.KeyA)
		r := b.Do(t, dk.Secret, "POST", "/v1/interrupts/"+intr+"/decision", map[string]any{"type": "edit", "args": map[string]any{"order_id": "1234", "amount": 10}})
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"status":"completed"`) {
			t.Fatalf("edit: %d %s", r.Status, r.Body)
		}
		decideReq := r.Header.Get(server.RequestIDHeader)
		var in struct {
			Outcome struct {
				DecidedBy struct {
					KeyID     string `json:"key_id"`
					RequestID string `json:"request_id"`
				} `json:"decided_by"`
			}
		}
		b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+intr, nil).JSON(t, &in)
		if in.Outcome.DecidedBy.KeyID != dk.Key.ID || in.Outcome.DecidedBy.RequestID != decideReq {
			t.Fatalf("outcome decided_by = %+v, want key %s, request %s", in.Outcome.DecidedBy, dk.Key.ID, decideReq)
		}

		thread2, run2, _ := b.Interrupted(t, b.KeyA)
		r = b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread2+"/runs/"+run2+"/cancel", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
		cancelReq := r.Header.Get(server.RequestIDHeader)

		thread3 := b.Thread(t, b.KeyA, "support")
		b.HandOff(t, thread3, "I need help with my invoice")

		var all auditList
		if r := b.Do(t, b.KeyA, "GET", "/v1/audit", nil); r.Status != http.StatusOK {
			t.Fatalf("GET /v1/audit: %d %s", r.Status, r.Body)
		} else {
			r.JSON(t, &all)
		}
		if len(all.Data) != 3 || all.Data[0].Kind != "thread_handoff.decision" || all.Data[1].Kind != "run.cancel" || all.Data[2].Kind != "run.decision" {
			t.Fatalf("audit = %+v", all.Data)
		}
		keyA := keyID(t, b, "alice", b.KeyA)
		d, c, h := all.Data[2], all.Data[1], all.Data[0]
		if d.KeyID != dk.Key.ID || d.RequestID != decideReq || d.Owner != "alice" || d.ThreadID != thread || d.RunID != run || d.InterruptID != intr ||
			d.Actor != "api_key" || d.Network != "support" || !strings.Contains(string(d.Detail), `"amount":10`) || !strings.Contains(string(d.Detail), `"edit"`) {
			t.Errorf("decision event = %+v %s", d, d.Detail)
		}
		if c.KeyID != keyA || c.RequestID != cancelReq || c.ThreadID != thread2 || c.RunID != run2 {
			t.Errorf("cancel event = %+v", c)
		}
		if h.KeyID != keyA || h.ThreadID != thread3 || h.InterruptID == "" || !strings.Contains(string(h.Detail), "approve") {
			t.Errorf("thread handoff event = %+v %s", h, h.Detail)
		}

		for q, want := range map[string]int{"?kind=run.decision": 1, "?thread_id=" + thread2: 1, "?kind=run.cancel&thread_id=" + thread: 0, "?kind=key.create": 0} {
			var l auditList
			b.Do(t, b.KeyA, "GET", "/v1/audit"+q, nil).JSON(t, &l)
			if len(l.Data) != want {
				t.Errorf("GET /v1/audit%s = %d events, want %d", q, len(l.Data), want)
			}
		}
		var p1, p2 auditList
		b.Do(t, b.KeyA, "GET", "/v1/audit?limit=2", nil).JSON(t, &p1)
		b.Do(t, b.KeyA, "GET", "/v1/audit?limit=2&cursor="+p1.NextCursor, nil).JSON(t, &p2)
		if len(p1.Data) != 2 || !p1.HasMore || len(p2.Data) != 1 || p2.HasMore || p2.Data[0].ID != d.ID {
			t.Errorf("pages %+v, %+v", p1, p2)
		}
		var bob auditList
		b.Do(t, b.KeyB, "GET", "/v1/audit", nil).JSON(t, &bob)
		if len(bob.Data) != 0 {
			t.Errorf("another owner's audit: %+v", bob.Data)
		}
		for _, tc := range []struct {
			key, path string
			want      int
		}{
			{dk.Secret, "/v1/audit", http.StatusForbidden},
			{b.KeyA, "/v1/audit?kind=bogus", http.StatusBadRequest},
			{b.KeyA, "/v1/audit?cursor=%00", http.StatusBadRequest},
			{b.KeyB, "/v1/audit?thread_id=" + thread, http.StatusNotFound},
		} {
			if r := b.Do(t, tc.key, "GET", tc.path, nil); r.Status != tc.want {
				t.Errorf("GET %s: %d %s, want %d", tc.path, r.Status, r.Body, tc.want)
			}
		}
	})
}

// keyID returns the id of an owner's key of a secret.
func keyID(t *testing.T, b *servertest.Bundle, owner, secret string) string {
	t.Helper()
	k, err := b.St.LookupAPIKey(t.Context(), &store.LookupAPIKeyParams{Hash: store.HashAPIKey(secret)})
	if err != nil || k.OwnerID != owner {
		t.Fatalf("key of %s: %v", owner, err)
	}
	return k.ID
}
