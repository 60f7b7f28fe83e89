package main

import (
	"context"
	"fmt"
	"iter"

	tea "charm.land/bubbletea/v2"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// switchTo loads a thread to continue: its last messages and a run that
// waits for approvals.
func (m *chatModel) switchTo(id string) tea.Cmd {
	m.mode, m.status = modeBusy, "switching…"
	return func() tea.Msg {
		th, err := m.be.Thread(m.ctx, id)
		if err != nil {
			return switchMsg{err: err}
		}
		recent, err := m.be.Recent(m.ctx, th.ID, 6)
		if err != nil {
			return switchMsg{err: err}
		}
		u, err := m.be.Unfinished(m.ctx, th.ID)
		return switchMsg{th: th, recent: recent, unfinished: u, initial: id == m.info.Thread && m.thread == id, err: err}
	}
}

func (m *chatModel) listThreads(msg threadsMsg) {
	if msg.err != nil {
		m.println("✗ threads: " + msg.err.Error())
		return
	}
	if len(msg.list) == 0 {
		m.println("no threads yet")
		return
	}
	m.println(fmt.Sprintf("threads of %s, newest first (* is the current one):", m.info.Owner))
	for _, th := range msg.list {
		mark := " "
		if th.ID == m.thread {
			mark = "*"
		}
		name := th.Name
		if name == "" {
			name = "(untitled)"
		}
		parent := "—"
		if th.ParentID != "" {
			parent = shortID(th.ParentID)
		}
		agent := th.ActiveAgent
		if agent == "" {
			agent = "—"
		}
		m.println(fmt.Sprintf("%s %s  %s", mark, shortID(th.ID), name))
		m.println(fmt.Sprintf("    parent %s · agent %s", parent, agent))
	}
}

func (m *chatModel) switched(msg switchMsg) {
	m.mode, m.status = modeInput, ""
	if msg.err != nil {
		m.println("✗ switch: " + msg.err.Error())
		return
	}
	th := msg.th
	if th.ID != m.thread {
		m.tokensIn, m.tokensOut = 0, 0
	}
	m.thread, m.threadName, m.agent = th.ID, th.Name, th.ActiveAgent
	verb := "switched to"
	if msg.initial {
		verb = "continuing"
	}
	line := fmt.Sprintf("→ %s thread %s%s", verb, shortID(th.ID), quoteName(th.Name))
	if th.ParentID != "" {
		line += ", child of " + shortID(th.ParentID)
	}
	m.println(line)
	if len(msg.recent) > 0 {
		m.println("  last messages:")
		for _, rm := range msg.recent {
			m.println("    " + messageLine(rm))
		}
	}
	m.showUnfinished(msg.unfinished)
}

// showUnfinished says what a run of the current thread that has not ended
// waits for, and asks for its approvals.
func (m *chatModel) showUnfinished(u *unfinishedRun) {
	switch {
	case u == nil:
	case u.Status == runstate.StatusInterrupted && u.Interrupt != nil && len(u.Interrupt.ActionRequests) > 0:
		m.runID, m.interrupt, m.decisions = u.RunID, u.Interrupt, nil
		m.println(fmt.Sprintf("⏸ run %s of this thread waits for approval (interrupt %s)", u.RunID, u.Interrupt.ID))
		for _, ar := range u.Interrupt.ActionRequests {
			m.println(fmt.Sprintf("  - %s %s", ar.Name, compact(ar.Args)))
		}
		m.mode = modeApprove
	case u.Status == runstate.StatusSuspended:
		m.println(fmt.Sprintf("⏸ run %s of this thread is with a background worker; the thread takes new messages once it ends", u.RunID))
	default:
		m.println(fmt.Sprintf("⏸ run %s of this thread stopped mid-step (%s): /resume continues it", u.RunID, u.Status))
	}
}

// unfinished handles /resume and a turn refused for an unfinished run.
func (m *chatModel) unfinished(msg unfinishedMsg) tea.Cmd {
	m.mode, m.status = modeInput, ""
	switch u := msg.run; {
	case msg.err != nil:
		m.println("✗ " + msg.err.Error())
	case u == nil && msg.resume:
		m.println("· nothing to resume: this thread has no unfinished run")
	case u == nil && msg.cancel:
		m.println("· nothing to cancel: this thread has no unfinished run")
	case msg.cancel:
		m.mode, m.status = modeBusy, "cancelling the run…"
		return m.cancelRun(m.thread, u.RunID)
	case msg.resume && u.Status == runstate.StatusRunning:
		runID := u.RunID
		return m.start(func(ctx context.Context, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
			return m.be.Resume(ctx, runID, nil, report)
		})
	default:
		m.showUnfinished(u)
	}
	return nil
}

// checkUnfinished looks up the unfinished run of the current thread.
func (m *chatModel) checkUnfinished(resume bool) tea.Cmd { return m.lookUp(resume, false) }

// lookUp looks up the unfinished run of the current thread, to resume or
// cancel it, or to say what it waits for.
func (m *chatModel) lookUp(resume, cancel bool) tea.Cmd {
	thread := m.thread
	m.mode, m.status = modeBusy, "looking up the thread's run…"
	return func() tea.Msg {
		u, err := m.be.Unfinished(m.ctx, thread)
		return unfinishedMsg{run: u, resume: resume, cancel: cancel, err: err}
	}
}

// cancelRun cancels run runID of thread: it stops at its next safe
// boundary wherever it executes (a run this chat streams ends, and its
// turn with it).
func (m *chatModel) cancelRun(thread, runID string) tea.Cmd {
	return func() tea.Msg {
		return cancelledMsg{runID: runID, err: m.be.Cancel(m.ctx, thread, runID)}
	}
}

// cancelled reports a cancel.
func (m *chatModel) cancelled(msg cancelledMsg) {
	if m.mode == modeBusy {
		m.mode, m.status = modeInput, ""
	}
	if msg.err != nil {
		m.println("✗ cancel: " + msg.err.Error())
		return
	}
	if m.runID == msg.runID {
		m.interrupt, m.decisions = nil, nil
	}
	m.println(fmt.Sprintf("⊘ run %s cancelled (what it said is kept)", msg.runID))
}
