package draft

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

// fakeTimers records armed timers; the test fires them.
type fakeTimers struct {
	mu     sync.Mutex
	armed  []time.Duration
	funcs  []func()
	active int
}

func (c *fakeTimers) afterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = append(c.armed, d)
	c.active++
	i := len(c.funcs)
	c.funcs = append(c.funcs, f)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.funcs[i] == nil {
			return false
		}
		c.funcs[i] = nil
		c.active--
		return true
	}
}

// fire runs the armed timers.
func (c *fakeTimers) fire() int {
	c.mu.Lock()
	var fs []func()
	for i, f := range c.funcs {
		if f != nil {
			fs = append(fs, f)
			c.funcs[i] = nil
			c.active--
		}
	}
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

func (c *fakeTimers) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.active
}

func streamingMessage(t *testing.T) (store.Store, Target) {
	t.Helper()
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "baton.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	th, err := st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o"})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "o", ThreadID: th.ID, Messages: []store.NewMessage{{
		Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}})
	if err != nil {
		t.Fatal(err)
	}
	return st, Target{OwnerID: "o", ThreadID: th.ID, MessageID: ms[0].ID}
}

func draftText(t *testing.T, st store.Store, tg Target) (string, int64) {
	t.Helper()
	d, err := st.GetDraft(context.Background(), &store.GetDraftParams{OwnerID: tg.OwnerID, MessageID: tg.MessageID})
	if err != nil {
		return "", 0
	}
	return d.Text, d.Version
}

func waitFlushes(t *testing.T, w *Writer, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.Flushes() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d flushes, want %d", w.Flushes(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWriterThrottle(t *testing.T) {
	t.Parallel()
	st, tg := streamingMessage(t)
	clock := &fakeTimers{}
	w := NewWriter(t.Context(), st, nil, tg, Options{Interval: 250 * time.Millisecond, Bytes: 1000, afterFunc: clock.afterFunc})

	// Small writes arm one timer of Interval and write nothing yet.
	w.WriteString("Looking ")
	w.WriteString("up ")
	if clock.pending() != 1 || clock.armed[0] != 250*time.Millisecond {
		t.Fatalf("armed timers = %v (%d pending), want one of 250ms", clock.armed, clock.pending())
	}
	if text, _ := draftText(t, st, tg); text != "" {
		t.Fatalf("draft written before the interval: %q", text)
	}
	// The interval elapses: one flush with all the text.
	clock.fire()
	waitFlushes(t, w, 1)
	if text, v := draftText(t, st, tg); text != "Looking up " || v != 1 {
		t.Fatalf("draft = %q v%d", text, v)
	}
	// Reaching Bytes flushes at once, without waiting for the timer.
	w.WriteString(strings.Repeat("x", 999))
	if clock.pending() != 1 {
		t.Fatalf("pending timers = %d, want 1", clock.pending())
	}
	w.WriteString("y")
	waitFlushes(t, w, 2)
	if clock.pending() != 0 {
		t.Errorf("the byte flush left %d timers armed", clock.pending())
	}
	if text, v := draftText(t, st, tg); len(text) != len("Looking up ")+1000 || v != 2 {
		t.Fatalf("draft = %d bytes v%d", len(text), v)
	}
	// Close flushes the rest.
	w.WriteString(" done")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if text, v := draftText(t, st, tg); !strings.HasSuffix(text, "y done") || v != 3 {
		t.Fatalf("draft after close = …%q v%d", text[len(text)-6:], v)
	}
	w.WriteString("ignored")
	if clock.pending() != 0 || w.Flushes() != 3 {
		t.Errorf("a closed writer armed %d timers, flushed %d times", clock.pending(), w.Flushes())
	}
}

func TestWriterStopsWhenMessageIsFinal(t *testing.T) {
	t.Parallel()
	st, tg := streamingMessage(t)
	clock := &fakeTimers{}
	w := NewWriter(t.Context(), st, nil, tg, Options{afterFunc: clock.afterFunc})
	w.WriteString("partial")
	// The message is finalised (and its draft cleared) before the flush.
	if _, err := st.UpdateMessage(t.Context(), &store.UpdateMessageParams{OwnerID: tg.OwnerID, ID: tg.MessageID, Status: message.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	clock.fire()
	if err := w.Flush(); err == nil {
		t.Fatal("flush of a final message: no error")
	}
	if text, _ := draftText(t, st, tg); text != "" {
		t.Errorf("draft of a final message = %q", text)
	}
	w.WriteString("more")
	if clock.pending() != 0 {
		t.Errorf("a stopped writer armed a timer")
	}
}

func TestWriterAbandon(t *testing.T) {
	t.Parallel()
	st, tg := streamingMessage(t)
	clock := &fakeTimers{}
	w := NewWriter(t.Context(), st, nil, tg, Options{afterFunc: clock.afterFunc})
	w.WriteString("partial")
	w.Abandon()
	if clock.pending() != 0 {
		t.Fatal("abandon left a timer")
	}
	if err := w.Close(); err != nil || w.Flushes() != 0 {
		t.Fatalf("close after abandon: %v, %d flushes", err, w.Flushes())
	}
}
