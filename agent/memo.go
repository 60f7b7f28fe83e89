package agent

import (
	"context"
	"encoding/json"
)

// Memo is a small value that code running inside a run — a model answering
// a turn, a tool answering a call — keeps in the run's state, so that the
// same turn or call of a resumed run finds it. It is how work started
// outside the process survives the process: a remote agent's task id, the
// mark that a non-idempotent tool call was sent.
//
// The runner gives one to every model call ([MemoFromContext] in
// model.Model.Stream) and every tool call (in Tool.Func). Its key is stable
// across retries and resumes of that turn or call; a turn or call with a
// recorded outcome is never made again, and its memo is dropped with it.
// A Memo is safe for concurrent use.
type Memo struct {
	key  string
	load func() json.RawMessage
	save func(ctx context.Context, v json.RawMessage) error
}

// NewMemo returns a memo: load reads the saved value, save stores one
// durably. The runner makes them; other code uses [MemoFromContext].
func NewMemo(key string, load func() json.RawMessage, save func(ctx context.Context, v json.RawMessage) error) *Memo {
	return &Memo{key: key, load: load, save: save}
}

// Key identifies the turn or call: the run (or agent-tool sub-run) id, then
// "turn/N" or "call/ID".
func (m *Memo) Key() string { return m.key }

// Load returns the value saved for this turn or call by an earlier attempt
// (of this execution, or of one that stopped before the outcome was
// recorded), or nil.
func (m *Memo) Load() json.RawMessage {
	if m == nil || m.load == nil {
		return nil
	}
	return m.load()
}

// Save stores v (small JSON, a few hundred bytes) for this turn or call and
// returns once it is durable: the run's state is checkpointed (runs without
// a checkpointer keep it in memory). An error means it may not be; the
// caller should not start the work it guards.
func (m *Memo) Save(ctx context.Context, v json.RawMessage) error {
	if m == nil || m.save == nil {
		return nil
	}
	return m.save(ctx, v)
}

type memoKey struct{}

// MemoScope gives the memo of the turn or call a context runs for: the
// runner puts one in the context of each run (and agent-tool sub-run), so
// that memos cost nothing until someone asks for one.
type MemoScope interface {
	// MemoFor returns the memo of the call ctx runs for ([CallFromContext])
	// when it is one of this run's, else of the model turn in progress.
	MemoFor(ctx context.Context) *Memo
}

type memoScopeKey struct{}

// WithMemoScope returns ctx carrying s.
func WithMemoScope(ctx context.Context, s MemoScope) context.Context {
	return context.WithValue(ctx, memoScopeKey{}, s)
}

// WithMemo returns ctx carrying m itself, whatever the scope says: for
// tests, and for code that calls models or tools outside a run.
func WithMemo(ctx context.Context, m *Memo) context.Context {
	return context.WithValue(ctx, memoKey{}, m)
}

// MemoFromContext returns the memo of the turn or call ctx runs for, and
// false outside a run.
func MemoFromContext(ctx context.Context) (*Memo, bool) {
	if m, ok := ctx.Value(memoKey{}).(*Memo); ok && m != nil {
		return m, true
	}
	if s, ok := ctx.Value(memoScopeKey{}).(MemoScope); ok && s != nil {
		m := s.MemoFor(ctx)
		return m, m != nil
	}
	return nil, false
}
