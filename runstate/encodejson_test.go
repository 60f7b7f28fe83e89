package runstate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/transfer"
)

// checkAppendState holds appendState to json.Marshal for s: the same
// bytes when it writes s, and Encode the same as json.Marshal either way.
// It reports whether appendState wrote s.
func checkAppendState(t *testing.T, s *State) bool {
	t.Helper()
	c := *s
	c.SchemaVersion = SchemaVersion
	want, wantErr := json.Marshal(&c)
	got, ok := appendState([]byte("x"), s, SchemaVersion)
	if ok && (wantErr != nil || !bytes.Equal(got[1:], want)) {
		t.Fatalf("appendState:\n%s\njson.Marshal (%v):\n%s", got[1:], wantErr, want)
	}
	enc, err := Encode(s)
	if (err != nil) != (wantErr != nil) || (err == nil && !bytes.Equal(enc, want)) {
		t.Fatalf("Encode = %s, %v; json.Marshal = %s, %v", enc, err, want, wantErr)
	}
	return ok
}

// checkAppendStored is checkAppendState for the stored form v.
func checkAppendStored(t *testing.T, v *storedState) bool {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, ok := appendStored([]byte("x"), v)
	if ok && (wantErr != nil || !bytes.Equal(got[1:], want)) {
		t.Fatalf("appendStored:\n%s\njson.Marshal (%v):\n%s", got[1:], wantErr, want)
	}
	return ok
}

// fullState is a state with every kind of value the appenders write,
// the strings and raw values given.
func fullState(str string, raw json.RawMessage) *State {
	call := message.Message{ID: "run-m3", Role: message.RoleAssistant, Agent: str, Parts: []message.Part{
		{Type: message.PartReasoning, Text: str, Provider: "p", Signature: "sig", ID: "rs_1"},
		{Type: message.PartToolCall, CallID: "c1", Name: "t", Arguments: raw}},
		Usage: &message.Usage{InputTokens: 10, OutputTokens: 2, CachedTokens: 1}, FinishReason: "tool_calls", RequestID: "req",
		Metadata: map[string]any{str: str, "n": 1.5, "deep": map[string]any{"k": str, "b": true}}}
	msgs := []message.Message{
		{ID: "run-m1", Role: message.RoleUser, Parts: []message.Part{{Type: message.PartText, Text: str},
			{Type: message.PartImage, MediaType: "image/png", URL: "https://x/<a>&b", Data: []byte(str)}}},
		{ID: "run-m2", Role: message.RoleAssistant, Agent: "a", Parts: []message.Part{{Type: message.PartText, Text: "ok"}},
			Status: message.StatusError, Metadata: map[string]any{"k": str}},
		call,
		message.ToolResult("a", "c1", "t", str, true),
		{Role: message.RoleUser, Parts: nil},
	}
	tc := &transfer.Context{ID: "run-h1", From: "a", To: "b", Type: transfer.TypeReturn, Tool: "to_b", Reason: str,
		ExpectedOutput: str, Data: raw, History: transfer.HistoryFull, Transforms: []string{str, "x"}}
	return &State{SchemaVersion: 1, RunID: "run", ThreadID: "th", Network: "n", Fingerprint: "fp", Agent: str,
		Messages: msgs[1:], Transcript: msgs,
		Pending: []PendingCall{{Call: message.ToolCall{ID: "c1", Name: "t", Arguments: raw}, Kind: CallTool,
			Result: &Result{Output: str, IsError: true}, Approved: true}, {Call: message.ToolCall{ID: "c2"}, Kind: CallTransfer}},
		Transfer: tc, Stack: []Frame{{Agent: "a", Messages: msgs[:2], Transfer: tc, TransferID: "run-h2"}, {Agent: "c"}},
		Trail: []string{"a", str}, Turns: 3, Transfers: 1, Usage: message.Usage{InputTokens: 5, ReasoningTokens: 9},
		Step: 4, Status: StatusInterrupted,
		Interrupt: &Interrupt{SchemaVersion: 1, ID: "run-i4", Source: str, ActionRequests: []ActionRequest{
			{Name: "t", Args: raw, CallID: "c1", Description: str}, {Name: "u", Args: nil}}},
		Failure:     &Failure{Kind: "k", Message: str, Limit: "turns", RequestID: "r"},
		FinalOutput: str, StartedAt: time.Date(2026, 12, 3, 8, 0, 0, 5, time.FixedZone("X", 3600)),
		Elapsed: 3 * time.Second, Seq: 11,
		Values: map[string]json.RawMessage{str: raw, "b": json.RawMessage(`null`)},
		Memos:  map[string]json.RawMessage{"m": raw, "n": nil},
	}
}

