package main

import (
	"context"
	"fmt"
	"iter"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/threads"
)

// submit handles a line typed by the user.
func (m *chatModel) submit(text string) tea.Cmd {
	if !strings.HasPrefix(text, "/") {
		m.println("")
		m.println("you: " + strings.ReplaceAll(text, "\n", "\n     "))
		thread := m.thread
		if thread == "" {
			m.threadName = threads.Title(text) // the name the new thread gets
		}
		return m.start(func(ctx context.Context, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
			return m.be.Turn(ctx, thread, text, report)
		})
	}
	fields := strings.Fields(text)
	cmd, args := fields[0], fields[1:]
	m.println("")
	m.println("› " + text)
	switch cmd {
	case "/quit", "/exit":
		return tea.Quit
	case "/help":
		m.println(chatCommandsHelp)
		return nil
	case "/new":
		m.thread, m.threadName, m.agent = "", "", ""
		m.tokensIn, m.tokensOut = 0, 0
		m.println("· a new thread starts with your next message")
		return nil
	case "/resume":
		if m.thread == "" {
			m.println("· nothing to resume: no thread yet")
			return nil
		}
		return m.checkUnfinished(true)
	case "/cancel":
		if m.thread == "" {
			m.println("· nothing to cancel: no thread yet")
			return nil
		}
		return m.lookUp(false, true)
	case "/threads":
		return func() tea.Msg {
			list, err := m.be.Threads(m.ctx)
			return threadsMsg{list: list, err: err}
		}
	case "/switch":
		if len(args) != 1 {
			m.println("✗ usage: /switch THREAD_ID (see /threads)")
			return nil
		}
		return m.switchTo(args[0])
	case "/handoff":
		mode := handoffAsk
		switch {
		case len(args) == 0:
		case len(args) == 1 && args[0] == "--preview":
			mode = handoffPreviewOnly
		case len(args) == 1 && args[0] == "--apply":
			mode = handoffApply
		default:
			m.println("✗ usage: /handoff [--preview | --apply]")
			return nil
		}
		if m.thread == "" {
			m.println("✗ nothing to hand off yet: send a message first")
			return nil
		}
		thread := m.thread
		m.mode, m.status = modeBusy, "summarising the thread…"
		return func() tea.Msg {
			propose := m.be.Propose
			if mode == handoffPreviewOnly {
				propose = m.be.Preview
			}
			p, err := propose(m.ctx, thread)
			return previewMsg{p: p, err: err, mode: mode}
		}
	}
	m.println(fmt.Sprintf("✗ unknown command %s: /help lists the commands", cmd))
	return nil
}

// chatCommandsHelp is what /help shows.
const chatCommandsHelp = `commands:
  /handoff            summarise this thread, then [a]ccept, [e]dit or [d]ecline;
                      accepting starts a child thread seeded with the summary
  /handoff --preview  show the summary only (nothing is written)
  /handoff --apply    accept the summary without asking
  /threads            list your threads
  /switch ID          continue another thread (its short id, or any unique start or end of its id)
  /new                start a new thread with the next message
  /resume             continue this thread's run that was stopped mid-step
  /quit               leave
keys: enter sends (during an answer: queues it in the thread, sent once the answer is done) · alt+enter
or ctrl+j adds a line · pgup/pgdown scroll · ctrl+c stops an answer (what it streamed stays), a second
ctrl+c quits; leaving prints the session and anything unsent`
