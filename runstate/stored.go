package runstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/message"
)

// StoredVersion is the schema version of the stored form written by
// [EncodeStored]: a state whose messages that are rows of its thread's
// messages are referred to, not copied. [Decode] does not read it (its
// messages are elsewhere); [DecodeStored] reads it and versions 1 to 3.
//
// Version 4 leaves out what the rebuilt transcript gives back: the usage
// when it is the sum of the transcript's, the final output when it is the
// text of the last transcript message (final_last), a transcript row's
// finish reason when it is the one its message implies ("tool_calls" for
// an assistant message with tool calls, "stop" for another; a mark's
// no_finish says it had none); it writes the start time as Unix
// nanoseconds when its offset is 0, and leaves out zero turns and
// transfers and an empty transcript. Version 3 wrote them all.
const StoredVersion = 4

// storedV3 is the first version of the stored form, which [DecodeStored]
// reads and [EncodeStoredVersion] writes for readers that know no other.
const storedV3 = 3

// inlineTranscript is the longest transcript the stored form writes out
// whole when the state names no history rows (see EncodeStored).
const inlineTranscript = 8

// The stored form's bounds: a reference to more rows than this is refused
// as corrupt, before anything is allocated for it.
const (
	maxStoredRows  = 1 << 20
	maxStoredRange = 1 << 20
)

// Row is a message of a thread as stored, with its position in the thread.
type Row struct {
	// Seq is the row's position in its thread (store.Message.Seq).
	Seq     int64
	Message message.Message
}

// Rows names the messages of a run's state that are rows of its thread,
// so that [EncodeStored] refers to them instead of copying them. A Rows is
// not modified once made and may be shared.
type Rows struct {
	// Transcript is how many of the state's first transcript messages are
	// rows of the thread, with ids MessageID(run, 1) … MessageID(run, n).
	Transcript int
	// History are rows of the thread the run was given as its history (or
	// that a stored form referred to), by their position.
	History []Row
	// byID indexes History by message id.
	byID map[string]int
}

// NewRows returns the Rows of a run whose first transcript messages are
// rows, and whose history holds the rows history.
func NewRows(transcript int, history []Row) *Rows {
	r := &Rows{Transcript: transcript, History: history}
	if len(history) > 0 {
		r.byID = make(map[string]int, len(history))
		for i := range history {
			if id := history[i].Message.ID; id != "" {
				r.byID[id] = i
			}
		}
	}
	return r
}

// WithTranscript returns r with n transcript rows, sharing r's history.
// A nil r has no history.
func (r *Rows) WithTranscript(n int) *Rows {
	if r == nil {
		return &Rows{Transcript: n}
	}
	c := *r
	c.Transcript = n
	return &c
}

// seqOf returns the position of the history row m is a copy of.
func (r *Rows) seqOf(m *message.Message) (int64, bool) {
	if m.ID == "" {
		return 0, false
	}
	i, ok := r.byID[m.ID]
	if !ok || !same(m, &r.History[i].Message) {
		return 0, false
	}
	return r.History[i].Seq, true
}

// Segment is a stretch of a message list in the stored form: exactly one
// of its fields is set.
type Segment struct {
	// Seq are the thread's rows from Seq[0] to Seq[1], both included.
	Seq *[2]int64 `json:"seq,omitempty"`
	// Run are the state's transcript messages from Run[0] to Run[1]
	// (excluded), counting from 0.
	Run *[2]int `json:"run,omitempty"`
	// Inline are messages written out.
	Inline []message.Message `json:"m,omitempty"`
}

