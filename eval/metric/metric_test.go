package metric_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/metric"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// outcome is what the support network's double-charge turn does.
func outcome() *evalset.Outcome {
	return &evalset.Outcome{
		FirstAgent: "triage",
		Transfers: []evalset.Transfer{{From: "triage", To: "billing",
			Context: json.RawMessage(`{"order_id": "1234", "issue": "double_charge", "reason": "charged twice"}`)}},
		Tools: []evalset.ToolCall{
			{Agent: "billing", Name: "lookup_order", Arguments: json.RawMessage(`{"order_id": "1234"}`), Output: `{"total": 49.9}`},
			{Agent: "billing", Name: "flag_charge", Arguments: json.RawMessage(`{"order_id": "1234", "amount": 49.9}`), Output: "ok"},
		},
		Status: "completed",
		Answer: "The second charge of 49.90 EUR on order 1234 is a duplicate; it will be reversed within 3-5 days.",
	}
}

func transfers(ts ...evalset.TransferExpect) *[]evalset.TransferExpect { return &ts }

func tools(match string, calls ...evalset.ToolCallExpect) *evalset.ToolsExpect {
	return &evalset.ToolsExpect{Match: match, Calls: calls}
}

func call(name string, args map[string]any, fields ...string) evalset.ToolCallExpect {
	return evalset.ToolCallExpect{Name: name, Args: args, Fields: fields}
}

