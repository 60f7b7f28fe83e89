package transfer

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/schemas"
)

// These tests hold the in-place reading of a transfer's arguments and of
// its context data (lift, fields, oneLine) to the decoding it replaced:
// the arguments decoded into a map, the data into map[string]json.RawMessage.

// decodedFields is the data's members as a decode into a map gives them.
func decodedFields(tc *Context) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if len(tc.Data) == 0 || json.Unmarshal(tc.Data, &m) != nil {
		return nil
	}
	return m
}

// decodedRender is RenderRefs with the data decoded into a map.
func decodedRender(tc *Context) (string, bool) {
	refs := false
	var b strings.Builder
	b.WriteString("<transfer_context from=\"" + tc.From + "\" type=\"" + string(tc.Type) + "\">\n")
	line := func(s string, n int) string { // oneLine as it was: always through strings.Fields
		return clip(strings.Join(strings.Fields(s), " "), n)
	}
	if tc.Reason != "" {
		b.WriteString("reason: " + line(tc.Reason, PreviewLimit) + "\n")
	}
	if tc.ExpectedOutput != "" {
		b.WriteString("expected_output: " + line(tc.ExpectedOutput, PreviewLimit) + "\n")
	}
	fields := decodedFields(tc)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if k != "reason" && k != "expected_output" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := bytes.TrimSpace(fields[k])
		if len(v) > PreviewLimit {
			refs = true
			b.WriteString(k + ": " + line(string(v), 120) + " (" + strconv.Itoa(len(v)) + " bytes; full value: ref " + tc.Ref(k) + ")\n")
			continue
		}
		b.WriteString(k + ": " + string(v) + "\n")
	}
	b.WriteString("</transfer_context>")
	return b.String(), refs
}

// decodedLift is lift with the arguments decoded.
func decodedLift(args json.RawMessage) (tc Context, ok bool) {
	v, err := schemas.Decode(args)
	if err != nil {
		return tc, false
	}
	if m, isObj := v.(map[string]any); isObj {
		tc.Reason, _ = m["reason"].(string)
		tc.ExpectedOutput, _ = m["expected_output"].(string)
		if len(m) > 0 {
			tc.Data = args
		}
	}
	return tc, true
}

// checkContext compares the in-place reading of data with the decoding.
func checkContext(t *testing.T, data []byte, reason string) {
	t.Helper()
	if want, ok := decodedLift(data); ok {
		var got Context
		got.lift(data)
		if got.Reason != want.Reason || got.ExpectedOutput != want.ExpectedOutput || !bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil) {
			t.Fatalf("lift(%q) = %q, %q, %q; want %q, %q, %q", data, got.Reason, got.ExpectedOutput, got.Data, want.Reason, want.ExpectedOutput, want.Data)
		}
	}
	tc := &Context{ID: "run_x-h1", From: "triage", Type: TypeTransfer, Reason: reason, ExpectedOutput: reason, Data: data}
	got, gotRefs := tc.RenderRefs()
	want, wantRefs := decodedRender(tc)
	if got != want || gotRefs != wantRefs || tc.HasRefs() != wantRefs {
		t.Fatalf("RenderRefs(%q) = %q, %v; want %q, %v", data, got, gotRefs, want, wantRefs)
	}
	for k, v := range decodedFields(tc) {
		if got, ok := tc.Lookup(tc.Ref(k)); !ok || !bytes.Equal(got, v) {
			t.Fatalf("Lookup(%q) in %q = %q, %v; want %q", k, data, got, ok, v)
		}
	}
}

var contextSeeds = []string{
	``, `{}`, ` { } `, `null`, `[1]`, `"x"`, `{"reason":"r"}`, `{"reason":7}`, `{"reason":"a","reason":"b"}`,
	`{"reason":"a","reason":null}`, `{"re\u0061son":"x","expected_output":"y\nz"}`, `{"b":1,"a":{"x":[1,2]},"b":"two"}`,
	"{\"a\":\"\xff\",\"\xff\":1}", `{"a":"` + strings.Repeat("é", 300) + `"}`, `{"a":  [ 1 ,  2 ] }`, `{"a":1,}`, `{"a":1}x`,
	`{"reason":"duplicate charge on the March invoice","account_id":"acct_42","priority":2}`,
	`{"z":1,"y":2,"x":3,"w":4,"v":5,"u":6,"t":7,"s":8,"r":9,"q":10,"p":11,"o":12,"n":13,"m":14,"l":15,"k":16,"j":17,"i":18}`,
}

// TestContextReading checks the seeds with the reasons of every kind of spacing.
func TestContextReading(t *testing.T) {
	t.Parallel()
	for _, s := range contextSeeds {
		for _, r := range []string{"", "one line", " lead", "trail ", "two  spaces", "tab\there", "line\nbreak", "nbsp\u00a0here", "é"} {
			checkContext(t, []byte(s), r)
		}
	}
}

// TestContextAllocs checks that lifting and rendering a small context
// allocate only the context's strings.
func TestContextAllocs(t *testing.T) {
	args := json.RawMessage(`{"reason":"duplicate charge on the March invoice","account_id":"acct_42","priority":2}`)
	if n := testing.AllocsPerRun(100, func() {
		var tc Context
		tc.lift(args)
	}); n != 1 {
		t.Errorf("lift allocs = %v, want 1 (the reason)", n)
	}
	tc := &Context{ID: "run_x-h1", From: "triage", Type: TypeTransfer, Reason: "duplicate charge on the March invoice", Data: args}
	if n := testing.AllocsPerRun(100, func() { tc.RenderRefs() }); n != 1 {
		t.Errorf("RenderRefs allocs = %v, want 1 (the block)", n)
	}
}

// FuzzContext holds lift, RenderRefs, HasRefs and Lookup to the decoding
// they replaced, on any data and reason.
func FuzzContext(f *testing.F) {
	for _, s := range contextSeeds {
		f.Add([]byte(s), "a reason")
	}
	f.Add([]byte(`{"k":"v"}`), " spaced\t out\n")
	f.Fuzz(func(t *testing.T, data []byte, reason string) {
		checkContext(t, data, reason)
	})
}
