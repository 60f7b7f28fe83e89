package netspec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"log/slog"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
)

const liveNetwork = `version: 1
name: live
tools:
  - name: lookup_order
    parameters: {type: object, properties: {order_id: {type: string}}}
    result: {charges: 2}
agents:
  - name: triage
    model: openai:gpt-4o-mini
    transfers: [{to: billing}]
  - name: billing
    model: anthropic:claude-sonnet-4-5
    tools: [lookup_order]
`

// liveProvider stands in for a real provider: it answers from the request,
// with call ids and usage a replay must reproduce.
func liveProvider(netspec.ProviderSpec) (model.Model, error) {
	return model.Func(func(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		return func(yield func(model.Chunk, error) bool) {
			m := &message.Message{Role: message.RoleAssistant}
			last := req.Messages[len(req.Messages)-1]
			switch {
			case req.Agent == "triage":
				m.Parts = []message.Part{{Type: message.PartText, Text: "One moment."},
					{Type: message.PartToolCall, CallID: "call_Xy12", Name: "transfer_to_billing", Arguments: json.RawMessage(`{"reason":"charge"}`)}}
			case last.Role == message.RoleTool && last.Parts[0].Name == "lookup_order":
				m.Parts = []message.Part{{Type: message.PartText, Text: "Two charges found; one is reversed."}}
			default:
				m.Parts = []message.Part{{Type: message.PartToolCall, CallID: "toolu_01AB", Name: "lookup_order", Arguments: json.RawMessage(`{"order_id":"1234"}`)}}
			}
			yield(model.Chunk{Type: model.ChunkDone, Message: m, Usage: message.Usage{InputTokens: 40, OutputTokens: 7}, RequestID: "req_1"}, nil)
		}
	}), nil
}

func transcript(t *testing.T, spec *netspec.Spec) string {
	t.Helper()
	r, err := runner.New(runner.Config{Network: spec.Network, Policy: spec.Policy, Picker: spec.Picker, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), "I was charged twice", runner.WithRunID("r"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range res.Messages {
		b.WriteString(string(m.Role) + "/" + m.Agent + ": " + m.Text())
		for _, p := range m.Parts {
			if p.CallID != "" {
				b.WriteString(" [" + p.CallID + " " + p.Name + " " + string(p.Arguments) + p.Text + "]")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(res.Output + " " + res.LastAgent)
	u, _ := json.Marshal(res.Usage)
	b.Write(u)
	return b.String()
}

func TestRecordReplay(t *testing.T) {
	t.Parallel()
	rec := netspec.NewRecorder()
	live, err := netspec.Parse([]byte(liveNetwork), "live.yaml", netspec.Options{Provider: liveProvider, WrapModel: rec.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	want := transcript(t, live)
	var buf bytes.Buffer
	if err := rec.Write(&buf, live.File); err != nil {
		t.Fatal(err)
	}
	// The recording loads offline: no provider configured.
	replay, err := netspec.Parse(buf.Bytes(), "recorded.yaml", netspec.Options{})
	if err != nil {
		t.Fatalf("recorded network does not load: %v\n%s", err, buf.String())
	}
	if got := transcript(t, replay); got != want {
		t.Errorf("replay:\n%s\nwant (live):\n%s", got, want)
	}
	for _, a := range replay.File.Agents {
		if a.Model != "scripted" {
			t.Errorf("agent %s still uses %s", a.Name, a.Model)
		}
	}
	if !strings.Contains(buf.String(), "toolu_01AB") {
		t.Error("provider call ids were not kept")
	}
}

// TestRecordKeepsEverything: --record keeps every usage count (cached,
// cache creation, reasoning), several text blocks as several blocks,
// reasoning, and how an answer ended (a refusal and its words), so that
// the replay's messages, usage and outcome are the live ones.
func TestRecordKeepsEverything(t *testing.T) {
	t.Parallel()
	const file = `version: 1
name: rich
agents:
  - name: a
    model: anthropic:claude-sonnet-4-5
`
	usage := message.Usage{InputTokens: 3996, OutputTokens: 61, CachedTokens: 2048, CacheCreationTokens: 1536, ReasoningTokens: 20}
	turn := 0
	provider := func(netspec.ProviderSpec) (model.Model, error) {
		return model.Func(func(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
			return func(yield func(model.Chunk, error) bool) {
				turn++
				m := &message.Message{Role: message.RoleAssistant, Parts: []message.Part{
					{Type: message.PartReasoning, Provider: "anthropic", Text: "Think first.", Signature: "sig"},
					{Type: message.PartText, Text: "First block."},
					{Type: message.PartText, Text: "Second block."},
				}}
				yield(model.Chunk{Type: model.ChunkDone, Message: m, Usage: usage, FinishReason: model.FinishRefusal, Refusal: "policy: no", RequestID: "req_1"}, nil)
			}
		}), nil
	}
	rec := netspec.NewRecorder()
	live, err := netspec.Parse([]byte(file), "rich.yaml", netspec.Options{Provider: provider, WrapModel: rec.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	run := func(spec *netspec.Spec) (*runner.Result, error) {
		r, err := runner.New(runner.Config{Network: spec.Network, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return r.Run(t.Context(), "hi", runner.WithRunID("r"))
	}
	liveRes, liveErr := run(live)
	var buf bytes.Buffer
	if err := rec.Write(&buf, live.File); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"cached_tokens: 2048", "cache_creation_tokens: 1536", "reasoning_tokens: 20", "texts:", "- Second block.", "finish_reason: refusal", `refusal: "policy: no"`, "reasoning: Think first."} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("recording lacks %q:\n%s", s, buf.String())
		}
	}
	replay, err := netspec.Parse(buf.Bytes(), "recorded.yaml", netspec.Options{})
	if err != nil {
		t.Fatalf("recorded network does not load: %v\n%s", err, buf.String())
	}
	res, err := run(replay)
	if runner.KindOf(err) != runner.KindRefusal || runner.KindOf(liveErr) != runner.KindRefusal || err.Error() != liveErr.Error() {
		t.Errorf("replay err %v, live %v", err, liveErr)
	}
	if res.Usage != liveRes.Usage || res.Usage != usage {
		t.Errorf("usage %+v, live %+v", res.Usage, liveRes.Usage)
	}
	got, want := res.Messages[1], liveRes.Messages[1]
	if len(got.Parts) != 3 || got.Parts[1].Text != "First block." || got.Parts[2].Text != "Second block." || got.Parts[0].Text != want.Parts[0].Text {
		t.Errorf("replayed parts %+v, live %+v", got.Parts, want.Parts)
	}
}
