package runstate_test

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// thread is a thread's rows for the stored form's tests: by position, and
// the run's transcript rows by id.
type thread struct {
	bySeq map[int64]message.Message
	byID  map[string]message.Message
}

func newThread() *thread {
	return &thread{bySeq: map[int64]message.Message{}, byID: map[string]message.Message{}}
}

// add stores m as the row at seq, as a store would read it back: status
// completed, no finish reason or request id.
func (th *thread) add(seq int64, m message.Message) {
	m.Status, m.FinishReason, m.RequestID = message.StatusCompleted, "", ""
	if m.Parts == nil {
		m.Parts = []message.Part{}
	}
	th.bySeq[seq] = m
	th.byID[m.ID] = m
}

// load rebuilds a stored form from th, as a store does.
func (th *thread) load(t *testing.T, k runstate.Key, b []byte) (*runstate.State, *runstate.Rows) {
	t.Helper()
	sd, err := runstate.DecodeStored(b)
	if err != nil {
		t.Fatalf("DecodeStored: %v\n%s", err, b)
	}
	var tr []message.Message
	for i := range sd.TranscriptRows() {
		m, ok := th.byID[runstate.MessageID(k.RunID, i+1)]
		if !ok {
			t.Fatalf("transcript row %d missing", i+1)
		}
		tr = append(tr, m)
	}
	st, rows, err := sd.State(k, tr, func(seq int64) (*message.Message, bool) {
		m, ok := th.bySeq[seq]
		return &m, ok
	})
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	return st, rows
}

// storedFixture is a run on a thread of 3 rows (seq 1, 2, 4; 3 is a
// placeholder the history leaves out), whose transcript's first 3
// messages are rows (5, 6, 7) and its 4th is not yet.
func storedFixture() (*runstate.State, *runstate.Rows, *thread) {
	th := newThread()
	hist := []message.Message{
		{ID: "run_a-m1", Role: message.RoleUser, Parts: []message.Part{{Type: message.PartText, Text: "first question"}}},
		{ID: "run_a-m2", Role: message.RoleAssistant, Agent: "triage", Parts: []message.Part{{Type: message.PartText, Text: "first answer"}}},
		{ID: "run_b-m1", Role: message.RoleUser, Parts: []message.Part{{Type: message.PartText, Text: "second question"}}},
	}
	var rows []runstate.Row
	for i, seq := range []int64{1, 2, 4} {
		th.add(seq, hist[i])
		hist[i] = th.bySeq[seq]
		rows = append(rows, runstate.Row{Seq: seq, Message: hist[i]})
	}
	th.add(3, message.Message{ID: "ph", Role: message.RoleAssistant, Parts: []message.Part{{Type: message.PartText, Text: "placeholder"}}})
	run := "run_c"
	tr := []message.Message{
		{ID: runstate.MessageID(run, 1), Role: message.RoleUser, Parts: []message.Part{{Type: message.PartText, Text: "third question"}}},
		{ID: runstate.MessageID(run, 2), Role: message.RoleAssistant, Agent: "triage", FinishReason: "tool_calls", RequestID: "req_1",
			Usage: &message.Usage{InputTokens: 10, OutputTokens: 2},
			Parts: []message.Part{{Type: message.PartToolCall, CallID: "c1", Name: "lookup", Arguments: []byte(`{"q":1}`)}}},
		{ID: runstate.MessageID(run, 3), Role: message.RoleTool, Agent: "triage", Metadata: map[string]any{"k": "v"},
			Parts: []message.Part{{Type: message.PartToolResult, CallID: "c1", Name: "lookup", Text: "found"}}},
		{ID: runstate.MessageID(run, 4), Role: message.RoleAssistant, Agent: "billing", FinishReason: "stop",
			Parts: []message.Part{{Type: message.PartText, Text: "not a row yet"}}},
	}
	for i := range 3 {
		th.add(int64(5+i), tr[i])
	}
	// The working history: the thread's history, a message of its own (a
	// transfer's note), then the transcript.
	msgs := append(append(append([]message.Message{}, hist...), message.System("note")), tr...)
	st := &runstate.State{SchemaVersion: runstate.SchemaVersion, RunID: run, ThreadID: "t", Network: "n", Fingerprint: "fp",
		Agent: "billing", Messages: msgs, Transcript: tr, Trail: []string{"triage", "billing"}, Turns: 2, Transfers: 1, Step: 4,
		Status: runstate.StatusRunning, StartedAt: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC),
		Transfer: &transfer.Context{ID: runstate.TransferID(run, 1), From: "triage", To: "billing"},
		Stack: []runstate.Frame{{Agent: "triage", Messages: append(append([]message.Message{}, hist[1:]...), tr[:3]...),
			TransferID: runstate.TransferID(run, 1)}},
	}
	return st, runstate.NewRows(3, rows), th
}

