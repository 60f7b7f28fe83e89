package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"
)

// TestFork: POST /v1/threads/{id}/fork at the checkpoint where a run waits
// for an approval gives a fork whose own run waits for its own decision
// (deciding it leaves the source waiting); a fork of that fork at a
// message, edited, runs like any thread; a fork at a checkpoint mid-run
// holds the history up to it with that point's agent; another owner's
// thread, a point of another thread and bad bodies are refused. SQLite and
// PostgreSQL.
func TestFork(t *testing.T) {
	t.Parallel()
	servertest.Each(t, testFork)
}

type forkThread struct {
	ID          string
	ParentID    string `json:"parent_id"`
	ActiveAgent string `json:"active_agent"`
	Metadata    map[string]map[string]any
	Run         *struct{ ID, Status string }
	Interrupts  []struct{ ID, Status string }
}

type messageList struct {
	Data []struct{ ID, Role, Agent, Text string }
}

func forkOf(t *testing.T, b *servertest.Bundle, key, thread string, body map[string]any) (*servertest.Response, forkThread) {
	t.Helper()
	r := b.Do(t, key, "POST", "/v1/threads/"+thread+"/fork", body)
	var f forkThread
	if r.Status == http.StatusCreated {
		r.JSON(t, &f)
	}
	return r, f
}

func messagesOf(t *testing.T, b *servertest.Bundle, thread string) messageList {
	t.Helper()
	var l messageList
	b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/messages", nil).JSON(t, &l)
	return l
}

