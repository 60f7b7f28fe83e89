package evalset_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	refuses(t, evalset.Parse, "x.evalset.json", []malformed{
		{"not json", "{\n  \"eval_set_id\": \"x\",\n  oops\n}", []string{"line 3:", "not an ADK evalset"}},
		{"missing fields", "{\n  \"eval_set_id\": \"x\",\n  \"eval_cases\": [\n    {\"conversation\": []},\n    {\"eval_id\": \"b\",\n     \"conversation\": [{\"user_content\": {\"parts\": [{\"text\": 7}]}}]}\n  ]\n}",
			[]string{"line 4: $.eval_cases[0].eval_id: eval_id is required", "line 6: $.eval_cases[1].conversation[0].user_content.parts[0].text: text: cannot unmarshal number"}},
		{"scenario", "{\"eval_set_id\": \"x\", \"eval_cases\": [{\"eval_id\": \"s\", \"conversation_scenario\": {\"starting_prompt\": \"hi\"}}]}",
			[]string{"conversation_scenario needs ADK's user simulator"}},
		{"no cases", "{\"eval_set_id\": \"x\"}", []string{"eval_cases is required"}},
		{"empty conversation", "{\"eval_set_id\": \"x\", \"eval_cases\": [\n{\"eval_id\": \"a\", \"conversation\": []}]}", []string{"line 2: $.cases[0].turns: case \"a\" has no turns"}},
	})
}

// adkWithConfig loads the ADK test set with config as its test_config.json
// ("" for none).
func adkWithConfig(t *testing.T, config string) *evalset.Set {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/adk/support.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "support.evalset.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "test_config.json"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := evalset.Load(filepath.Join(dir, "support.evalset.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestADKMatchType reads tool_trajectory_avg_score's match_type onto every
// turn's tool expectation, in each spelling ADK's ToolTrajectoryCriterion
// accepts.
func TestADKMatchType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ criterion, want string }{
		{`1.0`, evalset.MatchExact},
		{`{"threshold": 1.0}`, evalset.MatchExact},
		{`{"threshold": 1.0, "match_type": "IN_ORDER"}`, evalset.MatchInOrder},
		{`{"threshold": 0.5, "matchType": "ANY_ORDER"}`, evalset.MatchAnyOrder},
		{`{"match_type": "in-order"}`, evalset.MatchInOrder},
		{`{"match_type": " any order "}`, evalset.MatchAnyOrder},
		{`{"match_type": "EXACT"}`, evalset.MatchExact},
		{`{"match_type": 1}`, evalset.MatchInOrder},
		{`{"matchType": 2}`, evalset.MatchAnyOrder},
		{`{"match_type": 0}`, evalset.MatchExact},
	} {
		t.Run(tc.criterion, func(t *testing.T) {
			t.Parallel()
			s := adkWithConfig(t, `{"criteria": {"tool_trajectory_avg_score": `+tc.criterion+`}}`)
			for _, c := range s.Cases {
				e := c.Turns[0].Expect
				if e == nil || e.Tools == nil || e.Tools.Match != tc.want {
					t.Fatalf("case %s turn 1: expect %+v, want tools matched %s", c.ID, e, tc.want)
				}
			}
			if tr := s.Cases[1].Turns[0].Expect.Transfers; tr == nil || len(*tr) != 1 {
				t.Errorf("transfers = %v, want the transfer_to_agent call", tr)
			}
		})
	}
}

