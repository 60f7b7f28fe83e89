package server_test

import (
	"testing"

	"github.com/batonhq/baton/threadhandoff"
)

// TestChildTurnStartsAtAssistant: the first turn of a child thread starts
// at the agent whose memory holds the summary (billing, the parent's active
// agent), not at the network's entry (triage), as in the CLI; once it has
// completed, the seed is cleared and the next turn starts at the entry.
func TestChildTurnStartsAtAssistant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	child, assistant := b.handOff(t, b.thread(t, b.keyA, "support"), "I was charged twice for order 1234")
	if assistant != "billing" {
		t.Fatalf("approved with assistant %q, want billing", assistant)
	}

	firstAgent := func(input string) (agent, reason string) {
		t.Helper()
		resp, ch := b.stream(t, b.keyA, "POST", "/v1/threads/"+child+"/runs", map[string]any{"input": input, "stream": true})
		if resp.StatusCode != 200 {
			t.Fatalf("child turn %q: %d", input, resp.StatusCode)
		}
		evs := collect(t, ch, nil)
		if last := evs[len(evs)-1]; last.Type != "run_end" || last.Data["status"] != "completed" {
			t.Fatalf("child turn %q: %v", input, types(evs))
		}
		for _, e := range evs {
			if e.Type == "agent_start" {
				return e.Data["agent"].(string), e.Data["reason"].(string)
			}
		}
		t.Fatalf("child turn %q: no agent_start in %v", input, types(evs))
		return "", ""
	}
	if a, why := firstAgent("Any news on the double charge?"); a != "billing" || why != threadhandoff.PickReason {
		t.Fatalf("the child's first turn started at %s (%s); want billing (%s)", a, why, threadhandoff.PickReason)
	}
	if c, p := b.seed(t, child); c || p {
		t.Fatalf("after the child's first turn: cleanup_required %v, pending %v; want the seed cleared", c, p)
	}
	if a, why := firstAgent("Hello again"); a != "triage" || why != "entry" {
		t.Fatalf("the child's second turn started at %s (%s); want triage (entry)", a, why)
	}
}
