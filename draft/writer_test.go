package draft_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/drafttest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// flushLog is a broker that records when each flush was published.
type flushLog struct {
	*draft.Hub
	mu sync.Mutex
	at []time.Time
}

func (l *flushLog) Publish(ctx context.Context, ev draft.Event) error {
	l.mu.Lock()
	l.at = append(l.at, time.Now())
	l.mu.Unlock()
	return l.Hub.Publish(ctx, ev)
}

func (l *flushLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

// TestWriterCadence checks the flush cadence against a real store and
// clock: a steady trickle of text is flushed every Interval, a burst as
// soon as Bytes accumulate, and a late subscriber sees the current draft.
func TestWriterCadence(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		const interval = 200 * time.Millisecond
		st := open(t)
		t.Run("Interval", func(t *testing.T) {
			tg := drafttest.Target(t, st, "o")
			log := &flushLog{Hub: draft.NewHub(st)}
			w := draft.NewWriter(t.Context(), st, log, tg, draft.Options{Interval: interval, Bytes: 1536})
			start := time.Now()
			for time.Since(start) < 2*time.Second {
				w.WriteString("tok ")
				time.Sleep(10 * time.Millisecond)
			}
			at := log.times()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			// 2s of trickle at one flush per 200ms: about 10 flushes, never
			// more often than the interval. (The upper bounds are loose: a
			// loaded machine delays timers and writes.)
			if len(at) < 4 || len(at) > 11 {
				t.Fatalf("%d flushes in 2s, want about 10", len(at))
			}
			if first := at[0].Sub(start); first < interval*3/4 || first > interval+time.Second {
				t.Errorf("first flush after %s, want about %s", first, interval)
			}
			for i := 1; i < len(at); i++ {
				gap := at[i].Sub(at[i-1])
				if gap < interval*3/4 || gap > interval+time.Second {
					t.Errorf("flush %d came %s after the previous one, want about %s", i, gap, interval)
				}
			}
		})
		t.Run("Bytes", func(t *testing.T) {
			tg := drafttest.Target(t, st, "o")
			log := &flushLog{Hub: draft.NewHub(st)}
			w := draft.NewWriter(t.Context(), st, log, tg, draft.Options{Interval: time.Hour, Bytes: 1024})
			start := time.Now()
			chunk := strings.Repeat("b", 256)
			for range 16 { // 4 KiB
				w.WriteString(chunk)
				time.Sleep(2 * time.Millisecond)
			}
			// No timer will fire: what is flushed is flushed because Bytes
			// accumulated. Writes that arrive during a flush join the next
			// one, so less than Bytes may stay unflushed until Close.
			var d *store.Draft
			deadline := time.Now().Add(10 * time.Second)
			for {
				var err error
				d, err = st.GetDraft(t.Context(), &store.GetDraftParams{OwnerID: "o", MessageID: tg.MessageID})
				if err == nil && 4096-len(d.Text) < 1024 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("draft not flushed by bytes: %v, %v", d, err)
				}
				time.Sleep(5 * time.Millisecond)
			}
			at := log.times()
			if len(at) < 2 {
				t.Fatalf("%d flushes of 4 KiB with Bytes 1 KiB, want 2 or more", len(at))
			}
			if d := at[0].Sub(start); d > time.Second {
				t.Errorf("first byte-triggered flush after %s", d)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			d, err := st.GetDraft(t.Context(), &store.GetDraftParams{OwnerID: "o", MessageID: tg.MessageID})
			if err != nil || len(d.Text) != 4096 {
				t.Fatalf("after Close: %v, %v; want all 4096 bytes", d, err)
			}
			// A late subscriber gets the current draft first.
			for u, err := range log.Subscribe(t.Context(), draft.Filter{OwnerID: "o", MessageID: tg.MessageID}) {
				if err != nil || len(u.Text) != 4096 || u.Version != d.Version {
					t.Fatalf("late subscriber's first update: %d bytes v%d, %v", len(u.Text), u.Version, err)
				}
				break
			}
		})
	})
}

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

// timed is a writer whose throttle timers the test fires, on a streaming
// message in a SQLite store.
type timed struct {
	st    store.Store
	tg    draft.Target
	clock *fakeTimers
	w     *draft.Writer
}

func setupTimed(t *testing.T, o draft.Options) *timed {
	t.Helper()
	st := testdb.SQLite(t)
	b := &timed{st: st, tg: drafttest.Target(t, st, "o"), clock: &fakeTimers{}}
	b.w = draft.NewWriter(t.Context(), st, nil, b.tg, draft.WithTimers(o, b.clock.afterFunc))
	return b
}

