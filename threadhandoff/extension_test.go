package threadhandoff_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threadhandoff/internal/storetesting"
	"github.com/batonhq/baton/threads"
)

// TestExtensionMemory: BeforeTurn injects the running agent's memory for the
// owner of the run's context, and fails the run clearly without one.
func TestExtensionMemory(t *testing.T) {
	t.Parallel()
	b := setup(t, storetesting.Backend{Name: "SQLite", Open: storetesting.SQLite}, setupOpts{})
	ctx := t.Context()
	if got, err := b.svc.SystemText(ctx, owner, assistant, b.parent.ID); err != nil || got != notes {
		t.Fatalf("SystemText = %q, %v", got, err)
	}
	if got, err := b.svc.SystemText(ctx, owner, "nobody", b.parent.ID); err != nil || got != "" {
		t.Fatalf("agent without memory: %q, %v", got, err)
	}

	r, seen := newRunner(t, b.svc)
	res, err := r.Run(store.ContextWithOwner(ctx, owner), "hello", runner.WithThread(b.parent.ID))
	if err != nil || res.Status != runstate.StatusCompleted {
		t.Fatalf("run: %v, %v", res, err)
	}
	if got := seen.last(); got != "You are support.\n\n"+notes {
		t.Fatalf("system prompt = %q; want the instructions, then the memory", got)
	}

	_, err = r.Run(ctx, "hello", runner.WithThread(b.parent.ID))
	if !errors.Is(err, threadhandoff.ErrNoOwner) || !strings.Contains(err.Error(), "memory of agent "+assistant) {
		t.Fatalf("run without an owner: %v; want ErrNoOwner naming the agent", err)
	}
	if n := len(seen.all); n != 1 {
		t.Fatalf("%d model calls; the run without an owner must not call the model", n)
	}
}

// TestExtensionAfterRun: AfterRun cleans up after completed runs on a
// thread only, and logs what keeps it from doing so.
func TestExtensionAfterRun(t *testing.T) {
	t.Parallel()
	b := setup(t, storetesting.Backend{Name: "SQLite", Open: storetesting.SQLite}, setupOpts{})
	ctx := store.ContextWithOwner(t.Context(), owner)
	child, p := b.approved(t)
	ext := b.svc.Extension()
	pending := func() bool {
		t.Helper()
		h := threadhandoff.HandoffOf(b.thread(t, child))
		return h != nil && h.CleanupRequired && h.Pending
	}
	state := func(thread string, status runstate.Status) *runstate.State {
		return &runstate.State{RunID: "run-1", ThreadID: thread, Status: status}
	}

	for name, o := range map[string]*runner.Outcome{
		"Failed":      {State: state(child, runstate.StatusFailed), Err: errors.New("model down")},
		"Cancelled":   {State: state(child, runstate.StatusRunning), Err: context.Canceled},
		"Interrupted": {State: state(child, runstate.StatusInterrupted)},
		"Suspended":   {State: state(child, runstate.StatusSuspended)},
		"NoThread":    {State: state("", runstate.StatusCompleted)},
	} {
		ext.AfterRun(ctx, o)
		if !pending() {
			t.Fatalf("%s: the seed was cleared", name)
		}
	}
	if n := len(b.logs.all("thread handoff cleanup failed: the summary stays in memory until the next completed run")); n != 0 {
		t.Fatalf("%d warnings for runs that need no cleanup", n)
	}

	// A completed run without an owner: logged, nothing written.
	ext.AfterRun(t.Context(), &runner.Outcome{State: state(child, runstate.StatusCompleted)})
	rec := b.logs.find("thread handoff cleanup failed: the summary stays in memory until the next completed run")
	if rec == nil || rec["level"] != "WARN" || rec["thread_id"] != child || rec["run_id"] != "run-1" ||
		!strings.Contains(fmt.Sprint(rec["error"]), "no owner") || !pending() {
		t.Fatalf("no owner: log %v, pending %v", rec, pending())
	}

	// A completed run: cleaned up, once.
	ext.AfterRun(ctx, &runner.Outcome{State: state(child, runstate.StatusCompleted)})
	ext.AfterRun(ctx, &runner.Outcome{State: state(child, runstate.StatusCompleted), Resumed: true})
	if pending() {
		t.Fatal("a completed run of the child did not clear the seed")
	}
	if recs := b.logs.all("thread handoff cleanup: summary cleared from memory"); len(recs) != 1 || recs[0]["handoff_id"] != p.HandoffID {
		t.Fatalf("cleanup logs = %v", recs)
	}
	if blk := block(t, b.doc(t)); blk != memory.Placeholder {
		t.Fatalf("block = %q", blk)
	}

	// A failing store: logged at warn with the thread and run.
	gone, _ := storetesting.SQLite(t)
	gone.Close()
	logs := &logSink{}
	broken, err := threadhandoff.New(threadhandoff.Config{Store: gone, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	broken.Extension().AfterRun(ctx, &runner.Outcome{State: &runstate.State{RunID: "run-2", ThreadID: child, Status: runstate.StatusCompleted}})
	rec = logs.find("thread handoff cleanup failed: the summary stays in memory until the next completed run")
	if rec == nil || rec["level"] != "WARN" || rec["thread_id"] != child || rec["run_id"] != "run-2" || rec["error"] == nil {
		t.Fatalf("failure log = %v", rec)
	}
}

// pickNet returns a network with an entry agent triage and, when withSupport
// is set, the assistant support; every agent answers with its name. seen,
// if not nil, keeps the system prompts the models receive.
func pickNet(t *testing.T, withSupport bool, seen *systemLog) *agent.Network {
	t.Helper()
	names := []string{"triage"}
	if withSupport {
		names = append(names, assistant)
	}
	var agents []*agent.Agent
	for _, n := range names {
		inner := scripted.New(n, []scripted.Step{{Text: n + " answering."}}, scripted.Options{})
		m := model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
			if seen != nil {
				seen.mu.Lock()
				seen.all = append(seen.all, req.Agent+": "+req.System)
				seen.mu.Unlock()
			}
			return inner.Stream(ctx, req)
		})
		agents = append(agents, &agent.Agent{Name: n, Instructions: "You are " + n + ".", Model: m, ModelName: "scripted"})
	}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support-net", Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	return net
}

