package evalset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/batonhq/baton/eval/evalset"
)

// TestADK reads an evalset written from ADK's schema (EvalSet, EvalCase,
// Invocation, both forms of intermediate data, rubrics, camelCase
// aliases) and its test_config.json.
func TestADK(t *testing.T) {
	t.Parallel()
	s, err := evalset.Load("testdata/adk/support.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "Support, from ADK" || len(s.Cases) != 2 {
		t.Fatalf("set = %+v", s)
	}
	dc := s.Cases[0]
	if dc.ID != "double_charge" || dc.Line != 6 || len(dc.Turns) != 1 || dc.Turns[0].User != "I was charged twice for order 1234" {
		t.Fatalf("case = %+v", dc)
	}
	e := dc.Turns[0].Expect
	if e.Tools.Match != evalset.MatchExact || len(e.Tools.Calls) != 1 || e.Tools.Calls[0].Name != "lookup_order" || e.Tools.Calls[0].Args["order_id"] != "1234" {
		t.Errorf("tools = %+v", e.Tools)
	}
	// test_config.json's response_match_score is the ROUGE-1 threshold.
	if r := e.Answer.ROUGE1; r == nil || r.Threshold != 0.6 || !strings.Contains(r.Reference, "reversed within 3-5 days") {
		t.Errorf("rouge1 = %+v", e.Answer.ROUGE1)
	}
	rec := dc.Recording
	if rec == nil || rec.Source != "adk" || len(rec.Turns[0].Tools) != 1 {
		t.Fatalf("recording = %+v", rec)
	}
	if tc := rec.Turns[0].Tools[0]; tc.Name != "lookup_order" || string(tc.Arguments) != `{"order_id": "1234"}` || !strings.Contains(tc.Output, `"charges": 2`) {
		t.Errorf("recorded tool = %+v", tc)
	}
	checkADKEvents(t, &s.Cases[1])
}

// checkADKEvents checks the case written with invocation events, camel
// case and rubrics.
func checkADKEvents(t *testing.T, ev *evalset.Case) {
	t.Helper()
	if ev.ID != "status_events" || len(ev.Turns) != 2 {
		t.Fatalf("case = %+v", ev)
	}
	e := ev.Turns[0].Expect
	// ADK's transfer_to_agent is a transfer, not a tool call.
	if names := callNames(e.Tools); names != "check_status_page" {
		t.Errorf("tool uses = %s", names)
	}
	if e.Transfers == nil || len(*e.Transfers) != 1 || (*e.Transfers)[0].To != "tech" {
		t.Errorf("transfers = %+v", e.Transfers)
	}
	if r := e.Answer.ROUGE1; r == nil || strings.Contains(r.Reference, "thinking") {
		t.Errorf("final response = %+v (thoughts are not the answer)", r)
	}
	if got := rubricIDs(e.Answer.Rubrics); got != "blames_us,polite" {
		t.Errorf("rubrics = %s, want the invocation's then the case's", got)
	}
	if out := ev.Recording.Turns[0].Tools; len(out) != 1 || out[0].Output != "login degraded" || string(out[0].Arguments) != "{}" {
		t.Errorf("recorded tools = %+v (a {\"result\": text} response is its text)", out)
	}
	last := ev.Turns[1]
	if last.User != "thanks" || last.Expect.Tools != nil || rubricIDs(last.Expect.Answer.Rubrics) != "polite" {
		t.Errorf("turn 2 = %+v", last.Expect)
	}
}

func callNames(t *evalset.ToolsExpect) string {
	var names []string
	for _, c := range t.Calls {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

func rubricIDs(rs []evalset.Rubric) string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return strings.Join(ids, ",")
}

func TestADKMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"not json", "{\n  \"eval_set_id\": \"x\",\n  oops\n}", []string{"line 3:", "not an ADK evalset"}},
		{"missing fields", "{\n  \"eval_set_id\": \"x\",\n  \"eval_cases\": [\n    {\"conversation\": []},\n    {\"eval_id\": \"b\",\n     \"conversation\": [{\"user_content\": {\"parts\": [{\"text\": 7}]}}]}\n  ]\n}",
			[]string{"line 4: $.eval_cases[0].eval_id: eval_id is required", "line 6: $.eval_cases[1].conversation[0].user_content.parts[0].text: text: cannot unmarshal number"}},
		{"scenario", "{\"eval_set_id\": \"x\", \"eval_cases\": [{\"eval_id\": \"s\", \"conversation_scenario\": {\"starting_prompt\": \"hi\"}}]}",
			[]string{"conversation_scenario needs ADK's user simulator"}},
		{"no cases", "{\"eval_set_id\": \"x\"}", []string{"eval_cases is required"}},
		{"empty conversation", "{\"eval_set_id\": \"x\", \"eval_cases\": [\n{\"eval_id\": \"a\", \"conversation\": []}]}", []string{"line 2: $.cases[0].turns: case \"a\" has no turns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := evalset.Parse([]byte(tc.src), "x.evalset.json")
			var e *evalset.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want an *evalset.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("missing %q in:\n%v", w, err)
				}
			}
		})
	}
}