func draftText(t *testing.T, st store.Store, tg draft.Target) (string, int64) {
	t.Helper()
	d, err := st.GetDraft(context.Background(), &store.GetDraftParams{OwnerID: tg.OwnerID, MessageID: tg.MessageID})
	if err != nil {
		return "", 0
	}
	return d.Text, d.Version
}

func waitFlushes(t *testing.T, w *draft.Writer, n int) {
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
	b := setupTimed(t, draft.Options{Interval: 250 * time.Millisecond, Bytes: 1000})
	st, tg, clock, w := b.st, b.tg, b.clock, b.w

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
	b := setupTimed(t, draft.Options{})
	b.w.WriteString("partial")
	// The message is finalised (and its draft cleared) before the flush.
	if _, err := b.st.UpdateMessage(t.Context(), &store.UpdateMessageParams{OwnerID: b.tg.OwnerID, ID: b.tg.MessageID, Status: message.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	b.clock.fire()
	if err := b.w.Flush(); err == nil {
		t.Fatal("flush of a final message: no error")
	}
	if text, _ := draftText(t, b.st, b.tg); text != "" {
		t.Errorf("draft of a final message = %q", text)
	}
	b.w.WriteString("more")
	if b.clock.pending() != 0 {
		t.Errorf("a stopped writer armed a timer")
	}
}

func TestWriterAbandon(t *testing.T) {
	t.Parallel()
	b := setupTimed(t, draft.Options{})
	b.w.WriteString("partial")
	b.w.Abandon()
	if b.clock.pending() != 0 {
		t.Fatal("abandon left a timer")
	}
	if err := b.w.Close(); err != nil || b.w.Flushes() != 0 {
		t.Fatalf("close after abandon: %v, %d flushes", err, b.w.Flushes())
	}
}

// TestWriterGate: the gate runs first in each flush's transaction (here it
// moves a queued message to streaming, as a continuation's claim does),
// and hears how the transaction ended; its error stops the writer.
func TestWriterGate(t *testing.T) {
	t.Parallel()
	st := testdb.SQLite(t)
	tg := drafttest.Target(t, st, "o")
	if _, err := st.UpdateMessage(t.Context(), &store.UpdateMessageParams{OwnerID: tg.OwnerID, ID: tg.MessageID, Status: message.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	var gates int
	var outcomes []error
	claimed := false
	gate := func(ctx context.Context, tx store.Tx) (func(error), error) {
		gates++
		if claimed {
			return nil, nil
		}
		if _, err := tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: tg.OwnerID, ID: tg.MessageID, Status: message.StatusStreaming,
			ExpectedStatus: message.StatusQueued}); err != nil {
			return nil, err
		}
		return func(err error) {
			outcomes = append(outcomes, err)
			claimed = err == nil
		}, nil
	}
	clock := &fakeTimers{}
	w := draft.NewWriter(t.Context(), st, nil, tg, draft.WithTimers(draft.Options{Gate: gate}, clock.afterFunc))
	w.WriteString("first")
	clock.fire()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMessage(t.Context(), &store.GetMessageParams{OwnerID: tg.OwnerID, ID: tg.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := draftText(t, st, tg); text != "first" || m.Status != message.StatusStreaming || len(outcomes) != 1 || outcomes[0] != nil || !claimed {
		t.Fatalf("after the first flush: draft %q, status %s, outcomes %v", text, m.Status, outcomes)
	}
	w.WriteString(" second")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if text, _ := draftText(t, st, tg); text != "first second" || gates != 2 || len(outcomes) != 1 {
		t.Fatalf("after the second flush: draft %q, %d gates, outcomes %v", text, gates, outcomes)
	}

	// A gate that is refused stops the writer, and nothing is written.
	tg2 := drafttest.Target(t, st, "o")
	refused := func(ctx context.Context, tx store.Tx) (func(error), error) {
		_, err := tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: tg2.OwnerID, ID: tg2.MessageID, Status: message.StatusStreaming,
			ExpectedStatus: message.StatusQueued})
		return nil, err
	}
	w2 := draft.NewWriter(t.Context(), st, nil, tg2, draft.WithTimers(draft.Options{Gate: refused}, clock.afterFunc))
	w2.WriteString("x")
	if err := w2.Flush(); err == nil {
		t.Fatal("a refused gate: no error")
	}
	if text, _ := draftText(t, st, tg2); text != "" {
		t.Fatalf("a refused gate wrote %q", text)
	}
	w2.WriteString("y")
	if err := w2.Flush(); err == nil {
		t.Fatal("a writer stopped by its gate flushed again")
	}
}
