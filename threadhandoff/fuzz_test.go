package threadhandoff

import (
	"encoding/json"
	"errors"
	"os"
	"testing"
)

// FuzzParseInterrupt checks that ParseInterrupt never panics on any body,
// that everything it accepts rebuilds a proposal, and that the proposal's
// payload parses again to the same proposal.
func FuzzParseInterrupt(f *testing.F) {
	golden, _ := os.ReadFile("testdata/interrupt_v1.json")
	f.Add(golden)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema_version":1,"middleware_source":"baton.summary.handoff","action_requests":[{"name":"handoff_summary","args":{}}]}`))
	f.Add([]byte(`{"schema_version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInterrupt(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidInterrupt) {
				t.Fatalf("error does not wrap ErrInvalidInterrupt: %v", err)
			}
			return
		}
		p := proposalOf(in, "owner")
		again, err := json.Marshal(p.Interrupt())
		if err != nil {
			t.Fatal(err)
		}
		in2, err := ParseInterrupt(again)
		if err != nil {
			t.Fatalf("payload of an accepted proposal does not parse: %v", err)
		}
		p2 := proposalOf(in2, "owner")
		if p2.Markdown != p.Markdown || !equalJSON(p2.Summary, p.Summary) || p2.HandoffID != p.HandoffID || p2.ThroughSeq != p.ThroughSeq {
			t.Fatal("round trip changed the proposal")
		}
	})
}

// FuzzParseDecision checks that ParseDecision never panics, that its
// errors are DecisionErrors, and that what it accepts is a valid decision
// whose JSON, recorded with the proposal, reads back the same.
func FuzzParseDecision(f *testing.F) {
	f.Add("approve", []byte(nil))
	f.Add("decline", []byte("null"))
	f.Add("edit", []byte(`{"summary_md":"### T\n- a","title":"T"}`))
	f.Add("edit", []byte(`{"title":1}`))
	f.Add("edit", []byte(`{"markdown":"x"}`))
	f.Add("EDIT", []byte(`{"summary_md":"\u0000"}`))
	f.Fuzz(func(t *testing.T, typ string, args []byte) {
		d, err := ParseDecision(typ, args)
		if err != nil {
			var de *DecisionError
			if !errors.As(err, &de) || !errors.Is(err, ErrInvalidDecision) || de.Field == "" {
				t.Fatalf("error is not a DecisionError with its field: %v", err)
			}
			return
		}
		if err := d.Validate(0); err != nil {
			t.Fatalf("accepted decision is invalid: %v", err)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back Decision
		if err := json.Unmarshal(b, &back); err != nil || back != d {
			t.Fatalf("decision JSON round trip: %+v -> %+v (%v)", d, back, err)
		}
	})
}
