package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

const chatUsage = `usage: baton chat --network FILE [--database URL] [--owner NAME] [--thread ID] [--memory-dir DIR] [--tool NAME=URL]... [--log FILE]

An interactive chat with a network in the terminal. Answers stream as they
are written; transfers, tool calls and their results are shown as they happen.
Tools that need approval ask inline: [a]pprove / [r]eject.

Commands:
  /handoff            summarise this thread, show the summary, then
                      [a]ccept, [e]dit ($EDITOR, or inline when it is unset)
                      or [d]ecline; on acceptance a child thread starts,
                      seeded with the summary, and the chat switches to it
  /handoff --preview  show the summary only; nothing is written
  /handoff --apply    accept the summary without asking
  /threads            list your threads (id, name, parent, active agent)
  /switch ID          continue another thread (its short id, or any unique start or end of its id)
  /new                start a new thread with the next message
  /resume             continue this thread's run that was stopped mid-step
  /cancel             cancel this thread's run: it stops where it is (what it
                      said is kept) and ends cancelled — an answer streaming,
                      a run waiting for approval or with a background worker
  /help               show the commands
  /quit               leave (also ctrl+d on an empty line)

Keys: enter sends, alt+enter or ctrl+j adds a line, pgup/pgdown scroll.
The next message can be typed while an answer streams. ctrl+c stops a
running answer (what it streamed stays); a second ctrl+c leaves (a run
stopped mid-step stays resumable: /resume). Leaving prints the session and
a message typed but not sent.

The status line shows the network, the thread (short id and title: a new
thread is titled with its first message), the agent, its model and the
tokens of this session's turns on the thread.

The summary model is the network's summary: model; without one /handoff is
unavailable, as POST /v1/threads/{id}/handoff is in baton serve.

The agents' memory (with a pending summary) goes into every model call. A
child thread's first turn starts with the agent whose memory holds the
summary; after that turn completes the summary is cleared from memory.

Logs (--log-level, default warn; -v: info, with a line when each run starts
and ends) are shown in the chat, or written to --log FILE.

Flags:
`

func cmdChat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	network := fs.String("network", "", "the network file (required)")
	thread := fs.String("thread", "", "continue this stored thread (default: a new thread with the first message)")
	logFile := fs.String("log", "", "write logs to FILE instead of showing them in the chat")
	owner := ownerFlag(fs)
	var sf serviceFlags
	sf.register(fs, false)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), chatUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q: baton chat --network FILE", fs.Args())
	}
	if *network == "" {
		return usagef("want --network FILE: baton chat --network NETWORK.yaml")
	}
	// Logs: into a file, or into the chat (never onto the screen under
	// it), from the network's first line on.
	lw := newChatLogWriter(stderr)
	defer lw.close()
	var log *slog.Logger
	var err error
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return usagef("--log: %v", err)
		}
		defer f.Close()
		if log, err = sf.logger(ctx, f); err != nil {
			return err
		}
	} else if log, err = chatLogger(ctx, &sf, lw); err != nil {
		return err
	}
	spec, err := loadNetwork(*network, sf.load())
	if err != nil {
		return err
	}
	out, ok := stdout.(*os.File)
	if !ok || !term.IsTerminal(out.Fd()) || !term.IsTerminal(os.Stdin.Fd()) {
		return usagef("baton chat needs a terminal; use baton run for scripts")
	}
	svc, n, done, err := openNetwork(ctx, &sf, spec, log)
	if err != nil {
		return err
	}
	defer done()
	summaryNote := ""
	if n.Summary == nil {
		summaryNote = "the network declares no summary: model: /handoff is unavailable"
	}
	be := newChatStore(n, svc.Store(), *owner)
	info := chatInfo{Network: n.Name(), Fingerprint: n.Network.Fingerprint(), Owner: *owner, File: *network, SummaryNote: summaryNote,
		Models: map[string]string{}}
	for _, a := range n.Network.Agents() {
		info.Models[a.Name] = a.ModelName
		if sf.model != "" {
			info.Models[a.Name] = sf.model
		}
	}
	if *thread != "" {
		th, err := be.Thread(ctx, *thread)
		if err != nil {
			return usageError{err}
		}
		info.Thread, info.ThreadName, info.Agent = th.ID, th.Name, th.ActiveAgent
	}

	// Leaving stops a running turn (it stays resumable: /resume) before the
	// store closes.
	chatCtx, stop := context.WithCancel(ctx)
	m := newChatModel(chatCtx, be, info)
	defer func() {
		stop()
		waitTimeout(m.runs, 5*time.Second)
	}()
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithOutput(out))
	lw.attach(p)

	final, err := p.Run()
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return err
	}
	if fm, ok := final.(*chatModel); ok {
		fm.farewell(stdout, *network)
	}
	return nil
}

