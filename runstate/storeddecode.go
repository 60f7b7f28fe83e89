package runstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/batonhq/baton/message"
)

// Stored is a state read in its stored form, before the rows it refers to
// are read: see [Stored.State].
type Stored struct {
	full *State       // a state of version 1 or 2: complete
	v    *storedState // a state of the stored form
}

// DecodeStored parses b as written by [EncodeStored] or [Encode] (any
// version [Decode] reads). Its errors are those of Decode: wrapping
// [ErrCorrupt], or a *[VersionError].
func DecodeStored(b []byte) (*Stored, error) {
	if st, ok := decodeStoredFast(b); ok {
		return st, nil
	}
	return decodeStoredSlow(b)
}

// decodeStoredSlow is DecodeStored without decodeStoredFast.
func decodeStoredSlow(b []byte) (*Stored, error) {
	if s, ok := decodeFast(b); ok {
		return &Stored{full: s}, nil
	}
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil || head.SchemaVersion == nil || (*head.SchemaVersion != StoredVersion && *head.SchemaVersion != storedV3) {
		s, err := decodeStd(b)
		if err != nil {
			return nil, err
		}
		return &Stored{full: s}, nil
	}
	v := new(storedState)
	if err := decodeStrict(b, v); err != nil {
		return nil, err
	}
	if err := v.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &Stored{v: v}, nil
}

// The openings EncodeStored writes (schema_version is its first key), of
// the stored form's versions.
var (
	storedOpening   = []byte(`{"schema_version":` + strconv.Itoa(StoredVersion) + `,`)
	storedV3Opening = []byte(`{"schema_version":` + strconv.Itoa(storedV3) + `,`)
)

// decodeStoredFast decodes b in one pass when it opens as EncodeStored
// writes a stored form, skipping what DecodeStored tries first for the
// other forms (decodeFast, which such a b always fails, and the reading of
// its version). It reports false, for DecodeStored's own path, for
// anything it would not decode as that path does: another opening, an
// error, a schema_version that a later duplicate key changed.
func decodeStoredFast(b []byte) (*Stored, bool) {
	version := StoredVersion
	switch {
	case bytes.HasPrefix(b, storedOpening):
	case bytes.HasPrefix(b, storedV3Opening):
		version = storedV3
	default:
		return nil, false
	}
	v := new(storedState)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || len(bytes.TrimLeft(b[dec.InputOffset():], " \t\r\n")) > 0 ||
		v.SchemaVersion != version || v.check() != nil {
		return nil, false // and nothing but whitespace after the object, as json.Unmarshal
	}
	return &Stored{v: v}, true
}

// check reports what makes v a stored form that cannot name a state.
func (v *storedState) check() error {
	v.State.Messages, v.State.Transcript, v.State.Stack = nil, nil, nil
	if v.RunID != "" || v.ThreadID != "" || v.Network != "" || v.Fingerprint != "" || v.Step != 0 || v.Status != "" {
		return errors.New("the stored form has a key: its row holds it")
	}
	v4 := v.SchemaVersion > storedV3
	if v.TranscriptRows < 0 || v.TranscriptRows > maxStoredRows {
		return fmt.Errorf("transcript_rows %d out of range", v.TranscriptRows)
	}
	if v.Transcript == nil {
		if !v4 {
			return errors.New("no transcript")
		}
		v.Transcript = &[]message.Message{}
	}
	if !v4 && (v.FinalLast || v.StartedAt.nano) {
		return errors.New("a version 4 field in a state of version 3")
	}
	if err := checkMarks(v.Marks, v.TranscriptRows, v4); err != nil {
		return err
	}
	total := v.TranscriptRows + len(*v.Transcript)
	if v.FinalLast && (total == 0 || v.State.FinalOutput != "") {
		return errors.New("final_last with no transcript or with a final output")
	}
	if err := checkSegments(v.Messages, total); err != nil {
		return fmt.Errorf("messages: %w", err)
	}
	for i := range v.Stack {
		if err := checkSegments(v.Stack[i].Messages, total); err != nil {
			return fmt.Errorf("stack frame %d: %w", i, err)
		}
	}
	return nil
}

// checkMarks checks the marks of a stored form of version 4 (v4) or 3 with
// n transcript rows: in order, each of a row, no_finish only in version 4
// and without a finish reason.
func checkMarks(marks []Mark, n int, v4 bool) error {
	prev := -1
	for _, m := range marks {
		if m.N <= prev || m.N >= n {
			return fmt.Errorf("mark of message %d out of order or range", m.N)
		}
		if m.NoFinish && (!v4 || m.FinishReason != "") {
			return fmt.Errorf("mark of message %d: no_finish with a finish reason, or in version 3", m.N)
		}
		prev = m.N
	}
	return nil
}

// checkSegments checks segs against a transcript of n messages.
func checkSegments(segs []Segment, n int) error {
	for i, s := range segs {
		set := 0
		if s.Seq != nil {
			set++
			if s.Seq[0] < 1 || s.Seq[1] < s.Seq[0] || s.Seq[1]-s.Seq[0] >= maxStoredRange {
				return fmt.Errorf("segment %d: rows %d to %d", i, s.Seq[0], s.Seq[1])
			}
		}
		if s.Run != nil {
			set++
			if s.Run[0] < 0 || s.Run[1] <= s.Run[0] || s.Run[1] > n {
				return fmt.Errorf("segment %d: transcript %d to %d of %d", i, s.Run[0], s.Run[1], n)
			}
		}
		if s.Inline != nil {
			set++
		}
		if set != 1 {
			return fmt.Errorf("segment %d names %d kinds of messages", i, set)
		}
	}
	return nil
}