// Mark is what a transcript row does not hold of its message: its
// status, finish reason, request id and metadata as the run had them (a
// row's own may have changed since: a rollback marks it), and a nil Parts.
type Mark struct {
	// N is the message's index in the transcript, from 0.
	N            int            `json:"n"`
	Status       message.Status `json:"status,omitempty"`
	FinishReason string         `json:"finish_reason,omitempty"`
	RequestID    string         `json:"request_id,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	NilParts     bool           `json:"nil_parts,omitempty"`
	// NoFinish is a message without a finish reason where its message
	// implies one (version 4: see [StoredVersion]).
	NoFinish bool `json:"no_finish,omitempty"`
}

// impliedFinish is the finish reason version 4 gives a transcript row
// without a mark of one: "tool_calls" for an assistant message with tool
// calls, "stop" for another assistant message, none for the rest.
func impliedFinish(m *message.Message) string {
	switch {
	case m.Role != message.RoleAssistant:
		return ""
	case m.HasToolCalls():
		return "tool_calls"
	}
	return "stop"
}

// Key is what a checkpoint's row holds of its state, in columns of its
// own: the stored form leaves it out, and [Stored.State] takes it back.
type Key struct {
	RunID, ThreadID, Network, Fingerprint string
	Step                                  int
	Status                                Status
}

// Key returns s's key.
func (s *State) Key() Key {
	return Key{RunID: s.RunID, ThreadID: s.ThreadID, Network: s.Network, Fingerprint: s.Fingerprint, Step: s.Step, Status: s.Status}
}

// storedState is the JSON of the stored form. Its own fields shadow
// State's of the same names; those of the key are never written.
type storedState struct {
	State
	RunID       string    `json:"run_id,omitempty"`
	ThreadID    string    `json:"thread_id,omitempty"`
	Network     string    `json:"network,omitempty"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Step        int       `json:"step,omitempty"`
	Status      Status    `json:"status,omitempty"`
	Messages    []Segment `json:"messages"`
	// Transcript are the transcript's messages after its first
	// TranscriptRows, which are rows (version 4 leaves out none).
	Transcript     *[]message.Message `json:"transcript,omitempty"`
	TranscriptRows int                `json:"transcript_rows,omitempty"`
	Marks          []Mark             `json:"marks,omitempty"`
	Stack          []storedFrame      `json:"stack,omitempty"`
	Turns          int                `json:"turns,omitempty"`
	Transfers      int                `json:"transfers,omitempty"`
	// Usage is nil in version 4 when it is the sum of the transcript's.
	Usage     *message.Usage `json:"usage,omitempty"`
	StartedAt storedTime     `json:"started_at"`
	// FinalLast: the final output is the last transcript message's text.
	FinalLast bool `json:"final_last,omitempty"`
}

// storedTime is a start time: RFC 3339 (as [Encode] writes it, and
// version 3 always), or, in version 4, Unix nanoseconds when its offset is
// 0 (it reads back as the same UTC time).
type storedTime struct {
	t    time.Time
	nano bool
}

// MarshalJSON writes t as Unix nanoseconds if nano and t is of offset 0 and
// within their range, else as RFC 3339.
func (t storedTime) MarshalJSON() ([]byte, error) {
	if t.nano && t.inNanos() {
		return strconv.AppendInt(nil, t.t.UnixNano(), 10), nil
	}
	return t.t.MarshalJSON()
}

// inNanos reports whether t is of offset 0 and within the range of Unix
// nanoseconds.
func (t storedTime) inNanos() bool {
	_, off := t.t.Zone()
	return off == 0 && t.t.Year() > 1678 && t.t.Year() < 2262
}

// UnmarshalJSON reads either form.
func (t *storedTime) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' && string(b) != "null" {
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return fmt.Errorf("started_at %s: %w", b, err)
		}
		t.t, t.nano = time.Unix(0, n).UTC(), true
		return nil
	}
	return t.t.UnmarshalJSON(b)
}

// storedFrame is a Frame of the stored form.
type storedFrame struct {
	Frame
	Messages []Segment `json:"messages"`
}

// EncodeStored returns the stored form of s: the encoding of [Encode],
// of version [StoredVersion] (see there what it leaves out), without s's [Key] (its checkpoint's row
// holds it), in which the first rows.Transcript
// transcript messages (those with the ids [MessageID] gives them) are
// referred to by their count, and the messages of the working history and
// of the stack that are transcript messages or rows.History are referred
// to by position. A message that differs from the row it names is written
// out, and so is a transcript of at most 8 messages when no history row
// is named (nothing to read back). With rows nil it returns Encode(s).
func EncodeStored(s *State, rows *Rows) ([]byte, error) {
	return EncodeStoredVersion(s, rows, StoredVersion)
}

