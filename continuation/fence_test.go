package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// lostLog is a log handler that tells lost each record saying that a
// delivery lost its run to another holder, with its level.
type lostLog struct {
	slog.Handler
	lost chan slog.Level
}

func (h lostLog) Enabled(context.Context, slog.Level) bool { return true }

func (h lostLog) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "lost to another holder") {
		h.lost <- r.Level
	}
	if h.Handler.Enabled(ctx, r.Level) {
		return h.Handler.Handle(ctx, r)
	}
	return nil
}

func (h lostLog) WithAttrs(as []slog.Attr) slog.Handler {
	return lostLog{Handler: h.Handler.WithAttrs(as), lost: h.lost}
}

func (h lostLog) WithGroup(name string) slog.Handler {
	return lostLog{Handler: h.Handler.WithGroup(name), lost: h.lost}
}

// TestTakenOverDeliveryWritesNothing: a worker that is alive but loses its
// run mid-step — its lease taken by another holder and expired, an adopter
// of another process judging it dead and delivering the run again — then
// ends its step (the model answers) or fails it (the model fails for
// good), its first write after the loss still ahead. Every write of the first delivery is fenced on its claim: it
// writes nothing (no failed checkpoint, no answer, no error placeholder)
// and says at info level that it lost the run; the second delivery
// resumes from the last checkpoint the first wrote while it held the run,
// and the run completes with one answer. The order is forced: the first
// delivery's tool returns only after the takeover, and the second delivery
// starts only after the first has given up.
func TestTakenOverDeliveryWritesNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		for _, end := range []string{"answers", "fails"} {
			t.Run(end, func(t *testing.T) { takenOver(t, be, end == "fails") })
		}
	})
}

func takenOver(t *testing.T, be backend, fails bool) {
	ctx := t.Context()
	st := be.open(t)
	const answer = "Your order 1234 has shipped."
	lookup := func(context.Context, json.RawMessage) (string, error) {
		return `{"order":"1234","status":"shipped"}`, nil
	}
	// The model: its first answer after the tool's result (the first
	// delivery's step) waits for release, then, if armed, fails for good;
	// the next ones (the run's next delivery, by either process: the
	// first's worker is free again once its delivery gives up) wait for
	// resume, so that nothing the next delivery writes can be taken for
	// the first's.
	var answers atomic.Int32
	var armed atomic.Bool
	started, release, resume := make(chan struct{}), make(chan struct{}), make(chan struct{})
	sm := scripted.New("assistant", []scripted.Step{
		{Text: "Let me look that up.", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
		{Text: answer},
	}, scripted.Options{})
	m := model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		if n := len(req.Messages); n == 0 || req.Messages[n-1].Role != message.RoleTool {
			return sm.Stream(ctx, req)
		}
		if answers.Add(1) > 1 {
			select {
			case <-resume:
			case <-ctx.Done():
				return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, ctx.Err()) }
			}
			return sm.Stream(ctx, req)
		}
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, ctx.Err()) }
		}
		if armed.Load() {
			return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, errors.New("the model broke")) }
		}
		return sm.Stream(ctx, req)
	})
	a := &agent.Agent{Name: "assistant", ModelName: "scripted", Model: m,
		Tools: []*agent.Tool{{Name: "lookup", Description: "Look an order up.", Slow: true, Func: lookup}}}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "shop", Agents: []*agent.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}

	// The first process: one worker (it cannot take the run's next
	// delivery while its first runs), no adopter, a job timeout the step
	// cannot reach.
	lost := make(chan slog.Level, 4)
	cfg := testConfig(t, st)
	cfg.Workers, cfg.NoAdopt = 1, true
	cfg.JobTimeout, cfg.RescueStuckJobsAfter = 5*time.Minute, 6*time.Minute
	cfg.Logger = slog.New(lostLog{Handler: backendtest.Logger().Handler(), lost: lost})
	first, svc := wire(t, st, net, cfg)
	if err := first.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b := &bundle{st: st, svc: svc, cont: first}
	thread, run, h := b.handOver(t)
	b.start(t)
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the first delivery never called the model after the tool")
	}

	// The takeover: the lease goes to another holder and expires, and
	// the adopter of another process delivers the run again.
	if _, err := st.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: owner, RunID: run, ThreadID: thread,
		Holder: "another-process", TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		expired, err := st.ExpiredLeases(ctx, &store.ExpiredLeasesParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(expired) > 0 && expired[0].RunID == run {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease never expired: %v", expired)
		}
	}
	ocfg := testConfig(t, st)
	ocfg.NoAdopt = true
	other, osvc := wire(t, st, net, ocfg)
	if ah, err := other.Adopt(ctx, owner, run); err != nil || ah == nil || !ah.redelivered || ah.EventID != h.EventID {
		t.Fatalf("Adopt = %+v, %v; want the continuation %s delivered again", ah, err, h.EventID)
	}

	// The first delivery's step ends (or fails) after it lost the run.
	armed.Store(fails)
	close(release)
	select {
	case lvl := <-lost:
		if lvl != slog.LevelInfo {
			t.Errorf("the first delivery said it lost the run at level %s, want INFO", lvl)
		}
	case <-time.After(time.Minute):
		t.Fatal("the first delivery never said it lost the run")
	}
	for _, s := range statuses(t, st, run) {
		if s == runstate.StatusFailed || s.Terminal() {
			t.Fatalf("checkpoint statuses %v after the first delivery lost the run, want none written by it", statuses(t, st, run))
		}
	}
	if m, err := st.GetMessage(ctx, &store.GetMessageParams{OwnerID: owner, ID: h.MessageID}); err != nil || m.Status != message.StatusStreaming {
		t.Fatalf("placeholder after the first delivery lost the run: %+v, %v; want streaming", m, err)
	}
	if msgs, _ := stored(t, st, thread); strings.Contains(shape(msgs), answer) {
		t.Fatalf("the first delivery wrote its answer:\n%s", shape(msgs))
	}

	// The run's next delivery (either process's worker) completes it.
	close(resume)
	(&bundle{st: st, svc: osvc, cont: other}).start(t)
	ph := b.waitMessage(t, h.MessageID, 2*time.Minute)
	if ph.Status != message.StatusCompleted || ph.Text() != answer {
		t.Fatalf("placeholder %s %q, want completed with the answer", ph.Status, ph.Text())
	}
	sts := statuses(t, st, run)
	for _, s := range sts {
		if s == runstate.StatusFailed {
			t.Fatalf("checkpoint statuses %v, want no failure", sts)
		}
	}
	if sts[len(sts)-1] != runstate.StatusCompleted {
		t.Fatalf("checkpoint statuses %v, want the run completed", sts)
	}
	msgs, _ := stored(t, st, thread)
	if n := strings.Count(shape(msgs), ": "+answer+"\n"); n != 1 {
		t.Fatalf("%d answers in the thread, want 1:\n%s", n, shape(msgs))
	}
	jr, err := st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
	if err != nil || jr.Status != store.JobCompleted || jr.Attempt != 2 {
		t.Fatalf("job run %+v, %v; want completed at attempt 2", jr, err)
	}
	if n := answers.Load(); n != 2 {
		t.Errorf("the model answered the tool's result %d times, want 2 (the lost delivery and the next one)", n)
	}
}
