package continuation_test

import (
	"encoding/json"
	"testing"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/store"
)

// TestArgsAndPlaceholdersBeforeTheRename: the jobs and placeholder messages
// written before continuations had their word, which named the
// continuation's id handoff_event_id, are still read.
func TestArgsAndPlaceholdersBeforeTheRename(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"current": `{"owner_id":"o","thread_id":"t","run_id":"r","continuation_id":"r-c3","job_run_id":"j","fingerprint":"f"}`,
		"old":     `{"owner_id":"o","thread_id":"t","run_id":"r","handoff_event_id":"r-c3","job_run_id":"j","fingerprint":"f"}`,
	} {
		var a continuation.Args
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := continuation.Args{OwnerID: "o", ThreadID: "t", RunID: "r", EventID: "r-c3", JobRunID: "j", Fingerprint: "f"}
		if a.OwnerID != want.OwnerID || a.ThreadID != want.ThreadID || a.RunID != want.RunID || a.EventID != want.EventID ||
			a.JobRunID != want.JobRunID || a.Fingerprint != want.Fingerprint {
			t.Errorf("%s: args = %+v", name, a)
		}
	}
	b, err := json.Marshal(continuation.Args{EventID: "r-c3"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["continuation_id"] != "r-c3" || m["handoff_event_id"] != nil {
		t.Errorf("args encode as %s", b)
	}
	cont := map[string]any{"run_id": "r", "status": "queued"}
	for key, want := range map[string]bool{continuation.MetaContinuationID: true, "handoff_event_id": true, "other": false} {
		m := &store.Message{}
		m.Metadata = map[string]any{key: "r-c3", continuation.MetaContinuation: cont}
		if got := continuation.IsPlaceholder(m); got != want {
			t.Errorf("IsPlaceholder with %s = %v, want %v", key, got, want)
		}
	}
}
