package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"charm.land/bubbles/v2/textarea"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

// chatInfo is what the chat shows about its setting.
type chatInfo struct {
	Network, Fingerprint, Owner, File string
	// Thread, ThreadName and Agent describe the thread to continue, if any.
	Thread, ThreadName, Agent string
	// SummaryNote says where the summary model comes from, when it is not
	// the network's summary: model.
	SummaryNote string
	// Models are the agents' models, by agent, for the status line.
	Models map[string]string
}

// chatMode is what the chat waits for.
type chatMode int

const (
	modeInput      chatMode = iota // a message or a command
	modeRunning                    // a turn is streaming
	modeBusy                       // a thread handoff is summarised or applied
	modeApprove                    // a tool call waits for approve / reject
	modeChoice                     // a thread handoff summary waits for accept / edit / decline
	modeEditInline                 // the summary is edited in the chat
	modeEditor                     // the summary is edited in $EDITOR
)

// handoffMode is how /handoff goes on after the preview.
type handoffMode int

const (
	handoffAsk handoffMode = iota
	handoffPreviewOnly
	handoffApply
)

// Messages of the chat program.
type (
	runEventMsg struct{ ev runner.Event }
	runDoneMsg  struct{ err error }
	// queuedMsg: a message typed during an answer was submitted (position
	// in the thread's queue; 0: the thread was free).
	queuedMsg struct {
		text string
		pos  int
		err  error
	}
	// queuedStartMsg: the thread's next queued message starts (ok), or
	// none came.
	queuedStartMsg struct {
		q  threads.Queued
		ok bool
	}
	cleanupMsg struct{ res cleanupResult }
	previewMsg struct {
		p    *threadhandoff.Proposal
		err  error
		mode handoffMode
	}
	decideMsg struct {
		out *threadhandoff.Outcome
		err error
	}
	editorDoneMsg struct {
		path string
		err  error
	}
	threadsMsg struct {
		list []*store.Thread
		err  error
	}
	switchMsg struct {
		th     *store.Thread
		recent []*store.Message
		// unfinished is a run of the thread that has not ended.
		unfinished *unfinishedRun
		// initial is the thread of --thread, shown at start.
		initial bool
		err     error
	}
	unfinishedMsg struct {
		run    *unfinishedRun
		resume bool // /resume: continue a run stopped mid-step
		cancel bool // /cancel: cancel it
		err    error
	}
	cancelledMsg struct {
		runID string
		err   error
	}
	logMsg struct{ line string }
)

// inputHeight is the height of the message box.
const inputHeight = 3

var (
	styleStatus = lipgloss.NewStyle().Reverse(true)
	styleAsk    = lipgloss.NewStyle().Bold(true)
	styleDim    = lipgloss.NewStyle().Faint(true)
)

// chatModel is the Bubble Tea model of `baton chat`.
type chatModel struct {
	ctx  context.Context
	be   chatBackend
	info chatInfo

	thread, threadName, agent string

	width, height int
	vp            viewport.Model
	input         textarea.Model
	editor        textarea.Model
	transcript    strings.Builder
	wrap          wrapCache
	printer       *textPrinter
	// runs counts the goroutines of running turns, for a clean exit.
	runs *sync.WaitGroup

	mode   chatMode
	status string // what a busy chat is doing
	cancel context.CancelFunc
	events chan tea.Msg
	// stop asks the running turn to stop at its next event; stopped says
	// it was asked.
	stop             *atomic.Bool
	stopped, aborted bool

	// A run waiting for tool approvals.
	runID     string
	interrupt *runstate.Interrupt
	decisions []runner.Decision

	// A thread handoff waiting for a decision.
	proposal *threadhandoff.Proposal

	// pending counts the messages typed during answers that wait in the
	// thread's queue, to be run by this chat as they start.
	pending int

	// tokensIn and tokensOut count the tokens of this session's runs on
	// the current thread.
	tokensIn, tokensOut int64
	// quitArmed is set by a ctrl+c that stopped a turn or found nothing to
	// stop: the next ctrl+c quits. Any other key disarms it.
	quitArmed bool
}