// fixedPicker always picks its agent.
type fixedPicker string

func (f fixedPicker) Pick(context.Context, policy.PickInput) (string, string, error) {
	return string(f), "fixed", nil
}

func TestPicker(t *testing.T) {
	t.Parallel()
	b := setup(t, storetesting.Backend{Name: "SQLite", Open: storetesting.SQLite}, setupOpts{})
	withOwner := store.ContextWithOwner(t.Context(), owner)
	child, _ := b.approved(t)
	svcFor := func(net *agent.Network) *threadhandoff.Service {
		t.Helper()
		svc, err := threadhandoff.New(threadhandoff.Config{Store: b.st, Memory: b.mem, Network: net, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	for _, tc := range []struct {
		name       string
		svc        *threadhandoff.Service
		next       policy.Picker
		ctx        context.Context
		in         policy.PickInput
		want, why  string
		wantNoOwnr bool
	}{
		{name: "PendingChild", svc: b.svc, ctx: withOwner, in: policy.PickInput{ThreadID: child, LastAgent: "triage"}, want: assistant, why: threadhandoff.PickReason},
		{name: "PendingChildBeatsNext", svc: b.svc, next: fixedPicker("triage"), ctx: withOwner, in: policy.PickInput{ThreadID: child}, want: assistant, why: threadhandoff.PickReason},
		{name: "NetworkHasAssistant", svc: svcFor(pickNet(t, true, nil)), ctx: withOwner, in: policy.PickInput{ThreadID: child}, want: assistant, why: threadhandoff.PickReason},
		{name: "NetworkLacksAssistant", svc: svcFor(pickNet(t, false, nil)), next: fixedPicker("triage"), ctx: withOwner, in: policy.PickInput{ThreadID: child}, want: "triage", why: "fixed"},
		{name: "NetworkLacksAssistantNoNext", svc: svcFor(pickNet(t, false, nil)), ctx: withOwner, in: policy.PickInput{ThreadID: child}},
		{name: "Parent", svc: b.svc, next: policy.Sticky{}, ctx: withOwner, in: policy.PickInput{ThreadID: b.parent.ID, LastAgent: "triage"}, want: "triage", why: "sticky"},
		{name: "ParentNoNext", svc: b.svc, ctx: withOwner, in: policy.PickInput{ThreadID: b.parent.ID}},
		{name: "UnknownThread", svc: b.svc, next: fixedPicker("triage"), ctx: withOwner, in: policy.PickInput{ThreadID: "nope"}, want: "triage", why: "fixed"},
		{name: "NewThread", svc: b.svc, next: fixedPicker("triage"), ctx: t.Context(), in: policy.PickInput{Input: "hi"}, want: "triage", why: "fixed"},
		{name: "NoOwner", svc: b.svc, next: fixedPicker("triage"), ctx: t.Context(), in: policy.PickInput{ThreadID: child}, wantNoOwnr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why, err := tc.svc.Picker(tc.next).Pick(tc.ctx, tc.in)
			if tc.wantNoOwnr {
				if !errors.Is(err, threadhandoff.ErrNoOwner) || got != "" {
					t.Fatalf("Pick = %q, %v; want ErrNoOwner", got, err)
				}
				return
			}
			if err != nil || got != tc.want || why != tc.why {
				t.Fatalf("Pick = %q, %q, %v; want %q, %q", got, why, err, tc.want, tc.why)
			}
		})
	}

	// Once the child's first turn has completed, next decides.
	if done, err := b.svc.Cleanup(withOwner, owner, child); err != nil || !done {
		t.Fatalf("Cleanup = %v, %v", done, err)
	}
	if got, why, err := b.svc.Picker(fixedPicker("triage")).Pick(withOwner, policy.PickInput{ThreadID: child}); err != nil || got != "triage" || why != "fixed" {
		t.Fatalf("after the cleanup: Pick = %q, %q, %v", got, why, err)
	}
}

// TestChildTurnsThroughThreads is the wiring of every process: turns through
// package threads, whose runner carries the extension and the picker. The
// child's first turn starts at the assistant (not the entry agent) and
// sees the summary; its completion clears the seed; the next turn starts
// at the entry agent and sees the placeholder.
func TestChildTurnsThroughThreads(t *testing.T) {
	t.Parallel()
	storetesting.Each(t, func(t *testing.T, be storetesting.Backend) {
		b := setup(t, be, setupOpts{})
		ctx := t.Context()
		child, p := b.approved(t)
		prompts := &systemLog{}
		net := pickNet(t, true, prompts)
		svc, err := threadhandoff.New(threadhandoff.Config{Store: b.st, Network: net, Logger: b.cfg.Logger})
		if err != nil {
			t.Fatal(err)
		}
		r, err := runner.New(runner.Config{Network: net, Extensions: []runner.Extension{svc.Extension()}, Picker: svc.Picker(nil),
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		th := threads.New(b.st, r, slog.New(slog.DiscardHandler))
		turn := func(input string) (first, reason string) {
			t.Helper()
			for ev, err := range th.Turn(ctx, owner, input, threads.TurnOptions{ThreadID: child}) {
				if err != nil {
					t.Fatalf("turn %q: %v", input, err)
				}
				if e, ok := ev.(*runner.AgentStartEvent); ok && first == "" {
					first, reason = e.Agent, e.Reason
				}
				if e, ok := ev.(*runner.RunEndEvent); ok && e.Status != runstate.StatusCompleted {
					t.Fatalf("turn %q ended %s", input, e.Status)
				}
			}
			return first, reason
		}

		if a, why := turn("Any news?"); a != assistant || why != threadhandoff.PickReason {
			t.Fatalf("first turn of the child started at %s (%s); want %s (%s)", a, why, assistant, threadhandoff.PickReason)
		}
		if sys := prompts.last(); !strings.HasPrefix(sys, assistant+": ") || !strings.Contains(sys, "Refund for order 1142") {
			t.Fatalf("the child's first model call:\n%s", sys)
		}
		if h := threadhandoff.HandoffOf(b.thread(t, child)); h == nil || h.CleanupRequired || h.Pending || h.HandoffID != p.HandoffID {
			t.Fatalf("handoff metadata after the first turn = %+v; want it cleaned up", h)
		}
		if a, why := turn("And now?"); a != "triage" || why != "entry" {
			t.Fatalf("second turn started at %s (%s); want triage (entry)", a, why)
		}
		if n := len(prompts.all); n != 2 {
			t.Fatalf("%d model calls; want 2", n)
		}
		if n := len(b.logs.all("thread handoff cleanup: summary cleared from memory")); n != 1 {
			t.Fatalf("%d cleanups; want 1", n)
		}
	})
}
