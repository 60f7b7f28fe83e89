package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/replay"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
)

// forbidden is a model that fails the test if it is called.
func forbidden(t *testing.T) model.Model {
	return model.Func(func(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
		t.Error("the model of an unchanged agent was called")
		return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, errors.New("forbidden")) }
	})
}

// answering is a model that answers m and counts its calls.
func answering(m message.Message, calls *atomic.Int32) model.Model {
	return model.Func(func(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
		calls.Add(1)
		return func(yield func(model.Chunk, error) bool) {
			c := m
			yield(model.Chunk{Type: model.ChunkDone, Message: &c}, nil)
		}
	})
}

func transferCall() message.Message {
	return message.Message{Role: message.RoleAssistant, Agent: "triage", Parts: []message.Part{
		{Type: message.PartText, Text: "Let me get billing."},
		{Type: message.PartToolCall, CallID: "c1", Name: "transfer_to_billing", Arguments: json.RawMessage(`{"order_id":"1234"}`)},
	}, Usage: &message.Usage{InputTokens: 50, OutputTokens: 10}, Metadata: map[string]any{"scripted_rule": "0.0"}}
}

func recorded() *evalset.Outcome {
	return &evalset.Outcome{
		ModelCalls: []evalset.ModelCall{
			{Agent: "triage", Message: transferCall()},
			{Agent: "billing", Message: message.Message{Role: message.RoleAssistant, Parts: []message.Part{{Type: message.PartToolCall, CallID: "c2", Name: "lookup_order", Arguments: json.RawMessage(`{"order_id":"1234"}`)}}}},
			{Agent: "billing", Message: message.Assistant("billing", "Two charges; one is reversed.")},
		},
		Tools: []evalset.ToolCall{
			{Agent: "billing", ID: "c2", Name: "lookup_order", Arguments: json.RawMessage(`{"order_id": "1234"}`), Output: `{"charges":2}`},
			{Agent: "billing", Name: "lookup_order", Arguments: json.RawMessage(`{"order_id": "9"}`), Output: "error: no such order", IsError: true},
		},
	}
}

var agents = map[string]bool{"triage": true, "billing": true}

func TestUnchangedAgentIsReplayed(t *testing.T) {
	t.Parallel()
	s := replay.NewSession(replay.Config{Recorded: recorded(), Agents: agents, Unchanged: agents})
	ctx := replay.WithSession(t.Context(), s)
	var chunks []model.ChunkType
	var done *model.Chunk
	for c, err := range replay.Model("triage", forbidden(t)).Stream(ctx, &model.Request{Agent: "triage"}) {
		if err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c.Type)
		if c.Type == model.ChunkDone {
			done = &c
		}
	}
	if len(chunks) != 3 || chunks[0] != model.ChunkText || chunks[1] != model.ChunkToolCall || done == nil {
		t.Fatalf("chunks = %v", chunks)
	}
	if done.FinishReason != model.FinishToolCalls || done.Usage.InputTokens != 50 || done.Message.Metadata["scripted_rule"] != "0.0" || !replay.SameAnswer(done.Message, &recorded().ModelCalls[0].Message) {
		t.Errorf("done = %+v", done)
	}
	calls := s.ModelCalls()
	if len(calls) != 1 || !calls[0].Replayed || calls[0].Agent != "triage" {
		t.Errorf("model calls = %+v", calls)
	}
	// Without a session, the model is the agent's own.
	var n atomic.Int32
	if _, err := model.Collect(replay.Model("triage", answering(transferCall(), &n)).Stream(t.Context(), &model.Request{})); err != nil || n.Load() != 1 {
		t.Errorf("without a session: %v, %d calls", err, n.Load())
	}
}

// TestChangedAgent: a changed agent calls its model; while its answers are
// the recorded ones the run follows the recording and the unchanged agent
// after it is replayed; once an answer differs, every later call is live.
func TestChangedAgent(t *testing.T) {
	t.Parallel()
	unchanged := map[string]bool{"billing": true}
	var triageCalls atomic.Int32
	s := replay.NewSession(replay.Config{Recorded: recorded(), Agents: agents, Unchanged: unchanged})
	ctx := replay.WithSession(t.Context(), s)
	same := transferCall()
	same.Parts[1].CallID = "other-id" // ids aside, the same answer
	if _, err := model.Collect(replay.Model("triage", answering(same, &triageCalls)).Stream(ctx, &model.Request{})); err != nil {
		t.Fatal(err)
	}
	// The classifier of a picker is not an agent: it leaves the path alone.
	var pickerCalls atomic.Int32
	if _, err := model.Collect(replay.Model("picker", answering(message.Assistant("", `{"agent":"billing"}`), &pickerCalls)).Stream(ctx, &model.Request{})); err != nil {
		t.Fatal(err)
	}
	if _, err := model.Collect(replay.Model("billing", forbidden(t)).Stream(ctx, &model.Request{})); err != nil {
		t.Fatal(err)
	}
	if triageCalls.Load() != 1 || pickerCalls.Load() != 1 || s.Diverged() {
		t.Fatalf("triage %d, picker %d calls, diverged %v", triageCalls.Load(), pickerCalls.Load(), s.Diverged())
	}

	// Another answer of triage: billing is live after it.
	s = replay.NewSession(replay.Config{Recorded: recorded(), Agents: agents, Unchanged: unchanged})
	ctx = replay.WithSession(t.Context(), s)
	other := transferCall()
	other.Parts[1].Arguments = json.RawMessage(`{"order_id":"99"}`)
	if _, err := model.Collect(replay.Model("triage", answering(other, &triageCalls)).Stream(ctx, &model.Request{})); err != nil {
		t.Fatal(err)
	}
	var billingCalls atomic.Int32
	if _, err := model.Collect(replay.Model("billing", answering(message.Assistant("billing", "live"), &billingCalls)).Stream(ctx, &model.Request{})); err != nil {
		t.Fatal(err)
	}
	if billingCalls.Load() != 1 || !s.Diverged() {
		t.Errorf("billing %d calls, diverged %v: want billing live after triage diverged", billingCalls.Load(), s.Diverged())
	}
	calls := s.ModelCalls()
	if len(calls) != 2 || calls[0].Replayed || calls[1].Replayed || calls[1].Message.Text() != "live" {
		t.Errorf("model calls = %+v", calls)
	}
}

