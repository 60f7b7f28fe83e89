package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/threads"
)

// multitask submits text, typed while an answer streams, to the thread's
// queue with strategy s (enqueue, or interrupt the answer), through the
// library's threads.Service.Submit as the API's multitask_strategy does.
func (m *chatModel) multitask(text string, s threads.Strategy) tea.Cmd {
	m.input.Reset()
	m.println("")
	label := "you (queued): "
	if s == threads.Interrupt {
		label = "you (interrupting): "
		m.status = "interrupting the answer…"
	}
	m.println(label + strings.ReplaceAll(text, "\n", "\n     "))
	m.pending++
	thread := m.thread
	return func() tea.Msg {
		pos, err := m.be.Submit(m.ctx, thread, text, s)
		return queuedMsg{text: text, pos: pos, err: err}
	}
}

// queued reports a submitted message: queued, refused, or (the thread was
// free by then) run now.
func (m *chatModel) queued(msg queuedMsg) tea.Cmd {
	switch {
	case msg.err != nil:
		m.pending--
		m.println("✗ not queued: " + msg.err.Error())
	case msg.pos == 0:
		m.pending--
		if m.mode == modeInput {
			thread := m.thread
			return m.start(func(ctx context.Context, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
				return m.be.Turn(ctx, thread, msg.text, report)
			})
		}
		m.input.SetValue(msg.text) // the thread is busy again: send it later
	default:
		m.println(fmt.Sprintf("· queued (%d): sent once the answer is done", msg.pos))
	}
	return nil
}

// awaitQueued waits for the thread's next queued message to start (the
// end of the run before it starts it).
func (m *chatModel) awaitQueued() tea.Cmd {
	ch := m.be.Started()
	return func() tea.Msg {
		select {
		case q := <-ch:
			return queuedStartMsg{q: q, ok: true}
		case <-time.After(10 * time.Second):
			return queuedStartMsg{}
		case <-m.ctx.Done():
			return nil
		}
	}
}

// queuedStart runs the thread's next queued message here.
func (m *chatModel) queuedStart(msg queuedStartMsg) tea.Cmd {
	if !msg.ok {
		m.pending = 0
		m.println("· your queued messages wait in the thread's queue: they are sent after its run (/resume)")
		return nil
	}
	m.pending = max(m.pending-1, 0)
	thread, q := m.thread, msg.q
	return m.start(func(ctx context.Context, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
		return m.be.RunQueued(ctx, thread, q, report)
	})
}

// start runs a turn (or a resumed run) in a goroutine that feeds its
// events to the program through m.events.
func (m *chatModel) start(run func(ctx context.Context, report func(cleanupResult)) iter.Seq2[runner.Event, error]) tea.Cmd {
	ctx, cancel := context.WithCancel(m.ctx)
	ch := make(chan tea.Msg, 256)
	stop := new(atomic.Bool)
	m.cancel, m.events, m.mode, m.status = cancel, ch, modeRunning, "answering…"
	m.stop, m.stopped, m.aborted = stop, false, false
	m.interrupt, m.runID = nil, ""
	root := m.ctx
	m.runs.Add(1)
	go func() {
		defer m.runs.Done()
		defer close(ch)
		send := func(msg tea.Msg) {
			select {
			case ch <- msg:
			case <-root.Done():
			}
		}
		var runErr error
		for ev, err := range run(ctx, func(r cleanupResult) { send(cleanupMsg{res: r}) }) {
			if err != nil {
				runErr = err
				break
			}
			if stop.Load() {
				break // the runner records the run as stopped (failed)
			}
			send(runEventMsg{ev: ev})
		}
		send(runDoneMsg{err: runErr})
	}()
	return m.wait()
}

// wait returns the next message of the running turn.
func (m *chatModel) wait() tea.Cmd {
	ch := m.events
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		msg, ok := <-ch
		if !ok {
			return nil
		}
		return msg
	}
}

// event shows one run event.
func (m *chatModel) event(ev runner.Event) {
	switch e := ev.(type) {
	case *runner.RunStartEvent:
		m.runID = e.RunID
		if m.thread == "" && e.ThreadID != "" {
			m.thread = e.ThreadID
		}
	case *runner.AgentStartEvent:
		m.agent = e.Agent
		if !m.stopped {
			m.status = e.Agent + " is answering…"
		}
	case *runner.RunEndEvent:
		m.tokensIn += e.Usage.InputTokens
		m.tokensOut += e.Usage.OutputTokens
	case *runner.InterruptEvent:
		m.printer.endLine()
		m.interrupt, m.decisions = e.Interrupt, nil
		m.println(fmt.Sprintf("⏸ waiting for approval (interrupt %s)", e.Interrupt.ID))
		for _, ar := range e.Interrupt.ActionRequests {
			m.println(fmt.Sprintf("  - %s %s", ar.Name, compact(ar.Args)))
		}
		return
	}
	m.printer.print(ev)
}

// runDone ends a turn: an error, an approval to ask for, or the next message.
func (m *chatModel) runDone(err error) tea.Cmd {
	m.printer.endLine()
	if m.cancel != nil {
		m.cancel()
	}
	m.cancel, m.events, m.status = nil, nil, ""
	m.mode = modeInput
	if err != nil {
		m.println("✗ " + err.Error())
		var busy *threads.BusyError
		if errors.As(err, &busy) && busy.ThreadID == m.thread {
			return m.checkUnfinished(false)
		}
		return nil
	}
	switch {
	case m.aborted:
		m.println("· stopped mid-step: /resume continues the run (the thread takes no new message until then)")
	case m.stopped:
		m.println("· stopped")
	}
	if m.interrupt != nil && len(m.interrupt.ActionRequests) > 0 {
		m.mode = modeApprove
	}
	return nil
}

// approve records the decision on the current action request; the run
// resumes once every request is decided.
func (m *chatModel) approve(t runner.DecisionType) tea.Cmd {
	ar := m.interrupt.ActionRequests[len(m.decisions)]
	d := runner.Decision{Type: t, CallID: ar.CallID}
	if t == runner.DecisionReject {
		d.Message = "rejected in baton chat"
	}
	m.decisions = append(m.decisions, d)
	verb := "approved"
	if t == runner.DecisionReject {
		verb = "rejected"
	}
	m.println(fmt.Sprintf("  %s %s", verb, ar.Name))
	if len(m.decisions) < len(m.interrupt.ActionRequests) {
		return nil
	}
	runID, ds := m.runID, m.decisions
	if runID == "" {
		runID, _ = runstate.RunOfInterrupt(m.interrupt.ID)
	}
	return m.start(func(ctx context.Context, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
		return m.be.Resume(ctx, runID, ds, report)
	})
}
