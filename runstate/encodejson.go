package runstate

import (
	"strconv"
	"time"

	"github.com/batonhq/baton/internal/jsonfast"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/transfer"
)

// This file writes a state, whole ([Encode]) or in the stored form
// ([EncodeStored]), without encoding/json's reflection, which was most of
// the CPU a checkpoint step spends outside SQLite (bench/RESULTS.md): byte
// for byte what json.Marshal writes, or, for a value it does not write
// (a json.RawMessage that is not valid JSON, a time outside years 0 to
// 9999, metadata of types jsonfast does not know), nothing, and the caller
// calls json.Marshal, which writes it or gives its error. FuzzEncodeFast
// holds the two to each other; TestEncodeFastKnowsEveryField fails when a
// field is added to a type it writes and not to it.

// appender's methods append JSON to the b they are given, and return it;
// ok turns false at the first value they do not write, after which what
// they return does not matter. (b is passed, not kept in the appender: a
// slice stored through a pointer costs a write barrier per append while
// the garbage collector runs.)
type appender struct {
	ok bool
}

// sizeHint is a guess at the length of the JSON of msgs, so that the
// buffer is grown once.
func sizeHint(msgs []message.Message) int {
	n := 0
	for i := range msgs {
		n += 96
		for j := range msgs[i].Parts {
			p := &msgs[i].Parts[j]
			n += 48 + len(p.Text) + len(p.Arguments) + len(p.Name) + len(p.CallID) + len(p.Signature) + len(p.Data)*4/3
		}
	}
	return n
}

// appendState appends s as json.Marshal writes it, with version as its
// schema_version.
func appendState(dst []byte, s *State, version int) ([]byte, bool) {
	a := appender{ok: true}
	b := appendInt(dst, `{"schema_version":`, version)
	b = appendStr(b, `,"run_id":`, s.RunID)
	b = appendOpt(b, `,"thread_id":`, s.ThreadID)
	b = appendStr(b, `,"network":`, s.Network)
	b = appendStr(b, `,"fingerprint":`, s.Fingerprint)
	b = appendStr(b, `,"agent":`, s.Agent)
	b = a.messages(append(b, `,"messages":`...), s.Messages)
	b = a.messages(append(b, `,"transcript":`...), s.Transcript)
	b = appendList(b, `,"pending":`, s.Pending, a.pendingCall)
	b = a.transfer(b, `,"transfer":`, s.Transfer)
	b = appendList(b, `,"stack":`, s.Stack, a.frame)
	b = jsonfast.AppendStringList(append(b, `,"trail":`...), s.Trail)
	b = appendInt(b, `,"turns":`, s.Turns)
	b = appendInt(b, `,"transfers":`, s.Transfers)
	b = jsonfast.AppendUsage(append(b, `,"usage":`...), &s.Usage)
	b = appendInt(b, `,"step":`, s.Step)
	b = appendStr(b, `,"status":`, string(s.Status))
	b = a.tail(b, s)
	b = a.time(append(b, `,"started_at":`...), s.StartedAt)
	b = a.rest(b, s)
	return append(b, '}'), a.ok
}

// appendStored appends v as json.Marshal writes it: State's fields that
// storedState does not shadow, in State's order, then storedState's own
// (its key's always empty).
func appendStored(dst []byte, v *storedState) ([]byte, bool) {
	if v.RunID != "" || v.ThreadID != "" || v.Network != "" || v.Fingerprint != "" || v.Step != 0 || v.Status != "" {
		return dst, false // never set: left to json.Marshal
	}
	s := &v.State
	a := appender{ok: true}
	b := appendInt(dst, `{"schema_version":`, s.SchemaVersion)
	b = appendStr(b, `,"agent":`, s.Agent)
	b = appendList(b, `,"pending":`, s.Pending, a.pendingCall)
	b = a.transfer(b, `,"transfer":`, s.Transfer)
	b = jsonfast.AppendStringList(append(b, `,"trail":`...), s.Trail)
	b = a.tail(b, s)
	b = a.rest(b, s)
	b = a.segments(append(b, `,"messages":`...), v.Messages)
	if v.Transcript != nil {
		b = a.messages(append(b, `,"transcript":`...), *v.Transcript)
	}
	if v.TranscriptRows != 0 {
		b = appendInt(b, `,"transcript_rows":`, v.TranscriptRows)
	}
	b = appendList(b, `,"marks":`, v.Marks, a.mark)
	b = appendList(b, `,"stack":`, v.Stack, a.storedFrame)
	if v.Turns != 0 {
		b = appendInt(b, `,"turns":`, v.Turns)
	}
	if v.Transfers != 0 {
		b = appendInt(b, `,"transfers":`, v.Transfers)
	}
	if v.Usage != nil {
		b = jsonfast.AppendUsage(append(b, `,"usage":`...), v.Usage)
	}
	b = append(b, `,"started_at":`...)
	if t := v.StartedAt; t.nano && t.inNanos() {
		b = strconv.AppendInt(b, t.t.UnixNano(), 10)
	} else {
		b = a.time(b, t.t)
	}
	if v.FinalLast {
		b = append(b, `,"final_last":true`...)
	}
	return append(b, '}'), a.ok
}