// FuzzEncodeFast holds the appenders of Encode and EncodeStored to
// json.Marshal: for states decoded from the input, and for a state with
// every kind of value, holding any string and any raw JSON (valid or not,
// with space between tokens, <, >, &, U+2028, invalid UTF-8).
func FuzzEncodeFast(f *testing.F) {
	good, err := Encode(fullState("hi", json.RawMessage(`{"a":1}`)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "hi", []byte(`{"a":1}`))
	f.Add([]byte(`{"messages":[{"seq":[1,3]},{"run":[0,2],"m":[{"role":"user","parts":[]}]}],"transcript_rows":2,`+
		`"marks":[{"n":1,"no_finish":true,"nil_parts":true,"metadata":{"a":[1]}}],"started_at":1764748800000000005,"final_last":true,`+
		`"stack":[{"agent":"a","messages":null}],"usage":{"input_tokens":3}}`), "a<b>&c\u2028\u2029\"\\\n\x01\xff", []byte(" { \"a<\" : [ 1 , \"\u2028 \" ] } "))
	f.Add([]byte(`{"pending":[{"call":{"id":"c","arguments": { "a" : 1 } },"kind":"tool"}],"started_at":"0001-01-01T00:00:00Z"}`), "", []byte(`{"a":`))
	f.Add([]byte(`{"transfer":{"data":{"n":1.5,"l":[true,null]}},"started_at":"2026-11-23T10:00:00+02:00","values":{"k":null}}`), "é", []byte{})
	f.Add([]byte(`null`), "\xed\xa0\x80", []byte(`"\u2028\ud800"`))
	f.Fuzz(func(t *testing.T, b []byte, str string, raw []byte) {
		var s State
		if json.Unmarshal(b, &s) == nil {
			checkAppendState(t, &s)
		}
		var v storedState
		if json.Unmarshal(b, &v) == nil {
			checkAppendStored(t, &v)
		}
		full := fullState(str, raw)
		if !checkAppendState(t, full) && json.Valid(raw) {
			t.Fatalf("appendState does not write a state whose raw values are valid: %q", raw)
		}
		for _, version := range []int{storedV3, StoredVersion} {
			for _, rows := range []*Rows{NewRows(2, nil), NewRows(3, []Row{{Seq: 7, Message: full.Transcript[3]}})} {
				v, err := storedOf(full, rows, version)
				if err != nil {
					t.Fatal(err)
				}
				if !checkAppendStored(t, v) && json.Valid(raw) {
					t.Fatalf("appendStored does not write a state whose raw values are valid: %q", raw)
				}
			}
		}
	})
}

// TestEncodeFastKnowsEveryField: the appenders write every field of the
// types they write, one added later included (it fails until they know
// it): every field of a state and of its stored form set, by reflection,
// to a value they write, and the bytes compared with json.Marshal's.
func TestEncodeFastKnowsEveryField(t *testing.T) {
	t.Parallel()
	var s State
	fill(reflect.ValueOf(&s).Elem(), 0)
	if !checkAppendState(t, &s) {
		t.Fatalf("appendState does not write the state %+v", s)
	}
	var v storedState
	fill(reflect.ValueOf(&v).Elem(), 0)
	v.RunID, v.ThreadID, v.Network, v.Fingerprint, v.Step, v.Status = "", "", "", "", 0, "" // never written
	for _, nano := range []bool{false, true} {
		v.StartedAt = storedTime{t: time.Date(2026, 12, 3, 8, 0, 0, 5, time.UTC), nano: nano}
		if !checkAppendStored(t, &v) {
			t.Fatalf("appendStored does not write the stored state %+v", v)
		}
	}
}

var (
	rawType  = reflect.TypeFor[json.RawMessage]()
	timeType = reflect.TypeFor[time.Time]()
	anyMap   = reflect.TypeFor[map[string]any]()
)

// fill sets v and what it holds to values that are not zero (a slice and
// a map of one element).
func fill(v reflect.Value, depth int) {
	switch {
	case v.Type() == rawType:
		v.SetBytes([]byte(`{"k":[1,"<x>"]}`))
		return
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 12, 3, 8, 0, 0, 5, time.UTC)))
		return
	case v.Type() == anyMap:
		v.Set(reflect.ValueOf(map[string]any{"k": "v", "n": 2.5}))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s<&>")
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(7 + depth))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		if depth < 6 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), depth+1)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Slice:
		if depth < 6 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			fill(v.Index(0), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}
