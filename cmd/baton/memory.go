package main

import (
	"context"
	"flag"
	"iter"
	"log/slog"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/summary"
)

// memoryFlags are the flags of commands that run turns with agent memory.
type memoryFlags struct {
	dir string
}

func (f *memoryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "memory-dir", "", "keep the agents' memory documents in DIR/<owner>/<agent>.md (default: in the database)")
}

// handoffMemory wires thread → thread handoff into a command's runs:
//
//   - the running agent's memory is injected into every model call (the
//     runner's System), so a child thread's first turn sees its summary;
//   - every run carries its owner (runner.WithValues), for workers that
//     resume it;
//   - the first turn of a child thread starts with the agent whose memory
//     holds the summary (the child's active agent), whatever the picker;
//   - after every completed run the seed is cleaned up (Service.Cleanup),
//     so later turns see the placeholder.
type handoffMemory struct {
	svc   *summary.Service
	st    store.Store
	owner string
}

// newHandoffMemory returns the wiring for owner's runs on st. summaryModel
// may be nil when the command never previews a handoff.
func newHandoffMemory(st store.Store, owner string, mf memoryFlags, summaryModel model.Model) (*handoffMemory, error) {
	cfg := summary.Config{Store: st, Model: summaryModel}
	if mf.dir != "" {
		cfg.Memory = &memory.Dir{Path: mf.dir}
	}
	svc, err := summary.New(cfg)
	if err != nil {
		return nil, err
	}
	return &handoffMemory{svc: svc, st: st, owner: owner}, nil
}

// runner returns a runner for spec whose model calls see the agents' memory.
func (h *handoffMemory) runner(spec *netspec.Spec) (*runner.Runner, error) {
	return newRunner(spec, func(c *runner.Config) { c.Extensions = []runner.Extension{h.extension()} })
}

// extension injects the memory of the owner the run carries, or of the
// command's owner for runs stored before runs carried one.
func (h *handoffMemory) extension() runner.Extension {
	return h.svc.Extension(func(rc *agent.RunContext) (string, error) {
		if o, err := summary.OwnerFromValues(rc); err == nil {
			return o, nil
		}
		return h.owner, nil
	})
}

// pendingChild returns the agent that holds the summary of a handoff when
// threadID is a child thread whose first turn has not completed yet, or "".
func (h *handoffMemory) pendingChild(ctx context.Context, threadID string) string {
	if threadID == "" {
		return ""
	}
	th, err := h.st.GetThread(ctx, &store.GetThreadParams{OwnerID: h.owner, ID: threadID})
	if err != nil {
		return "" // the turn reports it
	}
	if hf := summary.HandoffOf(th); hf != nil && hf.ChildThreadID == threadID && hf.CleanupRequired {
		return hf.AssistantID
	}
	return ""
}

// turnOptions returns the run options of a new turn on threadID ("" for a
// new thread) of a run on net: the owner value and, on a child thread's
// first turn, the agent that holds the summary unless chosen (--agent)
// says the caller picked one. It reports the agent it starts with, if any.
func (h *handoffMemory) turnOptions(ctx context.Context, net *agent.Network, threadID string, chosen bool) ([]runner.RunOption, string) {
	opts := []runner.RunOption{runner.WithValues(summary.OwnerValues(h.owner))}
	if chosen {
		return opts, ""
	}
	if a := h.pendingChild(ctx, threadID); a != "" {
		if _, ok := net.Agent(a); ok {
			return append(opts, runner.WithAgent(a)), a
		}
	}
	return opts, ""
}

// cleanupResult is what [handoffMemory.afterRun] did after a completed run.
type cleanupResult struct {
	ThreadID string
	// Cleared is true when this run was a child's first completed turn and
	// its summary has been cleared from memory.
	Cleared bool
	Err     error
}

// afterRun passes events through and, once a run ends completed, calls
// Cleanup on its thread and reports the result to report (nil: failures
// are logged).
func (h *handoffMemory) afterRun(ctx context.Context, events iter.Seq2[runner.Event, error], report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	return func(yield func(runner.Event, error) bool) {
		thread, completed := "", false
		for ev, err := range events {
			switch e := ev.(type) {
			case *runner.RunStartEvent:
				thread = e.ThreadID
			case *runner.RunEndEvent:
				completed = err == nil && e.Status == runstate.StatusCompleted
			}
			if !yield(ev, err) {
				return
			}
			if err != nil {
				return
			}
		}
		if !completed || thread == "" {
			return
		}
		done, err := h.svc.Cleanup(ctx, h.owner, thread)
		if err != nil && report == nil {
			slog.WarnContext(ctx, "handoff cleanup failed: the summary stays in memory until the next completed turn", "thread_id", thread, "error", err)
		}
		if report != nil {
			report(cleanupResult{ThreadID: thread, Cleared: done, Err: err})
		}
	}
}
