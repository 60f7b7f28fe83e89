package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// TestUnknownToolNamesTheTools: a call of a tool the agent does not have,
// of a transfer to an agent it cannot transfer to, and with arguments that
// fail the tool's schema go back to the model as tool errors (naming the
// tools, the transfers, the schema error); the run goes on, every
// checkpoint is one a store accepts, and users see tool_result events with
// error.
func TestUnknownToolNamesTheTools(t *testing.T) {
	t.Parallel()
	a, rec := ag("support",
		calls("get_wether", `{"city":"Paris"}`, "transfer_to_sales", `{}`, "lookup", `{"order_id":7}`),
		text("Sorry, let me try again."))
	a.Tools = []*agent.Tool{agent.FuncTool("lookup", "", func(_ context.Context, in struct {
		OrderID string `json:"order_id"`
	}) (string, error) {
		return "found " + in.OrderID, nil
	})}
	a.Transfers = []*transfer.Transfer{{To: "billing"}}
	billing, _ := ag("billing", text("unused"))
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a, billing), Checkpointer: ck})
	evs := mustCollect(t, r.Stream(t.Context(), "weather in Paris?"))
	end := ofType[*runner.RunEndEvent](evs)
	if len(end) != 1 || end[0].Status != runstate.StatusCompleted || end[0].Output != "Sorry, let me try again." {
		t.Fatalf("run_end %+v", end)
	}
	want := map[string][]string{
		"call_support_1_1": {`unknown tool "get_wether" for agent support. Available tools: lookup, transfer_to_billing.`},
		"call_support_1_2": {`unknown tool "transfer_to_sales" for agent support: it cannot transfer to "sales"; it can transfer to billing (tool transfer_to_billing). Available tools: lookup, transfer_to_billing.`},
		"call_support_1_3": {"invalid arguments for lookup", "/order_id"},
	}
	results := ofType[*runner.ToolResultEvent](evs)
	if len(results) != 3 {
		t.Fatalf("tool_result events %+v", results)
	}
	for _, ev := range results {
		for _, s := range want[ev.ID] {
			if ev.Error == "" || ev.Output != "" || !strings.Contains(ev.Error, s) {
				t.Errorf("tool_result %s: error %q, want it to hold %q", ev.ID, ev.Error, s)
			}
		}
	}
	// The model saw the errors as tool results.
	last := rec.last(t)
	got := toolResults(last.Messages)
	for id, ss := range want {
		if p := got[id]; !p.IsError || !strings.Contains(p.Text, ss[0]) {
			t.Errorf("the model saw %s = %+v", id, p)
		}
	}
	if len(ofType[*runner.TransferEvent](evs)) != 0 {
		t.Error("a transfer happened")
	}
	if st := ck.Latest(t); st.Status != runstate.StatusCompleted || st.Failure != nil {
		t.Errorf("last checkpoint %s %+v", st.Status, st.Failure)
	}
}

func TestUnknownToolWithoutTools(t *testing.T) {
	t.Parallel()
	a, _ := ag("solo", calls("search", `{}`), text("ok"))
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: &memCheckpoints{}})
	res, err := r.Run(t.Context(), "hi")
	if err != nil {
		t.Fatal(err)
	}
	if p := toolResults(res.Messages)["call_solo_1_1"]; !p.IsError || !strings.HasSuffix(p.Text, "It has no tools: answer without calling any.") {
		t.Errorf("result %+v", p)
	}
}