// TranscriptRows is how many of the state's first transcript messages are
// rows of its thread, with ids MessageID(run, 1) … MessageID(run, n): the
// rows [Stored.State] needs as transcript. 0 for a complete state.
func (s *Stored) TranscriptRows() int {
	if s.v == nil {
		return 0
	}
	return s.v.TranscriptRows
}

// SeqRange returns the smallest range of thread rows, by position, that
// holds every row the state refers to; ok is false when it refers to none.
func (s *Stored) SeqRange() (from, to int64, ok bool) {
	if s.v == nil {
		return 0, 0, false
	}
	each := func(segs []Segment) {
		for _, g := range segs {
			if g.Seq == nil {
				continue
			}
			if !ok || g.Seq[0] < from {
				from = g.Seq[0]
			}
			if !ok || g.Seq[1] > to {
				to = g.Seq[1]
			}
			ok = true
		}
	}
	each(s.v.Messages)
	for i := range s.v.Stack {
		each(s.v.Stack[i].Messages)
	}
	return from, to, ok
}

// State returns the state of key k (a complete state has its own: the
// caller checks it is k), its messages read from rows: transcript are the
// run's first [Stored.TranscriptRows] messages in order (ids
// MessageID(k.RunID, 1…n)), and bySeq returns
// the thread's row at a position within [Stored.SeqRange]. It returns the
// Rows to write the run's next checkpoints with (nil for a complete
// state). A row missing, or of another id, is an error wrapping
// [ErrCorrupt]. The state is new at every call.
func (s *Stored) State(k Key, transcript []message.Message, bySeq func(seq int64) (*message.Message, bool)) (*State, *Rows, error) {
	if s.v == nil {
		if len(transcript) > 0 {
			return nil, nil, fmt.Errorf("%w: rows given for a complete state", ErrCorrupt)
		}
		return s.full, nil, nil
	}
	v := s.v
	if len(transcript) != v.TranscriptRows {
		return nil, nil, fmt.Errorf("%w: %d transcript rows of run %s found, the state has %d", ErrCorrupt, len(transcript), k.RunID, v.TranscriptRows)
	}
	v4 := v.SchemaVersion > storedV3
	st := new(State)
	*st = v.State
	st.SchemaVersion = SchemaVersion
	st.RunID, st.ThreadID, st.Network, st.Fingerprint, st.Step, st.Status = k.RunID, k.ThreadID, k.Network, k.Fingerprint, k.Step, k.Status
	st.Turns, st.Transfers, st.StartedAt = v.Turns, v.Transfers, v.StartedAt.t
	st.Transcript = make([]message.Message, 0, v.TranscriptRows+len(*v.Transcript))
	marks := v.Marks
	for i := range transcript {
		m := transcript[i]
		if !isMessageID(m.ID, k.RunID, i+1) {
			return nil, nil, fmt.Errorf("%w: transcript row %d is message %q", ErrCorrupt, i+1, m.ID)
		}
		m.Status, m.FinishReason, m.RequestID, m.Metadata = "", "", "", nil
		if v4 {
			m.FinishReason = impliedFinish(&m)
		}
		if len(marks) > 0 && marks[0].N == i {
			k := marks[0]
			m.Status, m.RequestID, m.Metadata = k.Status, k.RequestID, maps.Clone(k.Metadata)
			if k.FinishReason != "" || k.NoFinish || !v4 {
				m.FinishReason = k.FinishReason
			}
			if k.NilParts && len(m.Parts) == 0 {
				m.Parts = nil
			}
			marks = marks[1:]
		}
		st.Transcript = append(st.Transcript, m)
	}
	st.Transcript = append(st.Transcript, *v.Transcript...)
	switch {
	case v.Usage != nil:
		st.Usage = *v.Usage
	case v4:
		st.Usage = transcriptUsage(st.Transcript)
	}
	if v.FinalLast {
		st.FinalOutput = st.Transcript[len(st.Transcript)-1].Text()
	}
	d := decoder{st: st, bySeq: bySeq, seen: map[int64]bool{}}
	var err error
	if st.Messages, err = d.messages(v.Messages); err != nil {
		return nil, nil, err
	}
	if v.Stack != nil {
		st.Stack = make([]Frame, len(v.Stack))
		for i := range v.Stack {
			st.Stack[i] = v.Stack[i].Frame
			if st.Stack[i].Messages, err = d.messages(v.Stack[i].Messages); err != nil {
				return nil, nil, err
			}
		}
	}
	if err := st.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return st, NewRows(v.TranscriptRows, d.history), nil
}

// decoder resolves segments for State.
type decoder struct {
	st      *State
	bySeq   func(int64) (*message.Message, bool)
	seen    map[int64]bool
	history []Row
}

func (d *decoder) messages(segs []Segment) ([]message.Message, error) {
	if segs == nil {
		return nil, nil
	}
	out := []message.Message{}
	for _, g := range segs {
		switch {
		case g.Run != nil:
			out = append(out, d.st.Transcript[g.Run[0]:g.Run[1]]...)
		case g.Seq != nil:
			for seq := g.Seq[0]; seq <= g.Seq[1]; seq++ {
				m, ok := d.bySeq(seq)
				if !ok || m == nil {
					return nil, fmt.Errorf("%w: row %d of thread %s is missing", ErrCorrupt, seq, d.st.ThreadID)
				}
				if !d.seen[seq] {
					d.seen[seq] = true
					d.history = append(d.history, Row{Seq: seq, Message: *m})
				}
				out = append(out, *m)
			}
		default:
			out = append(out, g.Inline...)
		}
	}
	return out, nil
}