// tail appends s's interrupt, failure and final output, which follow its
// status.
func (a *appender) tail(b []byte, s *State) []byte {
	if in := s.Interrupt; in != nil {
		b = appendInt(b, `,"interrupt":{"schema_version":`, in.SchemaVersion)
		b = appendStr(b, `,"interrupt_id":`, in.ID)
		b = appendStr(b, `,"source":`, in.Source)
		b = appendArray(append(b, `,"action_requests":`...), in.ActionRequests, a.actionRequest)
		b = append(b, '}')
	}
	if f := s.Failure; f != nil {
		b = appendStr(b, `,"failure":{"kind":`, f.Kind)
		b = appendStr(b, `,"message":`, f.Message)
		b = appendOpt(b, `,"limit":`, f.Limit)
		b = appendOpt(b, `,"request_id":`, f.RequestID)
		b = append(b, '}')
	}
	return appendOpt(b, `,"final_output":`, s.FinalOutput)
}

// rest appends s's elapsed time, event number, values and memos, its
// last fields.
func (a *appender) rest(b []byte, s *State) []byte {
	b = strconv.AppendInt(append(b, `,"elapsed_ns":`...), int64(s.Elapsed), 10)
	b = appendInt(b, `,"seq":`, s.Seq)
	var ok bool
	if len(s.Values) > 0 {
		if b, ok = jsonfast.AppendRawMap(append(b, `,"values":`...), s.Values); !ok {
			a.ok = false
		}
	}
	if len(s.Memos) > 0 {
		if b, ok = jsonfast.AppendRawMap(append(b, `,"memos":`...), s.Memos); !ok {
			a.ok = false
		}
	}
	return b
}

// appendList appends name and l as a JSON array, each element as elem
// writes it, and nothing for an empty l (a field of omitempty).
func appendList[T any](b []byte, name string, l []T, elem func([]byte, *T) []byte) []byte {
	if len(l) == 0 {
		return b
	}
	return appendArray(append(b, name...), l, elem)
}

// appendArray appends l as a JSON array, each element as elem writes it:
// null for nil.
func appendArray[T any](b []byte, l []T, elem func([]byte, *T) []byte) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, &l[i])
	}
	return append(b, ']')
}

// appendInt appends the member name (with its comma) and n.
func appendInt(b []byte, name string, n int) []byte {
	return strconv.AppendInt(append(b, name...), int64(n), 10)
}

// appendStr appends the member name (with its comma) and the string s.
func appendStr(b []byte, name, s string) []byte {
	return jsonfast.AppendString(append(b, name...), s)
}

// appendOpt is appendStr for a field of omitempty: nothing for "".
func appendOpt(b []byte, name, s string) []byte {
	if s != "" {
		b = appendStr(b, name, s)
	}
	return b
}

func (a *appender) rawJSON(b []byte, r []byte) []byte {
	b, ok := jsonfast.AppendRaw(b, r)
	if !ok {
		a.ok = false
	}
	return b
}

// time appends t as its MarshalJSON writes it (RFC 3339 with nanoseconds);
// a time it refuses is left to json.Marshal.
func (a *appender) time(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b2, err := t.AppendText(b)
	if err != nil {
		a.ok = false
		return b
	}
	return append(b2, '"')
}

func (a *appender) messages(b []byte, msgs []message.Message) []byte {
	return appendArray(b, msgs, a.message)
}

func (a *appender) message(b []byte, m *message.Message) []byte {
	b = append(b, '{')
	if m.ID != "" {
		b = append(appendStr(b, `"id":`, m.ID), ',')
	}
	b = appendStr(b, `"role":`, string(m.Role))
	b = appendOpt(b, `,"agent":`, m.Agent)
	b = appendArray(append(b, `,"parts":`...), m.Parts, a.part)
	if m.Usage != nil {
		b = jsonfast.AppendUsage(append(b, `,"usage":`...), m.Usage)
	}
	b = appendOpt(b, `,"status":`, string(m.Status))
	b = appendOpt(b, `,"finish_reason":`, m.FinishReason)
	b = appendOpt(b, `,"request_id":`, m.RequestID)
	b = a.metadata(b, m.Metadata)
	return append(b, '}')
}

// metadata appends the member metadata, nothing for an empty md
// (omitempty).
func (a *appender) metadata(b []byte, md map[string]any) []byte {
	if len(md) == 0 {
		return b
	}
	b, ok := jsonfast.AppendObject(append(b, `,"metadata":`...), md, 0)
	if !ok {
		a.ok = false
	}
	return b
}

