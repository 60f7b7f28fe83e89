package server_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

// proposal is the answer of POST /v1/threads/{id}/handoff.
type proposal struct {
	InterruptID string `json:"interrupt_id"`
	ThreadID    string `json:"thread_id"`
	Kind        string `json:"kind"`
	Status      string `json:"status"`
	Stale       bool   `json:"stale"`
	Superseded  string `json:"superseded_interrupt_id"`
	DecisionURL string `json:"decision_url"`
	Payload     struct {
		SchemaVersion  int            `json:"schema_version"`
		HandoffID      string         `json:"handoff_id"`
		AssistantID    string         `json:"assistant_id"`
		ParentThreadID string         `json:"parent_thread_id"`
		Title          string         `json:"title"`
		Markdown       string         `json:"summary_md"`
		Summary        map[string]any `json:"summary_json"`
		ActionRequests []struct {
			Name string `json:"name"`
		} `json:"action_requests"`
	} `json:"payload"`
}

// outcome is the answer of a decision on a thread handoff proposal.
type outcome struct {
	InterruptID    string `json:"interrupt_id"`
	Status         string `json:"status"`
	Decision       string `json:"decision"`
	Applied        bool   `json:"applied"`
	ParentThreadID string `json:"parent_thread_id"`
	ChildThreadID  string `json:"child_thread_id"`
	AssistantID    string `json:"assistant_id"`
	Title          string `json:"title"`
	Markdown       string `json:"summary_md"`
	Edited         bool   `json:"edited"`
}

// errBody is an error answer with the fields thread handoff errors add.
type errBody struct {
	Error struct {
		Type       string  `json:"type"`
		Message    string  `json:"message"`
		Param      string  `json:"param"`
		Outcome    outcome `json:"outcome"`
		ThroughSeq int64   `json:"through_seq"`
		LastSeq    int64   `json:"last_seq"`
	} `json:"error"`
}

// propose runs a turn of input on thread (when input is not "") and
// proposes its thread handoff with body; it wants status.
func propose(t *testing.T, b *servertest.Bundle, thread, input string, body any, status int) proposal {
	t.Helper()
	if input != "" {
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": input}); r.Status != 200 {
			t.Fatalf("run: %d %s", r.Status, r.Body)
		}
	}
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/handoff", body)
	if r.Status != status {
		t.Fatalf("propose: %d %s, want %d", r.Status, r.Body, status)
	}
	var p proposal
	r.JSON(t, &p)
	return p
}

// decision posts a decision on interrupt id.
func decision(t *testing.T, b *servertest.Bundle, key, id string, d map[string]any) *servertest.Response {
	t.Helper()
	return b.Do(t, key, "POST", "/v1/interrupts/"+id+"/decision", map[string]any{"decisions": []any{d}})
}

// pending returns the ids of the pending interrupts GET /v1/threads/{id}
// lists.
func pending(t *testing.T, b *servertest.Bundle, thread string) []string {
	t.Helper()
	var th struct {
		Interrupts []struct {
			ID     string `json:"id"`
			Kind   string `json:"kind"`
			Status string `json:"status"`
		} `json:"interrupts"`
	}
	b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil).JSON(t, &th)
	var ids []string
	for _, in := range th.Interrupts {
		if in.Status != store.InterruptPending {
			t.Fatalf("GET /v1/threads/%s lists interrupt %s, %s", thread, in.ID, in.Status)
		}
		ids = append(ids, in.Kind+":"+in.ID)
	}
	return ids
}

// children returns the ids of the child threads of thread.
func children(t *testing.T, b *servertest.Bundle, thread string) []string {
	t.Helper()
	var page struct {
		Data []struct{ ID string }
	}
	b.Do(t, b.KeyA, "GET", "/v1/threads?parent_id="+thread, nil).JSON(t, &page)
	var ids []string
	for _, th := range page.Data {
		ids = append(ids, th.ID)
	}
	return ids
}

