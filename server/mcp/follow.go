package mcp

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/runtext"
)

// fold folds a run's events into its answer: the text of every assistant
// message of the run, in order, separated by blank lines (as
// /v1/chat/completions answers).
type fold struct {
	run       *server.Run
	text      runtext.Answer
	end       *runner.RunEndEvent
	interrupt *runstate.Interrupt
	failure   string
	lastAgent string
}

// add folds an event and returns the text it adds to the answer.
func (f *fold) add(e server.Entry) string {
	out := f.text.Add(e)
	switch runner.EventType(e.Type) {
	case runner.TypeRunStart:
		f.end, f.interrupt, f.failure = nil, nil, ""
	case runner.TypeAgentStart:
		if ev, ok := runlog.Decode[runner.AgentStartEvent](e); ok {
			f.lastAgent = ev.Agent
		}
	case runner.TypeInterrupt:
		if ev, ok := runlog.Decode[runner.InterruptEvent](e); ok {
			f.interrupt = ev.Interrupt
		}
	case runner.TypeError:
		if ev, ok := runlog.Decode[runner.ErrorEvent](e); ok {
			f.failure = ev.Message
		}
	case runner.TypeRunEnd:
		if ev, ok := runlog.Decode[runner.RunEndEvent](e); ok && ev.Status != runstate.StatusSuspended {
			f.end = ev
			if ev.LastAgent != "" {
				f.lastAgent = ev.LastAgent
			}
		}
	}
	return out
}

// follow folds the run's events — those of its earlier executions too, so
// that the answer of a resumed run is whole — until the execution that
// started with this call ends or waits for a decision (its run_end). Each
// piece of the answer of this execution is a progress notification, when
// the call has a progress token: its message the piece, its progress the
// answer's length so far.
func (t *tool) follow(ctx context.Context, req *mcp.CallToolRequest, run *server.Run) (*fold, error) {
	defer run.Reader()()
	f := &fold{run: run}
	from := run.StartedAt()
	token := req.Params.GetProgressToken()
	sent := 0
	err := t.c.Events(ctx, run, server.Cursor{}, func(e server.Entry) bool {
		piece := f.add(e)
		mine := from.Less(e.At)
		if piece != "" && mine && token != nil {
			sent += len(piece)
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(sent), Message: piece})
		}
		// Done at this execution's end (or its wait for a decision): the
		// next call on the thread waits, if it must, for the run's
		// goroutine to free it (the server's register), so the call does
		// not wait for the log to close.
		return !(mine && f.end != nil && runner.EventType(e.Type) == runner.TypeRunEnd)
	})
	if err != nil {
		return nil, err
	}
	return f, ctx.Err()
}