// TestADKCriteria follows the criteria test_config.json lists, as `adk
// eval` does: an expectation only for a listed criterion, ADK's defaults
// without the file, the criteria baton does not score named in warnings.
func TestADKCriteria(t *testing.T) {
	t.Parallel()
	type turnExpect struct {
		tools, transfers bool
		rouge1           float64 // 0: none
		rubrics          string  // ids:thresholds
	}
	summary := func(s *evalset.Set) []turnExpect {
		var out []turnExpect
		for _, c := range s.Cases {
			for _, tu := range c.Turns {
				var te turnExpect
				if e := tu.Expect; e != nil {
					te.tools, te.transfers = e.Tools != nil, e.Transfers != nil
					if a := e.Answer; a != nil {
						if a.ROUGE1 != nil {
							te.rouge1 = a.ROUGE1.Threshold
						}
						var rs []string
						for _, r := range a.Rubrics {
							rs = append(rs, fmt.Sprintf("%s:%v", r.ID, r.Threshold))
						}
						te.rubrics = strings.Join(rs, ",")
					}
				}
				out = append(out, te)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name, config string
		want         []turnExpect // double_charge, status_events turns 1 and 2
		warnings     string
	}{
		{"no config: ADK's defaults", "",
			[]turnExpect{{tools: true, rouge1: 0.8}, {tools: true, transfers: true, rouge1: 0.8}, {}}, ""},
		{"no response_match_score: no ROUGE-1", `{"criteria": {"tool_trajectory_avg_score": 1.0}}`,
			[]turnExpect{{tools: true}, {tools: true, transfers: true}, {}}, ""},
		{"no trajectory: no tools or transfers", `{"criteria": {"response_match_score": {"threshold": 0.4}}}`,
			[]turnExpect{{rouge1: 0.4}, {rouge1: 0.4}, {}}, ""},
		{"response_match_score without a threshold", `{"criteria": {"response_match_score": {}}}`,
			[]turnExpect{{rouge1: 0.8}, {rouge1: 0.8}, {}}, ""},
		{"rubric criterion: the evalset's and its own, at its threshold",
			`{"criteria": {"rubric_based_final_response_quality_v1": {"threshold": 0.7,
			  "rubrics": [{"rubricId": "concise", "rubricContent": {"textProperty": "The answer is short."}}]}}}`,
			[]turnExpect{{rubrics: "concise:0.7"}, {rubrics: "blames_us:0.7,polite:0.7,concise:0.7"}, {rubrics: "polite:0.7,concise:0.7"}}, ""},
		{"two rubric criteria: the lower threshold for the evalset's",
			`{"criteria": {"rubric_based_tool_use_quality_v1": 0.9, "rubric_based_final_response_quality_v1": {"threshold": 0.6}}}`,
			[]turnExpect{{}, {rubrics: "blames_us:0.6,polite:0.6"}, {rubrics: "polite:0.6"}}, ""},
		{"no criteria: nothing scored", `{"criteria": {}}`, []turnExpect{{}, {}, {}}, ""},
		{"unsupported criteria are warnings",
			`{"criteria": {"response_match_score": 0.5, "safety_v1": 0.8, "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 5}}, "hallucinations_v1": {"threshold": 0.5}}}`,
			[]turnExpect{{rouge1: 0.5}, {rouge1: 0.5}, {}},
			"ADK criterion final_response_match_v2 is not scored by baton eval|ADK criterion hallucinations_v1 is not scored by baton eval|ADK criterion safety_v1 is not scored by baton eval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := adkWithConfig(t, tc.config)
			if got := summary(s); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("expectations\n got %+v\nwant %+v", got, tc.want)
			}
			if got := strings.Join(s.Warnings, "|"); got != tc.warnings {
				t.Errorf("warnings = %q, want %q", got, tc.warnings)
			}
			// The recorded tool responses answer the tools whatever is scored.
			if rec := s.Cases[0].Recording; rec == nil || len(rec.Turns[0].Tools) != 1 {
				t.Errorf("recording = %+v", rec)
			}
			if err := evalset.Validate(s); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestADKConfigMalformed refuses a config that `adk eval` would not
// read, with each problem's line.
func TestADKConfigMalformed(t *testing.T) {
	t.Parallel()
	refuses(t, evalset.ParseADKConfig, "test_config.json", []malformed{
		{"not json", "{\"criteria\":\n  {oops}}", []string{"line 2:", "not an ADK eval config"}},
		{"criteria not an object", `{"criteria": [1]}`, []string{"$.criteria: criteria: cannot unmarshal array"}},
		{"a string criterion", "{\"criteria\": {\n  \"response_match_score\": \"high\"}}",
			[]string{"line 2: $.criteria.response_match_score: response_match_score: want a threshold"}},
		{"null criterion", `{"criteria": {"response_match_score": null}}`, []string{"response_match_score: want a threshold"}},
		{"threshold over 1", "{\"criteria\": {\n  \"tool_trajectory_avg_score\": {\n    \"threshold\": 1.5}}}",
			[]string{"line 3: $.criteria.tool_trajectory_avg_score.threshold: tool_trajectory_avg_score: threshold 1.5: want a number from 0 to 1"}},
		{"negative threshold", `{"criteria": {"response_match_score": -0.1}}`, []string{"threshold -0.1: want a number from 0 to 1"}},
		{"threshold a string", `{"criteria": {"response_match_score": {"threshold": "x"}}}`, []string{"threshold: cannot unmarshal string"}},
		{"unknown match_type", "{\"criteria\": {\"tool_trajectory_avg_score\": {\"threshold\": 1,\n  \"match_type\": \"SOMETIMES\"}}}",
			[]string{`line 2: $.criteria.tool_trajectory_avg_score.match_type: match_type "SOMETIMES": want EXACT, IN_ORDER or ANY_ORDER`}},
		{"match_type out of range", `{"criteria": {"tool_trajectory_avg_score": {"matchType": 3}}}`, []string{"match_type 3: want"}},
		{"empty match_type", `{"criteria": {"tool_trajectory_avg_score": {"match_type": ""}}}`, []string{`match_type "": want`}},
		{"rubric without content", "{\"criteria\": {\"rubric_based_final_response_quality_v1\": {\"threshold\": 0.5, \"rubrics\": [\n  {\"rubric_id\": \"r\"}]}}}",
			[]string{"line 2: $.criteria.rubric_based_final_response_quality_v1.rubrics[0].rubric_content: rubric_content is required"}},
	})
	// Load reports the config's problems under its own name.
	dir := t.TempDir()
	data, _ := os.ReadFile("testdata/adk/support.evalset.json")
	_ = os.WriteFile(filepath.Join(dir, "s.evalset.json"), data, 0o600)
	_ = os.WriteFile(filepath.Join(dir, "test_config.json"), []byte(`{"criteria": {"response_match_score": 2}}`), 0o600)
	if _, err := evalset.Load(filepath.Join(dir, "s.evalset.json")); err == nil || !strings.Contains(err.Error(), "test_config.json") {
		t.Errorf("Load: err = %v, want the config's problem", err)
	}
}

// malformed is a file that a reader refuses with problems whose text holds
// each of want.
type malformed struct {
	name, src string
	want      []string
}

// refuses checks that parse refuses each case's src, read as the file
// name, as it wants, in a parallel subtest named after the case.
func refuses[T any](t *testing.T, parse func(data []byte, name string) (T, error), name string, cases []malformed) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse([]byte(tc.src), name)
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
