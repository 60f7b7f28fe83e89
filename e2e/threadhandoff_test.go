package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/runner"
)

// TestThreadHandoffAcrossProcesses hands a thread off across real
// processes, on SQLite and PostgreSQL: the parent's turn by `baton run`,
// the proposal and its approval through `baton serve --workers 0` (for
// shipping, not the thread's agent), and the child's first turn, which
// starts at shipping and whose slow call a separate `baton worker`
// finishes — and that worker, the process that completed the turn, clears
// the seed.
func TestThreadHandoffAcrossProcesses(t *testing.T) {
	batonBin(t)
	eachBackend(t, func(t *testing.T, be backend) {
		db := be.open(t)
		fx := newEffects(t, nil)
		c := startCluster(t, db, fx, clusterConfig{serveWorkers: 0, workers: 1, workerSlots: 2})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()

		evs := c.runCLI(t, "cli", "[inline] Where is my order 1234?", "")
		start, ok := first(evs)
		if !ok || !completed(evs) {
			t.Fatalf("parent turn: %+v", evs)
		}
		parent := start.ThreadID

		var prop struct {
			ID      string `json:"interrupt_id"`
			Kind    string `json:"kind"`
			Payload struct {
				AssistantID string `json:"assistant_id"`
				Title       string `json:"title"`
			} `json:"payload"`
		}
		if err := c.api.do(ctx, http.MethodPost, "/v1/threads/"+parent+"/handoff", map[string]any{"assistant_id": "shipping"}, &prop); err != nil {
			t.Fatal(err)
		}
		if prop.Kind != "thread_handoff" || prop.Payload.AssistantID != "shipping" || prop.Payload.Title != "Order 1234 follow-up" {
			t.Fatalf("proposal: %+v", prop)
		}
		var out struct {
			Child string `json:"child_thread_id"`
		}
		if err := c.api.do(ctx, http.MethodPost, "/v1/interrupts/"+prop.ID+"/decision",
			map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}, &out); err != nil || out.Child == "" {
			t.Fatalf("approve: %v %+v", err, out)
		}

		// The child's first turn: shipping, a slow call for the worker.
		_, evs, err := c.api.stream(ctx, out.Child, "The parcel arrived damaged.", nil, nil)
		if err != nil || !completed(evs) {
			t.Fatalf("child turn: %v %+v", err, evs)
		}
		for _, ev := range evs {
			if e, ok := ev.(*runner.AgentStartEvent); ok {
				if e.Agent != "shipping" || e.Reason != "thread handoff" {
					t.Fatalf("the child's first turn started at %s (%s), want shipping (thread handoff)", e.Agent, e.Reason)
				}
				break
			}
		}
		shipped := false
		for _, d := range fx.all() {
			if d.tool == "ship" {
				shipped = d.caller == "worker-0"
				if !shipped {
					t.Fatalf("ship was called by %s, want worker-0", d.caller)
				}
			}
		}
		if !shipped {
			t.Fatal("no ship call")
		}

		// The seed is cleared, by the worker.
		var child struct {
			Metadata struct {
				Handoff struct {
					Pending       bool    `json:"pending"`
					LastCleanupAt *string `json:"last_cleanup_at"`
				} `json:"handoff"`
			} `json:"metadata"`
		}
		waitUntil(ctx, t, 20*time.Second, 100*time.Millisecond, func() bool {
			if err := c.api.do(ctx, http.MethodGet, "/v1/threads/"+out.Child, nil, &child); err != nil {
				t.Fatal(err)
			}
			h := child.Metadata.Handoff
			return !h.Pending && h.LastCleanupAt != nil
		}, func() string {
			return fmt.Sprintf("the child's seed is still pending after its first turn: %+v", child.Metadata.Handoff)
		})
		const cleared = "thread handoff cleanup: summary cleared from memory"
		for _, p := range c.daemons() {
			b, _ := os.ReadFile(p.logPath)
			if got, want := strings.Contains(string(b), cleared), p.name == "worker-0"; got != want {
				t.Errorf("%s logged %q: %v, want %v", p.name, cleared, got, want)
			}
		}
	})
}
