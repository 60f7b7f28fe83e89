package sqlcore

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/jsonfast"
	"github.com/batonhq/baton/message"
)

// FuzzUnmarshal checks jsonfast.Unmarshal against encoding/json for the
// types the store decodes with it: the same value, or an error when
// encoding/json gives one.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`[{"type":"text","text":"hi"},{"type":"tool_call","call_id":"c1","name":"t","arguments": { "a" : [1, 2.5e3, "é"] }}]`,
		`[{"type":"image","media_type":"image/png","data":"AAEC/w=="},{"type":"image","data":"AAE"}]`,
		`[{"Type":"text","TEXT":"hi"}]`, `[{"type":"text","type":"reasoning"}]`, `[{"type":"text","text":"\xff"}]`,
		`[{"type":"text","extra":1}]`, `[{"type":"tool_call","arguments":null}]`, `[]`, `null`, ` [ ] `, `[] []`, ``,
		`{"input_tokens":120,"output_tokens":18,"cached_tokens":1}`, `{"input_tokens":1e2}`, `{"input_tokens":1.5}`,
		`{"input_tokens":"1"}`, `{"input_tokens":9223372036854775808}`, `{"Input_Tokens":3}`,
		`{"model":"m","latency_ms":12.5,"n":[1,{"a":null}],"big":123456789012345678901234567890,"huge":1e400}`,
		`{"handoff_event_id":"e1"}`, `{"a":1,"a":2}`, `{}`, `{"k":{"x": 1 }}`, `"s"`, `1`, `true`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		check(t, b, new([]message.Part))
		check(t, b, new(message.Usage))
		check(t, b, new(map[string]any))
		check(t, b, new(map[string]json.RawMessage))
	})
}

func check[T any](t *testing.T, b []byte, _ *T) {
	t.Helper()
	var got, want T
	err := jsonfast.Unmarshal(b, &got)
	wantErr := json.Unmarshal(b, &want)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%T of %q: unmarshal error %v, encoding/json %v", want, b, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%T of %q: unmarshal %#v, encoding/json %#v", want, b, got, want)
	}
}

// TestCheckParams: every exported string field is checked, ids and keys
// for their length too, the first and the second time a type is seen.
func TestCheckParams(t *testing.T) {
	t.Parallel()
	type params struct {
		OwnerID string
		Name    string
		Limit   int
		note    string
		Kind    string
	}
	long := strings.Repeat("k", MaxKeyBytes+1)
	for range 2 {
		for _, tc := range []struct {
			p    *params
			want string // the field named in the error, "" for none
		}{
			{&params{OwnerID: "o", Name: long, note: "\x00"}, ""},
			{&params{OwnerID: "o\x00"}, "OwnerID"},
			{&params{OwnerID: "o", Name: "\xff"}, "Name"},
			{&params{OwnerID: "o", Kind: long}, "Kind"},
			{&params{OwnerID: long, Name: "\x00"}, "OwnerID"},
		} {
			err := checkParams(tc.p)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), ": "+tc.want+" ") {
				t.Errorf("checkParams = %v, want an error naming %q", err, tc.want)
			}
		}
	}
	if err := checkParams(nil); err != nil {
		t.Errorf("checkParams(nil) = %v", err)
	}
}