// TestStoredRoundTrip: the stored form refers to the rows it names, writes
// out the rest, and rebuilds the same state from the rows.
func TestStoredRoundTrip(t *testing.T) {
	t.Parallel()
	st, rows, th := storedFixture()
	b := must(runstate.EncodeStored(st, rows))
	for _, row := range []string{"first question", "first answer", "second question", "third question", "found", `"q"`} {
		if bytes.Contains(b, []byte(row)) {
			t.Errorf("the stored form copies the row %q:\n%s", row, b)
		}
	}
	for _, own := range []string{"not a row yet", "note", "req_1", "tool_calls"} {
		if !bytes.Contains(b, []byte(own)) {
			t.Errorf("the stored form lacks %q:\n%s", own, b)
		}
	}
	full, _ := runstate.Encode(st)
	if len(b)*2 > len(full) {
		t.Errorf("stored form %d bytes, the whole state %d", len(b), len(full))
	}
	got, next := th.load(t, st.Key(), b)
	wantB, _ := runstate.Encode(st)
	gotB, _ := runstate.Encode(got)
	if !bytes.Equal(wantB, gotB) {
		t.Fatalf("rebuilt state differs:\nwant %s\ngot  %s", wantB, gotB)
	}
	if !reflect.DeepEqual(got.Transcript[2].Metadata, st.Transcript[2].Metadata) || got.Transcript[0].Status != "" {
		t.Fatalf("marks not applied: %+v", got.Transcript)
	}
	// The rebuilt state's rows serve its next checkpoint: the same stored
	// form.
	b2, err := runstate.EncodeStored(got, next)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("stored form of the rebuilt state differs:\n%s\n%s", b, b2)
	}
}

// TestStoredChangedMessage: a message that is no longer what its row
// holds (a transform rewrote it) is written out.
func TestStoredChangedMessage(t *testing.T) {
	t.Parallel()
	st, rows, th := storedFixture()
	st.Messages[1].Parts = []message.Part{{Type: message.PartText, Text: "rewritten answer"}}
	st.Messages[4].Agent = "other"
	b, err := runstate.EncodeStored(st, rows)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("rewritten answer")) || !bytes.Contains(b, []byte("third question")) {
		t.Fatalf("changed messages not written out:\n%s", b)
	}
	got, _ := th.load(t, st.Key(), b)
	if w, g := must(runstate.Encode(st)), must(runstate.Encode(got)); !bytes.Equal(w, g) {
		t.Fatalf("rebuilt state differs:\nwant %s\ngot  %s", w, g)
	}
}

