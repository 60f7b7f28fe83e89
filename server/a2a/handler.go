package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
	"github.com/batonhq/baton/webhook/a2apush"
)

// contextIDPattern is the shape of a context id a client may choose.
var contextIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// OnSendMessage runs the message's turn (or answers its task's interrupt)
// and returns the task once it is final or waits for input; with blocking
// false, or past the request timeout, as it is then.
func (h *a2aHandler) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	run, err := h.begin(ctx, p)
	if err != nil {
		return nil, a2aError(err)
	}
	f := newTaskFold(run)
	f.request(p.Message)
	blocking := p.Config == nil || p.Config.Blocking == nil || *p.Config.Blocking
	wctx, cancel := context.WithTimeout(ctx, h.s.c.RequestTimeout())
	defer cancel()
	if !blocking {
		wctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	// The run's earlier executions (a resumed task's) are folded too; only
	// an event of this one settles the task.
	from := run.StartedAt()
	_ = h.s.c.Events(wctx, run, server.Cursor{}, func(e server.Entry) bool {
		f.add(e)
		return !f.settled() || !from.Less(e.At)
	})
	return f.task(historyLength(p.Config)), nil
}

// OnSendMessageStream runs the message's turn and streams its task: the
// task first, then its status and artifact updates, until it is final or
// waits for input.
func (h *a2aHandler) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		run, err := h.begin(ctx, p)
		if err != nil {
			yield(nil, a2aError(err))
			return
		}
		h.stream(ctx, run, run.StartedAt(), p.Message, yield)
	}
}

// OnResubscribeToTask streams a task from now: the task as it is, then its
// updates, until it is final or waits for input.
func (h *a2aHandler) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if p == nil {
			yield(nil, a2a.ErrInvalidParams)
			return
		}
		run, err := h.run(ctx, string(p.ID))
		if err != nil {
			yield(nil, a2aError(err))
			return
		}
		h.stream(ctx, run, run.Last(), nil, yield)
	}
}

// stream yields a run's task: the events up to from are folded into the
// task yielded first, the later ones follow as updates. req, if not nil,
// is the message that started them.
func (h *a2aHandler) stream(ctx context.Context, run *server.Run, from server.Cursor, req *a2a.Message, yield func(a2a.Event, error) bool) {
	defer run.Reader()()
	f := newTaskFold(run)
	f.request(req)
	exec := run.StartedAt()
	sent := false
	ok := true
	err := h.s.c.Events(ctx, run, server.Cursor{}, func(e server.Entry) bool {
		if !sent && from.Less(e.At) {
			sent = true
			if ok = yield(f.task(nil), nil); !ok {
				return false
			}
		}
		evs := f.add(e)
		if sent {
			for _, ev := range evs {
				if ok = yield(ev, nil); !ok {
					return false
				}
			}
		}
		// Events of a resumed task's earlier executions do not settle it.
		return !f.settled() || !exec.Less(e.At)
	})
	if !ok {
		return
	}
	if !sent {
		if !yield(f.task(nil), nil) {
			return
		}
	}
	if err != nil && ctx.Err() == nil {
		yield(nil, a2aError(err))
	}
}

// OnGetTask returns a task as it is now.
func (h *a2aHandler) OnGetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	if q == nil {
		q = &a2a.TaskQueryParams{}
	}
	run, err := h.task(ctx, q.ID)
	if err != nil {
		return nil, err
	}
	return h.taskNow(ctx, run).task(q.HistoryLength), nil
}

// OnCancelTask cancels the task's run, as POST
// /v1/threads/{id}/runs/{run_id}/cancel does (threads.Service.Cancel): it
// stops at its next safe boundary, keeping what it did, wherever it
// executes. A finished task is not cancelable.
func (h *a2aHandler) OnCancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	if p == nil {
		p = &a2a.TaskIDParams{}
	}
	run, err := h.task(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	run, err = h.s.c.Cancel(ctx, h.c, h.nw, run.ThreadID(), run.ID())
	var fe *threads.FinishedError
	switch {
	case errors.As(err, &fe):
		return nil, fmt.Errorf("%w: task %s is already %s", a2a.ErrTaskNotCancelable, p.ID, taskState(fe.Status))
	case err != nil:
		return nil, a2aError(err)
	}
	t := h.taskNow(ctx, run).task(nil)
	// The run's entry in this process may not have caught up with its end
	// yet (another process executed it): the store says it is cancelled.
	t.Status.State = a2a.TaskStateCanceled
	return t, nil
}

// OnGetExtendedAgentCard: the public card is the whole card.
func (h *a2aHandler) OnGetExtendedAgentCard(context.Context) (*a2a.AgentCard, error) {
	return nil, a2a.ErrAuthenticatedExtendedCardNotConfigured
}

