package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
	case modeRunning:
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
	case modeBusy, modeEditor:
		if k.String() == "ctrl+c" {
			return tea.Quit
		}
	case modeApprove:
		switch k.String() {
		case "a", "y":
			return m.approve(runner.DecisionApprove)
		case "r", "n":
			return m.approve(runner.DecisionReject)
		case "ctrl+c":
			m.println("· left undecided: the run waits; /switch to this thread (or baton resume) to answer it")
			m.interrupt, m.mode, m.quitArmed = nil, modeInput, true
		}
	case modeChoice:
		switch k.String() {
		case "a", "y":
			return m.decide(threadhandoff.Decision{Type: threadhandoff.DecisionApprove})
		case "e":
			return m.edit()
		case "d", "n", "esc", "ctrl+c":
			return m.decide(threadhandoff.Decision{Type: threadhandoff.DecisionReject, Reason: "declined in baton chat"})
		}
	case modeEditInline:
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
	return nil
}

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

// previewed shows a thread handoff summary and asks what to do with it.
func (m *chatModel) previewed(msg previewMsg) tea.Cmd {
	m.mode, m.status = modeInput, ""
	if msg.err != nil {
		m.println("✗ thread handoff: " + msg.err.Error())
		return nil
	}
	p := msg.p
	m.proposal = p
	head := fmt.Sprintf("── thread handoff summary · for %s · %d messages · %d tokens", p.AssistantID, p.Messages, p.TokensUsed)
	if p.Truncated {
		head += " · truncated"
	}
	m.println(head + " ──")
	for _, line := range strings.Split(p.Markdown, "\n") {
		m.println("  " + line)
	}
	m.println("──")
	switch msg.mode {
	case handoffPreviewOnly:
		m.println("· preview only: nothing was written")
		m.proposal = nil
		return nil
	case handoffApply:
		return m.decide(threadhandoff.Decision{Type: threadhandoff.DecisionApprove})
	}
	m.mode = modeChoice
	return nil
}

// decide sends the decision on the current proposal.
func (m *chatModel) decide(d threadhandoff.Decision) tea.Cmd {
	p := m.proposal
	if p == nil {
		m.mode = modeInput
		return nil
	}
	m.mode, m.status = modeBusy, "applying the thread handoff…"
	if d.Type == threadhandoff.DecisionReject {
		m.status = "declining…"
	}
	return func() tea.Msg {
		out, err := m.be.Decide(m.ctx, p, d)
		return decideMsg{out: out, err: err}
	}
}

// decided reports a decision and switches to the child thread.
func (m *chatModel) decided(msg decideMsg) {
	m.mode, m.status = modeInput, ""
	m.editor.Blur()
	if msg.err != nil {
		m.println("✗ thread handoff: " + msg.err.Error())
		return
	}
	out := msg.out
	m.proposal = nil
	if !out.Applied {
		m.println("✗ " + out.Message)
		return
	}
	m.println("✓ " + out.Message)
	m.thread, m.threadName, m.agent = out.ChildThreadID, out.Summary.Title, out.AssistantID
	edited := ""
	if out.Edited {
		edited = " (edited)"
	}
	m.println(fmt.Sprintf("→ switched to thread %s%s, child of %s; the summary%s is in %s's memory for its first turn",
		out.ChildThreadID, quoteName(out.Summary.Title), out.ParentThreadID, edited, out.AssistantID))
}

// edit opens the summary in $EDITOR, or in the chat when it is unset.
func (m *chatModel) edit() tea.Cmd {
	editor := strings.Fields(os.Getenv("EDITOR"))
	if len(editor) == 0 {
		m.editor.SetValue(m.proposal.Markdown)
		m.editor.MoveToBegin()
		m.mode = modeEditInline
		m.editor.Focus()
		return nil
	}
	f, err := os.CreateTemp("", "baton-thread-handoff-*.md")
	if err == nil {
		_, err = f.WriteString(m.proposal.Markdown + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		m.println("✗ edit: " + err.Error())
		return nil
	}
	path := f.Name()
	m.mode, m.status = modeEditor, "editing in "+filepath.Base(editor[0])+"…"
	c := exec.Command(editor[0], append(editor[1:], path)...)
	return tea.ExecProcess(c, func(err error) tea.Msg { return editorDoneMsg{path: path, err: err} })
}

// edited takes the Markdown back from $EDITOR.
func (m *chatModel) edited(msg editorDoneMsg) tea.Cmd {
	b, err := os.ReadFile(msg.path)
	_ = os.Remove(msg.path)
	m.mode, m.status = modeChoice, ""
	switch {
	case msg.err != nil:
		m.println("✗ editor: " + msg.err.Error())
		return nil
	case err != nil:
		m.println("✗ edit: " + err.Error())
		return nil
	}
	return m.decideEdit(string(b))
}

// decideEdit approves the proposal with edited Markdown; its first
// heading, if changed, becomes the title (the child thread's name).
func (m *chatModel) decideEdit(md string) tea.Cmd {
	md = strings.TrimSpace(md)
	switch {
	case md == "":
		m.println("· the edited summary is empty: not applied")
		m.editor.Blur()
		m.mode = modeChoice
		return nil
	case md == strings.TrimSpace(m.proposal.Markdown):
		m.println("· the summary is unchanged")
		m.editor.Blur()
		m.mode = modeChoice
		return nil
	}
	d := threadhandoff.Decision{Type: threadhandoff.DecisionEdit, Markdown: md}
	if t := markdownTitle(md); t != "" && t != m.proposal.Summary.Title {
		d.Title = t
	}
	m.println("· edited summary:")
	for _, line := range strings.Split(md, "\n") {
		m.println("  " + line)
	}
	return m.decide(d)
}

// markdownTitle returns the text of the first heading of md, if it starts
// with one.
func markdownTitle(md string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(md), "\n")
	if !strings.HasPrefix(first, "#") {
		return ""
	}
	return strings.TrimSpace(strings.TrimLeft(first, "#"))
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