func must2[T, U any](v T, _ U) T { return v }

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestStoredOldForms: states of versions 1 and 2 read as complete states,
// and rows nil writes version 2.
func TestStoredOldForms(t *testing.T) {
	t.Parallel()
	st, _, th := storedFixture()
	v2 := must(runstate.EncodeStored(st, nil))
	if !strings.Contains(string(v2), `"schema_version":2`) {
		t.Fatalf("rows nil: %s", v2)
	}
	got, rows := th.load(t, st.Key(), v2)
	if rows != nil {
		t.Fatalf("rows of a complete state: %+v", rows)
	}
	if g := must(runstate.Encode(got)); !bytes.Equal(g, v2) {
		t.Fatalf("version 2 state differs:\n%s\n%s", v2, g)
	}
	v1 := must(os.ReadFile("testdata/state_v1.json"))
	if _, err := runstate.DecodeStored(v1); err != nil {
		t.Fatalf("version 1: %v", err)
	}
	// Version 3, as the build before version 4 wrote the fixture (with a
	// usage and a final output): the same state, from the same rows.
	st.Usage, st.FinalOutput = message.Usage{InputTokens: 10, OutputTokens: 2}, "not a row yet"
	v3 := bytes.TrimSpace(must(os.ReadFile("testdata/state_v3.json")))
	got, rows = th.load(t, st.Key(), v3)
	if w, g := must(runstate.Encode(st)), must(runstate.Encode(got)); !bytes.Equal(w, g) {
		t.Fatalf("version 3 state differs:\nwant %s\ngot  %s", w, g)
	}
	// Written again in version 3 (for readers that know no other): the
	// fields of version 3 only, the same state.
	again := must(runstate.EncodeStoredVersion(got, rows, 3))
	if !bytes.Contains(again, []byte(`"schema_version":3`)) || bytes.Contains(again, []byte("final_last")) ||
		!bytes.Contains(again, []byte(`"started_at":"2026-12-02T03:00:00Z"`)) || !bytes.Contains(again, []byte(`"transcript":[`)) {
		t.Fatalf("version 3 written again: %s", again)
	}
	if g := must(runstate.Encode(must2(th.load(t, st.Key(), again)))); !bytes.Equal(g, must(runstate.Encode(st))) {
		t.Fatalf("version 3 written again reads differently:\n%s", again)
	}
	// Its next checkpoint is of version 4, and smaller.
	if v4 := must(runstate.EncodeStored(got, rows)); !bytes.Contains(v4, []byte(`"schema_version":4`)) || len(v4) >= len(v3) {
		t.Fatalf("version 4 after version 3 (%d bytes against %d): %s", len(v4), len(v3), v4)
	}
}

// TestStoredDerived: version 4 leaves out what the rebuilt transcript
// gives back (the usage that is its sum, the final output that is its
// last message's text, the finish reasons its messages imply, a zero
// count, an empty rest of transcript, a start time's RFC 3339 form), and
// writes what differs from it.
func TestStoredDerived(t *testing.T) {
	t.Parallel()
	st, rows, th := storedFixture()
	// All four transcript messages are rows, with nothing a row does not
	// hold but the finish reasons they imply.
	st.Stack, st.Transfer, st.Transfers = nil, nil, 0
	st.Transcript[1].RequestID, st.Transcript[2].Metadata = "", nil
	th.add(8, st.Transcript[3])
	rows = rows.WithTranscript(4)
	st.Messages = append(st.Messages[:4], st.Transcript...)
	st.Usage = *st.Transcript[1].Usage
	st.FinalOutput = "not a row yet"
	b := must(runstate.EncodeStored(st, rows))
	for _, left := range []string{"usage", "final_output", "finish_reason", "marks", "transfers", `"transcript"`, "T03:00"} {
		if bytes.Contains(b, []byte(left)) {
			t.Errorf("the stored form holds %s:\n%s", left, b)
		}
	}
	if !bytes.Contains(b, []byte(`"final_last":true`)) || !bytes.Contains(b, []byte(`"started_at":1796180400000000000`)) {
		t.Errorf("no final_last or a start time in nanoseconds:\n%s", b)
	}
	got, _ := th.load(t, st.Key(), b)
	if w, g := must(runstate.Encode(st)), must(runstate.Encode(got)); !bytes.Equal(w, g) {
		t.Fatalf("rebuilt state differs:\nwant %s\ngot  %s", w, g)
	}
	// What differs from what the transcript gives is written out: another
	// usage, another final output, no finish reason or another one, a
	// start time of another offset.
	st.Usage.InputTokens++
	st.FinalOutput = "something else"
	st.Transcript[1].FinishReason = ""
	st.Transcript[0].FinishReason = "length"
	st.StartedAt = time.Date(2026, 12, 2, 4, 0, 0, 0, time.FixedZone("CET", 3600))
	b = must(runstate.EncodeStored(st, rows))
	for _, own := range []string{`"usage"`, "something else", `"no_finish":true`, `"finish_reason":"length"`, `"started_at":"2026-12-02T04:00:00+01:00"`} {
		if !bytes.Contains(b, []byte(own)) {
			t.Errorf("the stored form lacks %s:\n%s", own, b)
		}
	}
	got, _ = th.load(t, st.Key(), b)
	if w, g := must(runstate.Encode(st)), must(runstate.Encode(got)); !bytes.Equal(w, g) {
		t.Fatalf("rebuilt state differs:\nwant %s\ngot  %s", w, g)
	}
	if _, err := runstate.EncodeStoredVersion(st, rows, 2); err == nil {
		t.Fatal("EncodeStoredVersion wrote version 2's stored form")
	}
}

