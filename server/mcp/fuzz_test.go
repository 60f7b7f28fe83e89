package mcp

import (
	"encoding/json"
	"errors"
	"testing"
)

// parseArgs takes any bytes: it returns arguments that hold what a call
// needs, or an errArgs, never panics; what it accepts reads back the same.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{"message":"hi"}`, `{"message":"hi","thread_id":"thr_1"}`, `{"message":"","decision":"approve","run_id":"run_1"}`,
		`{"message":"x","decision":"maybe","run_id":"r"}`, `{"message":"x","run_id":"r"}`, `{"message":1}`, `{"message":"a"} {}`, `null`, ``,
		`{"message":"hi","extra":true}`, `{"message":"\ud800"}`, `{"message":"x","thread_id":"a b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseArgs(b)
		if err != nil {
			if !errors.Is(err, errArgs) {
				t.Fatalf("error %v is not errArgs", err)
			}
			return
		}
		if a.Decision == "" && a.Message == "" || a.Decision != "" && a.RunID == "" {
			t.Fatalf("accepted %q as %+v", b, a)
		}
		again, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := parseArgs(again)
		if err != nil || *b2 != *a {
			t.Fatalf("round trip of %+v: %+v, %v", a, b2, err)
		}
	})
}