// begin starts what a message asks: a turn on its context's thread (made
// for a new context), or the answer to its task's interrupt.
func (h *a2aHandler) begin(ctx context.Context, p *a2a.MessageSendParams) (*server.Run, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: params are required", a2a.ErrInvalidParams)
	}
	in, err := parseA2AMessage(p.Message)
	if err != nil {
		return nil, err
	}
	s, c, nw := h.s, h.c, h.nw
	var push *a2a.PushConfig
	if p.Config != nil {
		push = p.Config.PushConfig
	}
	if p.Message.TaskID != "" {
		return h.answer(ctx, p.Message, in, push)
	}
	if len(in.decisions) > 0 {
		return nil, fmt.Errorf("%w: a decision answers a task: give the message its taskId", a2a.ErrInvalidParams)
	}
	if err := s.c.CheckInput(in.text); err != nil {
		return nil, err
	}
	threadID := p.Message.ContextID
	if threadID != "" {
		if !contextIDPattern.MatchString(threadID) {
			return nil, fmt.Errorf("%w: contextId %q: want 1-128 letters, digits, '_', '.', ':' or '-'", a2a.ErrInvalidParams, threadID)
		}
		th, err := s.c.Thread(ctx, c, threadID)
		switch {
		case err == nil && th.Network != nw.Name():
			return nil, fmt.Errorf("%w: context %s is a thread of network %q, not %q", a2a.ErrInvalidParams, threadID, th.Network, nw.Name())
		case err == nil:
			if len(in.history) > 0 {
				return nil, fmt.Errorf("%w: history is for a new context; context %s has its own", a2a.ErrInvalidParams, threadID)
			}
			return h.startTurn(ctx, threadID, in.text, push)
		case server.Classify(err).Status != http.StatusNotFound:
			return nil, err
		}
	}
	// A new context: a new thread, with the history the message brings.
	if push != nil && !s.c.PushNotifications() {
		return nil, a2a.ErrPushNotificationNotSupported
	}
	md := map[string]json.RawMessage{"source": json.RawMessage(`"a2a"`)}
	nm := make([]store.NewMessage, len(in.history))
	for i, m := range in.history {
		nm[i] = store.NewMessage{Message: m}
	}
	th, err := s.c.CreateThread(ctx, c, &store.CreateThreadParams{ID: threadID, Network: nw.Name(), Name: threads.Title(in.text), Metadata: md, Messages: nm})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("%w: contextId %q is taken", a2a.ErrInvalidParams, threadID)
		}
		return nil, err
	}
	return h.startTurn(ctx, th.ID, in.text, push)
}

// startTurn starts a turn on a thread as a new task, with push, if not
// nil, as its push notification config, stored before the turn starts.
func (h *a2aHandler) startTurn(ctx context.Context, threadID, input string, push *a2a.PushConfig) (*server.Run, error) {
	runID := runstate.NewRunID()
	if err := h.putPush(ctx, runID, threadID, push); err != nil {
		return nil, err
	}
	run, err := h.s.c.StartTurn(ctx, h.c, h.nw, server.Turn{ThreadID: threadID, RunID: runID, Input: input})
	if err != nil && push != nil {
		_ = h.s.c.DeletePushConfig(context.WithoutCancel(ctx), h.c, runID, a2apush.From03(runID, push).ID)
	}
	return run, err
}

// answer resumes the interrupted run of a message's task with the
// decisions the message gives.
func (h *a2aHandler) answer(ctx context.Context, m *a2a.Message, in *a2aInput, push *a2a.PushConfig) (*server.Run, error) {
	s, c, nw := h.s, h.c, h.nw
	cp, err := s.c.LatestCheckpoint(ctx, c, string(m.TaskID))
	if errors.Is(err, store.ErrNotFound) || err == nil && cp.State.Network != nw.Name() {
		return nil, fmt.Errorf("%w: task %s", a2a.ErrTaskNotFound, m.TaskID)
	}
	if err != nil {
		return nil, err
	}
	if m.ContextID != "" && m.ContextID != cp.ThreadID {
		return nil, fmt.Errorf("%w: task %s is in context %s, not %s", a2a.ErrInvalidParams, m.TaskID, cp.ThreadID, m.ContextID)
	}
	if cp.State.Status != runstate.StatusInterrupted || cp.State.Interrupt == nil {
		return nil, fmt.Errorf("%w: task %s is %s, not waiting for input: send a new message in its context (contextId %s) to go on", a2a.ErrInvalidParams, m.TaskID, taskState(cp.State.Status), cp.ThreadID)
	}
	decisions := in.decisions
	if len(decisions) == 0 {
		switch strings.ToLower(strings.TrimSpace(in.text)) {
		case "approve", "approved", "yes":
			decisions = []runner.Decision{{Type: runner.DecisionApprove}}
		case "reject", "rejected", "no":
			decisions = []runner.Decision{{Type: runner.DecisionReject}}
		default:
			return nil, fmt.Errorf("%w: task %s waits for a decision on %s: answer approve or reject, or a data part {\"type\": \"approve\"|\"reject\"|\"edit\", ...}", a2a.ErrInvalidParams, m.TaskID, a2apush.ActionNames(cp.State.Interrupt))
		}
	}
	if err := h.putPush(ctx, cp.RunID, cp.ThreadID, push); err != nil {
		return nil, err
	}
	return s.c.Resume(ctx, c, nw, cp, decisions)
}

// taskNow folds the run's events as they are now, without waiting.
func (h *a2aHandler) taskNow(ctx context.Context, run *server.Run) *taskFold {
	f := newTaskFold(run)
	now, cancel := context.WithCancel(ctx)
	cancel() // what is there now, without waiting
	_ = h.s.c.Events(now, run, server.Cursor{}, func(e server.Entry) bool {
		f.add(e)
		return true
	})
	return f
}

// task returns the run of the task a request names by id (required), its
// error an A2A error.
func (h *a2aHandler) task(ctx context.Context, id a2a.TaskID) (*server.Run, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: id is required", a2a.ErrInvalidParams)
	}
	run, err := h.run(ctx, string(id))
	return run, a2aError(err)
}

// run returns a run of the caller on this network, by id.
func (h *a2aHandler) run(ctx context.Context, id string) (*server.Run, error) {
	if id == "" || len(id) > 128 {
		return nil, fmt.Errorf("%w: task %q", a2a.ErrTaskNotFound, id)
	}
	run, err := h.s.c.Run(ctx, h.c, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && run.Network() != h.nw.Name() {
		return nil, fmt.Errorf("%w: task %s", a2a.ErrTaskNotFound, id)
	}
	return run, err
}
