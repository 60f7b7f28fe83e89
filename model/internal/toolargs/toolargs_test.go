package toolargs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want string
		err  error
	}{
		{"", "{}", nil},
		{"  \n", "{}", nil},
		{"null", "{}", nil},
		{`{}`, `{}`, nil},
		{` {"a": 1} `, `{"a": 1}`, nil},
		{`"{\"a\":1}"`, `{"a":1}`, nil},
		{`{"a":`, "", ErrInvalid},
		{`{"a":1}{"b":2}`, "", ErrInvalid},
		{`[1,2]`, "", ErrNotObject},
		{`42`, "", ErrNotObject},
		{`"text"`, "", ErrNotObject},
		{`"{\"a\":"`, "", ErrNotObject},
	} {
		got, err := Normalize(tc.in)
		if !errors.Is(err, tc.err) || string(got) != tc.want {
			t.Errorf("Normalize(%q) = %s, %v; want %s, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestNewCallID(t *testing.T) {
	t.Parallel()
	a, b := NewCallID(), NewCallID()
	if a == b || !strings.HasPrefix(a, "call_") || len(a) != len("call_")+24 {
		t.Errorf("ids %q %q", a, b)
	}
}

func TestIDsUnique(t *testing.T) {
	t.Parallel()
	var ids IDs
	got := []string{ids.Unique("call_1"), ids.Unique(""), ids.Unique("call_1"), ids.Unique("call_2")}
	if got[0] != "call_1" || got[3] != "call_2" || !strings.HasPrefix(got[1], "call_") || !strings.HasPrefix(got[2], "call_") {
		t.Fatalf("ids %q", got)
	}
	if got[1] == got[2] || got[2] == "call_1" {
		t.Errorf("ids %q are not unique", got)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "{}", `"{}"`, `{"a":[1,{"b":null}]}`, `{"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Normalize(s)
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(got, &m); err != nil || m == nil {
			t.Fatalf("Normalize(%q) = %q, not an object", s, got)
		}
	})
}