// TestMetrics scores each metric on the outcome above, with an
// expectation it meets and one it must fail.
func TestMetrics(t *testing.T) {
	t.Parallel()
	order := map[string]any{"order_id": "1234"}
	for _, tc := range []struct {
		name   string
		expect evalset.Expect
		metric string
		pass   bool
		score  float64
	}{
		{"routing", evalset.Expect{Routing: "triage"}, metric.Routing, true, 1},
		{"routing fails", evalset.Expect{Routing: "billing"}, metric.Routing, false, 0},

		{"transfer with fields", evalset.Expect{Transfers: transfers(evalset.TransferExpect{From: "triage", To: "billing", Context: map[string]any{"issue": "double_charge"}})}, metric.Transfers, true, 1},
		{"transfer to another agent fails", evalset.Expect{Transfers: transfers(evalset.TransferExpect{To: "refunds"})}, metric.Transfers, false, 0},
		{"transfer from another agent fails", evalset.Expect{Transfers: transfers(evalset.TransferExpect{From: "tech", To: "billing"})}, metric.Transfers, false, 0},
		{"transfer context field fails", evalset.Expect{Transfers: transfers(evalset.TransferExpect{To: "billing", Context: map[string]any{"issue": "refund_request"}})}, metric.Transfers, false, 0},
		{"no transfer fails", evalset.Expect{Transfers: transfers()}, metric.Transfers, false, 0},
		{"two transfers fail", evalset.Expect{Transfers: transfers(evalset.TransferExpect{To: "billing"}, evalset.TransferExpect{To: "refunds"})}, metric.Transfers, false, 0},

		{"exact", evalset.Expect{Tools: tools("EXACT", call("lookup_order", order), call("flag_charge", nil))}, metric.Tools, true, 1},
		{"exact with a call missing fails", evalset.Expect{Tools: tools("exact", call("lookup_order", order))}, metric.Tools, false, 0},
		{"exact in another order fails", evalset.Expect{Tools: tools("exact", call("flag_charge", nil), call("lookup_order", nil))}, metric.Tools, false, 0},
		{"exact arguments with one more fails", evalset.Expect{Tools: tools("exact", call("lookup_order", order), call("flag_charge", order))}, metric.Tools, false, 0},
		{"arguments by field", evalset.Expect{Tools: tools("exact", call("lookup_order", order), call("flag_charge", map[string]any{"order_id": "1234", "amount": 1}, "order_id"))}, metric.Tools, true, 1},
		{"a listed field that differs fails", evalset.Expect{Tools: tools("exact", call("lookup_order", nil), call("flag_charge", map[string]any{"amount": 10}, "amount"))}, metric.Tools, false, 0},
		{"a listed field absent from both", evalset.Expect{Tools: tools("in_order", call("lookup_order", map[string]any{}, "note"))}, metric.Tools, true, 1},
		{"in order with others between", evalset.Expect{Tools: tools("in_order", call("flag_charge", nil))}, metric.Tools, true, 1},
		{"in order, swapped, fails", evalset.Expect{Tools: tools("in_order", call("flag_charge", nil), call("lookup_order", nil))}, metric.Tools, false, 0},
		{"any order, swapped", evalset.Expect{Tools: tools("any_order", call("flag_charge", nil), call("lookup_order", nil))}, metric.Tools, true, 1},
		{"any order, loose call first", evalset.Expect{Tools: tools("any_order", call("lookup_order", nil), call("lookup_order", order))}, metric.Tools, false, 0},
		{"any order with a missing call fails", evalset.Expect{Tools: tools("any_order", call("issue_refund", nil))}, metric.Tools, false, 0},
		{"no tool call fails", evalset.Expect{Tools: tools("exact")}, metric.Tools, false, 0},

		{"status", evalset.Expect{Status: "completed"}, metric.Status, true, 1},
		{"status fails", evalset.Expect{Status: "interrupted"}, metric.Status, false, 0},

		{"contains", evalset.Expect{Answer: &evalset.AnswerExpect{Contains: []string{"49.90", "duplicate"}}}, metric.Contains, true, 1},
		{"contains, half missing, fails", evalset.Expect{Answer: &evalset.AnswerExpect{Contains: []string{"49.90", "R-77"}}}, metric.Contains, false, 0.5},
		{"contains, case differs, fails", evalset.Expect{Answer: &evalset.AnswerExpect{Contains: []string{"DUPLICATE"}}}, metric.Contains, false, 0},
		{"contains ignoring case", evalset.Expect{Answer: &evalset.AnswerExpect{Contains: []string{"DUPLICATE"}, IgnoreCase: true}}, metric.Contains, true, 1},

		{"regex", evalset.Expect{Answer: &evalset.AnswerExpect{Regex: `reversed within \d-\d days`}}, metric.Regex, true, 1},
		{"regex fails", evalset.Expect{Answer: &evalset.AnswerExpect{Regex: `^Refund R-\d+`}}, metric.Regex, false, 0},

		{"json schema of prose fails", evalset.Expect{Answer: &evalset.AnswerExpect{JSONSchema: map[string]any{"type": "object"}}}, metric.JSONSchema, false, 0},

		{"rouge1", evalset.Expect{Answer: &evalset.AnswerExpect{ROUGE1: &evalset.ROUGE1{Reference: "The duplicate charge of 49.90 EUR on order 1234 will be reversed within 3-5 days.", Threshold: 0.7}}}, metric.ROUGE1, true, -1},
		{"rouge1 fails", evalset.Expect{Answer: &evalset.AnswerExpect{ROUGE1: &evalset.ROUGE1{Reference: "Your refund R-77 has been issued."}}}, metric.ROUGE1, false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checks := metric.Score(t.Context(), 1, "I was charged twice", &tc.expect, outcome(), nil)
			if len(checks) != 1 {
				t.Fatalf("checks = %+v, want one", checks)
			}
			c := checks[0]
			if c.Metric != tc.metric || c.Pass != tc.pass || (tc.score >= 0 && c.Score != tc.score) || c.Turn != 1 {
				t.Errorf("check = %+v, want %s pass=%v score=%v", c, tc.metric, tc.pass, tc.score)
			}
			if c.Detail == "" {
				t.Error("no detail")
			}
		})
	}
}

