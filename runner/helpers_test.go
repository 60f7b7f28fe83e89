package runner_test

import (
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"regexp"
	"sync"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/checkpointtest"
	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// recorder wraps a model and keeps every request it was sent.
type recorder struct {
	mu   sync.Mutex
	reqs []*model.Request
	m    model.Model
}

func (r *recorder) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	r.mu.Lock()
	cp := *req
	cp.Messages = append([]message.Message(nil), req.Messages...)
	r.reqs = append(r.reqs, &cp)
	r.mu.Unlock()
	return r.m.Stream(ctx, req)
}

func (r *recorder) requests() []*model.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*model.Request(nil), r.reqs...)
}

func (r *recorder) last(t *testing.T) *model.Request {
	t.Helper()
	reqs := r.requests()
	if len(reqs) == 0 {
		t.Fatal("model was never called")
	}
	return reqs[len(reqs)-1]
}

// text is a scripted step answering text.
func text(s string) scripted.Step { return scripted.Step{Text: s} }

// calls is a scripted step making tool calls: name, args, name, args…
func calls(nameArgs ...string) scripted.Step {
	var st scripted.Step
	for i := 0; i+1 < len(nameArgs); i += 2 {
		st.ToolCalls = append(st.ToolCalls, scripted.Call{Name: nameArgs[i], Arguments: json.RawMessage(nameArgs[i+1])})
	}
	return st
}

func when(re string, st scripted.Step) scripted.Step {
	st.When = regexp.MustCompile(re)
	return st
}

// ag declares an agent with a recorded scripted model.
func ag(name string, steps ...scripted.Step) (*agent.Agent, *recorder) {
	rec := &recorder{m: scripted.New(name, steps, scripted.Options{})}
	return &agent.Agent{Name: name, Description: name + " agent", Instructions: "You are " + name + ".", Model: rec, ModelName: "scripted"}, rec
}

func network(t *testing.T, limits agent.Limits, agents ...*agent.Agent) *agent.Network {
	t.Helper()
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "test", Agents: agents, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// newRunner returns a runner of cfg and, unless cfg has its own, the
// recorder of its retry waits (it does not wait).
func newRunner(t *testing.T, cfg runner.Config) (*runner.Runner, *retry.Recorder) {
	t.Helper()
	s := &retry.Recorder{}
	if cfg.Sleep == nil {
		cfg.Sleep = s.Sleep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, s
}

// collect runs a stream and returns its events and final error.
func collect(seq iter.Seq2[runner.Event, error]) ([]runner.Event, error) {
	var evs []runner.Event
	for ev, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// mustCollect is collect for a run that must not fail: an error fails t.
func mustCollect(t *testing.T, seq iter.Seq2[runner.Event, error]) []runner.Event {
	t.Helper()
	evs, err := collect(seq)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func ofType[T runner.Event](evs []runner.Event) []T {
	var out []T
	for _, e := range evs {
		if x, ok := e.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// toolResults returns call id -> (output, isError) of the tool messages.
func toolResults(msgs []message.Message) map[string]message.Part {
	out := map[string]message.Part{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == message.PartToolResult {
				out[p.CallID] = p
			}
		}
	}
	return out
}

func roundTrip(t *testing.T, st *runstate.State) *runstate.State {
	t.Helper()
	b, err := runstate.Encode(st)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runstate.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// memCheckpoints keeps every checkpoint, encoded, as a store would: a state
// that does not validate is refused.
type memCheckpoints = checkpointtest.Memory