// TestAnotherAgentFirst: a run that asks an unchanged agent out of the
// recorded order has left the recording.
func TestAnotherAgentFirst(t *testing.T) {
	t.Parallel()
	s := replay.NewSession(replay.Config{Recorded: recorded(), Agents: agents, Unchanged: agents})
	ctx := replay.WithSession(t.Context(), s)
	var n atomic.Int32
	if _, err := model.Collect(replay.Model("billing", answering(message.Assistant("billing", "hi"), &n)).Stream(ctx, &model.Request{})); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 || !s.Diverged() {
		t.Errorf("%d calls, diverged %v", n.Load(), s.Diverged())
	}
}

// TestToolReplayHasNoSideEffects: a recorded call is answered from the
// recording and the tool never runs; an unrecorded one is reported and not
// run, unless live tools are on.
func TestToolReplayHasNoSideEffects(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	tool := replay.Tool("lookup_order", func(context.Context, json.RawMessage) (string, error) {
		runs.Add(1)
		return "live result", nil
	})
	s := replay.NewSession(replay.Config{Recorded: recorded(), Agents: agents})
	ctx := replay.WithSession(agent.WithCall(t.Context(), &agent.CallInfo{Agent: "billing", CallID: "x1"}), s)
	// The same arguments in another order and spacing are the same call.
	out, err := tool(ctx, json.RawMessage(`{ "order_id" : "1234" }`))
	if err != nil || out != `{"charges":2}` {
		t.Errorf("recorded call = %q, %v", out, err)
	}
	if _, err := tool(ctx, json.RawMessage(`{"order_id":"9"}`)); err == nil || err.Error() != "no such order" {
		t.Errorf("recorded error = %v, want its text", err)
	}
	if s.Diverged() {
		t.Error("recorded calls left the recording")
	}
	// Each recorded result answers one call: a third lookup has none.
	_, err = tool(ctx, json.RawMessage(`{"order_id":"1234"}`))
	var ue *replay.UnmatchedError
	if !errors.As(err, &ue) || ue.Tool != "lookup_order" {
		t.Errorf("unrecorded call: %v, want an *UnmatchedError", err)
	}
	if runs.Load() != 0 {
		t.Fatalf("the tool ran %d times during replay", runs.Load())
	}
	if u := s.Unmatched(); len(u) != 1 || u[0].ID != "x1" || u[0].Agent != "billing" || !s.Diverged() {
		t.Errorf("unmatched = %+v, diverged %v", u, s.Diverged())
	}

	live := replay.NewSession(replay.Config{Agents: agents, LiveTools: true})
	out, err = tool(replay.WithSession(t.Context(), live), json.RawMessage(`{"order_id":"5"}`))
	if err != nil || out != "live result" || runs.Load() != 1 || len(live.Unmatched()) != 1 {
		t.Errorf("live tools: %q, %v, %d runs, unmatched %v", out, err, runs.Load(), live.Unmatched())
	}
	if out, err := tool(t.Context(), nil); err != nil || out != "live result" {
		t.Errorf("without a session: %q, %v", out, err)
	}
}

func TestFingerprints(t *testing.T) {
	t.Parallel()
	const src = `
version: 1
name: n
agents:
  - {name: a, instructions: route, model: scripted, reply: hi}
  - {name: b, model: scripted, script: [{text: one}]}
`
	fps := func(src, override string) map[string]string {
		t.Helper()
		spec, err := netspec.Parse([]byte(src), "n.yaml", netspec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return replay.Fingerprints(spec.Network, spec.File, override)
	}
	base := fps(src, "")
	if base["a"] == "" || base["b"] == "" || base["a"] == base["b"] {
		t.Fatalf("fingerprints = %v", base)
	}
	if again := fps(src, ""); again["a"] != base["a"] {
		t.Error("fingerprints are not stable")
	}
	// The script is the scripted model: another script is another agent.
	changed := fps(`
version: 1
name: n
agents:
  - {name: a, instructions: route, model: scripted, reply: hi}
  - {name: b, model: scripted, script: [{text: two}]}
`, "")
	if changed["a"] != base["a"] || changed["b"] == base["b"] {
		t.Errorf("another script of b: %v vs %v", changed, base)
	}
	if u := replay.Unchanged(changed, base); !u["a"] || u["b"] || len(u) != 1 {
		t.Errorf("unchanged = %v", u)
	}
	live := fps(src, "openai:gpt-4.1-mini")
	if live["a"] == base["a"] || live["b"] == base["b"] {
		t.Error("--model leaves the fingerprints")
	}
	if other := fps(src, "anthropic:claude-sonnet-4-5"); other["a"] == live["a"] {
		t.Error("two live models fingerprint the same")
	}
}