func testFork(t *testing.T, b *servertest.Bundle) {
	thread, run, intr := b.Interrupted(t, b.KeyA)
	var steps stepList
	b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/runs/"+run+"/steps", nil).JSON(t, &steps)
	src := messagesOf(t, b, thread)

	// At the approval: the fork waits for its own decision.
	r, f := forkOf(t, b, b.KeyA, thread, map[string]any{"at": steps.CheckpointID})
	if r.Status != http.StatusCreated || r.Header.Get("Location") != "/v1/threads/"+f.ID || f.ParentID != thread || f.ActiveAgent != "refunds" ||
		f.Metadata["fork"]["source_thread_id"] != thread || f.Metadata["fork"]["at"] != steps.CheckpointID || f.Run == nil ||
		f.Run.Status != "interrupted" || f.Run.ID == run || len(f.Interrupts) != 1 || f.Interrupts[0].ID == intr {
		t.Fatalf("fork at the approval: %d %s", r.Status, r.Body)
	}
	if got := messagesOf(t, b, f.ID); len(got.Data) != len(src.Data) || got.Data[0].Text != src.Data[0].Text {
		t.Fatalf("the fork's messages %+v, want the source's %+v", got, src)
	}
	d := b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+f.Interrupts[0].ID+"/decision", map[string]any{"type": "approve"})
	if d.Status != http.StatusOK || !strings.Contains(string(d.Body), `"completed"`) {
		t.Fatalf("the fork's decision: %d %s", d.Status, d.Body)
	}
	var source forkThread
	b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil).JSON(t, &source)
	if source.Run == nil || source.Run.Status != "interrupted" || len(source.Interrupts) != 1 || source.Interrupts[0].ID != intr {
		t.Fatalf("the source after the fork's decision: %+v", source)
	}
	if got := messagesOf(t, b, f.ID); len(got.Data) <= len(src.Data) || !strings.Contains(got.Data[len(got.Data)-1].Text, "R-77") {
		t.Fatalf("the fork after its decision: %+v", got)
	}

	// A fork of the fork, at its first message, edited: a thread like any.
	first := messagesOf(t, b, f.ID).Data[0]
	r, ff := forkOf(t, b, b.KeyA, f.ID, map[string]any{"at": first.ID, "edit": map[string]any{"text": "I was charged twice for order 1234"}})
	if r.Status != http.StatusCreated || ff.ParentID != f.ID || ff.Run != nil || ff.ActiveAgent != "triage" || ff.Metadata["fork"]["edited"] != true {
		t.Fatalf("fork of the fork: %d %s", r.Status, r.Body)
	}
	if got := messagesOf(t, b, ff.ID); len(got.Data) != 1 || got.Data[0].Text != "I was charged twice for order 1234" {
		t.Fatalf("the fork of the fork's messages %+v", got)
	}
	run2 := b.Do(t, b.KeyA, "POST", "/v1/threads/"+ff.ID+"/runs", map[string]any{"input": "It was on my card, twice."})
	if run2.Status != http.StatusOK || !strings.Contains(string(run2.Body), `"completed"`) || !strings.Contains(string(run2.Body), "billing") {
		t.Fatalf("a run on the fork of the fork: %d %s", run2.Status, run2.Body)
	}

	// Mid-run, at the transfer's checkpoint: the history to there, refunds' turn.
	var transfer stepJSON
	for _, s := range steps.Data {
		if s.Type == "transfer" {
			transfer = s
		}
	}
	r, mid := forkOf(t, b, b.KeyA, thread, map[string]any{"at": transfer.CheckpointID})
	if r.Status != http.StatusCreated || mid.Run != nil || mid.ActiveAgent != "refunds" {
		t.Fatalf("fork mid-run: %d %s", r.Status, r.Body)
	}
	if got := messagesOf(t, b, mid.ID); len(got.Data) != 3 || got.Data[0].Role != "user" || got.Data[2].Role != "tool" {
		t.Fatalf("fork mid-run messages %+v", got)
	}

	// At a tool result, edited: the fork's tool message holds the new output.
	tool := messagesOf(t, b, mid.ID).Data[2]
	r, edited := forkOf(t, b, b.KeyA, mid.ID, map[string]any{"at": tool.ID, "edit": map[string]any{"text": `{"status":"lost"}`}})
	if r.Status != http.StatusCreated {
		t.Fatalf("fork at a tool result: %d %s", r.Status, r.Body)
	}
	var raw struct {
		Data []struct {
			Role  string
			Parts []struct{ Type, Text string }
		}
	}
	b.Do(t, b.KeyA, "GET", "/v1/threads/"+edited.ID+"/messages", nil).JSON(t, &raw)
	if n := len(raw.Data); n != 3 || raw.Data[2].Role != "tool" || raw.Data[2].Parts[0].Type != "tool_result" || raw.Data[2].Parts[0].Text != `{"status":"lost"}` {
		t.Fatalf("the edited tool result: %+v", raw)
	}

	// Refused: another owner, a point of another thread, bad bodies.
	for _, c := range []struct {
		key, thread string
		body        any
		status      int
	}{
		{b.KeyB, thread, map[string]any{"at": steps.CheckpointID}, http.StatusNotFound},
		{b.KeyA, ff.ID, map[string]any{"at": steps.CheckpointID}, http.StatusNotFound},
		{b.KeyA, thread, map[string]any{"at": "nope"}, http.StatusNotFound},
		{b.KeyA, thread, map[string]any{}, http.StatusBadRequest},
		{b.KeyA, thread, map[string]any{"at": steps.CheckpointID, "extra": 1}, http.StatusBadRequest},
		{b.KeyA, mid.ID, map[string]any{"at": messagesOf(t, b, mid.ID).Data[1].ID, "edit": map[string]any{"text": "x", "is_error": true}}, http.StatusBadRequest},
	} {
		if r := b.Do(t, c.key, "POST", "/v1/threads/"+c.thread+"/fork", c.body); r.Status != c.status {
			t.Errorf("fork %v: %d %s, want %d", c.body, r.Status, r.Body, c.status)
		}
	}
	if r := b.Do(t, b.KeyB, "GET", "/v1/threads/"+f.ID, nil); r.Status != http.StatusNotFound {
		t.Errorf("another owner reads the fork: %d", r.Status)
	}
}