// TestThreadHandoffProposal: POST /v1/threads/{id}/handoff stores the
// proposal as an interrupt of the thread (201); GET /v1/interrupts/{id}
// shows it and GET /v1/threads/{id} lists it; a second POST answers the
// pending one (200, no new summary) unless replace, which supersedes it;
// the thread's events carry thread_handoff_proposed and _decided; the
// echo-back form of the route is gone; another owner sees nothing.
func TestThreadHandoffProposal(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "support")
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/handoff", nil); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("handoff of an empty thread: %d %s", r.Status, r.Body)
		}
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I was charged twice for order 1234"}); r.Status != 200 {
			t.Fatalf("run: %d %s", r.Status, r.Body)
		}
		resp, ch := b.Stream(t, b.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
		if resp.StatusCode != 200 {
			t.Fatalf("subscribe: %d", resp.StatusCode)
		}
		defer resp.Body.Close()
		servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread" })

		p := propose(t, b, thread, "", nil, http.StatusCreated)
		pl := p.Payload
		if p.Kind != "thread_handoff" || p.ThreadID != thread || p.Status != "pending" || p.InterruptID == "" || p.Stale ||
			p.DecisionURL != "/v1/interrupts/"+p.InterruptID+"/decision" {
			t.Fatalf("proposal: %+v", p)
		}
		if pl.SchemaVersion != 1 || pl.HandoffID != p.InterruptID || pl.AssistantID != "billing" || pl.ParentThreadID != thread ||
			pl.Title == "" || !strings.Contains(pl.Markdown, pl.Title) || pl.Summary["title"] != pl.Title ||
			len(pl.ActionRequests) != 1 || pl.ActionRequests[0].Name != "handoff_summary" {
			t.Fatalf("payload: %+v", pl)
		}
		if ev := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "thread_handoff_proposed" }); ev[len(ev)-1].Data["id"] != p.InterruptID {
			t.Fatalf("thread_handoff_proposed: %s", ev[len(ev)-1].Raw)
		}

		r := b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+p.InterruptID, nil)
		var got map[string]any
		r.JSON(t, &got)
		if r.Status != 200 || got["kind"] != "thread_handoff" || got["status"] != "pending" || got["thread_id"] != thread || got["agent"] != "billing" {
			t.Fatalf("GET interrupt: %d %s", r.Status, r.Body)
		}
		if ids := pending(t, b, thread); len(ids) != 1 || ids[0] != "thread_handoff:"+p.InterruptID {
			t.Fatalf("pending interrupts of the thread: %v", ids)
		}

		// Pending: the same proposal again, 200.
		if again := propose(t, b, thread, "", map[string]any{}, http.StatusOK); again.InterruptID != p.InterruptID {
			t.Fatalf("second proposal while one is pending: %s, want %s", again.InterruptID, p.InterruptID)
		}
		// Replace: a new one, the old one superseded.
		p2 := propose(t, b, thread, "", map[string]any{"replace": true, "assistant_id": "billing"}, http.StatusCreated)
		if p2.InterruptID == p.InterruptID || p2.Superseded != p.InterruptID {
			t.Fatalf("replace: %+v", p2)
		}
		if ids := pending(t, b, thread); len(ids) != 1 || ids[0] != "thread_handoff:"+p2.InterruptID {
			t.Fatalf("pending interrupts after replace: %v", ids)
		}
		r = decision(t, b, b.KeyA, p.InterruptID, map[string]any{"type": "approve"})
		var eb errBody
		r.JSON(t, &eb)
		if r.Status != http.StatusConflict || !strings.Contains(eb.Error.Message, p2.InterruptID) {
			t.Fatalf("approval of a superseded proposal: %d %s", r.Status, r.Body)
		}

		// Another owner sees and decides nothing.
		for _, req := range [][2]string{{"GET", "/v1/interrupts/" + p2.InterruptID}, {"POST", "/v1/threads/" + thread + "/handoff"}} {
			if r := b.Do(t, b.KeyB, req[0], req[1], nil); r.Status != http.StatusNotFound {
				t.Fatalf("%s %s by another owner: %d %s", req[0], req[1], r.Status, r.Body)
			}
		}
		if r := decision(t, b, b.KeyB, p2.InterruptID, map[string]any{"type": "approve"}); r.Status != http.StatusNotFound {
			t.Fatalf("decision by another owner: %d %s", r.Status, r.Body)
		}
		// The echo-back form of the route is gone.
		r = b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/handoff", map[string]any{"interrupt": map[string]any{}, "decision": map[string]any{"type": "approve"}})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "/v1/interrupts/") {
			t.Fatalf("echo-back decision: %d %s", r.Status, r.Body)
		}

		r = decision(t, b, b.KeyA, p2.InterruptID, map[string]any{"type": "approve"})
		var out outcome
		r.JSON(t, &out)
		if r.Status != 200 || out.ChildThreadID == "" {
			t.Fatalf("approve: %d %s", r.Status, r.Body)
		}
		// The stream: the first proposal superseded by the second (a
		// thread_handoff_decided of status superseded), the second
		// proposed, then decided.
		ev := servertest.Collect(t, ch, func(e servertest.Event) bool {
			return e.Type == "thread_handoff_decided" && e.Data["status"] == "decided"
		})
		if got := servertest.Types(ev); strings.Join(got, " ") != "thread_handoff_decided thread_handoff_proposed thread_handoff_decided" {
			t.Fatalf("events after the first proposal: %v\n%s", got, dumpRaw(ev))
		}
		if ev[0].Data["status"] != "superseded" || ev[0].Data["superseded_by"] != p2.InterruptID || ev[1].Data["id"] != p2.InterruptID ||
			ev[2].Data["child_thread_id"] != out.ChildThreadID {
			t.Fatalf("thread handoff events:\n%s", dumpRaw(ev))
		}
		if ids := pending(t, b, thread); len(ids) != 0 {
			t.Fatalf("pending interrupts after the decision: %v", ids)
		}
		r = b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+p2.InterruptID, nil)
		r.JSON(t, &got)
		if got["status"] != "decided" || got["decided_at"] == nil || !strings.Contains(string(r.Body), out.ChildThreadID) {
			t.Fatalf("GET a decided interrupt: %s", r.Body)
		}
	})
}

