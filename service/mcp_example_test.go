package service_test

import (
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/threads"
)

// notesRun is what a turn of the notes example gave.
type notesRun struct {
	runID   string
	thread  string
	results map[string]string // tool name -> output (or "error: …")
	end     *runner.RunEndEvent
	intr    *runner.InterruptEvent
}

func collectNotes(t *testing.T, events func(yield func(runner.Event, error) bool)) *notesRun {
	t.Helper()
	r := &notesRun{results: map[string]string{}}
	ran := runtest.Collect(t, events, func(ev runner.Event) {
		switch e := ev.(type) {
		case *runner.ToolResultEvent:
			if e.Error != "" {
				r.results[e.Name] = "error: " + e.Error
			} else {
				r.results[e.Name] = e.Output
			}
		case *runner.InterruptEvent:
			r.intr = e
		}
	})
	r.runID, r.thread, r.end = ran.RunID(), ran.ThreadID(), ran.End
	if r.end == nil {
		t.Fatal("the run never ended")
	}
	return r
}

// TestNotesExampleMCP: the notes example's tools are those of its MCP
// server (examples/notes/notesmcp, built by `go run` when the service
// loads the file): what the tools answer is the server's notebook, the
// deletion waits for a person's approval, and a rejected deletion deletes
// nothing.
func TestNotesExampleMCP(t *testing.T) {
	t.Parallel()
	svc, err := service.Open(t.Context(), service.Config{Files: []string{example("notes")}, Database: "sqlite:" + t.TempDir() + "/baton.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	n, _ := svc.Network("notes")
	turn := func(thread, text string) *notesRun {
		return collectNotes(t, n.Threads.Turn(t.Context(), "ann", text, threads.TurnOptions{ThreadID: thread}))
	}

	r := turn("", "Note that I must call the dentist on Friday")
	if got := r.results["add_note"]; !strings.Contains(got, `"id":"N3"`) || !strings.Contains(got, "dentist") {
		t.Fatalf("add_note answered %q, want the server's note N3", got)
	}
	thread := r.thread

	// Rejected: the server is not called; N2 stays.
	r = turn(thread, "Delete the note about the offsite")
	if r.end.Status != runstate.StatusInterrupted || r.intr == nil || r.intr.Interrupt.ActionRequests[0].Name != "delete_note" {
		t.Fatalf("delete: %s, interrupt %+v", r.end.Status, r.intr)
	}
	r = collectNotes(t, n.Threads.Resume(t.Context(), "ann", r.runID, runner.WithDecisions(runner.Decision{Type: runner.DecisionReject, Message: "keep it"})))
	if r.end.Status != runstate.StatusCompleted {
		t.Fatalf("after the rejection: %s", r.end.Status)
	}
	r = turn(thread, "What are my notes?")
	if got := r.results["list_notes"]; !strings.Contains(got, "N2") || !strings.Contains(got, "N3") {
		t.Fatalf("after the rejection list_notes answered %q, want N2 kept and N3", got)
	}

	// Approved: the server deletes N2.
	r = turn(thread, "Delete the note about the offsite")
	if r.end.Status != runstate.StatusInterrupted {
		t.Fatalf("delete again: %s", r.end.Status)
	}
	r = collectNotes(t, n.Threads.Resume(t.Context(), "ann", r.runID, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
	if got := r.results["delete_note"]; r.end.Status != runstate.StatusCompleted || !strings.Contains(got, "deleted N2") {
		t.Fatalf("after the approval: %s, delete_note answered %q", r.end.Status, got)
	}
	r = turn(thread, "What are my notes?")
	if got := r.results["list_notes"]; strings.Contains(got, "N2") || !strings.Contains(got, "N1") {
		t.Fatalf("after the deletion list_notes answered %q", got)
	}
}