func newChatModel(ctx context.Context, be chatBackend, info chatInfo) *chatModel {
	m := &chatModel{ctx: ctx, be: be, info: info, thread: info.Thread, threadName: info.ThreadName, agent: info.Agent, width: 80, height: 24,
		runs: new(sync.WaitGroup)}
	m.printer = &textPrinter{w: &m.transcript, file: info.File}
	m.vp = viewport.New()
	m.vp.SoftWrap = true // refresh wraps at spaces; this breaks words still too long
	m.vp.KeyMap = viewport.KeyMap{}

	m.input = textarea.New()
	m.input.SetPromptFunc(2, func(pi textarea.PromptInfo) string {
		if pi.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	m.input.Placeholder = "Send a message, or /help"
	m.input.ShowLineNumbers = false
	m.input.SetVirtualCursor(false)
	m.input.KeyMap.InsertNewline.SetKeys("alt+enter", "ctrl+j")
	m.input.SetHeight(inputHeight)
	m.input.Focus()

	m.editor = textarea.New()
	m.editor.ShowLineNumbers = false
	m.editor.Prompt = "  "
	m.editor.SetVirtualCursor(false)

	fmt.Fprintf(&m.transcript, "baton chat · network %s (%s) · owner %s\n", info.Network, info.Fingerprint, info.Owner)
	if info.Thread == "" {
		fmt.Fprintln(&m.transcript, "a new thread starts with your first message")
	}
	if info.SummaryNote != "" {
		fmt.Fprintln(&m.transcript, "note: "+info.SummaryNote)
	}
	fmt.Fprintln(&m.transcript, "/help lists the commands")
	m.layout()
	return m
}

// Init shows the thread to continue, if any.
func (m *chatModel) Init() tea.Cmd {
	if m.thread == "" {
		return nil
	}
	return m.switchTo(m.thread)
}

// println adds a line to the transcript, ending a streamed answer first.
func (m *chatModel) println(s string) {
	m.printer.endLine()
	m.transcript.WriteString(s + "\n")
}

// refresh shows the transcript, following it when it was at the bottom.
func (m *chatModel) refresh() {
	follow := m.vp.AtBottom() || m.vp.TotalLineCount() <= m.vp.Height()
	m.vp.SetContent(m.wrapped())
	if follow {
		m.vp.GotoBottom()
	}
}

// wrapped returns the transcript wrapped to the width. The transcript only
// grows, so complete lines are wrapped once (again when the width changes).
func (m *chatModel) wrapped() string {
	s, w := m.transcript.String(), max(m.width, 20)
	if m.wrap.width != w || m.wrap.done > len(s) {
		m.wrap = wrapCache{width: w}
	}
	if end := strings.LastIndexByte(s, '\n') + 1; end > m.wrap.done {
		m.wrap.text.WriteString(wrapWords(s[m.wrap.done:end], w))
		m.wrap.done = end
	}
	return m.wrap.text.String() + wrapWords(s[m.wrap.done:], w)
}

// wrapCache holds the wrapped complete lines of the transcript.
type wrapCache struct {
	width, done int // done: bytes of the transcript wrapped into text
	text        strings.Builder
}

func (m *chatModel) layout() {
	m.vp.SetWidth(m.width)
	m.vp.SetHeight(max(1, m.height-inputHeight-1))
	m.input.SetWidth(m.width)
	m.editor.SetWidth(m.width)
	m.editor.SetHeight(max(1, m.height-inputHeight-1))
	m.refresh()
	m.vp.GotoBottom()
}

func (m *chatModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
		return m, nil
	case tea.KeyPressMsg:
		cmd = m.key(msg)
	case tea.PasteMsg:
		switch m.mode {
		case modeInput, modeRunning:
			m.input, cmd = m.input.Update(msg)
		case modeEditInline:
			m.editor, cmd = m.editor.Update(msg)
		}
	case runEventMsg:
		m.event(msg.ev)
		cmd = m.wait()
	case cleanupMsg:
		switch r := msg.res; {
		case r.Err != nil:
			m.println("✗ thread handoff cleanup failed (the summary stays in memory until a later turn completes): " + r.Err.Error())
		case r.Cleared:
			m.println("· this was the child thread's first turn: its summary is now cleared from the agent's memory")
		}
		cmd = m.wait()
	case runDoneMsg:
		cmd = m.runDone(msg.err)
		if cmd == nil && m.pending > 0 && m.mode == modeInput {
			cmd = m.awaitQueued()
		}
	case queuedMsg:
		cmd = m.queued(msg)
	case queuedStartMsg:
		cmd = m.queuedStart(msg)
	case previewMsg:
		cmd = m.previewed(msg)
	case decideMsg:
		m.decided(msg)
	case editorDoneMsg:
		cmd = m.edited(msg)
	case threadsMsg:
		m.listThreads(msg)
	case switchMsg:
		m.switched(msg)
	case unfinishedMsg:
		cmd = m.unfinished(msg)
	case cancelledMsg:
		m.cancelled(msg)
	case logMsg:
		m.println("⚠ " + msg.line)
	}
	m.refresh()
	return m, cmd
}

func (m *chatModel) View() tea.View {
	var top string
	if m.mode == modeEditInline {
		top = m.editor.View()
	} else {
		top = m.vp.View()
	}
	v := tea.NewView(top + "\n" + m.statusLine() + "\n" + m.bottom())
	v.AltScreen = true
	v.WindowTitle = "baton chat · " + m.info.Network
	topHeight := m.vp.Height()
	switch m.mode {
	case modeInput, modeRunning:
		if c := m.input.Cursor(); c != nil {
			c.Y += topHeight + 1
			v.Cursor = c
		}
	case modeEditInline:
		v.Cursor = m.editor.Cursor()
	}
	return v
}

// statusLine describes the current thread: network, thread (short id and
// title), agent, its model, this session's tokens on the thread, and what
// the chat is doing.
func (m *chatModel) statusLine() string {
	thread := "new thread"
	if m.thread != "" {
		thread = "thread " + shortID(m.thread)
	}
	thread += quoteName(m.threadName)
	parts := []string{" " + m.info.Network, thread}
	if m.agent != "" {
		parts = append(parts, m.agent)
		if model := m.info.Models[m.agent]; model != "" {
			parts = append(parts, model)
		}
	}
	parts = append(parts, fmt.Sprintf("%s in · %s out tokens", countTokens(m.tokensIn), countTokens(m.tokensOut)))
	if m.mode == modeRunning {
		parts = append(parts, "⋯ "+m.status)
	}
	s := strings.Join(parts, " · ")
	if w := lipgloss.Width(s); w < m.width {
		s += strings.Repeat(" ", m.width-w)
	}
	return styleStatus.Render(cut(s, m.width))
}

// countTokens writes a token count short: 980, 12.3k, 4.1M.
func countTokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1_000_000)
}