// EncodeStoredVersion is [EncodeStored] writing the stored form of
// version 3 or 4 (what the readers of a deployment know).
func EncodeStoredVersion(s *State, rows *Rows, version int) ([]byte, error) {
	if rows == nil {
		return Encode(s)
	}
	v, err := storedOf(s, rows, version)
	if err != nil {
		return nil, err
	}
	if b, ok := appendStored(make([]byte, 0, 256+sizeHint(s.Transcript[v.TranscriptRows:])), v); ok {
		return b, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("runstate: encode: %w", err)
	}
	return b, nil
}

// storedOf returns what EncodeStoredVersion writes of s.
func storedOf(s *State, rows *Rows, version int) (*storedState, error) {
	if s == nil {
		return nil, errors.New("runstate: encode nil state")
	}
	if version != storedV3 && version != StoredVersion {
		return nil, &VersionError{Version: version}
	}
	v := storedState{State: *s}
	v.SchemaVersion = version
	v.State.Messages, v.State.Transcript, v.State.Stack = nil, nil, nil
	v.State.RunID, v.State.ThreadID, v.State.Network, v.State.Fingerprint, v.State.Step, v.State.Status = "", "", "", "", 0, ""
	v.State.Turns, v.State.Transfers, v.State.Usage, v.State.StartedAt = 0, 0, message.Usage{}, time.Time{}
	v.Turns, v.Transfers, v.StartedAt = s.Turns, s.Transfers, storedTime{t: s.StartedAt, nano: version > storedV3}
	v4 := version > storedV3
	if !v4 || s.Usage != transcriptUsage(s.Transcript) {
		u := s.Usage
		v.Usage = &u
	}
	if v4 && s.FinalOutput != "" && len(s.Transcript) > 0 && s.Transcript[len(s.Transcript)-1].Text() == s.FinalOutput {
		v.State.FinalOutput, v.FinalLast = "", true
	}
	n := referableRows(s, rows)
	e := encoder{s: s, rows: rows}
	v.Messages = e.segments(s.Messages)
	if s.Stack != nil {
		v.Stack = make([]storedFrame, len(s.Stack))
		for i := range s.Stack {
			v.Stack[i] = storedFrame{Frame: s.Stack[i], Messages: e.segments(s.Stack[i].Messages)}
			v.Stack[i].Frame.Messages = nil
		}
	}
	if n <= inlineTranscript && !v.refersToRows() {
		// A short run that names no history rows is written out whole:
		// reading it back costs no query of its rows (a continuation's
		// hand-over and claim, a first turn), and what it writes does
		// not grow with a thread.
		n = 0
	}
	v.TranscriptRows = n
	if rest := s.Transcript[n:]; len(rest) > 0 || !v4 {
		if rest == nil {
			rest = []message.Message{}
		}
		v.Transcript = &rest
	}
	v.Marks = marks(s.Transcript[:n], v4)
	return &v, nil
}

// referableRows is how many of s's first transcript messages the stored
// form may refer to as rows: at most rows.Transcript, and only those with
// the ids [MessageID] gives them.
func referableRows(s *State, rows *Rows) int {
	n := min(rows.Transcript, len(s.Transcript))
	for i := range n {
		if !isMessageID(s.Transcript[i].ID, s.RunID, i+1) {
			return i
		}
	}
	return n
}

// marks returns what the transcript rows tr do not hold of their messages
// (nil when they hold all of it); v4 leaves out the finish reasons the
// messages imply.
func marks(tr []message.Message, v4 bool) []Mark {
	var out []Mark
	for i := range tr {
		m := &tr[i]
		finish := ""
		if v4 {
			finish = impliedFinish(m)
		}
		if m.Status != "" || m.FinishReason != finish || m.RequestID != "" || len(m.Metadata) > 0 || m.Parts == nil {
			out = append(out, Mark{N: i, Status: m.Status, FinishReason: m.FinishReason, RequestID: m.RequestID,
				Metadata: m.Metadata, NilParts: m.Parts == nil, NoFinish: m.FinishReason == "" && finish != ""})
		}
	}
	return out
}

