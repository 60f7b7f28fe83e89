package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCancel: POST /v1/threads/{id}/runs/{run_id}/cancel on a streaming
// run, a run waiting for a decision, a queued run; twice; on a finished,
// unknown or another owner's run. SQLite and PostgreSQL.
func TestCancel(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		testCancel(t, setup(t, withSlow(t)))
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		pg, _ := pgStore(t)
		testCancel(t, setupStore(t, pg, withSlow(t)))
	})
}

type cancelled struct {
	ID, Status, Output, ThreadID string
	Error                        map[string]any
}

func (b *bundle) cancel(t *testing.T, key, thread, run string) (*response, cancelled) {
	t.Helper()
	r := b.do(t, key, "POST", "/v1/threads/"+thread+"/runs/"+run+"/cancel", nil)
	var out cancelled
	if r.status == http.StatusOK {
		r.json(t, &out)
	}
	return r, out
}

func testCancel(t *testing.T, b *bundle) {
	t.Run("Streaming", func(t *testing.T) {
		t.Parallel()
		thread := b.thread(t, b.keyA, "slow")
		resp, ch := b.stream(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "question", "stream": true})
		run := resp.Header.Get("Baton-Run-Id")
		collect(t, ch, func(e event) bool { return e.Type == "text_delta" })
		r, got := b.cancel(t, b.keyA, thread, run)
		if r.status != http.StatusOK || got.ID != run || got.Status != "cancelled" || got.Output == "" || got.Output == slowAnswer {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
		evs := collect(t, ch, nil)
		end := evs[len(evs)-1]
		if end.Type != "run_end" || end.Data["status"] != "cancelled" || end.Data["output"] != got.Output {
			t.Fatalf("the stream's end: %s %s", end.Type, end.Raw)
		}
		// Idempotent; the run reads cancelled; what it said is kept.
		if r, again := b.cancel(t, b.keyA, thread, run); r.status != http.StatusOK || again.Status != "cancelled" || again.Output != got.Output {
			t.Fatalf("second cancel: %d %s", r.status, r.body)
		}
		var read cancelled
		b.do(t, b.keyA, "GET", "/v1/threads/"+thread+"/runs/"+run, nil).json(t, &read)
		if read.Status != "cancelled" {
			t.Fatalf("GET run: %+v", read)
		}
		b.waitMessages(t, thread, "user:question", "assistant:"+got.Output+" [partial]")
		// The thread takes new runs.
		if r := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "again"}); r.status != http.StatusOK {
			t.Fatalf("a run after the cancel: %d %s", r.status, r.body)
		}
		// A finished run: 409 run_finished.
		r2 := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "once more"})
		var done cancelled
		r2.json(t, &done)
		if r, _ := b.cancel(t, b.keyA, thread, done.ID); r.status != http.StatusConflict || r.errType(t) != "run_finished" {
			t.Fatalf("cancel a completed run: %d %s", r.status, r.body)
		}
	})
	t.Run("WaitingForDecision", func(t *testing.T) {
		t.Parallel()
		thread := b.thread(t, b.keyA, "support")
		r := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I want a refund for order 1234"})
		var run struct {
			ID, Status string
			Interrupt  struct {
				ID string `json:"interrupt_id"`
			}
		}
		r.json(t, &run)
		if run.Status != "interrupted" {
			t.Fatalf("refund: %d %s", r.status, r.body)
		}
		if r, got := b.cancel(t, b.keyA, thread, run.ID); r.status != http.StatusOK || got.Status != "cancelled" {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
		var read cancelled
		b.do(t, b.keyA, "GET", "/v1/threads/"+thread+"/runs/"+run.ID, nil).json(t, &read)
		if read.Status != "cancelled" {
			t.Fatalf("GET run after the cancel: %+v", read)
		}
		var in struct{ Status string }
		ir := b.do(t, b.keyA, "GET", "/v1/interrupts/"+run.Interrupt.ID, nil)
		ir.json(t, &in)
		if in.Status != "superseded" {
			t.Fatalf("the run's interrupt %q: %d %s", run.Interrupt.ID, ir.status, ir.body)
		}
		// Its decision is refused now.
		if r := b.do(t, b.keyA, "POST", "/v1/interrupts/"+run.Interrupt.ID+"/decision", map[string]any{"type": "approve"}); r.status != http.StatusConflict {
			t.Fatalf("decide a cancelled run's interrupt: %d %s", r.status, r.body)
		}
	})
	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		thread, ch := b.busyThread(t)
		r := b.do(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "second", "multitask_strategy": "enqueue"})
		var q struct{ ID, Status string }
		r.json(t, &q)
		if q.Status != "queued" {
			t.Fatalf("enqueue: %d %s", r.status, r.body)
		}
		if r, got := b.cancel(t, b.keyA, thread, q.ID); r.status != http.StatusOK || got.Status != "cancelled" {
			t.Fatalf("cancel the queued run: %d %s", r.status, r.body)
		}
		collect(t, ch, nil)
		b.waitMessages(t, thread, "user:question", "assistant:"+slowAnswer)
		var read cancelled
		b.do(t, b.keyA, "GET", "/v1/threads/"+thread+"/runs/"+q.ID, nil).json(t, &read)
		if read.Status != "cancelled" {
			t.Fatalf("GET the cancelled queued run: %+v", read)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		thread := b.thread(t, b.keyA, "slow")
		resp, ch := b.stream(t, b.keyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "question", "stream": true})
		run := resp.Header.Get("Baton-Run-Id")
		for _, c := range []struct{ key, thread, run string }{
			{b.keyA, thread, "run_nope"},
			{b.keyA, "thread_nope", "run_nope"},
			{b.keyA, thread, strings.Repeat("x", 200)},
		} {
			if r, _ := b.cancel(t, c.key, c.thread, c.run); r.status != http.StatusNotFound {
				t.Errorf("cancel %s/%s: %d %s", c.thread, c.run, r.status, r.body)
			}
		}
		// Another owner's running run: not found, and it goes on.
		if r, _ := b.cancel(t, b.keyB, thread, run); r.status != http.StatusNotFound {
			t.Errorf("another owner's cancel: %d %s", r.status, r.body)
		}
		if evs := collect(t, ch, nil); evs[len(evs)-1].Data["status"] != "completed" {
			t.Fatalf("the run after another owner's cancel: %s", evs[len(evs)-1].Raw)
		}
	})
}