func TestJSONSchema(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "required": []any{"refund_id"}, "properties": map[string]any{"refund_id": map[string]any{"type": "string", "pattern": "^R-"}}}
	for answer, pass := range map[string]bool{
		`{"refund_id": "R-77"}`:                   true,
		"```json\n{\"refund_id\": \"R-77\"}\n```": true,
		`{"refund_id": "77"}`:                     false,
		`{"refund": "R-77"}`:                      false,
		`refund R-77`:                             false,
	} {
		o := &evalset.Outcome{Answer: answer}
		c := metric.Score(t.Context(), 1, "", &evalset.Expect{Answer: &evalset.AnswerExpect{JSONSchema: schema}}, o, nil)[0]
		if c.Pass != pass {
			t.Errorf("%q: check %+v, want pass=%v", answer, c, pass)
		}
	}
}

func TestROUGE1(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cand, ref string
		want      float64
	}{
		{"the cat sat", "the cat sat", 1},
		{"The cat, sat!", "the CAT sat", 1},
		{"the cat sat", "the cat", 0.8}, // P 2/3, R 1
		{"the the the", "the cat", 0.4}, // clipped: overlap 1, P 1/3, R 1/2
		{"dog", "the cat", 0},
		{"", "the cat", 0},
		{"", "", 1},
		{"Größe 12", "größe 12", 1},
	} {
		if got := metric.ROUGE1F(tc.cand, tc.ref); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("ROUGE1F(%q, %q) = %v, want %v", tc.cand, tc.ref, got, tc.want)
		}
	}
}

// fakeJudge answers every rubric with the verdict of its text.
type fakeJudge struct {
	mu     sync.Mutex
	inputs []*metric.JudgeInput
	score  float64
	err    error
}

func (j *fakeJudge) Judge(_ context.Context, in *metric.JudgeInput) (*metric.Verdict, error) {
	j.mu.Lock()
	j.inputs = append(j.inputs, in)
	j.mu.Unlock()
	if j.err != nil {
		return nil, j.err
	}
	return &metric.Verdict{Score: j.score, Reason: "because"}, nil
}

func TestRubric(t *testing.T) {
	t.Parallel()
	good, bad := &fakeJudge{score: 0.9}, &fakeJudge{score: 0.2}
	broken := &fakeJudge{err: errors.New("judge is down")}
	var asked []string
	judges := func(name string) (metric.Judge, error) {
		asked = append(asked, name)
		switch name {
		case "":
			return good, nil
		case "strict":
			return bad, nil
		case "broken":
			return broken, nil
		}
		return nil, errors.New("unknown judge " + name)
	}
	e := &evalset.Expect{Answer: &evalset.AnswerExpect{Rubrics: []evalset.Rubric{
		{ID: "polite", Text: "The answer is polite."},
		{Text: "The answer gives the amount.", Judge: "strict", Threshold: 0.5},
		{ID: "down", Text: "x", Judge: "broken"},
		{ID: "ghost", Text: "x", Judge: "ghost"},
	}}}
	checks := metric.Score(t.Context(), 2, "I was charged twice", e, outcome(), judges)
	if len(checks) != 4 {
		t.Fatalf("checks = %+v", checks)
	}
	if c := checks[0]; !c.Pass || c.Name != "polite" || c.Score != 0.9 || c.Threshold != evalset.DefaultRubricThreshold || c.Detail != "because" || c.Turn != 2 {
		t.Errorf("default judge: %+v", c)
	}
	if c := checks[1]; c.Pass || c.Name != "rubric2" || c.Score != 0.2 {
		t.Errorf("strict judge: %+v (must fail)", c)
	}
	if c := checks[2]; c.Pass || !strings.Contains(c.Detail, "judge is down") {
		t.Errorf("broken judge: %+v", c)
	}
	if c := checks[3]; c.Pass || !strings.Contains(c.Detail, "unknown judge ghost") {
		t.Errorf("unknown judge: %+v", c)
	}
	if strings.Join(asked, ",") != ",strict,broken,ghost" {
		t.Errorf("judges asked for %q", asked)
	}
	in := good.inputs[0]
	if in.User != "I was charged twice" || in.Answer != outcome().Answer || !strings.Contains(in.Trajectory, "triage→billing") || !strings.Contains(in.Trajectory, "lookup_order") {
		t.Errorf("judge input = %+v", in)
	}
	if c := metric.Score(t.Context(), 1, "", e, outcome(), nil)[0]; c.Pass || !strings.Contains(c.Detail, "no judge model") {
		t.Errorf("without judges: %+v", c)
	}
}

