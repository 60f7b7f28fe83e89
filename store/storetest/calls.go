package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// testCallRecords: call records written in a transaction (deferred) and
// alone read back — listed in start order without their detail, got with
// it; another owner sees none of them; a sweep deletes only those older
// than its cut-off, across owners.
func testCallRecords(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	start := time.Now().UTC().Truncate(time.Microsecond)
	model := &store.CallRecord{ThreadID: th.ID, RunID: "run-c", CheckpointID: "cp-2", Step: 2, Kind: "model", Agent: "triage", Model: "openai:gpt-4.1",
		FinishReason: "tool_calls", RequestID: "req_1", StartedAt: start, FirstToken: 120 * time.Millisecond, Latency: 900 * time.Millisecond,
		Usage:  message.Usage{InputTokens: 100, OutputTokens: 20, CachedTokens: 50, ReasoningTokens: 7},
		Detail: json.RawMessage(`{"request":{"system":"☂ you are triage"},"answer":{"text":"hi"}}`), Truncated: true}
	tool := &store.CallRecord{ThreadID: th.ID, RunID: "run-c", CheckpointID: "cp-3", Step: 3, Kind: "tool", Agent: "triage", Name: "lookup",
		CallID: "call_1", Error: "boom", StartedAt: start.Add(time.Second), Latency: time.Millisecond, Sub: true}
	if err := s.Tx(b.ctx, func(tx store.Tx) error {
		return tx.RecordCalls(b.ctx, &store.RecordCallsParams{OwnerID: b.owner, Calls: []*store.CallRecord{tool}, Deferred: true})
	}); err != nil {
		t.Fatal(err)
	}
	noErr(t, s.RecordCalls(b.ctx, &store.RecordCallsParams{OwnerID: b.owner, Calls: []*store.CallRecord{model}}))
	noErr(t, s.RecordCalls(b.ctx, &store.RecordCallsParams{OwnerID: b.owner})) // nothing to write
	list := Must(s.ListCallRecords(b.ctx, &store.ListCallRecordsParams{OwnerID: b.owner, RunID: "run-c"}))(t)
	if len(list) != 2 || list[0].Kind != "model" || list[1].Kind != "tool" {
		t.Fatalf("ListCallRecords = %+v, want the model call then the tool call", list)
	}
	m := checkListedCalls(t, b, th, list, model)
	got := Must(s.GetCallRecord(b.ctx, &store.GetCallRecordParams{OwnerID: b.owner, ID: m.ID}))(t)
	if !jsonEqual(got.Detail, model.Detail) || got.Usage != model.Usage {
		t.Fatalf("GetCallRecord detail %s", got.Detail)
	}
	// Another owner sees nothing.
	if l := Must(s.ListCallRecords(b.ctx, &store.ListCallRecordsParams{OwnerID: b.other, RunID: "run-c"}))(t); len(l) != 0 {
		t.Fatalf("another owner lists %d records", len(l))
	}
	_, err := s.GetCallRecord(b.ctx, &store.GetCallRecordParams{OwnerID: b.other, ID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	// A thread of another owner is refused.
	err = s.RecordCalls(b.ctx, &store.RecordCallsParams{OwnerID: b.other, Calls: []*store.CallRecord{{ThreadID: th.ID, RunID: "r", Kind: "model", StartedAt: start}}})
	wantErr(t, err, store.ErrNotFound)
	err = s.RecordCalls(b.ctx, &store.RecordCallsParams{OwnerID: b.owner, Calls: []*store.CallRecord{{RunID: "r", Kind: "model", Detail: json.RawMessage("{\"a\":\"\x00\"}")}}})
	wantErr(t, err, store.ErrInvalid)

	checkCallSweep(t, s, b, start)
}

// checkListedCalls checks the two records listed of th, the model call
// want first, and returns the model call.
func checkListedCalls(t *testing.T, b *bundle, th *store.Thread, list []*store.CallRecord, want *store.CallRecord) *store.CallRecord {
	t.Helper()
	m := list[0]
	if m.ID == "" || m.OwnerID != b.owner || m.ThreadID != th.ID || m.CheckpointID != "cp-2" || m.Step != 2 || m.Agent != "triage" ||
		m.Model != "openai:gpt-4.1" || m.FinishReason != "tool_calls" || m.RequestID != "req_1" || !m.StartedAt.Equal(want.StartedAt) ||
		m.FirstToken != 120*time.Millisecond || m.Latency != 900*time.Millisecond || m.Usage != want.Usage || !m.Truncated || m.Sub ||
		m.Detail != nil {
		t.Fatalf("listed model call %+v", m)
	}
	checkTime(t, "CreatedAt", m.CreatedAt)
	if tl := list[1]; !tl.Sub || tl.Error != "boom" || tl.Name != "lookup" || tl.CallID != "call_1" || tl.Truncated {
		t.Fatalf("listed tool call %+v", tl)
	}
	return m
}

// checkCallSweep: an old cut-off keeps the call records, a cut-off after
// them deletes them, whoever's they are, in batches of any size.
func checkCallSweep(t *testing.T, s store.Store, b *bundle, start time.Time) {
	t.Helper()
	theirs := Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other}))(t)
	noErr(t, s.RecordCalls(b.ctx, &store.RecordCallsParams{OwnerID: b.other, Calls: []*store.CallRecord{{ThreadID: theirs.ID, RunID: "run-o", Kind: "transfer", StartedAt: start}}}))
	Must(s.SweepCallRecords(b.ctx, &store.SweepCallRecordsParams{Before: start.Add(-time.Hour)}))(t)
	if l := Must(s.ListCallRecords(b.ctx, &store.ListCallRecordsParams{OwnerID: b.owner, RunID: "run-c"}))(t); len(l) != 2 {
		t.Fatalf("after an old cut-off %d records, want 2", len(l))
	}
	if n := Must(s.SweepCallRecords(b.ctx, &store.SweepCallRecordsParams{Before: time.Now().Add(time.Minute)}))(t); n < 3 {
		t.Fatalf("swept %d, want at least 3", n)
	}
	for _, o := range [][2]string{{b.owner, "run-c"}, {b.other, "run-o"}} {
		if l := Must(s.ListCallRecords(b.ctx, &store.ListCallRecordsParams{OwnerID: o[0], RunID: o[1]}))(t); len(l) != 0 {
			t.Fatalf("after the sweep %s has %d records", o[0], len(l))
		}
	}
	_, err := s.SweepCallRecords(b.ctx, &store.SweepCallRecordsParams{})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.SweepCallRecords(b.ctx, &store.SweepCallRecordsParams{Before: time.Now(), Limit: -1})
	wantErr(t, err, store.ErrInvalid)

	// In batches of 2: seven records (three full batches and one more)
	// all go, and the count says so.
	var calls []*store.CallRecord
	for i := range 7 {
		calls = append(calls, &store.CallRecord{ThreadID: theirs.ID, RunID: "run-b", Kind: "model", Step: i, StartedAt: start})
	}
	noErr(t, s.RecordCalls(b.ctx, &store.RecordCallsParams{OwnerID: b.other, Calls: calls}))
	if n := Must(s.SweepCallRecords(b.ctx, &store.SweepCallRecordsParams{Before: time.Now().Add(time.Minute), Limit: 2}))(t); n < 7 {
		t.Fatalf("swept %d in batches of 2, want at least 7", n)
	}
	if l := Must(s.ListCallRecords(b.ctx, &store.ListCallRecordsParams{OwnerID: b.other, RunID: "run-b"}))(t); len(l) != 0 {
		t.Fatalf("after the sweep in batches %d records are left", len(l))
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}
