package main

import (
	"bytes"
	"context"
	"io"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// slowChat streams an answer that does not end: a delta every few
// milliseconds until the chat stops reading it or cancels it.
type slowChat struct {
	fakeChat
	started chan struct{} // the first delta was taken
	ended   chan struct{} // the turn's events ended
	deltas  atomic.Int32  // deltas the chat took
}

const slowThread = "0193a2b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b"

func (s *slowChat) Turn(ctx context.Context, _, input string, _ func(cleanupResult)) iter.Seq2[runner.Event, error] {
	return func(yield func(runner.Event, error) bool) {
		defer close(s.ended)
		if !yield(&runner.RunStartEvent{RunID: "run_1", ThreadID: slowThread, Network: "support"}, nil) ||
			!yield(&runner.AgentStartEvent{Agent: "billing"}, nil) {
			return
		}
		for i := 0; ; i++ {
			if !yield(&runner.TextDeltaEvent{Agent: "billing", Delta: "partial "}, nil) {
				return
			}
			s.deltas.Add(1)
			if i == 0 {
				close(s.started)
			}
			select {
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
}

// The chat's keys through Bubble Tea's own program, fed raw terminal
// bytes: a message sent, the next one typed while the answer streams,
// ctrl+c stops the answer (what it streamed stays), a second ctrl+c quits,
// and leaving prints the session and the message not sent.
func TestChatCtrlC(t *testing.T) {
	t.Parallel()
	f := &slowChat{started: make(chan struct{}), ended: make(chan struct{})}
	m := newChatModel(t.Context(), f, chatInfo{Network: "support", Owner: "local", Models: map[string]string{"billing": "openai:gpt-4.1-mini"}})
	in, keys := io.Pipe()
	// turnDone is closed when the program takes the end of the turn (the
	// filter sees each message before the model's Update, in order).
	turnDone := make(chan struct{})
	filter := func(_ tea.Model, msg tea.Msg) tea.Msg {
		if _, ok := msg.(runDoneMsg); ok {
			close(turnDone)
		}
		return msg
	}
	p := tea.NewProgram(m, tea.WithContext(t.Context()), tea.WithInput(in), tea.WithOutput(io.Discard), tea.WithWindowSize(120, 30),
		tea.WithoutSignals(), tea.WithFilter(filter))
	done := make(chan error, 1)
	var final tea.Model
	go func() {
		var err error
		final, err = p.Run()
		done <- err
	}()
	write := func(s string) {
		t.Helper()
		if _, err := keys.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	// Generous bounds: a loaded machine (the race detector, other test
	// binaries) can hold the program for seconds; a stuck one still fails.
	const bound = time.Minute
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(bound):
			t.Fatalf("timed out waiting for %s", what)
		}
	}

	write("I was charged twice\r")
	wait(f.started, "the answer to stream")
	write("and a refund") // typed while the answer streams
	write("\x03")         // ctrl+c: stop the answer
	wait(f.ended, "the turn to stop")
	wait(turnDone, "the chat to take the end of the turn")
	write("\x03") // ctrl+c again: quit
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(bound):
		p.Kill()
		t.Fatal("the second ctrl+c did not quit")
	}
	keys.Close()

	fm := final.(*chatModel)
	if got := fm.input.Value(); got != "and a refund" {
		t.Errorf("input %q: what was typed during the answer is lost", got)
	}
	// Every delta the chat took before the stop is kept, none lost.
	streamed := "billing: " + strings.Repeat("partial ", int(f.deltas.Load()))
	wantTranscript(t, fm, "you: I was charged twice", streamed+"\n", "· stopped")
	if fm.thread != slowThread || fm.threadName != "I was charged twice" {
		t.Errorf("thread %q %q", fm.thread, fm.threadName)
	}
	var out bytes.Buffer
	fm.farewell(&out, "examples/support/network.yaml")
	for _, want := range []string{streamed + "\n", "\nnot sent: and a refund\n",
		`baton chat: thread ` + slowThread + ` «I was charged twice» (continue with: baton chat --network examples/support/network.yaml --thread 3e4f5a6b)`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("leaving prints no %q:\n%s", want, out.String())
		}
	}
}

// The status line stays between the transcript and the input, whatever
// the transcript holds, and names the network, the thread (short id and
// title), the agent, its model and the thread's tokens.
func TestChatStatusLine(t *testing.T) {
	t.Parallel()
	f := &fakeChat{turn: func(string) []runner.Event {
		return []runner.Event{
			&runner.RunStartEvent{RunID: "r1", ThreadID: slowThread},
			&runner.AgentStartEvent{Agent: "billing"},
			&runner.MessageEvent{Agent: "billing", Text: strings.Repeat("a long answer line\n", 80)},
			&runner.RunEndEvent{Status: runstate.StatusCompleted, LastAgent: "billing", Usage: message.Usage{InputTokens: 1234, OutputTokens: 56}},
		}
	}}
	m := newChatModel(t.Context(), f, chatInfo{Network: "support", Owner: "local", Models: map[string]string{"billing": "scripted"}})
	drive(t, m, tea.WindowSizeMsg{Width: 120, Height: 20})
	typeLine(t, m, "Why was I charged twice for order 1234?")
	lines := strings.Split(m.View().Content, "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines on a 20-line screen", len(lines))
	}
	status := lines[20-inputHeight-1]
	for _, want := range []string{"support", "thread 3e4f5a6b «Why was I charged twice for order 1234?»", "billing · scripted", "1.2k in · 56 out tokens"} {
		if !strings.Contains(status, want) {
			t.Errorf("status line %q lacks %q", status, want)
		}
	}
}
