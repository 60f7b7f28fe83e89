package draft

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"

	"github.com/batonhq/baton/store"
)

// catchUpMessages is how many of a thread's last messages a thread
// subscription looks through for unfinished ones when it starts.
const catchUpMessages = 50

// Hub is the in-process [Broker]: Publish reaches the subscribers of this
// process. It also does the subscriber side of other brokers (pgbroker
// delivers the events it receives to a Hub). It is safe for concurrent use.
type Hub struct {
	st store.Ops
	mu sync.Mutex
	// by maps an owner-scoped thread or message key to its subscriptions.
	by map[string]map[*subscription]struct{}
	// sig holds the signal handlers (signal.go).
	sig handlers
}

var _ Broker = (*Hub)(nil)

// NewHub returns a Hub whose subscribers read from st.
func NewHub(st store.Ops) *Hub {
	return &Hub{st: st, by: map[string]map[*subscription]struct{}{}}
}

// Publish delivers ev to the matching subscriptions of this process. It
// never blocks on a subscriber.
func (h *Hub) Publish(_ context.Context, ev Event) error {
	h.Deliver(ev)
	return nil
}

// Deliver hands ev to the matching subscriptions.
func (h *Hub) Deliver(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.by) == 0 {
		return // nobody subscribes: no keys to build
	}
	for _, k := range [2]string{key(ev.OwnerID, "t", ev.ThreadID), key(ev.OwnerID, "m", ev.MessageID)} {
		for s := range h.by[k] {
			s.mark(ev.MessageID)
		}
	}
}

// Resync makes every subscription read its state again, as when it
// started, and tells every signal handler that signals may have been lost
// (see [Signaller]): a broker calls it when events may have been lost (a
// dropped LISTEN connection).
func (h *Hub) Resync() {
	h.mu.Lock()
	for _, subs := range h.by {
		for s := range subs {
			s.resync()
		}
	}
	h.mu.Unlock()
	h.resyncSignals()
}

func key(owner, kind, id string) string {
	if id == "" {
		return ""
	}
	return owner + "\x00" + kind + "\x00" + id
}

func (f Filter) key() string {
	if f.MessageID != "" {
		return key(f.OwnerID, "m", f.MessageID)
	}
	return key(f.OwnerID, "t", f.ThreadID)
}

// subscription collects the messages that changed since its consumer last
// looked: publishers mark, the consumer takes.
type subscription struct {
	mu    sync.Mutex
	dirty map[string]struct{}
	all   bool
	wake  chan struct{}
}

func (s *subscription) mark(messageID string) {
	s.mu.Lock()
	if messageID != "" {
		s.dirty[messageID] = struct{}{}
	}
	s.mu.Unlock()
	s.signal()
}

func (s *subscription) resync() {
	s.mu.Lock()
	s.all = true
	s.mu.Unlock()
	s.signal()
}

func (s *subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscription) take() (ids []string, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.dirty {
		ids = append(ids, id)
	}
	clear(s.dirty)
	all, s.all = s.all, false
	slices.Sort(ids)
	return ids, all
}

func (h *Hub) add(f Filter) *subscription {
	s := &subscription{dirty: map[string]struct{}{}, wake: make(chan struct{}, 1)}
	k := f.key()
	h.mu.Lock()
	if h.by[k] == nil {
		h.by[k] = map[*subscription]struct{}{}
	}
	h.by[k][s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *Hub) remove(f Filter, s *subscription) {
	k := f.key()
	h.mu.Lock()
	delete(h.by[k], s)
	if len(h.by[k]) == 0 {
		delete(h.by, k)
	}
	h.mu.Unlock()
}

// Subscribe implements [Broker].
func (h *Hub) Subscribe(ctx context.Context, f Filter) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		if !f.Valid() {
			yield(Update{}, ErrInvalidFilter)
			return
		}
		// Register first, so that nothing published while the current state
		// is read is missed.
		s := h.add(f)
		defer h.remove(f, s)
		c := &consumer{h: h, f: f, seen: map[string]Update{}, yield: yield}
		ids, err := h.current(ctx, f)
		if err != nil {
			yield(Update{}, err)
			return
		}
		if !c.send(ctx, ids) {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			ids, all := s.take()
			if all {
				cur, err := h.current(ctx, f)
				if err != nil {
					yield(Update{}, err)
					return
				}
				ids = append(ids, cur...)
				for id := range c.seen {
					ids = append(ids, id)
				}
				slices.Sort(ids)
				ids = slices.Compact(ids)
			}
			if !c.send(ctx, ids) {
				return
			}
		}
	}
}

// current returns the messages a subscription starts with: its message, or
// the unfinished messages among the thread's last ones.
func (h *Hub) current(ctx context.Context, f Filter) ([]string, error) {
	if f.MessageID != "" {
		return []string{f.MessageID}, nil
	}
	msgs, err := h.st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: f.OwnerID, ThreadID: f.ThreadID, Limit: catchUpMessages, Last: true})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range msgs {
		if !final(m.Status) {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

// consumer reads and yields the updates of one subscription.
type consumer struct {
	h     *Hub
	f     Filter
	seen  map[string]Update
	yield func(Update, error) bool
	done  bool
}

// send reads each message and yields what changed. It returns false when
// the subscription is over.
func (c *consumer) send(ctx context.Context, ids []string) bool {
	for _, id := range ids {
		if c.done {
			return false
		}
		u, ok, err := c.h.read(ctx, c.f, id)
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			c.yield(Update{}, err)
			return false
		}
		if !ok {
			continue
		}
		if prev, had := c.seen[id]; had && (prev == u || prev.Final || !u.Final && u.Version < prev.Version) {
			// Nothing new, or an older draft read in a race with a flush.
			continue
		}
		c.seen[id] = u
		if !c.yield(u, nil) {
			return false
		}
		if u.Final && c.f.MessageID != "" {
			c.done = true
			return false
		}
	}
	return true
}

// read returns the update for a message; ok is false when the message is
// not (yet, or not for this owner) in the store, or not in the filter's
// thread.
func (h *Hub) read(ctx context.Context, f Filter, id string) (Update, bool, error) {
	m, err := h.st.GetMessage(ctx, &store.GetMessageParams{OwnerID: f.OwnerID, ID: id})
	if errors.Is(err, store.ErrNotFound) {
		return Update{}, false, nil
	}
	if err != nil {
		return Update{}, false, err
	}
	if f.ThreadID != "" && m.ThreadID != f.ThreadID {
		return Update{}, false, nil
	}
	u := Update{ThreadID: m.ThreadID, MessageID: m.ID, Status: m.Status}
	if final(m.Status) {
		u.Final, u.Text = true, m.Text()
		return u, true, nil
	}
	d, err := h.st.GetDraft(ctx, &store.GetDraftParams{OwnerID: f.OwnerID, MessageID: id})
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return Update{}, false, err
	default:
		u.Text, u.Version = d.Text, d.Version
	}
	return u, true, nil
}
