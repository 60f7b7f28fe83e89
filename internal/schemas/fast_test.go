package schemas

import (
	"encoding/json"
	"strings"
	"testing"
)

// fastSchemas are schemas of the fast subset, as For, transfers and tools
// write them, and some that are not.
var fastSchemas = []string{
	`{"type":"object"}`,
	// transfer.DefaultContextSchema
	`{"type":"object","properties":{"reason":{"type":"string","description":"Why the conversation is being transferred."},"expected_output":{"type":"string","description":"What the receiving agent should produce."}},"additionalProperties":true}`,
	// For of a struct with a string, an int, a float pointer, a slice and a bool
	`{"properties":{"reason":{"type":"string"},"account_id":{"type":"string"},"priority":{"type":"integer"},"opt":{"type":"number","description":"hi"},"tags":{"items":{"type":"string"},"type":"array"},"b":{"type":"boolean"}},"additionalProperties":false,"type":"object","required":["reason","account_id","priority","b"]}`,
	`{"type":"object","properties":{"n":{"type":["integer","null"]},"o":{"type":"object","properties":{"x":true,"y":false},"required":["x"]},"a":{"items":{"items":{"type":"integer"}}}},"required":["n","z"]}`,
	`{"required":["a"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}}`,
	`{"properties":{"t":true,"f":false}}`,
	`{"type":["string","boolean"]}`,
	// not of the subset: the validator alone
	`{"type":"object","properties":{"s":{"type":"string","pattern":"^[0-9]+$"}}}`,
	`{"type":"object","additionalProperties":{"type":"integer"}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
}

// fastSeeds are values at the edges of the subset.
var fastSeeds = []string{
	``, ` `, `{}`, ` {} `, `[]`, `null`, `1`, `"x"`, `{`, `{"a":1}x`, `{"a":1,}`, `{"a":1} {}`,
	`{"reason":"r","account_id":"a","priority":2,"b":true}`, `{"reason":"r","account_id":"a","priority":2.0,"b":false}`,
	`{"reason":"r","account_id":"a","priority":2.5,"b":false}`, `{"reason":"r","account_id":"a","priority":25e-1,"b":false}`,
	`{"reason":"r","account_id":"a","priority":1e999999,"b":false}`, `{"reason":"r","account_id":"a","priority":10e-1,"b":true}`,
	`{"reason":"r","account_id":"a","priority":-0.0,"b":true,"tags":["x","y"]}`, `{"reason":"r","account_id":"a","priority":1,"b":true,"tags":[1]}`,
	`{"reason":"r","account_id":"a","priority":1,"b":true,"extra":1}`, `{"reason":"r","reason":1,"account_id":"a","priority":1,"b":true}`,
	`{"reason":1,"reason":"r","account_id":"a","priority":1,"b":true}`, `{"re\u0061son":"r","account_id":"a","priority":1,"b":true}`,
	`{"reason":"r","account_id":"a","priority":1}`, "{\"reason\":\"\xff\",\"account_id\":\"a\",\"priority\":1,\"b\":true}",
	`{"n":null,"z":0}`, `{"n":1,"z":0,"o":{"x":[]}}`, `{"n":1,"z":0,"o":{"x":1,"y":1}}`, `{"n":1,"z":0,"o":{}}`, `{"n":1}`,
	`{"n":1,"z":1,"a":[[1,2],[3]]}`, `{"n":1,"z":1,"a":[[1.5]]}`, `{"n":1,"z":1,"q":1}`, `{"n":"1","z":1}`,
	`[{"k":"v"},{"k":"w","x":1}]`, `[{"k":1}]`, `[{}]`, `{"a":1,"a":2}`, `{"\u0061":1}`, `{"s":"12"}`, `{"s":"x"}`,
	`{"reason":"r","account_id":"a","priority":1,"b":true,"tags":` + strings.Repeat(`[`, 1200) + strings.Repeat(`]`, 1200) + `}`,
	`{"a":` + strings.Repeat(`[`, 1200) + strings.Repeat(`]`, 1200) + `}`, `{"a":1}`,
}

func compileAll(tb testing.TB) []*Schema {
	tb.Helper()
	out := make([]*Schema, len(fastSchemas))
	for i, raw := range fastSchemas {
		s, err := Compile(json.RawMessage(raw))
		if err != nil {
			tb.Fatalf("schema %d: %v", i, err)
		}
		out[i] = s
	}
	return out
}

// slowValidate is Validate without the fast path: the validator's verdict.
func slowValidate(s *Schema, b []byte) error {
	v, err := Decode(b)
	if err != nil {
		return err
	}
	return s.ValidateValue(v)
}

// TestFastSubset checks which schemas the fast path compiles.
func TestFastSubset(t *testing.T) {
	t.Parallel()
	for i, s := range compileAll(t) {
		if want := i < 8; (s.fast != nil) != want {
			t.Errorf("schema %d: fast = %v, want %v", i, s.fast != nil, want)
		}
	}
}

// TestFastPath checks, for every schema and seed, that the fast path
// accepts only what the validator accepts, and that it does accept the
// plain valid values it is for.
func TestFastPath(t *testing.T) {
	t.Parallel()
	compiled := compileAll(t)
	accepted := map[[2]int]bool{}
	for i, s := range compiled {
		for j, v := range fastSeeds {
			slow := slowValidate(s, []byte(v))
			if s.fast != nil && s.fast.accepts([]byte(v)) {
				accepted[[2]int{i, j}] = true
				if slow != nil {
					t.Errorf("schema %d, %.60q: fast path accepts, validator says %v", i, v, slow)
				}
			}
			// (The validator's messages list map members in no set order.)
			if got := s.Validate([]byte(v)); (got == nil) != (slow == nil) {
				t.Errorf("schema %d, %.60q: Validate = %v, validator %v", i, v, got, slow)
			}
		}
	}
	for _, want := range [][2]int{{0, 2}, {1, 2}, {1, 12}, {2, 12}, {2, 13}, {2, 17}, {2, 18}, {3, 26}, {3, 27}, {3, 31}, {3, 33}, {5, 35}, {6, 7}, {7, 7}, {6, 27}, {0, 12}} {
		if !accepted[want] {
			t.Errorf("schema %d, %.60q: not accepted by the fast path", want[0], fastSeeds[want[1]])
		}
	}
}

// TestFastAllocs checks that the fast path allocates nothing.
func TestFastAllocs(t *testing.T) {
	s := compileAll(t)[2]
	b := []byte(`{"reason":"duplicate charge","account_id":"acct_42","priority":2,"b":true,"tags":["a"]}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := s.Validate(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("allocs = %v, want 0", n)
	}
}

// TestIsInteger checks the fast path's integers against the validator's.
func TestIsInteger(t *testing.T) {
	t.Parallel()
	s, err := Compile(json.RawMessage(`{"type":"integer"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, lit := range []string{"0", "-0", "2", "2.0", "2.5", "1.5e1", "15e-1", "10e-1", "100e-2", "1e-1", "0.000", "0.001",
		"-0.0e-3", "1E+2", "120e-1", "1200e-2", "5e1000", "5e1001", "1.0000000000000000000001", "123456789012345678901234567890"} {
		want := slowValidate(s, []byte(lit)) == nil
		if got := isInteger([]byte(lit)); got && !want {
			t.Errorf("isInteger(%s) = true, validator says not an integer", lit)
		} else if !got && want && lit != "5e1001" {
			t.Errorf("isInteger(%s) = false, validator says an integer", lit)
		}
	}
}

// FuzzFastPath holds the fast path to the validator: a value it accepts is
// one the validator accepts, and Validate answers as the validator does.
func FuzzFastPath(f *testing.F) {
	compiled := compileAll(f)
	for i := range compiled {
		for _, v := range fastSeeds {
			f.Add(uint8(i), []byte(v))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		s := compiled[int(which)%len(compiled)]
		slow := slowValidate(s, b)
		if s.fast != nil && s.fast.accepts(b) && slow != nil {
			t.Fatalf("schema %d, %q: fast path accepts, validator says %v", int(which)%len(compiled), b, slow)
		}
		if got := s.Validate(b); (got == nil) != (slow == nil) {
			t.Fatalf("schema %d, %q: Validate = %v, validator %v", int(which)%len(compiled), b, got, slow)
		}
	})
}