// waitTimeout waits for wg, at most d.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// chatBackend is what the chat needs from baton: runs on the owner's
// threads and the thread → thread handoff. Its methods are called from
// goroutines other than the UI's.
type chatBackend interface {
	// Turn runs a user turn on threadID ("" creates a thread) and streams
	// its events; report learns whether the first completed turn of a child
	// thread cleared its thread handoff summary.
	Turn(ctx context.Context, threadID, input string, report func(cleanupResult)) iter.Seq2[runner.Event, error]
	// Resume continues an interrupted run with decisions.
	Resume(ctx context.Context, runID string, ds []runner.Decision, report func(cleanupResult)) iter.Seq2[runner.Event, error]
	// Preview summarises a thread and stores nothing; Propose stores the
	// summary as the thread's pending proposal (or returns the pending one,
	// unless its thread has outgrown it); Decide decides a stored proposal.
	Preview(ctx context.Context, threadID string) (*threadhandoff.Proposal, error)
	Propose(ctx context.Context, threadID string) (*threadhandoff.Proposal, error)
	Decide(ctx context.Context, p *threadhandoff.Proposal, d threadhandoff.Decision) (*threadhandoff.Outcome, error)
	// Threads lists the owner's threads, newest first.
	Threads(ctx context.Context) ([]*store.Thread, error)
	// Thread finds a thread by id, or a unique start or end of one.
	Thread(ctx context.Context, id string) (*store.Thread, error)
	// Recent returns the last n messages of a thread.
	Recent(ctx context.Context, threadID string, n int) ([]*store.Message, error)
	// Unfinished returns the unfinished run of a thread (waiting for
	// approvals, stopped mid-step, or with a background worker), or nil.
	Unfinished(ctx context.Context, threadID string) (*unfinishedRun, error)
	// Submit puts a message typed during an answer in the thread's queue
	// with strategy s (threads.Service.Submit) and returns its position;
	// 0 when the thread was free (send it as a turn).
	Submit(ctx context.Context, threadID, input string, s threads.Strategy) (int, error)
	// Started delivers the queued messages whose turn has come; RunQueued
	// runs one.
	Started() <-chan threads.Queued
	RunQueued(ctx context.Context, threadID string, q threads.Queued, report func(cleanupResult)) iter.Seq2[runner.Event, error]
	// Stop asks a run this chat executes to stop at its next safe
	// boundary, keeping what it said (threads.Service.Stop); false when it
	// does not execute here.
	Stop(runID string) bool
	// Cancel cancels a run of a thread wherever it executes, as POST
	// /v1/threads/{id}/runs/{run_id}/cancel does (threads.Service.Cancel).
	Cancel(ctx context.Context, threadID, runID string) error
}

// unfinishedRun is a run of a thread that has not ended.
type unfinishedRun struct {
	RunID  string
	Status runstate.Status
	// Interrupt is what a run with status interrupted waits for.
	Interrupt *runstate.Interrupt
}

// chatStore is the chatBackend of `baton chat`: a network of the service
// and the owner's threads.
type chatStore struct {
	n     *service.Network
	st    store.Store
	owner string
	// starts are the queued messages whose turn has come (the network's
	// threads.Service.Start, see newChatStore).
	starts chan threads.Queued
}

// newChatStore returns the chat's backend on n; the chat runs the queued
// messages of its threads itself, so that it shows their answers.
func newChatStore(n *service.Network, st store.Store, owner string) *chatStore {
	c := &chatStore{n: n, st: st, owner: owner, starts: make(chan threads.Queued, 16)}
	n.Threads.Start = func(_ context.Context, _, _ string, q threads.Queued) {
		select {
		case c.starts <- q:
		default: // nobody takes it: it stays queued for the next run's end
		}
	}
	return c
}

