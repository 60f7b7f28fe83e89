package runtest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
)

// Stall is a network, "stall", whose one agent, "assistant", calls its
// tool "stall" (inline, not slow) in a turn's first step and then answers
// from the texts NewStall was given: a step that outlives a deadline. The
// tool blocks the first call of each idempotency key until Release is
// closed or the call's context ends, and answers "thought" at once after.
type Stall struct {
	Network *agent.Network
	// Started is told each first call of a key before it blocks; it holds
	// 16 unread.
	Started chan struct{}
	// Release, once closed, lets the tool answer.
	Release chan struct{}
	calls   sync.Map // idempotency key -> *atomic.Int32
	total   atomic.Int32
}

// NewStall builds a Stall whose agent answers, after the tool's result,
// then[0], and then[i] on each later model call.
func NewStall(t testing.TB, then ...string) *Stall {
	t.Helper()
	s := &Stall{Started: make(chan struct{}, 16), Release: make(chan struct{})}
	stall := &agent.Tool{Name: "stall", Description: "Think hard.", Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
		s.total.Add(1)
		ci, _ := agent.CallFromContext(ctx)
		c, _ := s.calls.LoadOrStore(ci.IdempotencyKey, new(atomic.Int32))
		if c.(*atomic.Int32).Add(1) == 1 {
			s.Started <- struct{}{}
			select {
			case <-s.Release:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return "thought", nil
	}}
	steps := []scripted.Step{{Text: "Let me think.", ToolCalls: []scripted.Call{{Name: "stall", Arguments: json.RawMessage(`{}`)}}}}
	for _, text := range then {
		steps = append(steps, scripted.Step{Text: text})
	}
	a := &agent.Agent{Name: "assistant", ModelName: "scripted", Tools: []*agent.Tool{stall},
		Model: scripted.New("assistant", steps, scripted.Options{})}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "stall", Agents: []*agent.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	s.Network = net
	return s
}

// Executions is how often the tool ran under key.
func (s *Stall) Executions(key string) int32 {
	c, ok := s.calls.Load(key)
	if !ok {
		return 0
	}
	return c.(*atomic.Int32).Load()
}

// Calls is how often the tool ran, all keys together.
func (s *Stall) Calls() int32 { return s.total.Load() }
