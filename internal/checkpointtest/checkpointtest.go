// Package checkpointtest keeps a run's checkpoints in memory, encoded as a
// store keeps them, for the tests of the runner and of what runs in it.
package checkpointtest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/batonhq/baton/runstate"
)

// Memory is a runner.Checkpointer that keeps every checkpoint, encoded; a
// state that does not validate is refused, as a store refuses it. The zero
// Memory is empty and ready; it is safe for concurrent use.
type Memory struct {
	mu    sync.Mutex
	saved [][]byte
}

// Checkpoint validates st and keeps it, encoded.
func (m *Memory) Checkpoint(_ context.Context, st *runstate.State) error {
	if err := st.Validate(); err != nil {
		return fmt.Errorf("checkpoint refused: %w", err)
	}
	b, err := runstate.Encode(st)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.saved = append(m.saved, b)
	m.mu.Unlock()
	return nil
}

// Len is how many checkpoints were kept.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.saved)
}

// States decodes every checkpoint kept, in order; none fails t.
func (m *Memory) States(t testing.TB) []*runstate.State {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.saved) == 0 {
		t.Fatal("no checkpoint")
	}
	out := make([]*runstate.State, 0, len(m.saved))
	for _, b := range m.saved {
		st, err := runstate.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

// Latest decodes the last checkpoint kept; none fails t.
func (m *Memory) Latest(t testing.TB) *runstate.State {
	t.Helper()
	all := m.States(t)
	return all[len(all)-1]
}
