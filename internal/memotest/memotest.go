// Package memotest keeps the value of an [agent.Memo] in memory, for the
// tests of the models and tools that use one (a2aremote, mcptool).
package memotest

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/batonhq/baton/agent"
)

// Memo is the stored value of one turn's or call's memo. It is safe for
// concurrent use.
type Memo struct {
	key   string
	mu    sync.Mutex
	v     json.RawMessage
	saves int
}

// New returns the Memo of the turn or call key (e.g. "run/turn/1"), holding
// v as if an earlier attempt had saved it (nil: nothing saved).
func New(key string, v json.RawMessage) *Memo {
	return &Memo{key: key, v: v}
}

// Context returns ctx carrying the memo, as the runner gives it to a model
// or a tool ([agent.MemoFromContext]).
func (m *Memo) Context(ctx context.Context) context.Context {
	return agent.WithMemo(ctx, agent.NewMemo(m.key, m.Value, func(_ context.Context, v json.RawMessage) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.v = v
		m.saves++
		return nil
	}))
}

// Value returns the saved value, nil if none.
func (m *Memo) Value() json.RawMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v
}

// Saves counts the values saved through the memo.
func (m *Memo) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}