func (c *chatStore) Submit(ctx context.Context, threadID, input string, s threads.Strategy) (int, error) {
	sub, err := c.n.Threads.Submit(ctx, c.owner, input, threads.TurnOptions{ThreadID: threadID, RunID: runstate.NewRunID(), Strategy: s})
	if err != nil || !sub.Queued {
		return 0, err
	}
	return sub.Position, nil
}

func (c *chatStore) Started() <-chan threads.Queued { return c.starts }

func (c *chatStore) Stop(runID string) bool {
	return c.n.Threads.Stop(runID, runner.StopCancel)
}

func (c *chatStore) Cancel(ctx context.Context, threadID, runID string) error {
	_, err := c.n.Threads.Cancel(ctx, c.owner, threadID, runID)
	return err
}

func (c *chatStore) RunQueued(ctx context.Context, threadID string, q threads.Queued, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	return c.reportCleanup(ctx, c.n.Threads.Turn(ctx, c.owner, q.Input, q.TurnOptions(threadID)), report)
}

func (c *chatStore) Turn(ctx context.Context, threadID, input string, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	return c.reportCleanup(ctx, c.n.Threads.Turn(ctx, c.owner, input, threads.TurnOptions{ThreadID: threadID}), report)
}

func (c *chatStore) Resume(ctx context.Context, runID string, ds []runner.Decision, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	return c.reportCleanup(ctx, c.n.Threads.Resume(ctx, c.owner, runID, runner.WithDecisions(ds...)), report)
}

func (c *chatStore) Preview(ctx context.Context, threadID string) (*threadhandoff.Proposal, error) {
	if err := c.canHandOff(); err != nil {
		return nil, err
	}
	return c.n.ThreadHandoff.Preview(ctx, &threadhandoff.PreviewParams{Owner: c.owner, ThreadID: threadID})
}

// Propose stores the thread's proposal through the same library path as
// POST /v1/threads/{id}/handoff, so that the web UI and the API see it.
func (c *chatStore) Propose(ctx context.Context, threadID string) (*threadhandoff.Proposal, error) {
	if err := c.canHandOff(); err != nil {
		return nil, err
	}
	p, err := c.n.ThreadHandoff.Propose(ctx, &threadhandoff.ProposeParams{Owner: c.owner, ThreadID: threadID})
	if err == nil && p.Stale {
		// The pending proposal no longer covers the thread: summarise again.
		p, err = c.n.ThreadHandoff.Propose(ctx, &threadhandoff.ProposeParams{Owner: c.owner, ThreadID: threadID, Replace: true})
	}
	if err != nil {
		return nil, err
	}
	return p.Proposal, nil
}

func (c *chatStore) canHandOff() error {
	if c.n.Summary == nil {
		return fmt.Errorf("network %s declares no summary: model: declare one in its file to hand threads off", c.n.Name())
	}
	return nil
}

// Decide decides a stored proposal (its interrupt id is its handoff id),
// like POST /v1/interrupts/{id}/decision.
func (c *chatStore) Decide(ctx context.Context, p *threadhandoff.Proposal, d threadhandoff.Decision) (*threadhandoff.Outcome, error) {
	return c.n.ThreadHandoff.Decide(ctx, &threadhandoff.DecideParams{Owner: c.owner, InterruptID: p.HandoffID, Decision: d})
}

func (c *chatStore) Threads(ctx context.Context) ([]*store.Thread, error) {
	page, err := c.st.ListThreads(ctx, &store.ListThreadsParams{OwnerID: c.owner, Limit: 100})
	if err != nil {
		return nil, err
	}
	return page.Threads, nil
}

