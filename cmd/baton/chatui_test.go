package main

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/summary"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

// fakeChat is a chatBackend that plays scripted events and records what
// the chat asked for.
type fakeChat struct {
	// turn and resume return the events of a turn or a resumed run.
	turn    func(input string) []runner.Event
	resume  func(ds []runner.Decision) []runner.Event
	cleared bool // report a cleanup after each completed run

	mu        sync.Mutex
	inputs    []string
	resumed   [][]runner.Decision
	decisions []threadhandoff.Decision
	proposed  int      // proposals stored
	cancelled []string // thread/run of each Cancel
	// submitted are the messages typed during answers, with their
	// strategies; starts delivers them, as the end of the run before them
	// would.
	submitted []string
	starts    chan threads.Queued
}

func (f *fakeChat) Submit(_ context.Context, _, input string, s threads.Strategy) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submitted = append(f.submitted, string(s)+":"+input)
	if f.starts == nil {
		f.starts = make(chan threads.Queued, 16)
	}
	f.starts <- threads.Queued{RunID: "run_q", Input: input, Strategy: s}
	return len(f.submitted), nil
}

func (f *fakeChat) Stop(string) bool { return false }

func (f *fakeChat) Cancel(_ context.Context, thread, run string) error {
	f.mu.Lock()
	f.cancelled = append(f.cancelled, thread+"/"+run)
	f.mu.Unlock()
	return nil
}

func (f *fakeChat) Started() <-chan threads.Queued {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.starts == nil {
		f.starts = make(chan threads.Queued, 16)
	}
	return f.starts
}

func (f *fakeChat) RunQueued(ctx context.Context, threadID string, q threads.Queued, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	return f.Turn(ctx, threadID, q.Input, report)
}

func (f *fakeChat) play(events []runner.Event, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	return func(yield func(runner.Event, error) bool) {
		for _, ev := range events {
			if !yield(ev, nil) {
				return
			}
		}
		if f.cleared && report != nil {
			report(cleanupResult{ThreadID: "t1", Cleared: true})
		}
	}
}

func (f *fakeChat) Turn(_ context.Context, _, input string, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	f.mu.Lock()
	f.inputs = append(f.inputs, input)
	f.mu.Unlock()
	return f.play(f.turn(input), report)
}

func (f *fakeChat) Resume(_ context.Context, _ string, ds []runner.Decision, report func(cleanupResult)) iter.Seq2[runner.Event, error] {
	f.mu.Lock()
	f.resumed = append(f.resumed, ds)
	f.mu.Unlock()
	return f.play(f.resume(ds), report)
}

func (f *fakeChat) Preview(_ context.Context, threadID string) (*threadhandoff.Proposal, error) {
	s := summary.Summary{Title: "Old title", Body: []string{"one", "two", "three"}, TLDR: "Done."}
	return &threadhandoff.Proposal{Owner: "local", AssistantID: "billing", ParentThreadID: threadID,
		Result: summary.Result{HandoffID: "h1", Summary: s, Markdown: s.Markdown(), Messages: 4, TokensUsed: 42}}, nil
}

func (f *fakeChat) Propose(ctx context.Context, threadID string) (*threadhandoff.Proposal, error) {
	f.mu.Lock()
	f.proposed++
	f.mu.Unlock()
	return f.Preview(ctx, threadID)
}

func (f *fakeChat) Decide(_ context.Context, p *threadhandoff.Proposal, d threadhandoff.Decision) (*threadhandoff.Outcome, error) {
	f.mu.Lock()
	f.decisions = append(f.decisions, d)
	f.mu.Unlock()
	if d.Type == threadhandoff.DecisionReject {
		return &threadhandoff.Outcome{HandoffID: p.HandoffID, Decision: d.Type, ParentThreadID: p.ParentThreadID, Message: "Thread handoff rejected: nothing was written."}, nil
	}
	s := p.Summary
	if d.Title != "" {
		s.Title = d.Title
	}
	return &threadhandoff.Outcome{HandoffID: p.HandoffID, Decision: d.Type, Applied: true, ParentThreadID: p.ParentThreadID,
		ChildThreadID: "child", AssistantID: p.AssistantID, Summary: s, Edited: d.Type == threadhandoff.DecisionEdit,
		Message: "Thread handoff approved: continue in thread child."}, nil
}

