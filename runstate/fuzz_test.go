package runstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
)

// FuzzDecode checks Decode's two paths against each other: whatever the
// one-pass encoding/json/v2 path accepts, the encoding/json path accepts
// too, as the same state; what it refuses is left to the encoding/json
// path, whose errors are typed. Never a panic.
func FuzzDecode(f *testing.F) {
	valid := &State{RunID: "run", Network: "n", Fingerprint: "fp", Agent: "a", Status: StatusRunning, Step: 1,
		Messages: []message.Message{message.User("hi"), {Role: message.RoleAssistant, Parts: []message.Part{
			{Type: message.PartToolCall, CallID: "c1", Name: "t", Arguments: []byte(`{"x": [1, 2.5e3, "é"]}`)},
			{Type: message.PartImage, MediaType: "image/png", Data: []byte{0, 1, 2, 0xff}}}}},
		Pending:   []PendingCall{{Call: message.ToolCall{ID: "c1", Name: "t", Arguments: []byte(`{}`)}, Kind: CallTool}},
		StartedAt: time.Date(2026, 11, 23, 10, 0, 0, 123456789, time.UTC), Elapsed: 1500 * time.Millisecond,
		Values: map[string]json.RawMessage{"k": json.RawMessage(`{"a":1}`)},
	}
	good, err := Encode(valid)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	for _, s := range []string{
		`{"schema_version":2,"run_id":"run","agent":"a","fingerprint":"fp","status":"running","step":1}`,
		`{"Schema_Version":2,"RUN_ID":"run","agent":"a","fingerprint":"fp","status":"running","step":1}`,
		`{"schema_version":2,"run_id":"x","run_id":"run","agent":"a","fingerprint":"fp","status":"running"}`,
		`{"schema_version":2,"run_id":"r\xff","agent":"a","fingerprint":"fp","status":"running"}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","started_at":"2026-11-23T10:00:00+00:00"}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","started_at":"2026-11-23T10:00:00+02:00"}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","elapsed_ns":1e3}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","elapsed_ns":"1s"}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","messages":[{"role":"user","parts":[{"type":"image","data":"AAE="}]}]}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","messages":[{"role":"user","parts":[{"type":"image","data":"AAE"}]}]}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","pending":[{"call":{"id":"c","arguments": { "a" : 1 } },"kind":"tool"}]}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","values":{"k":null,"k":1}}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","transfer":{"data":{"n":1.5,"l":[true,null]}}}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"interrupted"}`,
		`{"schema_version":2,"run_id":"r","agent":"a","fingerprint":"fp","status":"running"} {}`,
		`{"schema_version":3}`,
		// Schema version 1, before transfers had their names.
		`{"schema_version":1,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","handoffs":2,"handoff":{"id":"r-h2","from":"b","to":"a","type":"return","history":"full"},"stack":[{"agent":"b","messages":null,"handoff":{"id":"r-h1","from":"x","to":"b","type":"transfer","history":"none","data":{"k":[1]}},"handoff_id":"r-h2"}],"pending":[{"call":{"id":"c"},"kind":"handoff"},{"call":{"id":"d"},"kind":"tool"}]}`,
		`{"schema_version":1,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","transfers":1}`,
		`{"schema_version":1,"run_id":"r","agent":"a","fingerprint":"fp","status":"running","stack":[{"agent":"b","transfer_id":"x"}]}`,
		`null`, ``, "\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeFast(b)
		slow, slowErr := decodeStd(b)
		if ok {
			if slowErr != nil {
				t.Fatalf("the v2 path accepted what encoding/json refuses (%v)", slowErr)
			}
			fb, err1 := Encode(fast)
			sb, err2 := Encode(slow)
			if err1 != nil || err2 != nil || !bytes.Equal(fb, sb) {
				t.Fatalf("the paths decode differently:\nv2:   %s\nv1:   %s", fb, sb)
			}
			if !fast.StartedAt.Equal(slow.StartedAt) || !reflect.DeepEqual(fast.Messages, slow.Messages) ||
				!reflect.DeepEqual(fast.Pending, slow.Pending) || !reflect.DeepEqual(fast.Values, slow.Values) {
				t.Fatalf("the paths decode differently:\nv2: %+v\nv1: %+v", fast, slow)
			}
		}
		got, err := Decode(b)
		if (err == nil) != (ok || slowErr == nil) {
			t.Fatalf("Decode = %v; fast %v, encoding/json %v", err, ok, slowErr)
		}
		if err != nil {
			var ve *VersionError
			if !errors.Is(err, ErrCorrupt) && !errors.As(err, &ve) {
				t.Fatalf("error %v (%T) is neither ErrCorrupt nor a *VersionError", err, err)
			}
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("Decode returned a state that does not validate: %v", err)
		}
		// Whatever was read, a version 1 state included, is written and
		// read back as the same current state.
		enc, err := Encode(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode of Encode's output: %v\n%s", err, enc)
		}
		if enc2, _ := Encode(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding differs:\n%s\n%s", enc, enc2)
		}
	})
}

// FuzzRunOfInterrupt: RunOfInterrupt undoes InterruptID for every run and
// step, and what it accepts is always of that form.
func FuzzRunOfInterrupt(f *testing.F) {
	f.Add("run_abc", 3, "run_abc-i3")
	f.Add("a-i", 0, "a-i-i")
	f.Add("", 1, "-i1")
	f.Fuzz(func(t *testing.T, run string, step int, id string) {
		if run != "" && step >= 0 {
			if got, ok := RunOfInterrupt(InterruptID(run, step)); !ok || got != run {
				t.Fatalf("RunOfInterrupt(InterruptID(%q, %d)) = %q, %v", run, step, got, ok)
			}
		}
		if r, ok := RunOfInterrupt(id); ok {
			if r == "" || !strings.HasPrefix(id, r+"-i") {
				t.Fatalf("RunOfInterrupt(%q) = %q: not the id's run", id, r)
			}
			if _, err := strconv.ParseUint(id[len(r)+2:], 10, 64); err != nil && len(id[len(r)+2:]) < 19 {
				t.Fatalf("RunOfInterrupt(%q) accepted step %q", id, id[len(r)+2:])
			}
		}
	})
}