// shortID is a thread id as the chat shows it: its last 8 characters
// (the random end of a UUIDv7, whose start is its time, the same for the
// threads of a minute). /switch and --thread take it, or any unique start
// or end of an id.
func shortID(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}

// bottom is the input box, or what the chat asks or does instead.
func (m *chatModel) bottom() string {
	var lines []string
	switch m.mode {
	case modeInput, modeRunning:
		return m.input.View()
	case modeBusy, modeEditor:
		hint := "  (ctrl+c to stop)"
		if strings.Contains(m.status, "ctrl+c") || m.mode == modeEditor {
			hint = ""
		}
		lines = []string{styleDim.Render("⋯ " + m.status + hint)}
	case modeApprove:
		ar := m.interrupt.ActionRequests[len(m.decisions)]
		lines = []string{styleAsk.Render("approve " + ar.Name + " " + compact(ar.Args) + "?"), "[a]pprove / [r]eject"}
	case modeChoice:
		lines = []string{styleAsk.Render("accept this summary and continue in a new child thread?"), "[a]ccept / [e]dit / [d]ecline"}
	case modeEditInline:
		lines = []string{styleAsk.Render("editing the summary"), "ctrl+s accepts the edit · esc goes back"}
	}
	for len(lines) < inputHeight {
		lines = append(lines, "")
	}
	for i := range lines {
		lines[i] = cut(lines[i], m.width)
	}
	return strings.Join(lines, "\n")
}

// farewell writes what the chat leaves behind once its screen is gone:
// the session's transcript (answers stopped half-way included), a message
// typed and not sent, and how to continue the thread.
func (m *chatModel) farewell(w io.Writer, network string) {
	m.printer.endLine()
	io.WriteString(w, m.transcript.String())
	if text := strings.TrimSpace(m.input.Value()); text != "" {
		fmt.Fprintf(w, "\nnot sent: %s\n", text)
	}
	if m.thread != "" {
		fmt.Fprintf(w, "\nbaton chat: thread %s%s (continue with: baton chat --network %s --thread %s)\n", m.thread, quoteName(m.threadName), network, shortID(m.thread))
	}
}

// cut shortens s (styled or not) to w cells.
func cut(s string, w int) string {
	if w <= 0 {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// wrapWords wraps the lines of s (plain text) at spaces to width cells,
// indenting continuation lines like the line they continue. Unlike
// ansi.Wrap it never breaks at hyphens, so that ids stay whole.
func wrapWords(s string, width int) string {
	var b strings.Builder
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		if ansi.StringWidth(line) <= width {
			b.WriteString(line)
			continue
		}
		body := strings.TrimLeft(line, " ")
		indent := line[:len(line)-len(body)]
		if len(indent) > width/2 {
			indent = ""
		}
		col := 0
		for j, word := range strings.Split(body, " ") {
			w := ansi.StringWidth(word)
			switch {
			case j == 0:
				b.WriteString(indent + word)
				col = len(indent) + w
			case col+1+w > width:
				b.WriteString("\n" + indent + word)
				col = len(indent) + w
			default:
				b.WriteString(" " + word)
				col += 1 + w
			}
		}
	}
	return b.String()
}

func quoteName(name string) string {
	if name == "" {
		return ""
	}
	return " «" + name + "»"
}
