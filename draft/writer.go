package draft

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// Defaults of [Options].
const (
	DefaultInterval = 200 * time.Millisecond
	DefaultBytes    = 1536
)

// Options tune a [Writer]. The zero value means the defaults.
type Options struct {
	// Interval is the longest unflushed text waits: a flush happens at most
	// Interval after the first text written since the last flush. Defaults
	// to 200ms.
	Interval time.Duration
	// Bytes flushes at once when this many bytes are unflushed. Defaults to
	// 1536.
	Bytes int
	// Logger receives flush failures (which are retried at the next
	// interval). Defaults to slog.Default().
	Logger *slog.Logger
	// Gate, if set, runs first in each flush's transaction, before the
	// message's status is checked: a writer whose message may move to
	// streaming only with other writes (a continuation that claims its
	// run with its first write) makes them there. The function it returns,
	// if not nil, is called once the transaction ended, with its outcome
	// (nil: committed). A Gate error fails the flush like the store's
	// (a *store.TransitionError stops the Writer).
	Gate func(ctx context.Context, tx store.Tx) (after func(err error), err error)

	// afterFunc replaces time.AfterFunc in tests.
	afterFunc func(d time.Duration, f func()) func() bool
}

// Target is the message a [Writer] writes the draft of.
type Target struct {
	OwnerID   string
	ThreadID  string
	MessageID string
}

// Writer accumulates the draft text of a message and flushes it to the
// store, throttled (see [Options]), publishing an [Event] after each flush.
//
// A flush writes only while the message is streaming: it locks the message
// row, checks its status and writes the draft in one transaction, so a flush
// that races with the message's finalisation writes nothing, and the Writer
// stops. Flush failures are logged and retried. Writer is safe for
// concurrent use. Close it (or Abandon it) when the text is complete.
type Writer struct {
	st    store.Store
	b     Broker
	t     Target
	ctx   context.Context
	every time.Duration
	bytes int
	log   *slog.Logger
	after func(d time.Duration, f func()) func() bool
	gate  func(ctx context.Context, tx store.Tx) (func(error), error)

	mu       sync.Mutex
	idle     *sync.Cond // signalled when a flush ends
	buf      strings.Builder
	flushed  int         // bytes of buf already in the store
	timer    func() bool // stops the armed timer; nil when none
	inFlight bool
	stopped  bool // no more flushes
	flushes  int
	err      error
}

// NewWriter returns a Writer for t. Flushes use ctx (for its values and
// deadline): the Writer stops flushing when ctx ends.
func NewWriter(ctx context.Context, st store.Store, b Broker, t Target, o Options) *Writer {
	w := &Writer{st: st, b: b, t: t, ctx: ctx, every: o.Interval, bytes: o.Bytes, log: o.Logger, after: o.afterFunc, gate: o.Gate}
	if w.every <= 0 {
		w.every = DefaultInterval
	}
	if w.bytes <= 0 {
		w.bytes = DefaultBytes
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	if w.after == nil {
		w.after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// WriteString appends s to the draft. It never blocks on the store.
func (w *Writer) WriteString(s string) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || s == "" {
		return len(s), nil
	}
	w.buf.WriteString(s)
	w.schedule()
	return len(s), nil
}

// Text returns the text written so far.
func (w *Writer) Text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Flushes returns how many flushes wrote the draft.
func (w *Writer) Flushes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushes
}

// schedule arms the next flush: now when Bytes are unflushed, else at most
// Interval from now. A running flush reschedules when it ends. w.mu is held.
func (w *Writer) schedule() {
	if w.stopped || w.inFlight || w.buf.Len() <= w.flushed {
		return
	}
	if w.buf.Len()-w.flushed >= w.bytes {
		w.stopTimer()
		w.inFlight = true
		go w.flush()
		return
	}
	if w.timer == nil {
		w.timer = w.after(w.every, w.fire)
	}
}

func (w *Writer) stopTimer() {
	if w.timer != nil {
		w.timer()
		w.timer = nil
	}
}

// fire is the timer's flush.
func (w *Writer) fire() {
	w.mu.Lock()
	w.timer = nil
	if w.stopped || w.inFlight || w.buf.Len() <= w.flushed {
		w.mu.Unlock()
		return
	}
	w.inFlight = true
	w.mu.Unlock()
	w.flush()
}

// flush writes the text; w.inFlight is set by the caller.
func (w *Writer) flush() {
	w.mu.Lock()
	text := w.buf.String()
	w.mu.Unlock()
	err := w.write(text)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inFlight = false
	defer w.idle.Broadcast()
	var te *store.TransitionError
	switch {
	case err == nil:
		w.flushed = len(text)
		w.flushes++
	case errors.As(err, &te), errors.Is(err, store.ErrNotFound), w.ctx.Err() != nil:
		// The message is no longer streaming (or gone), or the writer's
		// context ended: nothing more to write.
		w.stopped, w.err = true, err
		w.stopTimer()
		return
	default:
		w.log.WarnContext(w.ctx, "draft flush failed; retrying", "message_id", w.t.MessageID, "error", err)
		if w.timer == nil && !w.stopped {
			w.timer = w.after(w.every, w.fire)
		}
		return
	}
	w.schedule()
}

// write stores text as the draft, in one transaction with a check that the
// message is streaming, and publishes the change.
func (w *Writer) write(text string) error {
	var after func(error)
	err := w.st.Tx(w.ctx, func(tx store.Tx) error {
		if w.gate != nil {
			var err error
			if after, err = w.gate(w.ctx, tx); err != nil {
				return err
			}
		}
		if _, err := tx.UpdateMessage(w.ctx, &store.UpdateMessageParams{OwnerID: w.t.OwnerID, ID: w.t.MessageID,
			ExpectedStatus: message.StatusStreaming}); err != nil {
			return err
		}
		_, err := tx.UpsertDraft(w.ctx, &store.UpsertDraftParams{OwnerID: w.t.OwnerID, MessageID: w.t.MessageID, Text: text})
		return err
	})
	if after != nil {
		after(err)
	}
	if err != nil {
		return err
	}
	if w.b != nil {
		if err := w.b.Publish(w.ctx, Event{OwnerID: w.t.OwnerID, ThreadID: w.t.ThreadID, MessageID: w.t.MessageID}); err != nil {
			w.log.WarnContext(w.ctx, "draft publish failed", "message_id", w.t.MessageID, "error", err)
		}
	}
	return nil
}

// Flush writes the unflushed text now and waits for it. It returns the
// error that stopped the Writer, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	for w.inFlight {
		w.idle.Wait()
	}
	if w.stopped || w.buf.Len() <= w.flushed {
		err := w.err
		w.mu.Unlock()
		return err
	}
	w.stopTimer()
	w.inFlight = true
	w.mu.Unlock()
	w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close flushes what is unflushed and stops the Writer.
func (w *Writer) Close() error {
	err := w.Flush()
	w.mu.Lock()
	w.stopped = true
	w.stopTimer()
	w.mu.Unlock()
	return err
}

// Abandon stops the Writer without flushing or waiting for a flush in
// progress (which writes nothing once the message is final). The message's
// finaliser calls it inside the transaction that deletes the draft.
func (w *Writer) Abandon() {
	w.mu.Lock()
	w.stopped = true
	w.stopTimer()
	w.mu.Unlock()
}