// TestFinishReasonsEndTheRun: a refusal, a content-filter stop and a text
// answer cut at the token limit end the run failed with a typed kind, the
// provider's words and its request id; the answer is recorded, its message
// event carries the finish reason; nothing is retried.
func TestFinishReasonsEndTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		step    scripted.Step
		kind    runner.Kind
		message string
		text    string // the message event's text, "" for none
	}{
		{"RefusalWithWords", scripted.Step{Text: "", FinishReason: model.FinishRefusal, Refusal: "reasoning_extraction: This request was blocked."},
			runner.KindRefusal, "the model refused to answer: reasoning_extraction: This request was blocked.", ""},
		{"RefusalText", scripted.Step{Text: "I'm sorry, I can't help with that.", FinishReason: model.FinishRefusal},
			runner.KindRefusal, "the model refused to answer: I'm sorry, I can't help with that.", "I'm sorry, I can't help with that."},
		{"ContentFilter", scripted.Step{Text: "Here is how you", FinishReason: model.FinishContentFilter},
			runner.KindContentFilter, "the provider's content filter stopped the answer", "Here is how you"},
		{"Length", scripted.Step{Text: "The three largest moons of Jupiter are", FinishReason: model.FinishLength},
			runner.KindLength, "cut at the model's output token limit (raise the agent's max_tokens)", "The three largest moons of Jupiter are"},
		{"RefusalWithCalls", scripted.Step{Text: "No.", FinishReason: model.FinishRefusal, ToolCalls: []scripted.Call{{Name: "lookup"}}},
			runner.KindRefusal, "the model refused to answer: No.", "No."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, rec := ag("a", tc.step, text("never asked"))
			a.Tools = []*agent.Tool{{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) {
				t.Error("a call of a refused answer ran")
				return "", nil
			}}}
			ck := &memCheckpoints{}
			r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
			live, err := collect(r.Stream(t.Context(), "go"))
			var re *runner.Error
			var fe *runner.FinishError
			if !errors.As(err, &re) || re.Kind != tc.kind || !errors.As(err, &fe) || fe.RequestID != "scripted-a-1" || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("err = %v, want kind %s with %q", err, tc.kind, tc.message)
			}
			if runner.KindOf(err) != tc.kind {
				t.Errorf("KindOf = %s", runner.KindOf(err))
			}
			if n := len(rec.requests()); n != 1 {
				t.Errorf("%d model calls: a finish is not retried", n)
			}
			errs := ofType[*runner.ErrorEvent](live)
			if len(errs) != 1 || errs[0].Kind != tc.kind || errs[0].RequestID != "scripted-a-1" || !strings.Contains(errs[0].Message, tc.message) {
				t.Errorf("error events %+v", errs)
			}
			msgs := ofType[*runner.MessageEvent](live)
			switch {
			case tc.text == "" && len(msgs) != 0:
				t.Errorf("message events %+v", msgs)
			case tc.text != "" && (len(msgs) != 1 || msgs[0].Text != tc.text || msgs[0].FinishReason != tc.step.FinishReason || msgs[0].RequestID != "scripted-a-1"):
				t.Errorf("message events %+v", msgs)
			}
			end := ofType[*runner.RunEndEvent](live)
			if len(end) != 1 || end[0].Status != runstate.StatusFailed || end[0].Output != "" {
				t.Errorf("run_end %+v", end)
			}
			st := ck.Latest(t)
			if st.Status != runstate.StatusFailed || st.Failure == nil || st.Failure.Kind != string(tc.kind) || st.Failure.RequestID != "scripted-a-1" {
				t.Errorf("checkpoint %s %+v", st.Status, st.Failure)
			}
			if err := message.Validate(st.Messages); err != nil {
				t.Errorf("history: %v", err)
			}
			if n := len(st.Transcript); n < 2 || st.Transcript[1].FinishReason != tc.step.FinishReason {
				t.Errorf("the answer is not recorded with its finish: %+v", st.Transcript)
			}
			// Not resumable: the same request would end the same way.
			if _, err := r.Resume(t.Context(), roundTrip(t, st)); runner.KindOf(err) != runner.KindUserInput {
				t.Errorf("resume: %v", err)
			}
			checkEventsBetween(t, ck.States(t), live, nil)
		})
	}
}

// TestLengthWithWholeCalls: an answer that reached the token limit after
// whole tool calls runs them (the adapters refuse cut arguments).
func TestLengthWithWholeCalls(t *testing.T) {
	t.Parallel()
	a, _ := ag("a", scripted.Step{FinishReason: model.FinishLength, ToolCalls: []scripted.Call{{Name: "lookup"}}}, text("done"))
	ran := false
	a.Tools = []*agent.Tool{{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) { ran = true; return "ok", nil }}}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a)})
	res, err := r.Run(t.Context(), "go")
	if err != nil || res.Output != "done" || !ran {
		t.Fatalf("run %+v, %v, ran %v", res, err, ran)
	}
}

