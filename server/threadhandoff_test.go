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
	thread := b.thread(t, b.keyA, "support")
	if r := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I was charged twice for order 1234"}); r.status != 200 {
		t.Fatalf("run: %d %s", r.status, r.body)
	}
	r := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/handoff", nil)
	var in map[string]any
	r.json(t, &in)
	r = b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/handoff", map[string]any{"interrupt": in, "decision": map[string]any{"type": "approve"}})
	var out struct {
		Child     string `json:"child_thread_id"`
		Assistant string `json:"assistant_id"`
	}
	r.json(t, &out)
	if r.status != 200 || out.Child == "" || out.Assistant != "billing" {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}

	firstAgent := func(input string) (agent, reason string) {
		t.Helper()
		resp, ch := b.stream(t, b.keyA, "POST", "/v1/threads/"+out.Child+"/runs", map[string]any{"input": input, "stream": true})
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
	var th struct {
		Metadata struct {
			Handoff struct {
				CleanupRequired bool `json:"cleanup_required"`
				Pending         bool `json:"pending"`
			} `json:"handoff"`
		} `json:"metadata"`
	}
	b.do(t, b.keyA, "GET", "/v1/threads/"+out.Child, nil).json(t, &th)
	if th.Metadata.Handoff.CleanupRequired || th.Metadata.Handoff.Pending {
		t.Fatalf("after the child's first turn: %+v; want the seed cleared", th.Metadata.Handoff)
	}
	if a, why := firstAgent("Hello again"); a != "triage" || why != "entry" {
		t.Fatalf("the child's second turn started at %s (%s); want triage (entry)", a, why)
	}
}