// TestThreadHandoffApprove: an edit approves with the edited summary and
// title: 200 with the child, created with its parent id and handoff
// metadata, the agent's memory seeded; a second decision answers 409 with
// the first outcome; the child's first turn starts at the assistant and
// clears the seed.
func TestThreadHandoffApprove(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "support")
		p := propose(t, b, thread, "I was charged twice for order 1234", nil, http.StatusCreated)
		md := "### Double charge, order 1234\n\n- Charged twice for order 1234.\n- Refund of the second charge pending.\n\n**TL;DR:** refund pending."
		r := decision(t, b, b.KeyA, p.InterruptID, map[string]any{"type": "edit", "args": map[string]any{"summary_md": md, "title": "Double charge, order 1234"}})
		var out outcome
		r.JSON(t, &out)
		if r.Status != 200 || !out.Applied || out.ChildThreadID == "" || out.Decision != "edit" || !out.Edited || out.Status != "decided" ||
			out.AssistantID != "billing" || out.ParentThreadID != thread || out.Title != "Double charge, order 1234" || out.Markdown != md {
			t.Fatalf("edit: %d %s", r.Status, r.Body)
		}
		var child struct {
			ParentID    string `json:"parent_id"`
			Name        string `json:"name"`
			ActiveAgent string `json:"active_agent"`
			Metadata    struct {
				Handoff threadhandoff.Handoff `json:"handoff"`
			} `json:"metadata"`
		}
		b.Do(t, b.KeyA, "GET", "/v1/threads/"+out.ChildThreadID, nil).JSON(t, &child)
		h := child.Metadata.Handoff
		if child.ParentID != thread || child.Name != "Double charge, order 1234" || child.ActiveAgent != "billing" ||
			!h.Pending || !h.CleanupRequired || h.SourceThreadID != thread || h.HandoffID != p.InterruptID || h.AssistantID != "billing" || h.LastCleanupAt != nil {
			t.Fatalf("child: %+v", child)
		}
		doc, err := threadhandoff.StoreMemory(b.St).Get(t.Context(), "alice", "billing")
		if err != nil || !strings.Contains(doc.Content, "Refund of the second charge pending.") {
			t.Fatalf("billing's memory: %q (%v)", doc, err)
		}

		r = decision(t, b, b.KeyA, p.InterruptID, map[string]any{"type": "approve"})
		var eb errBody
		r.JSON(t, &eb)
		if r.Status != http.StatusConflict || eb.Error.Type != "conflict" || eb.Error.Outcome.ChildThreadID != out.ChildThreadID || eb.Error.Outcome.Decision != "edit" {
			t.Fatalf("second decision: %d %s", r.Status, r.Body)
		}
		if kids := children(t, b, thread); len(kids) != 1 {
			t.Fatalf("children of the parent: %v", kids)
		}

		// The child's first turn starts at billing, with the seed; then the
		// seed is cleared and the next turn starts at the entry.
		firstAgent := func(input string) (agent, reason string) {
			t.Helper()
			resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+out.ChildThreadID+"/runs", map[string]any{"input": input, "stream": true})
			if resp.StatusCode != 200 {
				t.Fatalf("child turn %q: %d", input, resp.StatusCode)
			}
			evs := servertest.Collect(t, ch, nil)
			if last := evs[len(evs)-1]; last.Type != "run_end" || last.Data["status"] != "completed" {
				t.Fatalf("child turn %q: %v", input, servertest.Types(evs))
			}
			for _, e := range evs {
				if e.Type == "agent_start" {
					return e.Data["agent"].(string), e.Data["reason"].(string)
				}
			}
			t.Fatalf("child turn %q: no agent_start in %v", input, servertest.Types(evs))
			return "", ""
		}
		if a, why := firstAgent("Any news on the double charge?"); a != "billing" || why != threadhandoff.PickReason {
			t.Fatalf("the child's first turn started at %s (%s); want billing (%s)", a, why, threadhandoff.PickReason)
		}
		b.Do(t, b.KeyA, "GET", "/v1/threads/"+out.ChildThreadID, nil).JSON(t, &child)
		if h := child.Metadata.Handoff; h.Pending || h.CleanupRequired || h.LastCleanupAt == nil {
			t.Fatalf("after the child's first turn: %+v; want pending false and last_cleanup_at set", h)
		}
		if doc, _ := threadhandoff.StoreMemory(b.St).Get(t.Context(), "alice", "billing"); strings.Contains(doc.Content, "Refund of the second charge pending.") {
			t.Fatalf("billing's memory after the child's first turn still holds the seed: %q", doc)
		}
		if a, why := firstAgent("Hello again"); a != "triage" || why != "entry" {
			t.Fatalf("the child's second turn started at %s (%s); want triage (entry)", a, why)
		}
	})
}

