package main

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

// key handles a key press in the current mode.
func (m *chatModel) key(k tea.KeyPressMsg) tea.Cmd {
	armed := m.quitArmed
	m.quitArmed = false
	if k.String() == "ctrl+c" && armed {
		return tea.Quit
	}
	switch k.String() {
	case "pgup":
		m.vp.PageUp()
		return nil
	case "pgdown":
		m.vp.PageDown()
		return nil
	}
	switch m.mode {
	case modeInput:
		return m.keyInput(k)
	case modeRunning:
		return m.keyRunning(k)
	case modeBusy, modeEditor:
		if k.String() == "ctrl+c" {
			return tea.Quit
		}
	case modeApprove:
		return m.keyApprove(k)
	case modeChoice:
		return m.keyChoice(k)
	case modeEditInline:
		return m.keyEditInline(k)
	}
	return nil
}

// keyInput handles a key while the chat waits for a message or a command.
func (m *chatModel) keyInput(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+c":
		// What is typed stays; leaving prints it.
		m.quitArmed = true
		m.println("· ctrl+c again quits (what you typed is kept, and printed when you leave)")
		return nil
	case "ctrl+d":
		if m.input.Value() == "" {
			return tea.Quit
		}
	case "enter":
		text := strings.TrimSpace(m.input.Value())
		m.input.Reset()
		if text == "" {
			return nil
		}
		return m.submit(text)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// keyRunning handles a key while a turn streams: ctrl+c stops it, enter
// queues what is typed (or cancels the run with /cancel).
func (m *chatModel) keyRunning(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+c":
		// The run stops at its next safe boundary, keeping what it
		// said (an answer cut short is kept, marked partial), and
		// ends cancelled, so that the thread takes the next message. A run
		// the chat cannot ask (not started yet) stops at its next event
		// and is recorded as failed. A second ctrl+c quits (the run,
		// cancelled mid-step, stays resumable: /resume).
		m.quitArmed = true
		if !m.stopped {
			m.stopped = true
			if m.runID == "" || !m.be.Stop(m.runID) {
				m.stop.Store(true)
			}
			m.status = "stopping… (ctrl+c again quits)"
		}
		return nil
	case "enter":
		text := strings.TrimSpace(m.input.Value())
		if text == "/cancel" && m.runID != "" {
			m.input.Reset()
			m.status = "cancelling the run…"
			return m.cancelRun(m.thread, m.runID)
		}
		if text == "" || strings.HasPrefix(text, "/") || m.thread == "" {
			m.status = "still answering: enter queues a message once the thread exists, commands wait but /cancel (ctrl+c stops the answer)"
			return nil
		}
		// Queued in the thread (durably): sent once the answer is done.
		return m.multitask(text, threads.Enqueue)
	}
	// The next message can be typed while the answer streams.
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// keyApprove handles a key while a tool call waits for approve / reject.
func (m *chatModel) keyApprove(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "a", "y":
		return m.approve(runner.DecisionApprove)
	case "r", "n":
		return m.approve(runner.DecisionReject)
	case "ctrl+c":
		m.println("· left undecided: the run waits; /switch to this thread (or baton resume) to answer it")
		m.interrupt, m.mode, m.quitArmed = nil, modeInput, true
	}
	return nil
}

// keyChoice handles a key while a thread handoff summary waits for accept,
// edit or decline.
func (m *chatModel) keyChoice(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "a", "y":
		return m.decide(threadhandoff.Decision{Type: threadhandoff.DecisionApprove})
	case "e":
		return m.edit()
	case "d", "n", "esc", "ctrl+c":
		return m.decide(threadhandoff.Decision{Type: threadhandoff.DecisionReject, Reason: "declined in baton chat"})
	}
	return nil
}

// keyEditInline handles a key while the summary is edited in the chat.
func (m *chatModel) keyEditInline(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+s":
		return m.decideEdit(m.editor.Value())
	case "esc":
		m.editor.Blur()
		m.println("· edit abandoned")
		m.mode = modeChoice
		return nil
	}
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(k)
	return cmd
}
