package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/jsonscan"
)

// seeds are inputs at the edges of JSON's grammar and of encoding/json.
var seeds = []string{
	``, ` `, `{}`, ` { } `, `[]`, `[ ]`, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`,
	`1e`, `1e+`, `1E-7`, `-12.5e+10`, `.5`, `+1`, `"a"`, `"\u00e9\n\"\\\/\b\f\r\t"`, `"\u12"`, `"\x"`, "\"\x01\"",
	"\"\xff\"", "\"\xc3\xa9\"", `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1}x`, `{"a":1} {}`,
	`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":null}]},"d":"e"}`, `[1,2,]`, `[1 2]`, `{"\u0061":1,"a":2}`, "{\"\xff\":1}",
	"\xef\xbb\xbf{}", "{\"a\":1}\n", "\t[\r\n]", `{"reason":"x","expected_output":"y","n":[1,2]}`,
	strings.Repeat(`[`, jsonscan.MaxDepth) + strings.Repeat(`]`, jsonscan.MaxDepth),
	strings.Repeat(`[`, jsonscan.MaxDepth+1) + strings.Repeat(`]`, jsonscan.MaxDepth+1),
	`{"a":` + strings.Repeat(`{"a":`, jsonscan.MaxDepth-1) + `1` + strings.Repeat(`}`, jsonscan.MaxDepth),
	`{"a":` + strings.Repeat(`{"a":`, jsonscan.MaxDepth) + `1` + strings.Repeat(`}`, jsonscan.MaxDepth+1),
}

// TestValid checks Valid against json.Valid on the seeds.
func TestValid(t *testing.T) {
	t.Parallel()
	for _, s := range seeds {
		if got, want := jsonscan.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.40q) = %v, want %v", s, got, want)
		}
	}
}

// TestMembers checks Members on an object with repeated, escaped and nested
// members, and on values that are not one object.
func TestMembers(t *testing.T) {
	t.Parallel()
	var keys, values []string
	ok := jsonscan.Members([]byte(` {"a" : 1, "b\n":{"c":[1]},"a":"x" } `), func(k, v []byte) {
		keys, values = append(keys, string(k)), append(values, string(v))
	})
	if !ok || strings.Join(keys, "|") != `a|b\n|a` || strings.Join(values, "|") != `1|{"c":[1]}|"x"` {
		t.Errorf("Members = %v, %q, %q", ok, keys, values)
	}
	for _, s := range []string{``, `[]`, `1`, `{"a":1}x`, `{"a":1,}`, `{"a"}`} {
		if jsonscan.Members([]byte(s), func(k, v []byte) {}) {
			t.Errorf("Members(%q) = true, want false", s)
		}
	}
}

// TestUnquote checks Unquote against encoding/json.
func TestUnquote(t *testing.T) {
	t.Parallel()
	for _, s := range []string{`""`, `"abc"`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", "\"\xc3\xa9\"", `"\ud800"`} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if got := jsonscan.Unquote([]byte(s[1 : len(s)-1])); got != want {
			t.Errorf("Unquote(%q) = %q, want %q", s, got, want)
		}
	}
}

// TestAllocs checks that validating and iterating allocate nothing.
func TestAllocs(t *testing.T) {
	b := []byte(`{"reason":"duplicate charge","account_id":"acct_42","priority":2,"tags":["a",{"b":null}]}`)
	n := testing.AllocsPerRun(100, func() {
		if !jsonscan.Valid(b) || !jsonscan.Members(b, func(k, v []byte) {}) {
			t.Fatal("invalid")
		}
	})
	if n != 0 {
		t.Errorf("allocs = %v, want 0", n)
	}
}

// FuzzScan holds Valid to json.Valid, Members to a decode into
// map[string]json.RawMessage (the last of repeated keys wins there), and
// Unquote of every plain key to encoding/json.
func FuzzScan(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonscan.Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid = %v", b, got, want)
		}
		got := map[string]json.RawMessage{}
		ok := jsonscan.Members(b, func(k, v []byte) {
			tok := append(append([]byte{'"'}, k...), '"')
			key := jsonscan.Unquote(k)
			var want string
			if err := json.Unmarshal(tok, &want); err != nil || key != want {
				t.Fatalf("key %q: Unquote = %q, encoding/json = %q (%v)", k, key, want, err)
			}
			if jsonscan.Plain(k) && key != string(k) {
				t.Fatalf("plain key %q decodes to %q", k, key)
			}
			got[key] = bytes.Clone(v)
		})
		var want map[string]json.RawMessage
		err := json.Unmarshal(b, &want)
		if ok != (err == nil && want != nil) {
			t.Fatalf("Members(%q) = %v, json.Unmarshal: %v", b, ok, err)
		}
		if ok && !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
			t.Fatalf("Members(%q) = %q, want %q", b, got, want)
		}
	})
}