// TestThreadHandoffReject: a rejection (decline, too) creates no thread,
// leaves the parent as it was and answers 200; invalid edits answer 400
// and leave the proposal pending.
func TestThreadHandoffReject(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "support")
		p := propose(t, b, thread, "I was charged twice for order 1234", nil, http.StatusCreated)
		before := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil)
		for _, c := range []struct {
			name  string
			d     map[string]any
			param string
		}{
			{"empty summary", map[string]any{"type": "edit", "args": map[string]any{"summary_md": "  "}}, "args.summary_md"},
			{"too long", map[string]any{"type": "edit", "args": map[string]any{"summary_md": strings.Repeat("x", 5000)}}, "args.summary_md"},
			{"not a string", map[string]any{"type": "edit", "args": map[string]any{"summary_md": 5}}, "args.summary_md"},
			{"unknown arg", map[string]any{"type": "edit", "args": map[string]any{"body": "x"}}, "args"},
			{"no args", map[string]any{"type": "edit"}, "args"},
			{"args not an object", map[string]any{"type": "edit", "args": []any{"x"}}, "args"},
			{"unknown type", map[string]any{"type": "later"}, "type"},
			{"title too long", map[string]any{"type": "edit", "args": map[string]any{"title": strings.Repeat("t", 300)}}, "args.title"},
		} {
			r := decision(t, b, b.KeyA, p.InterruptID, c.d)
			var eb errBody
			r.JSON(t, &eb)
			if r.Status != http.StatusBadRequest || eb.Error.Param != c.param {
				t.Errorf("%s: %d %s, want 400 with param %s", c.name, r.Status, r.Body, c.param)
			}
		}
		if ids := pending(t, b, thread); len(ids) != 1 {
			t.Fatalf("after invalid decisions the proposal is not pending: %v", ids)
		}
		r := decision(t, b, b.KeyA, p.InterruptID, map[string]any{"type": "decline", "message": "not now"})
		var out outcome
		r.JSON(t, &out)
		if r.Status != 200 || out.Applied || out.ChildThreadID != "" || out.Decision != "reject" {
			t.Fatalf("reject: %d %s", r.Status, r.Body)
		}
		if kids := children(t, b, thread); len(kids) != 0 {
			t.Fatalf("a rejection created threads: %v", kids)
		}
		after := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil)
		var th0, th1 struct {
			Metadata map[string]any `json:"metadata"`
			Version  int64          `json:"version"`
		}
		before.JSON(t, &th0)
		after.JSON(t, &th1)
		if th1.Version != th0.Version || len(th1.Metadata) != 0 {
			t.Fatalf("the parent changed: %s -> %s", before.Body, after.Body)
		}
		if doc, _ := threadhandoff.StoreMemory(b.St).Get(t.Context(), "alice", "billing"); strings.Contains(doc.Content, "order 1234") {
			t.Fatalf("a rejection wrote the memory: %q", doc)
		}
		if r := decision(t, b, b.KeyA, p.InterruptID, map[string]any{"type": "approve"}); r.Status != http.StatusConflict {
			t.Fatalf("approval after the rejection: %d %s", r.Status, r.Body)
		}
		// A network without a summary model has no thread handoff.
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+b.Thread(t, b.KeyA, "pipeline")+"/handoff", nil); r.Status != http.StatusUnprocessableEntity {
			t.Fatalf("network without summary: %d %s", r.Status, r.Body)
		}
	}, servertest.WithNetworks(t, "pipeline"))
}

