package draft

import (
	"context"
	"sync"
)

// Signal is a short notice from one process to every process that shares
// its store: Kind says what happened, Key to what (a run id, a thread id),
// OwnerID whose it is, Data any detail. Like an [Event] it carries ids, not
// data, and it may be lost (a process that is not listening, a dropped
// connection): a receiver acts on it at once, and whoever sends it has a
// way to reach the same end without it (such as a bounded wait followed by
// a write to the store).
type Signal struct {
	Kind    string `json:"k"`
	OwnerID string `json:"o,omitempty"`
	Key     string `json:"key,omitempty"`
	Data    string `json:"d,omitempty"`
}

// Signaller carries [Signal]s between processes. The brokers of this
// package implement it: the in-process [Hub] reaches this process, the
// PostgreSQL broker every process listening on the schema (this one
// included).
type Signaller interface {
	// Signal sends s to the handlers of s.Kind in every process.
	Signal(ctx context.Context, s Signal) error
	// OnSignal calls f with each signal of kind received from now until
	// cancel is called. f runs on the delivery goroutine: it must not
	// block. A broker that may have missed signals (its connection
	// dropped) calls f with a Signal of that kind and no Key: re-read
	// what the signals announce.
	OnSignal(kind string, f func(Signal)) (cancel func())
}

var _ Signaller = (*Hub)(nil)

// handlers are the signal handlers of a Hub, by kind.
type handlers struct {
	mu sync.Mutex
	by map[string]map[*func(Signal)]struct{}
}

// Signal implements [Signaller]: it calls this process's handlers.
func (h *Hub) Signal(_ context.Context, s Signal) error {
	h.DeliverSignal(s)
	return nil
}

// DeliverSignal calls the handlers of s.Kind with s.
func (h *Hub) DeliverSignal(s Signal) {
	h.sig.mu.Lock()
	fs := make([]func(Signal), 0, len(h.sig.by[s.Kind]))
	for f := range h.sig.by[s.Kind] {
		fs = append(fs, *f)
	}
	h.sig.mu.Unlock()
	for _, f := range fs {
		f(s)
	}
}

// OnSignal implements [Signaller].
func (h *Hub) OnSignal(kind string, f func(Signal)) (cancel func()) {
	p := &f
	h.sig.mu.Lock()
	if h.sig.by == nil {
		h.sig.by = map[string]map[*func(Signal)]struct{}{}
	}
	if h.sig.by[kind] == nil {
		h.sig.by[kind] = map[*func(Signal)]struct{}{}
	}
	h.sig.by[kind][p] = struct{}{}
	h.sig.mu.Unlock()
	return func() {
		h.sig.mu.Lock()
		delete(h.sig.by[kind], p)
		h.sig.mu.Unlock()
	}
}

// resyncSignals tells every handler that signals may have been lost.
func (h *Hub) resyncSignals() {
	h.sig.mu.Lock()
	var all []Signal
	var fs []func(Signal)
	for kind, set := range h.sig.by {
		for f := range set {
			all = append(all, Signal{Kind: kind})
			fs = append(fs, *f)
		}
	}
	h.sig.mu.Unlock()
	for i, f := range fs {
		f(all[i])
	}
}
