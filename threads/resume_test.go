package threads_test

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// seen records the history of every model request.
type seen struct {
	mu   sync.Mutex
	reqs [][]message.Message
	m    model.Model
}

func (s *seen) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	s.mu.Lock()
	s.reqs = append(s.reqs, append([]message.Message(nil), req.Messages...))
	s.mu.Unlock()
	return s.m.Stream(ctx, req)
}

func TestExcludeAndResumeCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := testdb.SQLite(t)
	var refunds atomic.Int32
	svc := threads.New(st, support(t, &refunds), nil)
	id, _, err := threadOf(t, svc.Turn(ctx, owner, "I was charged twice", threads.TurnOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	// A message the history must not show (a continuation placeholder).
	ph := message.Message{Role: message.RoleAssistant, Agent: "billing", Status: message.StatusCompleted,
		Parts: []message.Part{{Type: message.PartText, Text: "placeholder"}}, Metadata: map[string]any{"placeholder": true}}
	if _, err := st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: id, Messages: []store.NewMessage{{Message: ph}}}); err != nil {
		t.Fatal(err)
	}
	rec := &seen{m: scripted.New("closer", steps(scripted.Step{Text: "ok"}), scripted.Options{})}
	closer := &agent.Agent{Name: "closer", Model: rec}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support", Agents: []*agent.Agent{closer}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Network: net, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	svc2 := threads.New(st, r, nil)
	svc2.Exclude = func(m *store.Message) bool { return m.Metadata["placeholder"] == true }
	if _, err := drain(t, svc2.Turn(ctx, owner, "thanks", threads.TurnOptions{ThreadID: id})); err != nil {
		t.Fatal(err)
	}
	for _, m := range rec.reqs[0] {
		if m.Text() == "placeholder" {
			t.Errorf("the excluded message reached the model: %+v", m)
		}
	}
	if len(rec.reqs[0]) < 3 {
		t.Errorf("history = %d messages, want turn 1's", len(rec.reqs[0]))
	}

	// ResumeCheckpoint is fenced on the checkpoint it is given.
	id, _, err = threadOf(t, svc.Turn(ctx, owner, "I was charged twice", threads.TurnOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, svc.Turn(ctx, owner, "refund", threads.TurnOptions{ThreadID: id})); err != nil {
		t.Fatal(err)
	}
	cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: id})
	if err != nil || cp.State.Status != runstate.StatusInterrupted {
		t.Fatalf("latest = %+v, %v", cp, err)
	}
	// Resuming the latest checkpoint moves the run on; the checkpoint it
	// resumed from is then superseded.
	stale := *cp
	staleState := *cp.State
	stale.State = &staleState
	end, err := drain(t, svc.ResumeCheckpoint(ctx, owner, cp, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
	if err != nil || end.Status != runstate.StatusCompleted {
		t.Fatalf("resume from the latest checkpoint: %+v, %v", end, err)
	}
	_, err = drain(t, svc.ResumeCheckpoint(ctx, owner, &stale, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
	var sw *store.StaleWriteError
	if !errors.As(err, &sw) {
		t.Fatalf("resume from a superseded checkpoint: %v, want a StaleWriteError", err)
	}
	if _, err := drain(t, svc.ResumeCheckpoint(ctx, owner, nil)); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("nil checkpoint: %v", err)
	}
}
