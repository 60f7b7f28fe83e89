package replay

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/metric"
	"github.com/batonhq/baton/message"
)

// Config configures a [Session].
type Config struct {
	// Recorded is the turn's recording; nil replays nothing (every model
	// call is live, every tool call unmatched).
	Recorded *evalset.Outcome
	// Agents are the agents of the network being run: only their model
	// calls follow the recording (a picker's classifier, a summary or
	// compaction model are always live and leave the path alone).
	Agents map[string]bool
	// Unchanged are the agents whose fingerprint is the recording's: they
	// are answered from the recording while the run follows it.
	Unchanged map[string]bool
	// LiveTools runs the tool calls that have no recorded result; without
	// it they are answered with an error result.
	LiveTools bool
}

// Session is the replay of one turn. It is safe for concurrent use (a
// run's tool calls may run at once).
type Session struct {
	cfg Config

	mu        sync.Mutex
	cursor    int // next recorded model call
	diverged  bool
	used      []bool // recorded tool results taken
	calls     []evalset.ModelCall
	unmatched []evalset.ToolCall
}

// NewSession returns the session of one turn.
func NewSession(cfg Config) *Session {
	s := &Session{cfg: cfg}
	if cfg.Recorded != nil {
		s.used = make([]bool, len(cfg.Recorded.Tools))
	}
	return s
}

type sessionKey struct{}

// WithSession returns ctx carrying s: the models and tools wrapped by
// [Model] and [Tool] answer from it.
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// FromContext returns the session of ctx.
func FromContext(ctx context.Context) (*Session, bool) {
	s, ok := ctx.Value(sessionKey{}).(*Session)
	return s, ok
}

// ModelCalls returns the model calls of the turn so far, in order, each
// marked Replayed when the recording answered it.
func (s *Session) ModelCalls() []evalset.ModelCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Unmatched returns the tool calls that had no recorded result, in order.
func (s *Session) Unmatched() []evalset.ToolCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unmatched)
}

// Diverged reports whether the run left the recording.
func (s *Session) Diverged() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.diverged
}

// take returns the recorded answer for agent's call, if the agent is
// unchanged and the run is on the recording with agent's call next; it
// counts the call.
func (s *Session) take(agent string) (*evalset.ModelCall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.Agents[agent] || !s.cfg.Unchanged[agent] || !s.onPathLocked(agent) {
		return nil, false
	}
	mc := &s.cfg.Recorded.ModelCalls[s.cursor]
	s.cursor++
	s.calls = append(s.calls, evalset.ModelCall{Agent: agent, Message: mc.Message, Replayed: true})
	return mc, true
}

// onPathLocked reports whether the next recorded model call is agent's; a
// call of another agent leaves the recording.
func (s *Session) onPathLocked(agent string) bool {
	r := s.cfg.Recorded
	if s.diverged || r == nil {
		return false
	}
	if s.cursor >= len(r.ModelCalls) || r.ModelCalls[s.cursor].Agent != agent {
		s.diverged = true
		return false
	}
	return true
}

// observe records a live answer of agent and whether the run still follows
// the recording: it does when the answer is the recorded one.
func (s *Session) observe(agent string, m *message.Message, latencyMS int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.Agents[agent] {
		return
	}
	s.calls = append(s.calls, evalset.ModelCall{Agent: agent, Message: *m, LatencyMS: latencyMS})
	if !s.onPathLocked(agent) {
		return
	}
	if !SameAnswer(&s.cfg.Recorded.ModelCalls[s.cursor].Message, m) {
		s.diverged = true
		return
	}
	s.cursor++
}

// result returns the recorded result of a call of tool with args, taking
// it, or reports the call unmatched (which leaves the recording).
func (s *Session) result(agent, tool, callID string, args json.RawMessage) (*evalset.ToolCall, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.cfg.Recorded; r != nil {
		want := metric.CanonicalArgs(args)
		found := -1
		for i := range r.Tools {
			t := &r.Tools[i]
			if s.used[i] || t.Name != tool || metric.CanonicalArgs(t.Arguments) != want {
				continue
			}
			if found < 0 || (t.Agent == agent && r.Tools[found].Agent != agent) {
				found = i
			}
		}
		if found >= 0 {
			s.used[found] = true
			return &r.Tools[found], true
		}
	}
	s.diverged = true
	s.unmatched = append(s.unmatched, evalset.ToolCall{Agent: agent, ID: callID, Name: tool, Arguments: args})
	return nil, false
}

// SameAnswer reports whether two assistant messages say the same: the same
// text and the same tool calls (names and arguments, ids aside).
func SameAnswer(a, b *message.Message) bool {
	if a.Text() != b.Text() {
		return false
	}
	ca, cb := a.ToolCalls(), b.ToolCalls()
	if len(ca) != len(cb) {
		return false
	}
	for i := range ca {
		if ca[i].Name != cb[i].Name || metric.CanonicalArgs(ca[i].Arguments) != metric.CanonicalArgs(cb[i].Arguments) {
			return false
		}
	}
	return true
}
