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
		p, err := ProposalFromInterrupt(in, "owner", 0)
		if err != nil {
			t.Fatalf("accepted interrupt gives no proposal: %v", err)
		}
		again, err := json.Marshal(p.Interrupt())
		if err != nil {
			t.Fatal(err)
		}
		in2, err := ParseInterrupt(again)
		if err != nil {
			t.Fatalf("payload of an accepted proposal does not parse: %v", err)
		}
		p2, err := ProposalFromInterrupt(in2, "owner", 0)
		if err != nil || p2.Markdown != p.Markdown || !equalJSON(p2.Summary, p.Summary) || p2.HandoffID != p.HandoffID {
			t.Fatalf("round trip changed the proposal: %v", err)
		}
	})
}
