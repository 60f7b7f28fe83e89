package storetest

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/store"
)

// testAudit checks the audit log: appended events list newest first,
// filtered by thread, kind and network, paged; another owner sees none;
// a decision with DecidedBy names its key in the outcome and is audited in
// its transaction, one without is not, and a lost decision adds nothing.
func testAudit(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	in, decision := decideAudited(t, s, b, th)

	other := newThread(t, s, b)
	Must(s.AppendAudit(b.ctx, &store.AppendAuditParams{OwnerID: b.owner, Kind: store.AuditRunCancel, KeyID: "key-1", Actor: store.ActorAPIKey,
		ThreadID: other.ID, RunID: "r2", Network: "other"}))(t)
	Must(s.AppendAudit(b.ctx, &store.AppendAuditParams{OwnerID: b.owner, Kind: store.AuditKeyCreate, KeyID: "key-3", Actor: store.ActorCLI,
		Detail: json.RawMessage(`{"scopes":["read"]}`)}))(t)

	all := Must(s.ListAudit(b.ctx, &store.ListAuditParams{OwnerID: b.owner}))(t)
	if len(all.Events) != 3 || all.Events[0].Kind != store.AuditKeyCreate || all.Events[1].Kind != store.AuditRunCancel || all.Events[2].Kind != store.AuditRunDecision {
		t.Fatalf("ListAudit = %+v, want key.create, run.cancel, run.decision", kinds(all.Events))
	}
	d := all.Events[2]
	if d.KeyID != "key-1" || d.RequestID != "req_1" || d.Actor != store.ActorAPIKey || d.ThreadID != th.ID || d.RunID != in.RunID || d.InterruptID != in.ID ||
		d.Network != "net" || d.OwnerID != b.owner || !jsonEqual(d.Detail, decision) {
		t.Fatalf("decision event = %+v, detail %s", d, d.Detail)
	}
	checkTime(t, "CreatedAt", d.CreatedAt)
	for _, tc := range []struct {
		p    store.ListAuditParams
		want int
	}{
		{store.ListAuditParams{ThreadID: th.ID}, 1},
		{store.ListAuditParams{Kind: store.AuditRunCancel}, 1},
		{store.ListAuditParams{Networks: []string{"net"}}, 1},
		{store.ListAuditParams{Networks: []string{"net", "other"}}, 2},
		{store.ListAuditParams{ThreadID: "none"}, 0},
	} {
		tc.p.OwnerID = b.owner
		if page := Must(s.ListAudit(b.ctx, &tc.p))(t); len(page.Events) != tc.want {
			t.Errorf("ListAudit(%+v) = %v, want %d events", tc.p, kinds(page.Events), tc.want)
		}
	}
	checkPages(t, b, all.Events[2].ID, func(owner string, limit int, cursor string) ([]*store.AuditEvent, string) {
		page := Must(s.ListAudit(b.ctx, &store.ListAuditParams{OwnerID: owner, Limit: limit, Cursor: cursor}))(t)
		return page.Events, page.NextCursor
	}, func(ev *store.AuditEvent) string { return ev.ID })
	_, err := s.AppendAudit(b.ctx, &store.AppendAuditParams{OwnerID: b.owner, Kind: store.AuditRunCancel, Detail: json.RawMessage(`{`)})
	wantErr(t, err, store.ErrInvalid)
}

// decideAudited decides an interrupt of th with DecidedBy, checks that the
// outcome names the key and that a second decision loses, and decides
// another without DecidedBy (audited: no). It returns the audited
// interrupt and its decision.
func decideAudited(t *testing.T, s store.Store, b *bundle, th *store.Thread) (*store.Interrupt, json.RawMessage) {
	in := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptRun, "audit-i1")))(t)
	decision := json.RawMessage(`{"decisions":[{"type":"edit","call_id":"c1","args":{"amount":5}}]}`)
	by := &store.Actor{KeyID: "key-1", RequestID: "req_1"}
	got := Must(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: in.ID, Status: store.InterruptDecided,
		Decision: decision, Outcome: json.RawMessage(`{"run_id":"r"}`), DecidedBy: by, AuditKind: store.AuditRunDecision}))(t)
	var out struct {
		RunID     string `json:"run_id"`
		DecidedBy struct {
			KeyID     string `json:"key_id"`
			RequestID string `json:"request_id"`
		} `json:"decided_by"`
	}
	if err := json.Unmarshal(got.Outcome, &out); err != nil || out.RunID != "r" || out.DecidedBy.KeyID != "key-1" || out.DecidedBy.RequestID != "req_1" {
		t.Fatalf("outcome %s (%v): want run_id and decided_by", got.Outcome, err)
	}
	// A second decision loses and records nothing.
	_, err := s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: in.ID, Status: store.InterruptDecided,
		Decision: decision, Outcome: json.RawMessage(`{}`), DecidedBy: &store.Actor{KeyID: "key-2"}, AuditKind: store.AuditRunDecision})
	wantErr(t, err, store.ErrConflict)
	// Without DecidedBy nothing is audited.
	in2 := Must(s.CreateInterrupt(b.ctx, newInterrupt(b, th, store.InterruptRun, "audit-i2")))(t)
	Must(s.DecideInterrupt(b.ctx, &store.DecideInterruptParams{OwnerID: b.owner, ID: in2.ID, Status: store.InterruptDecided, Outcome: json.RawMessage(`{}`)}))(t)

	return in, decision
}

func kinds(evs []*store.AuditEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}