// TestThreadHandoffStale: a proposal whose thread has gained messages is
// refused as stale (409 stale_proposal, nothing written, still pending);
// force approves it; re-proposing is one call.
func TestThreadHandoffStale(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "support")
		p := propose(t, b, thread, "I was charged twice for order 1234", nil, http.StatusCreated)
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "Also, my address changed."}); r.Status != 200 {
			t.Fatalf("run: %d %s", r.Status, r.Body)
		}
		var got struct{ Stale bool }
		b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+p.InterruptID, nil).JSON(t, &got)
		if !got.Stale {
			t.Fatal("GET interrupt: not stale after new messages")
		}
		r := decision(t, b, b.KeyA, p.InterruptID, map[string]any{"type": "approve"})
		var eb errBody
		r.JSON(t, &eb)
		if r.Status != http.StatusConflict || eb.Error.Type != "stale_proposal" || eb.Error.LastSeq <= eb.Error.ThroughSeq {
			t.Fatalf("stale approval: %d %s", r.Status, r.Body)
		}
		if kids := children(t, b, thread); len(kids) != 0 || len(pending(t, b, thread)) != 1 {
			t.Fatalf("a stale approval wrote something: children %v", kids)
		}
		// Re-proposing: one call.
		p2 := propose(t, b, thread, "", map[string]any{"replace": true}, http.StatusCreated)
		if p2.Stale || p2.Superseded != p.InterruptID {
			t.Fatalf("re-proposal: %+v", p2)
		}
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "One more thing."}); r.Status != 200 {
			t.Fatalf("run: %d %s", r.Status, r.Body)
		}
		r = b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+p2.InterruptID+"/decision", map[string]any{"decisions": []any{map[string]any{"type": "approve"}}, "force": true})
		var out outcome
		r.JSON(t, &out)
		if r.Status != 200 || out.ChildThreadID == "" {
			t.Fatalf("forced approval: %d %s", r.Status, r.Body)
		}
	})
}

