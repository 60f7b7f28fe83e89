package main

import (
	"context"
	"flag"
	"fmt"
	"iter"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

// memoryFlags are the flags of commands that run turns with agent memory.
type memoryFlags struct {
	dir string
}

func (f *memoryFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "memory-dir", "", "keep the agents' memory documents in DIR/<owner>/<agent>.md (default: in the database)")
}

// handoffMemory wires thread → thread handoff into a command's runs. Its
// runner carries the service's extension (the running agent's memory in
// every model call; a child thread's seed cleared after its first
// completed run) and picker (a child thread's first turn starts with the
// agent whose memory holds the summary). The owner travels in the run's
// context, which package threads sets.
type handoffMemory struct {
	svc   *threadhandoff.Service
	st    store.Store
	owner string
}

// newHandoffMemory returns the wiring for owner's runs of net on st.
// summaryModel may be nil when the command never previews a handoff.
func newHandoffMemory(st store.Store, owner string, mf memoryFlags, net *agent.Network, summaryModel model.Model) (*handoffMemory, error) {
	cfg := threadhandoff.Config{Store: st, Model: summaryModel, Network: net}
	if mf.dir != "" {
		cfg.Memory = &memory.Dir{Path: mf.dir}
	}
	svc, err := threadhandoff.New(cfg)
	if err != nil {
		return nil, err
	}
	return &handoffMemory{svc: svc, st: st, owner: owner}, nil
}

// runner returns a runner for spec with the handoff extension and picker.
func (h *handoffMemory) runner(spec *netspec.Spec) (*runner.Runner, error) {
	return newRunner(spec, func(c *runner.Config) {
		c.Extensions = []runner.Extension{h.svc.Extension()}
		c.Picker = h.svc.Picker(spec.Picker)
	})
}

// cleanupResult is what the runner's handoff extension did after the
// first completed turn of a child thread, as [handoffMemory.reportCleanup]
// sees it.
type cleanupResult struct {
	ThreadID string
	// Cleared is true when the child's summary has been cleared from
	// memory.
	Cleared bool
	Err     error
}

// reportCleanup passes events through and, when the run was a completed
// turn of a child thread whose seed was pending, reports to report whether
// the seed has been cleared (by the runner's extension). With a nil report
// it returns events as they are.
func (h *handoffMemory) reportCleanup(ctx context.Context, events iter.Seq2[runner.Event, error], report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	if report == nil {
		return events
	}
	return func(yield func(runner.Event, error) bool) {
		thread, pending, completed := "", false, false
		for ev, err := range events {
			switch e := ev.(type) {
			case *runner.RunStartEvent:
				// The run waits while its events are handled: its
				// clean-up has not run yet.
				thread = e.ThreadID
				pending, _ = h.pendingSeed(ctx, thread)
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
		if !completed || !pending {
			return
		}
		still, err := h.pendingSeed(ctx, thread)
		if err == nil && still {
			err = fmt.Errorf("thread %s still waits for its clean-up after a completed turn", thread)
		}
		report(cleanupResult{ThreadID: thread, Cleared: err == nil, Err: err})
	}
}

// pendingSeed reports whether threadID is a child thread whose handoff
// seed waits for its first completed turn.
func (h *handoffMemory) pendingSeed(ctx context.Context, threadID string) (bool, error) {
	if threadID == "" {
		return false, nil
	}
	th, err := h.st.GetThread(ctx, &store.GetThreadParams{OwnerID: h.owner, ID: threadID})
	if err != nil {
		return false, err
	}
	hf := threadhandoff.HandoffOf(th)
	return hf != nil && hf.ChildThreadID == threadID && hf.CleanupRequired, nil
}