// encoder writes message lists of s as segments.
type encoder struct {
	s    *State
	rows *Rows
}

// segments returns msgs as segments: transcript messages and history
// rows by position, anything else inline. nil stays nil.
func (e *encoder) segments(msgs []message.Message) []Segment {
	if msgs == nil {
		return nil
	}
	out := []Segment{}
	for i := range msgs {
		m := &msgs[i]
		var last *Segment
		if len(out) > 0 {
			last = &out[len(out)-1]
		}
		if j, ok := e.transcriptIndex(m); ok {
			if last != nil && last.Run != nil && last.Run[1] == j {
				last.Run[1]++
			} else {
				out = append(out, Segment{Run: &[2]int{j, j + 1}})
			}
			continue
		}
		if seq, ok := e.rows.seqOf(m); ok {
			if last != nil && last.Seq != nil && last.Seq[1] == seq-1 {
				last.Seq[1] = seq
			} else {
				out = append(out, Segment{Seq: &[2]int64{seq, seq}})
			}
			continue
		}
		if last != nil && last.Inline != nil {
			last.Inline = append(last.Inline, *m)
		} else {
			out = append(out, Segment{Inline: []message.Message{*m}})
		}
	}
	return out
}

// transcriptIndex returns the index of the transcript message m is a copy
// of, found by its id.
func (e *encoder) transcriptIndex(m *message.Message) (int, bool) {
	p := e.s.RunID + "-m"
	if !strings.HasPrefix(m.ID, p) {
		return 0, false
	}
	n, err := strconv.Atoi(m.ID[len(p):])
	if err != nil || n < 1 || n > len(e.s.Transcript) || !same(m, &e.s.Transcript[n-1]) {
		return 0, false
	}
	return n - 1, true
}

// isMessageID reports whether id is MessageID(run, n), without building it.
func isMessageID(id, run string, n int) bool {
	return len(id) > len(run)+2 && strings.HasPrefix(id, run) && id[len(run):len(run)+2] == "-m" &&
		id[len(run)+2:] == strconv.Itoa(n)
}

// same reports whether a and b are the same message: most often copies of
// one message, whose parts share their array.
func same(a, b *message.Message) bool {
	if a.ID != b.ID || a.Role != b.Role || a.Agent != b.Agent || a.Status != b.Status ||
		a.FinishReason != b.FinishReason || a.RequestID != b.RequestID || len(a.Parts) != len(b.Parts) ||
		(a.Parts == nil) != (b.Parts == nil) || (a.Usage == nil) != (b.Usage == nil) ||
		(a.Usage != nil && *a.Usage != *b.Usage) || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	if len(a.Parts) > 0 && &a.Parts[0] != &b.Parts[0] && !reflect.DeepEqual(a.Parts, b.Parts) {
		return false
	}
	return len(a.Metadata) == 0 || reflect.ValueOf(a.Metadata).UnsafePointer() == reflect.ValueOf(b.Metadata).UnsafePointer() ||
		reflect.DeepEqual(a.Metadata, b.Metadata)
}

// transcriptUsage is the sum of the usage of the messages of tr.
func transcriptUsage(tr []message.Message) message.Usage {
	var u message.Usage
	for i := range tr {
		if tr[i].Usage != nil {
			u.Add(*tr[i].Usage)
		}
	}
	return u
}

// refersToRows reports whether v names thread rows by position.
func (v *storedState) refersToRows() bool {
	_, _, ok := (&Stored{v: v}).SeqRange()
	return ok
}

// RefersToRows reports whether the state refers to rows of its thread by
// position (see [Stored.SeqRange]).
func (s *Stored) RefersToRows() bool {
	_, _, ok := s.SeqRange()
	return ok
}
