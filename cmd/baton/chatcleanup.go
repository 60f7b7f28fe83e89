package main

import (
	"context"
	"fmt"
	"iter"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

// cleanupResult is what the runner's thread handoff extension did after the
// first completed turn of a child thread, as [chatStore.reportCleanup]
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
func (c *chatStore) reportCleanup(ctx context.Context, events iter.Seq2[runner.Event, error], report func(cleanupResult)) iter.Seq2[runner.Event, error] {
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
				pending, _ = c.pendingSeed(ctx, thread)
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
		still, err := c.pendingSeed(ctx, thread)
		if err == nil && still {
			err = fmt.Errorf("thread %s still waits for its clean-up after a completed turn", thread)
		}
		report(cleanupResult{ThreadID: thread, Cleared: err == nil, Err: err})
	}
}

// pendingSeed reports whether threadID is a child thread whose thread handoff
// seed waits for its first completed turn.
func (c *chatStore) pendingSeed(ctx context.Context, threadID string) (bool, error) {
	if threadID == "" {
		return false, nil
	}
	th, err := c.st.GetThread(ctx, &store.GetThreadParams{OwnerID: c.owner, ID: threadID})
	if err != nil {
		return false, err
	}
	hf := threadhandoff.HandoffOf(th)
	return hf != nil && hf.ChildThreadID == threadID && hf.CleanupRequired, nil
}
