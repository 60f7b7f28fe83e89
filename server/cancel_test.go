package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"
)

// TestCancel: POST /v1/threads/{id}/runs/{run_id}/cancel on a streaming
// run, a run waiting for a decision, a queued run; twice; on a finished,
// unknown or another owner's run. SQLite and PostgreSQL.
func TestCancel(t *testing.T) {
	t.Parallel()
	servertest.Each(t, testCancel, withSlow)
}

type cancelled struct {
	ID, Status, Output, ThreadID string
	Error                        map[string]any
}

func cancel(t *testing.T, b *servertest.Bundle, key, thread, run string) (*servertest.Response, cancelled) {
	t.Helper()
	r := b.Do(t, key, "POST", "/v1/threads/"+thread+"/runs/"+run+"/cancel", nil)
	var out cancelled
	if r.Status == http.StatusOK {
		r.JSON(t, &out)
	}
	return r, out
}

func testCancel(t *testing.T, b *servertest.Bundle) {
	t.Run("Streaming", func(t *testing.T) {
		t.Parallel()
		thread := b.Thread(t, b.KeyA, "slow")
		resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "question", "stream": true})
		run := resp.Header.Get("Baton-Run-Id")
		servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "text_delta" })
		r, got := cancel(t, b, b.KeyA, thread, run)
		if r.Status != http.StatusOK || got.ID != run || got.Status != "cancelled" || got.Output == "" || got.Output == slowAnswer {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
		evs := servertest.Collect(t, ch, nil)
		end := evs[len(evs)-1]
		if end.Type != "run_end" || end.Data["status"] != "cancelled" || end.Data["output"] != got.Output {
			t.Fatalf("the stream's end: %s %s", end.Type, end.Raw)
		}
		// Idempotent; the run reads cancelled; what it said is kept.
		if r, again := cancel(t, b, b.KeyA, thread, run); r.Status != http.StatusOK || again.Status != "cancelled" || again.Output != got.Output {
			t.Fatalf("second cancel: %d %s", r.Status, r.Body)
		}
		var read cancelled
		b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/runs/"+run, nil).JSON(t, &read)
		if read.Status != "cancelled" {
			t.Fatalf("GET run: %+v", read)
		}
		waitMessages(t, b, thread, "user:question", "assistant:"+got.Output+" [partial]")
		// The thread takes new runs.
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "again"}); r.Status != http.StatusOK {
			t.Fatalf("a run after the cancel: %d %s", r.Status, r.Body)
		}
		// A finished run: 409 run_finished.
		r2 := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "once more"})
		var done cancelled
		r2.JSON(t, &done)
		if r, _ := cancel(t, b, b.KeyA, thread, done.ID); r.Status != http.StatusConflict || r.ErrType(t) != "run_finished" {
			t.Fatalf("cancel a completed run: %d %s", r.Status, r.Body)
		}
	})
	t.Run("WaitingForDecision", func(t *testing.T) {
		t.Parallel()
		thread := b.Thread(t, b.KeyA, "support")
		r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I want a refund for order 1234"})
		var run servertest.RunAnswer
		r.JSON(t, &run)
		if run.Status != "interrupted" {
			t.Fatalf("refund: %d %s", r.Status, r.Body)
		}
		if r, got := cancel(t, b, b.KeyA, thread, run.ID); r.Status != http.StatusOK || got.Status != "cancelled" {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
		var read cancelled
		b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/runs/"+run.ID, nil).JSON(t, &read)
		if read.Status != "cancelled" {
			t.Fatalf("GET run after the cancel: %+v", read)
		}
		var in struct{ Status string }
		ir := b.Do(t, b.KeyA, "GET", "/v1/interrupts/"+run.Interrupt.ID, nil)
		ir.JSON(t, &in)
		if in.Status != "superseded" {
			t.Fatalf("the run's interrupt %q: %d %s", run.Interrupt.ID, ir.Status, ir.Body)
		}
		// Its decision is refused now.
		if r := b.Do(t, b.KeyA, "POST", "/v1/interrupts/"+run.Interrupt.ID+"/decision", map[string]any{"type": "approve"}); r.Status != http.StatusConflict {
			t.Fatalf("decide a cancelled run's interrupt: %d %s", r.Status, r.Body)
		}
	})
	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		thread, ch := busyThread(t, b)
		r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "second", "multitask_strategy": "enqueue"})
		var q struct{ ID, Status string }
		r.JSON(t, &q)
		if q.Status != "queued" {
			t.Fatalf("enqueue: %d %s", r.Status, r.Body)
		}
		if r, got := cancel(t, b, b.KeyA, thread, q.ID); r.Status != http.StatusOK || got.Status != "cancelled" {
			t.Fatalf("cancel the queued run: %d %s", r.Status, r.Body)
		}
		servertest.Collect(t, ch, nil)
		waitMessages(t, b, thread, "user:question", "assistant:"+slowAnswer)
		var read cancelled
		b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/runs/"+q.ID, nil).JSON(t, &read)
		if read.Status != "cancelled" {
			t.Fatalf("GET the cancelled queued run: %+v", read)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		thread := b.Thread(t, b.KeyA, "slow")
		resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "question", "stream": true})
		run := resp.Header.Get("Baton-Run-Id")
		for _, c := range []struct{ key, thread, run string }{
			{b.KeyA, thread, "run_nope"},
			{b.KeyA, "thread_nope", "run_nope"},
			{b.KeyA, thread, strings.Repeat("x", 200)},
		} {
			if r, _ := cancel(t, b, c.key, c.thread, c.run); r.Status != http.StatusNotFound {
				t.Errorf("cancel %s/%s: %d %s", c.thread, c.run, r.Status, r.Body)
			}
		}
		// Another owner's running run: not found, and it goes on.
		if r, _ := cancel(t, b, b.KeyB, thread, run); r.Status != http.StatusNotFound {
			t.Errorf("another owner's cancel: %d %s", r.Status, r.Body)
		}
		if evs := servertest.Collect(t, ch, nil); evs[len(evs)-1].Data["status"] != "completed" {
			t.Fatalf("the run after another owner's cancel: %s", evs[len(evs)-1].Raw)
		}
	})
}