func (c *chatStore) Thread(ctx context.Context, id string) (*store.Thread, error) {
	th, err := c.st.GetThread(ctx, &store.GetThreadParams{OwnerID: c.owner, ID: id})
	if err == nil || !errors.Is(err, store.ErrNotFound) || len(id) < 4 {
		if err != nil {
			return nil, fmt.Errorf("thread %s: %w", id, err)
		}
		return th, nil
	}
	page, lerr := c.st.ListThreads(ctx, &store.ListThreadsParams{OwnerID: c.owner, Limit: 1000})
	if lerr != nil {
		return nil, fmt.Errorf("thread %s: %w", id, lerr)
	}
	var found *store.Thread
	for _, t := range page.Threads {
		if strings.HasPrefix(t.ID, id) || strings.HasSuffix(t.ID, id) {
			if found != nil {
				return nil, fmt.Errorf("thread %s: more than one thread's id starts or ends so", id)
			}
			found = t
		}
	}
	if found == nil {
		return nil, fmt.Errorf("thread %s: %w", id, err)
	}
	return found, nil
}

func (c *chatStore) Recent(ctx context.Context, threadID string, n int) ([]*store.Message, error) {
	return c.st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: c.owner, ThreadID: threadID, Limit: n, Last: true})
}

func (c *chatStore) Unfinished(ctx context.Context, threadID string) (*unfinishedRun, error) {
	cp, err := c.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: c.owner, ThreadID: threadID})
	switch {
	case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrIncompatible):
		return nil, nil
	case err != nil:
		return nil, err
	case cp.State == nil || cp.State.Status.Terminal():
		return nil, nil
	}
	return &unfinishedRun{RunID: cp.RunID, Status: cp.State.Status, Interrupt: cp.State.Interrupt}, nil
}

// chatLogWriter shows log records in the chat: each Write is one record
// (slog writes a record at a time), forwarded to the program without ever
// blocking the caller; records are dropped when 64 are waiting. Records
// written before the program is attached wait for it; if it never is (the
// chat did not start), close writes them to fallback.
type chatLogWriter struct {
	mu       sync.Mutex
	closed   bool
	attached bool
	ch       chan string
	done     chan struct{}
	fallback io.Writer
}

func newChatLogWriter(fallback io.Writer) *chatLogWriter {
	return &chatLogWriter{ch: make(chan string, 64), done: make(chan struct{}), fallback: fallback}
}

// attach starts forwarding the records to p.
func (w *chatLogWriter) attach(p *tea.Program) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attached = true
	go func() {
		defer close(w.done)
		for line := range w.ch {
			p.Send(logMsg{line: line})
		}
	}()
}

func (w *chatLogWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(b), nil
	}
	for _, line := range bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n")) {
		select {
		case w.ch <- string(line):
		default:
		}
	}
	return len(b), nil
}

func (w *chatLogWriter) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
	attached := w.attached
	w.mu.Unlock()
	if attached {
		<-w.done
		return
	}
	for line := range w.ch {
		fmt.Fprintln(w.fallback, line)
	}
}

// chatLogger is the logger of the chat, on w at the level of sf's logging
// flags: records in their format without the time, secrets redacted (the
// run log's lines carry their trace ids themselves). It becomes slog's
// default and the logger of sf's networks.
func chatLogger(ctx context.Context, sf *serviceFlags, w io.Writer) (*slog.Logger, error) {
	lf := &sf.log
	level, err := lf.levelOf(ctx)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return telemetry.Redact(groups, a)
	}}
	var log *slog.Logger
	switch lf.format {
	case "json":
		log = slog.New(slog.NewJSONHandler(w, opts))
	case "text":
		log = slog.New(slog.NewTextHandler(w, opts))
	default:
		return nil, usagef("--log-format %q (or $BATON_LOG_FORMAT): want text or json", lf.format)
	}
	slog.SetDefault(log)
	sf.logTo = log
	return log, nil
}

// messageLine renders a stored message on one line, for recaps.
func messageLine(m *store.Message) string {
	who := string(m.Role)
	if m.Role == message.RoleAssistant && m.Agent != "" {
		who = m.Agent
	}
	text := oneLine(m.Text())
	if text == "" {
		for _, p := range m.Parts {
			switch p.Type {
			case message.PartToolCall:
				text = "→ calls " + p.Name + " " + compact(p.Arguments)
			case message.PartToolResult:
				text = "← " + p.Name + ": " + oneLine(p.Text)
			}
			if text != "" {
				break
			}
		}
	}
	return who + ": " + text
}