// TestThreadHandoffConcurrentDecisions: of concurrent approvals of one
// proposal exactly one applies; the others answer 409 with its child.
func TestThreadHandoffConcurrentDecisions(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "support")
		p := propose(t, b, thread, "I was charged twice for order 1234", nil, http.StatusCreated)
		const n = 8
		var wg sync.WaitGroup
		rs := make([]*servertest.Response, n)
		for i := range n {
			wg.Go(func() {
				typ := "approve"
				if i%2 == 1 {
					typ = "edit"
				}
				d := map[string]any{"type": typ}
				if typ == "edit" {
					d["args"] = map[string]any{"title": "Edited"}
				}
				rs[i] = decision(t, b, b.KeyA, p.InterruptID, d)
			})
		}
		wg.Wait()
		child, ok := "", 0
		for _, r := range rs {
			if r.Status == 200 {
				ok++
				var out outcome
				r.JSON(t, &out)
				child = out.ChildThreadID
			}
		}
		if ok != 1 || child == "" {
			for _, r := range rs {
				t.Logf("%d %s", r.Status, r.Body)
			}
			t.Fatalf("%d decisions applied, want 1", ok)
		}
		for _, r := range rs {
			if r.Status == 200 {
				continue
			}
			var eb errBody
			r.JSON(t, &eb)
			if r.Status != http.StatusConflict || eb.Error.Outcome.ChildThreadID != child {
				t.Errorf("a losing decision: %d %s, want 409 with child %s", r.Status, r.Body, child)
			}
		}
		if kids := children(t, b, thread); len(kids) != 1 || kids[0] != child {
			t.Fatalf("children: %v, want [%s]", kids, child)
		}
	})
}

// TestThreadHandoffAssistant: a proposal for another agent than the
// thread's active one (assistant_id) starts the child's first turn at that
// agent, seeded, not at the network's entry.
func TestThreadHandoffAssistant(t *testing.T) {
	t.Parallel()
	servertest.OnBackends(t, func(t *testing.T, b *servertest.Bundle) {
		thread := b.Thread(t, b.KeyA, "support")
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/handoff", map[string]any{"assistant_id": "nobody"}); r.Status != http.StatusBadRequest {
			t.Fatalf("unknown assistant: %d %s", r.Status, r.Body)
		}
		p := propose(t, b, thread, "I was charged twice for order 1234", map[string]any{"assistant_id": "refunds"}, http.StatusCreated)
		if p.Payload.AssistantID != "refunds" {
			t.Fatalf("assistant_id: %+v", p.Payload)
		}
		var out outcome
		decision(t, b, b.KeyA, p.InterruptID, map[string]any{"type": "approve"}).JSON(t, &out)
		if out.AssistantID != "refunds" || out.ChildThreadID == "" {
			t.Fatalf("approve: %+v", out)
		}
		resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+out.ChildThreadID+"/runs", map[string]any{"input": "Hello", "stream": true})
		if resp.StatusCode != 200 {
			t.Fatalf("child turn: %d", resp.StatusCode)
		}
		evs := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "agent_start" })
		if e := evs[len(evs)-1]; e.Data["agent"] != "refunds" || e.Data["reason"] != threadhandoff.PickReason {
			t.Fatalf("the child's first turn: %s; want refunds (%s)", e.Raw, threadhandoff.PickReason)
		}
		servertest.Collect(t, ch, nil)
	})
}