// TestPauseTurnContinues: Anthropic's pause_turn is not an answer: the
// runner calls the model again with the paused answer in the history,
// within max_turns.
func TestPauseTurnContinues(t *testing.T) {
	t.Parallel()
	a, rec := ag("a", scripted.Step{Text: "Let me keep researching.", FinishReason: model.FinishPauseTurn}, text("Found it."))
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
	live := mustCollect(t, r.Stream(t.Context(), "go"))
	end := ofType[*runner.RunEndEvent](live)[0]
	if end.Status != runstate.StatusCompleted || end.Output != "Found it." || end.Turns != 2 {
		t.Errorf("run_end %+v", end)
	}
	second := rec.requests()[1]
	if n := len(second.Messages); n != 2 || second.Messages[1].Text() != "Let me keep researching." {
		t.Errorf("second call's history %+v", second.Messages)
	}
	checkEventsBetween(t, ck.States(t), live, nil)

	t.Run("BoundedByMaxTurns", func(t *testing.T) {
		t.Parallel()
		pause := scripted.Step{Text: "…", FinishReason: model.FinishPauseTurn}
		a, _ := ag("a", pause, pause, pause, pause)
		r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{MaxTurns: 3}, a)})
		if _, err := r.Run(t.Context(), "go"); runner.LimitOf(err) != runner.LimitMaxTurns {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestReasoningEvents: reasoning streams as reasoning_delta events and
// each reasoning part of an answer is a reasoning event before its message
// event (hidden when the provider keeps it to itself), derived from
// checkpoints as well.
func TestReasoningEvents(t *testing.T) {
	t.Parallel()
	m := model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		return func(yield func(model.Chunk, error) bool) {
			if !yield(model.Chunk{Type: model.ChunkReasoning, Text: "Two "}, nil) || !yield(model.Chunk{Type: model.ChunkReasoning, Text: "steps."}, nil) ||
				!yield(model.Chunk{Type: model.ChunkText, Text: "Answer."}, nil) {
				return
			}
			msg := &message.Message{Role: message.RoleAssistant, Parts: []message.Part{
				{Type: message.PartReasoning, Provider: "anthropic", Text: "Two steps.", Signature: "sig"},
				{Type: message.PartReasoning, Provider: "anthropic", ID: "redacted_thinking", Signature: "data"},
				{Type: message.PartText, Text: "Answer."},
			}}
			yield(model.Chunk{Type: model.ChunkDone, Message: msg, FinishReason: model.FinishStop, RequestID: "req_1"}, nil)
		}
	})
	a := &agent.Agent{Name: "thinker", Instructions: "Think.", Model: m, ModelName: "anthropic:claude"}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
	live := mustCollect(t, r.Stream(t.Context(), "go"))
	var seen []string
	for _, ev := range live {
		switch e := ev.(type) {
		case *runner.ReasoningDeltaEvent:
			seen = append(seen, "delta:"+e.Delta)
		case *runner.ReasoningEvent:
			seen = append(seen, "reasoning:"+e.Text+":"+map[bool]string{true: "hidden"}[e.Hidden])
		case *runner.MessageEvent:
			seen = append(seen, "message:"+e.Text+":"+e.FinishReason+":"+e.RequestID)
		}
	}
	want := []string{"delta:Two ", "delta:steps.", "reasoning:Two steps.:", "reasoning::hidden", "message:Answer.:stop:req_1"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("events\n%v\nwant\n%v", seen, want)
	}
	// The reasoning stays in the history, with its signature.
	if st := ck.Latest(t); len(st.Messages[1].Parts) != 3 || st.Messages[1].Parts[0].Signature != "sig" {
		t.Errorf("history %+v", st.Messages)
	}
	checkEventsBetween(t, ck.States(t), live, nil)
}

// TestStructuredOutputRefusal: an adapter that can only report a refusal
// as an error (structured output was asked for) fails the run with kind
// refusal too, with the request id, without retrying.
func TestStructuredOutputRefusal(t *testing.T) {
	t.Parallel()
	calls := 0
	m := model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		return func(yield func(model.Chunk, error) bool) {
			calls++
			yield(model.Chunk{}, &model.Error{Provider: "openai", Code: model.CodeRefusal, Message: "model refused: I can't.", RequestID: "req_so"})
		}
	})
	a := &agent.Agent{Name: "a", Instructions: "x", Model: m, ModelName: "openai:gpt", OutputSchema: json.RawMessage(`{"type":"object"}`)}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: &memCheckpoints{}})
	res, err := r.Run(t.Context(), "go")
	if runner.KindOf(err) != runner.KindRefusal || calls != 1 || res.State.Failure.RequestID != "req_so" {
		t.Fatalf("err %v, %d calls, failure %+v", err, calls, res.State.Failure)
	}
}
