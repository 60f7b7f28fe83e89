// Package runtest reads a run's events in tests: the run_start and run_end
// that most tests of a turn or resume want, every event to a callback for
// the rest. [Stall] is the network of a run stuck mid-step, which
// continuation's and the server's shutdown tests share.
package runtest

import (
	"iter"
	"testing"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// Ran is what a run's events said: its start and its end (nil when none
// came).
type Ran struct {
	Start *runner.RunStartEvent
	End   *runner.RunEndEvent
}

// Collect reads events to their end, failing t on an error, and returns
// the run's start and end. each, if not nil, sees every event as it comes.
func Collect(t testing.TB, events iter.Seq2[runner.Event, error], each func(runner.Event)) Ran {
	t.Helper()
	var r Ran
	for ev, err := range events {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			r.Start = e
		case *runner.RunEndEvent:
			r.End = e
		}
		if each != nil {
			each(ev)
		}
	}
	return r
}

// RunID is the run's id, "" when it never started.
func (r Ran) RunID() string {
	if r.Start == nil {
		return ""
	}
	return r.Start.RunID
}

// ThreadID is the run's thread, "" when it never started.
func (r Ran) ThreadID() string {
	if r.Start == nil {
		return ""
	}
	return r.Start.ThreadID
}

// Status is the status the run ended with, "" when it never ended.
func (r Ran) Status() runstate.Status {
	if r.End == nil {
		return ""
	}
	return r.End.Status
}