// answering is a model that answers every request with text.
func answering(text string, seen *model.Request) model.Model {
	return model.Func(func(_ context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		*seen = *req
		return func(yield func(model.Chunk, error) bool) {
			m := message.Assistant("judge", text)
			yield(model.Chunk{Type: model.ChunkDone, Message: &m}, nil)
		}
	})
}

func TestModelJudge(t *testing.T) {
	t.Parallel()
	var req model.Request
	v, err := metric.ModelJudge(answering("```json\n{\"score\": 0.75, \"reason\": \"mostly\"}\n```", &req)).Judge(t.Context(), &metric.JudgeInput{Rubric: "Gives the amount.", User: "u", Answer: "49.90 EUR", Trajectory: "t"})
	if err != nil || v.Score != 0.75 || v.Reason != "mostly" {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	if req.Output == nil || req.Output.Name != "verdict" || req.System == "" || !strings.Contains(req.Messages[0].Text(), "Gives the amount.") || !strings.Contains(req.Messages[0].Text(), "49.90 EUR") {
		t.Errorf("request = %+v", req)
	}
	for _, text := range []string{"yes, it does", `{"score": 7, "reason": "x"}`} {
		if _, err := metric.ModelJudge(answering(text, &req)).Judge(t.Context(), &metric.JudgeInput{}); err == nil {
			t.Errorf("%q: want an error", text)
		}
	}
}

func TestChanges(t *testing.T) {
	t.Parallel()
	before, after := outcome(), outcome()
	if ch := metric.Changes(1, before, after); len(ch) != 0 {
		t.Fatalf("changes of the same outcome: %+v", ch)
	}
	after.FirstAgent = "billing"
	after.Transfers = nil
	after.Tools = after.Tools[:1]
	after.Status = "failed"
	after.Answer = "Sorry."
	ch := metric.Changes(3, before, after)
	var aspects []string
	for _, c := range ch {
		aspects = append(aspects, c.Aspect)
		if c.Turn != 3 || c.Before == c.After {
			t.Errorf("change %+v", c)
		}
	}
	if got := strings.Join(aspects, ","); got != "routing,transfers,tools,status,answer" {
		t.Errorf("aspects = %s", got)
	}
	if ch[1].After != "no transfer" || !strings.Contains(ch[1].Before, `triage→billing {"issue":"double_charge"`) {
		t.Errorf("transfers change = %+v", ch[1])
	}
}

// TestAnyOrderMatching: a loose expected call does not take the call that
// a stricter one needs.
func TestAnyOrderMatching(t *testing.T) {
	t.Parallel()
	o := &evalset.Outcome{Tools: []evalset.ToolCall{
		{Name: "lookup_order", Arguments: json.RawMessage(`{"order_id": "1234"}`)},
		{Name: "lookup_order", Arguments: json.RawMessage(`{"order_id": "999"}`)},
	}}
	e := &evalset.Expect{Tools: tools("any_order", call("lookup_order", nil), call("lookup_order", map[string]any{"order_id": "1234"}))}
	if c := metric.Score(t.Context(), 1, "", e, o, nil)[0]; !c.Pass {
		t.Errorf("check = %+v, want a match", c)
	}
	e = &evalset.Expect{Tools: tools("any_order", call("lookup_order", map[string]any{"order_id": "1234"}), call("lookup_order", map[string]any{"order_id": "1234"}))}
	if c := metric.Score(t.Context(), 1, "", e, o, nil)[0]; c.Pass {
		t.Errorf("check = %+v: one call matched twice", c)
	}
}