func (f *fakeChat) Threads(context.Context) ([]*store.Thread, error) {
	return []*store.Thread{{ID: "child", ParentID: "t1", Name: "Old title", ActiveAgent: "billing"}, {ID: "t1", ActiveAgent: "billing"}}, nil
}

func (f *fakeChat) Thread(_ context.Context, id string) (*store.Thread, error) {
	return &store.Thread{ID: id, ActiveAgent: "billing"}, nil
}

func (f *fakeChat) Recent(context.Context, string, int) ([]*store.Message, error) { return nil, nil }

func (f *fakeChat) Unfinished(context.Context, string) (*unfinishedRun, error) { return nil, nil }

// drive updates m with msg and then with the messages of the commands it
// returns (those of the chat only), until none is left.
func drive(t *testing.T, m *chatModel, msgs ...tea.Msg) {
	t.Helper()
	for len(msgs) > 0 {
		msg := msgs[0]
		msgs = msgs[1:]
		_, cmd := m.Update(msg)
		if cmd == nil {
			continue
		}
		done := make(chan tea.Msg, 1)
		go func() { done <- cmd() }()
		select {
		case r := <-done:
			switch r.(type) {
			case runEventMsg, runDoneMsg, cleanupMsg, previewMsg, decideMsg, threadsMsg, switchMsg, unfinishedMsg, queuedMsg, queuedStartMsg, cancelledMsg:
				msgs = append(msgs, r)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("a command of %T did not return", msg)
		}
	}
}

func press(k string) tea.Msg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "ctrl+s", "ctrl+k", "ctrl+c":
		return tea.KeyPressMsg{Code: rune(k[len(k)-1]), Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// typeLine types text and presses enter.
func typeLine(t *testing.T, m *chatModel, text string) {
	t.Helper()
	var msgs []tea.Msg
	for _, r := range text {
		msgs = append(msgs, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	drive(t, m, append(msgs, press("enter"))...)
}

func newTestChat(t *testing.T, f *fakeChat, thread string) *chatModel {
	t.Helper()
	m := newChatModel(t.Context(), f, chatInfo{Network: "support", Owner: "local", Thread: thread})
	drive(t, m, tea.WindowSizeMsg{Width: 100, Height: 30})
	return m
}

func wantTranscript(t *testing.T, m *chatModel, wants ...string) {
	t.Helper()
	got := m.transcript.String()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("the transcript lacks %q:\n%s", w, got)
		}
	}
}

// handoffChat returns a chat on thread t1 in which line, a /handoff
// command, was typed.
func handoffChat(t *testing.T, line string) (*fakeChat, *chatModel) {
	t.Helper()
	f := &fakeChat{}
	m := newTestChat(t, f, "t1")
	typeLine(t, m, line)
	return f, m
}

func TestChatHandoffInlineEdit(t *testing.T) {
	t.Setenv("EDITOR", "")
	f, m := handoffChat(t, "/handoff")
	if m.mode != modeChoice {
		t.Fatalf("mode %d after the preview, want the accept/edit/decline choice", m.mode)
	}
	wantTranscript(t, m, "── thread handoff summary · for billing · 4 messages · 42 tokens ──", "  ### Old title", "**TL;DR:** Done.")
	if v := m.View().Content; !strings.Contains(v, "[a]ccept / [e]dit / [d]ecline") {
		t.Errorf("the screen does not ask:\n%s", v)
	}

	drive(t, m, press("e"))
	if m.mode != modeEditInline || m.editor.Value() != m.proposal.Markdown {
		t.Fatalf("mode %d, editor %q: want the Markdown in the inline editor", m.mode, m.editor.Value())
	}
	// Back to the choice, then edit again: replace the heading.
	drive(t, m, press("esc"))
	if m.mode != modeChoice {
		t.Fatalf("mode %d after esc, want the choice", m.mode)
	}
	drive(t, m, press("e"), press("ctrl+k"))
	for _, r := range "### New title" {
		drive(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	drive(t, m, press("ctrl+s"))

	if len(f.decisions) != 1 {
		t.Fatalf("decisions %+v, want one", f.decisions)
	}
	d := f.decisions[0]
	if d.Type != threadhandoff.DecisionEdit || d.Title != "New title" || !strings.HasPrefix(d.Markdown, "### New title\n\n- one") {
		t.Errorf("decision %+v, want an edit titled New title with the edited Markdown", d)
	}
	if m.thread != "child" || m.mode != modeInput {
		t.Errorf("thread %q, mode %d: want the child thread, waiting for input", m.thread, m.mode)
	}
	wantTranscript(t, m, "✓ Thread handoff approved: continue in thread child.", "→ switched to thread child «New title», child of t1; the summary (edited) is in billing's memory")
}

func TestChatHandoff(t *testing.T) {
	t.Parallel()
	t.Run("Decline", func(t *testing.T) {
		t.Parallel()
		f, m := handoffChat(t, "/handoff")
		drive(t, m, press("d"))
		if len(f.decisions) != 1 || f.decisions[0].Type != threadhandoff.DecisionReject || m.thread != "t1" {
			t.Errorf("decisions %+v, thread %q: want one rejection, still on t1", f.decisions, m.thread)
		}
		wantTranscript(t, m, "✗ Thread handoff rejected: nothing was written.")
	})
	t.Run("Accept", func(t *testing.T) {
		t.Parallel()
		f, m := handoffChat(t, "/handoff")
		drive(t, m, press("a"))
		if len(f.decisions) != 1 || f.decisions[0].Type != threadhandoff.DecisionApprove || m.thread != "child" || f.proposed != 1 {
			t.Errorf("decisions %+v, thread %q, %d proposals stored: want one stored, one approval, on the child", f.decisions, m.thread, f.proposed)
		}
	})
	t.Run("Preview", func(t *testing.T) {
		t.Parallel()
		f, m := handoffChat(t, "/handoff --preview")
		if len(f.decisions) != 0 || m.mode != modeInput || m.thread != "t1" || f.proposed != 0 {
			t.Errorf("decisions %+v, mode %d, thread %q, %d proposals stored: want nothing stored or decided", f.decisions, m.mode, m.thread, f.proposed)
		}
		wantTranscript(t, m, "### Old title", "· preview only: nothing was written")
	})
	t.Run("Apply", func(t *testing.T) {
		t.Parallel()
		f, m := handoffChat(t, "/handoff --apply")
		if len(f.decisions) != 1 || f.decisions[0].Type != threadhandoff.DecisionApprove || m.thread != "child" {
			t.Errorf("decisions %+v, thread %q: want an approval without asking", f.decisions, m.thread)
		}
	})
	t.Run("Usage", func(t *testing.T) {
		t.Parallel()
		f := &fakeChat{}
		m := newTestChat(t, f, "")
		typeLine(t, m, "/handoff")
		typeLine(t, m, "/handoff --now")
		typeLine(t, m, "/bogus")
		wantTranscript(t, m, "✗ nothing to hand off yet: send a message first", "✗ usage: /handoff [--preview | --apply]",
			"✗ unknown command /bogus: /help lists the commands")
	})
}

func TestChatToolApproval(t *testing.T) {
	t.Parallel()
	args := json.RawMessage(`{"order_id":"1234"}`)
	f := &fakeChat{
		turn: func(string) []runner.Event {
			return []runner.Event{
				&runner.RunStartEvent{RunID: "r1", ThreadID: "t9", Network: "support"},
				&runner.AgentStartEvent{Agent: "refunds"},
				&runner.InterruptEvent{Interrupt: &runstate.Interrupt{ID: "r1-i3", ActionRequests: []runstate.ActionRequest{
					{Name: "issue_refund", Args: args, CallID: "c1"}, {Name: "cancel_order", Args: args, CallID: "c2"}}}},
				&runner.RunEndEvent{Status: runstate.StatusInterrupted, LastAgent: "refunds"},
			}
		},
		resume: func([]runner.Decision) []runner.Event {
			return []runner.Event{
				&runner.RunStartEvent{RunID: "r1", ThreadID: "t9", Resumed: true},
				&runner.TextDeltaEvent{Agent: "refunds", Delta: "Refund "},
				&runner.TextDeltaEvent{Agent: "refunds", Delta: "issued."},
				&runner.MessageEvent{Agent: "refunds", Text: "Refund issued."},
				&runner.RunEndEvent{Status: runstate.StatusCompleted, LastAgent: "refunds"},
			}
		},
		cleared: true,
	}
	m := newTestChat(t, f, "")
	typeLine(t, m, "I want a refund")
	if m.mode != modeApprove || m.thread != "t9" {
		t.Fatalf("mode %d, thread %q: want an approval asked on the new thread t9", m.mode, m.thread)
	}
	if v := m.View().Content; !strings.Contains(v, `approve issue_refund {"order_id":"1234"}?`) {
		t.Errorf("the screen does not ask about issue_refund:\n%s", v)
	}
	drive(t, m, press("a"))
	if m.mode != modeApprove || len(f.resumed) != 0 {
		t.Fatalf("mode %d, resumed %v: want the second request asked", m.mode, f.resumed)
	}
	drive(t, m, press("r"))
	got, _ := json.Marshal(f.resumed)
	if want := `[[{"type":"approve","call_id":"c1"},{"type":"reject","call_id":"c2","message":"rejected in baton chat"}]]`; string(got) != want {
		t.Errorf("resumed with %s, want %s", got, want)
	}
	if m.mode != modeInput {
		t.Errorf("mode %d after the run, want input", m.mode)
	}
	wantTranscript(t, m, "you: I want a refund", "⏸ waiting for approval (interrupt r1-i3)", "  approved issue_refund", "  rejected cancel_order",
		"refunds: Refund issued.\n", "── completed · last agent refunds", "its summary is now cleared")
}

func TestChatThreads(t *testing.T) {
	t.Parallel()
	m := newTestChat(t, &fakeChat{}, "child")
	typeLine(t, m, "/threads")
	wantTranscript(t, m, "* child  Old title\n    parent t1 · agent billing", "  t1  (untitled)\n    parent — · agent billing")
	typeLine(t, m, "/switch t1")
	if m.thread != "t1" {
		t.Errorf("thread %q after /switch t1", m.thread)
	}
	typeLine(t, m, "/new")
	if m.thread != "" {
		t.Errorf("thread %q after /new", m.thread)
	}
}

func TestWrapWords(t *testing.T) {
	t.Parallel()
	id := "01a206c5-693e-74df-af18-2b3f7ed740b7"
	tests := []struct{ in, want string }{
		{"short line", "short line"},
		{"→ switched to " + id + " now", "→ switched to\n" + id + "\nnow"},
		{"  indented words go on and on", "  indented words go\n  on and on"},
		{"a\nb", "a\nb"},
	}
	for _, tt := range tests {
		if got := wrapWords(tt.in, 20); got != tt.want {
			t.Errorf("wrapWords(%q, 20) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMarkdownTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"### Refund\n\n- a": "Refund",
		"\n# Top  \nrest":   "Top",
		"no heading\n### x": "",
		"":                  "",
	} {
		if got := markdownTitle(in); got != want {
			t.Errorf("markdownTitle(%q) = %q, want %q", in, got, want)
		}
	}
}

// The transcript is wrapped incrementally; the result is that of wrapping
// it whole, at any width.
func TestChatWrappedIncrementally(t *testing.T) {
	t.Parallel()
	m := newTestChat(t, &fakeChat{}, "")
	for _, piece := range []string{"billing: streamed ", "answer words that go on ", "and on past the width\n", "  ← tool: out\n", "partial"} {
		m.transcript.WriteString(piece)
		if got, want := m.wrapped(), wrapWords(m.transcript.String(), 100); got != want {
			t.Fatalf("after %q: wrapped\n%q\nwant\n%q", piece, got, want)
		}
	}
	drive(t, m, tea.WindowSizeMsg{Width: 24, Height: 30})
	if got, want := m.wrapped(), wrapWords(m.transcript.String(), 24); got != want {
		t.Fatalf("after a resize: wrapped\n%q\nwant\n%q", got, want)
	}
}

// TestChatTypeWhileAnswering: a message sent (enter) while the answer
// streams goes to the thread's queue (threads.Service.Submit, enqueue) and
// is answered after it, by this chat.
func TestChatTypeWhileAnswering(t *testing.T) {
	for _, tc := range []struct {
		key, strategy, label string
	}{{"enter", "enqueue", "you (queued): and a refund"}} {
		t.Run(tc.strategy, func(t *testing.T) {
			f := &fakeChat{turn: func(input string) []runner.Event {
				return []runner.Event{&runner.RunStartEvent{RunID: "run_" + input, ThreadID: "t1"}, &runner.AgentStartEvent{Agent: "billing"},
					&runner.TextDeltaEvent{Agent: "billing", Delta: "about " + input}, &runner.RunEndEvent{Status: runstate.StatusCompleted}}
			}}
			m := newTestChat(t, f, "t1")
			for _, r := range "I was charged twice" {
				drive(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
			}
			_, wait := m.Update(press("enter")) // the answer streams: its events wait
			if m.mode != modeRunning {
				t.Fatalf("mode %d, want running", m.mode)
			}
			for _, r := range "and a refund" {
				drive(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
			}
			drive(t, m, press(tc.key))
			drive(t, m, wait()) // the first answer ends; the queued message starts
			if m.mode != modeInput || m.pending != 0 {
				t.Fatalf("mode %d, pending %d", m.mode, m.pending)
			}
			if got := strings.Join(f.submitted, "|"); got != tc.strategy+":and a refund" {
				t.Fatalf("submitted %q", got)
			}
			if got := strings.Join(f.inputs, "|"); got != "I was charged twice|and a refund" {
				t.Fatalf("turns %q", got)
			}
			wantTranscript(t, m, "you: I was charged twice", tc.label, "· queued (1)", "about I was charged twice", "about and a refund")
		})
	}
}

// TestChatCancel: /cancel typed while the answer streams cancels the run
// being answered; typed later, with no unfinished run, it says so.
func TestChatCancel(t *testing.T) {
	f := &fakeChat{turn: func(input string) []runner.Event {
		return []runner.Event{&runner.RunStartEvent{RunID: "run_1", ThreadID: "t1"}, &runner.AgentStartEvent{Agent: "billing"},
			&runner.TextDeltaEvent{Agent: "billing", Delta: "about " + input}, &runner.RunEndEvent{Status: runstate.StatusCancelled}}
	}}
	m := newTestChat(t, f, "t1")
	for _, r := range "hello" {
		drive(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	_, wait := m.Update(press("enter"))
	_, wait = m.Update(wait()) // run_start: the run's id is known
	for _, r := range "/cancel" {
		drive(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	drive(t, m, press("enter"))
	if got := strings.Join(f.cancelled, "|"); got != "t1/run_1" {
		t.Fatalf("cancelled %q", got)
	}
	wantTranscript(t, m, "you: hello", "⊘ run run_1 cancelled")
	for m.mode == modeRunning && wait != nil {
		_, wait = m.Update(wait())
	}
	for _, r := range "/cancel" {
		drive(t, m, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	drive(t, m, press("enter"))
	wantTranscript(t, m, "⊘ run run_1 cancelled", "› /cancel", "· nothing to cancel: this thread has no unfinished run")
}

// TestChatStoreCancel: the chat's backend cancels a real run while it
// streams: it ends cancelled, what it said stored marked partial, and the
// thread has no unfinished run.
func TestChatStoreCancel(t *testing.T) {
	svc, be := talkStore(t)
	cancelled := make(chan error, 1)
	sent := false
	_, thread, end := talkTurn(t, be, func(runID, thread string) {
		if !sent {
			sent = true
			go func() { cancelled <- be.Cancel(context.Background(), thread, runID) }()
		}
	})
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	if end == nil || end.Status != runstate.StatusCancelled || end.Output == "" || end.Output == "one two three four five six seven eight" {
		t.Fatalf("run_end %+v, want cancelled with the answer so far", end)
	}
	wantPartial(t, svc, thread, end)
	if u, err := be.Unfinished(t.Context(), thread); u != nil || err != nil {
		t.Fatalf("unfinished after the cancel: %+v, %v", u, err)
	}
}

// TestChatStoreQueue: the chat's backend on a real service queues a
// message typed during an answer in the thread (the library's Submit) and
// is handed it when the answer ends, to run and show it.
func TestChatStoreQueue(t *testing.T) {
	ctx := context.Background()
	svc, be := talkStore(t)

	answer := func(seq func(func(runner.Event, error) bool), started chan<- string) string {
		thread := ""
		for ev, err := range seq {
			if err != nil {
				t.Error(err)
				return thread
			}
			switch e := ev.(type) {
			case *runner.RunStartEvent:
				thread = e.ThreadID
			case *runner.TextDeltaEvent:
				if started != nil {
					started <- thread
					started = nil
				}
			}
		}
		return thread
	}
	thread := answer(be.Turn(ctx, "", "hello", nil), nil)
	started := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		answer(be.Turn(ctx, thread, "question", nil), started)
	}()
	<-started
	pos, err := be.Submit(ctx, thread, "typed while answering", threads.Enqueue)
	if err != nil || pos != 1 {
		t.Fatalf("submit: %d, %v", pos, err)
	}
	<-done
	select {
	case q := <-be.Started():
		answer(be.RunQueued(ctx, thread, q, nil), nil)
	case <-time.After(10 * time.Second):
		t.Fatal("the queued message did not come")
	}
	msgs, err := svc.Store().ListMessages(ctx, &store.ListMessagesParams{OwnerID: "local", ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Role)+":"+m.Text())
	}
	want := "user:hello|assistant:one two three four five six seven eight|user:question|assistant:one two three four five six seven eight|" +
		"user:typed while answering|assistant:one two three four five six seven eight"
	if strings.Join(got, "|") != want {
		t.Fatalf("thread %q", got)
	}
}

// talkStore is the chat's backend on a real service whose one agent
// answers every message slowly, a word every 20ms.
func talkStore(t *testing.T) (*service.Service, *chatStore) {
	t.Helper()
	m := scripted.New("talker", nil, scripted.Options{ChunkWords: 1, ChunkDelay: 20 * time.Millisecond, Reply: "one two three four five six seven eight"})
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "talk", Agents: []*agent.Agent{{Name: "talker", Model: m}}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.Open(context.Background(), service.Config{Networks: []service.Definition{{Network: net}}, Database: "sqlite:" + t.TempDir() + "/chat.db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	n, _ := svc.Network("talk")
	return svc, newChatStore(n, svc.Store(), "local")
}

// talkTurn runs a turn of "hello" through be, calling onDelta with the
// run's and the thread's ids at each text delta, and returns them and the
// run's end.
func talkTurn(t *testing.T, be *chatStore, onDelta func(runID, thread string)) (runID, thread string, end *runner.RunEndEvent) {
	t.Helper()
	for ev, err := range be.Turn(t.Context(), "", "hello", nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			runID, thread = e.RunID, e.ThreadID
		case *runner.TextDeltaEvent:
			onDelta(runID, thread)
		case *runner.RunEndEvent:
			end = e
		}
	}
	return runID, thread, end
}

// wantPartial checks that the thread holds the user's message and the
// run's answer so far, marked partial.
func wantPartial(t *testing.T, svc *service.Service, thread string, end *runner.RunEndEvent) {
	t.Helper()
	msgs, err := svc.Store().ListMessages(t.Context(), &store.ListMessagesParams{OwnerID: "local", ThreadID: thread})
	if err != nil || len(msgs) != 2 || msgs[1].Metadata["partial"] != true || msgs[1].Text() != end.Output {
		t.Fatalf("stored %+v, %v", msgs, err)
	}
}

// TestChatStoreStop: ctrl+c's stop of a real run keeps what it said: the
// run ends cancelled with the answer so far, stored marked partial.
func TestChatStoreStop(t *testing.T) {
	svc, be := talkStore(t)
	runID, thread, end := talkTurn(t, be, func(runID, _ string) {
		if !be.Stop(runID) {
			t.Fatal("the run does not execute here")
		}
	})
	if end == nil || end.Status != runstate.StatusCancelled || end.Output == "" || end.Output == "one two three four five six seven eight" ||
		end.Stopped == nil || end.Stopped.Reason != runner.StopCancel {
		t.Fatalf("run_end %+v, want cancelled with the answer so far", end)
	}
	wantPartial(t, svc, thread, end)
	if be.Stop(runID) {
		t.Fatal("a finished run still executes")
	}
}