func (a *appender) part(b []byte, p *message.Part) []byte {
	b = appendStr(b, `{"type":`, string(p.Type))
	b = appendOpt(b, `,"text":`, p.Text)
	b = appendOpt(b, `,"call_id":`, p.CallID)
	b = appendOpt(b, `,"name":`, p.Name)
	if len(p.Arguments) > 0 {
		b = a.rawJSON(append(b, `,"arguments":`...), p.Arguments)
	}
	if p.IsError {
		b = append(b, `,"is_error":true`...)
	}
	b = appendOpt(b, `,"provider":`, p.Provider)
	b = appendOpt(b, `,"signature":`, p.Signature)
	b = appendOpt(b, `,"id":`, p.ID)
	b = appendOpt(b, `,"media_type":`, p.MediaType)
	b = appendOpt(b, `,"url":`, p.URL)
	if len(p.Data) > 0 {
		b = jsonfast.AppendBytes(append(b, `,"data":`...), p.Data)
	}
	return append(b, '}')
}

func (a *appender) pendingCall(b []byte, c *PendingCall) []byte {
	b = appendStr(b, `{"call":{"id":`, c.Call.ID)
	b = appendStr(b, `,"name":`, c.Call.Name)
	b = a.rawJSON(append(b, `,"arguments":`...), c.Call.Arguments)
	b = appendStr(b, `},"kind":`, string(c.Kind))
	if r := c.Result; r != nil {
		b = appendStr(b, `,"result":{"output":`, r.Output)
		if r.IsError {
			b = append(b, `,"is_error":true`...)
		}
		b = append(b, '}')
	}
	if c.Approved {
		b = append(b, `,"approved":true`...)
	}
	return append(b, '}')
}

func (a *appender) actionRequest(b []byte, r *ActionRequest) []byte {
	b = appendStr(b, `{"name":`, r.Name)
	b = a.rawJSON(append(b, `,"args":`...), r.Args)
	b = appendOpt(b, `,"call_id":`, r.CallID)
	b = appendOpt(b, `,"description":`, r.Description)
	return append(b, '}')
}

func (a *appender) frame(b []byte, f *Frame) []byte {
	b = appendStr(b, `{"agent":`, f.Agent)
	b = a.messages(append(b, `,"messages":`...), f.Messages)
	b = a.transfer(b, `,"transfer":`, f.Transfer)
	b = appendStr(b, `,"transfer_id":`, f.TransferID)
	return append(b, '}')
}

func (a *appender) storedFrame(b []byte, f *storedFrame) []byte {
	b = appendStr(b, `{"agent":`, f.Agent)
	b = a.transfer(b, `,"transfer":`, f.Transfer)
	b = appendStr(b, `,"transfer_id":`, f.TransferID)
	b = a.segments(append(b, `,"messages":`...), f.Messages)
	return append(b, '}')
}

// transfer appends the member name and tc, nothing for nil (omitempty).
func (a *appender) transfer(b []byte, name string, tc *transfer.Context) []byte {
	if tc == nil {
		return b
	}
	b = appendStr(append(b, name...), `{"id":`, tc.ID)
	b = appendStr(b, `,"from":`, tc.From)
	b = appendStr(b, `,"to":`, tc.To)
	b = appendStr(b, `,"type":`, string(tc.Type))
	b = appendOpt(b, `,"tool":`, tc.Tool)
	b = appendOpt(b, `,"reason":`, tc.Reason)
	b = appendOpt(b, `,"expected_output":`, tc.ExpectedOutput)
	if len(tc.Data) > 0 {
		b = a.rawJSON(append(b, `,"data":`...), tc.Data)
	}
	b = appendStr(b, `,"history":`, string(tc.History))
	if len(tc.Transforms) > 0 {
		b = jsonfast.AppendStringList(append(b, `,"transforms":`...), tc.Transforms)
	}
	return append(b, '}')
}

func (a *appender) segments(b []byte, segs []Segment) []byte {
	return appendArray(b, segs, a.segment)
}

func (a *appender) segment(b []byte, g *Segment) []byte {
	b = append(b, '{')
	sep := ""
	if g.Seq != nil {
		b = strconv.AppendInt(append(b, `"seq":[`...), g.Seq[0], 10)
		b = strconv.AppendInt(append(b, ','), g.Seq[1], 10)
		b, sep = append(b, ']'), ","
	}
	if g.Run != nil {
		b = appendInt(b, sep+`"run":[`, g.Run[0])
		b = appendInt(b, ",", g.Run[1])
		b, sep = append(b, ']'), ","
	}
	if len(g.Inline) > 0 {
		b = a.messages(append(b, sep+`"m":`...), g.Inline)
	}
	return append(b, '}')
}

func (a *appender) mark(b []byte, m *Mark) []byte {
	b = appendInt(b, `{"n":`, m.N)
	b = appendOpt(b, `,"status":`, string(m.Status))
	b = appendOpt(b, `,"finish_reason":`, m.FinishReason)
	b = appendOpt(b, `,"request_id":`, m.RequestID)
	b = a.metadata(b, m.Metadata)
	if m.NilParts {
		b = append(b, `,"nil_parts":true`...)
	}
	if m.NoFinish {
		b = append(b, `,"no_finish":true`...)
	}
	return append(b, '}')
}