// TestStoredMissingRows: rows the stored form names that the thread no
// longer has are corruption, never a silently shorter history.
func TestStoredMissingRows(t *testing.T) {
	t.Parallel()
	st, rows, th := storedFixture()
	b := must(runstate.EncodeStored(st, rows))
	sd, err := runstate.DecodeStored(b)
	if err != nil {
		t.Fatal(err)
	}
	tr := []message.Message{th.byID["run_c-m1"], th.byID["run_c-m2"], th.byID["run_c-m3"]}
	if _, _, err := sd.State(st.Key(), tr[:2], func(int64) (*message.Message, bool) { return nil, false }); !errors.Is(err, runstate.ErrCorrupt) {
		t.Fatalf("short transcript: %v", err)
	}
	if _, _, err := sd.State(st.Key(), tr, func(int64) (*message.Message, bool) { return nil, false }); !errors.Is(err, runstate.ErrCorrupt) {
		t.Fatalf("missing history rows: %v", err)
	}
	tr[1] = th.byID["run_a-m1"]
	if _, _, err := sd.State(st.Key(), tr, func(seq int64) (*message.Message, bool) { m, ok := th.bySeq[seq]; return &m, ok }); !errors.Is(err, runstate.ErrCorrupt) {
		t.Fatalf("another message as transcript row: %v", err)
	}
	for _, bad := range []string{
		`{"schema_version":3,"agent":"a","transcript":[],"transcript_rows":-1}`,
		`{"schema_version":3,"agent":"a","transcript":[],"messages":[{"run":[0,1]}]}`,
		`{"schema_version":3,"agent":"a","transcript":[],"messages":[{"seq":[0,1]}]}`,
		`{"schema_version":3,"agent":"a","transcript":[],"messages":[{"seq":[1,1],"m":[]}]}`,
		`{"schema_version":3,"agent":"a","transcript":[],"transcript_rows":1,"marks":[{"n":1}]}`,
		`{"schema_version":3,"agent":"a"}`,
		`{"schema_version":3,"agent":"a","transcript":[],"bogus":1}`,
		`{"schema_version":3,"agent":"a","transcript":[],"step":2}`,
	} {
		if _, err := runstate.DecodeStored([]byte(bad)); !errors.Is(err, runstate.ErrCorrupt) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	for _, bad := range []string{
		`{"schema_version":3,"agent":"a","transcript":[],"final_last":true}`,
		`{"schema_version":3,"agent":"a","transcript":[],"started_at":0}`,
		`{"schema_version":3,"agent":"a","transcript":[],"transcript_rows":1,"marks":[{"n":0,"no_finish":true}]}`,
		`{"schema_version":4,"agent":"a","transcript_rows":1,"marks":[{"n":0,"no_finish":true,"finish_reason":"stop"}]}`,
		`{"schema_version":4,"agent":"a","final_last":true}`,
		`{"schema_version":4,"agent":"a","transcript_rows":1,"final_last":true,"final_output":"x"}`,
		`{"schema_version":4,"agent":"a","started_at":"x"}`,
		`{"schema_version":4,"agent":"a","started_at":1.5}`,
	} {
		if _, err := runstate.DecodeStored([]byte(bad)); !errors.Is(err, runstate.ErrCorrupt) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := runstate.DecodeStored([]byte(`{"schema_version":5}`)); !errors.Is(err, runstate.ErrUnknownVersion) {
		t.Errorf("version 5: %v", err)
	}
}

// FuzzDecodeStored: whatever DecodeStored accepts rebuilds, from any rows
// of the right ids, into a valid state that is written and rebuilt again
// as the same state; what it refuses is ErrCorrupt or a *VersionError.
// Never a panic.
func FuzzDecodeStored(f *testing.F) {
	st, rows, _ := storedFixture()
	f.Add(must(runstate.EncodeStored(st, rows)))
	f.Add(must(runstate.EncodeStored(st, nil)))
	f.Add([]byte(`{"schema_version":3,"agent":"a","transcript":[],"transcript_rows":2,"marks":[{"n":1,"nil_parts":true,"status":"error"}],"messages":[{"run":[0,2]},{"seq":[3,5]},{"m":[{"role":"user","parts":[]}]}],"stack":[{"agent":"b","transfer_id":"x","messages":[{"seq":[4,4]}]}]}`))
	f.Add([]byte(`{"schema_version":3}`))
	f.Add(bytes.TrimSpace(must(os.ReadFile("testdata/state_v3.json"))))
	f.Add(must(runstate.EncodeStoredVersion(st, rows, 3)))
	f.Add([]byte(`{"schema_version":4,"agent":"a","transcript_rows":2,"marks":[{"n":0,"no_finish":true},{"n":1,"finish_reason":"length"}],"final_last":true,"started_at":1764644400000000001,"usage":{"input_tokens":3},"messages":[{"run":[0,2]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sd, err := runstate.DecodeStored(b)
		if err != nil {
			var ve *runstate.VersionError
			if !errors.Is(err, runstate.ErrCorrupt) && !errors.As(err, &ve) {
				t.Fatalf("error %v (%T) is neither ErrCorrupt nor a *VersionError", err, err)
			}
			return
		}
		key := runstate.Key{RunID: "r", Network: "n", Fingerprint: "fp", Step: 3, Status: runstate.StatusRunning}
		if sd.TranscriptRows() > 1000 {
			return
		}
		if from, to, ok := sd.SeqRange(); ok && to-from > 1000 {
			return
		}
		var tr []message.Message
		for i := range sd.TranscriptRows() {
			id := runstate.MessageID(key.RunID, i+1)
			tr = append(tr, message.Message{ID: id, Role: message.RoleAssistant, Parts: []message.Part{{Type: message.PartText, Text: id}}})
		}
		bySeq := func(seq int64) (*message.Message, bool) {
			id := "s" + strconv.FormatInt(seq, 10)
			return &message.Message{ID: id, Role: message.RoleUser, Parts: []message.Part{{Type: message.PartText, Text: id}}}, true
		}
		got, next, err := sd.State(key, tr, bySeq)
		if err != nil {
			if !errors.Is(err, runstate.ErrCorrupt) {
				t.Fatalf("State: %v", err)
			}
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("State returned an invalid state: %v", err)
		}
		enc, err := runstate.Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := runstate.EncodeStored(got, next)
		if err != nil {
			t.Fatal(err)
		}
		sd2, err := runstate.DecodeStored(again)
		if err != nil {
			t.Fatalf("DecodeStored of EncodeStored's output: %v\n%s", err, again)
		}
		if sd2.TranscriptRows() > len(tr) {
			t.Fatalf("re-encoded with %d transcript rows, had %d", sd2.TranscriptRows(), len(tr))
		}
		got2, _, err := sd2.State(key, tr[:sd2.TranscriptRows()], bySeq)
		if err != nil {
			t.Fatalf("State of the re-encoded form: %v\n%s", err, again)
		}
		if enc2 := must(runstate.Encode(got2)); !bytes.Equal(enc, enc2) {
			t.Fatalf("rebuilt differently:\n%s\n%s\nstored %s", enc, enc2, again)
		}
	})
}

// TestStoredShortRun: a short run that names no history rows (a first
// turn, a continuation) is written out whole: reading it back needs no
// rows.
func TestStoredShortRun(t *testing.T) {
	t.Parallel()
	st, _, th := storedFixture()
	st.Messages, st.Stack, st.Transfer = append([]message.Message{}, st.Transcript...), nil, nil
	b := must(runstate.EncodeStored(st, runstate.NewRows(3, nil)))
	sd, err := runstate.DecodeStored(b)
	if err != nil {
		t.Fatal(err)
	}
	if sd.TranscriptRows() != 0 || sd.RefersToRows() {
		t.Fatalf("a short run refers to rows: %s", b)
	}
	got, _ := th.load(t, st.Key(), b)
	if w, g := must(runstate.Encode(st)), must(runstate.Encode(got)); !bytes.Equal(w, g) {
		t.Fatalf("rebuilt state differs:\nwant %s\ngot  %s", w, g)
	}
}
