package eval_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/metric"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/service"
)

// TestUnchangedAgentsNeverCallTheModel: every agent of the exported cases
// is unchanged, so every model answer comes from the recording — a model
// that fails the test if called is never called — and every tool call is
// answered from it: tools that count their runs stay at zero.
func TestUnchangedAgentsNeverCallTheModel(t *testing.T) {
	t.Parallel()
	set := exported(t)
	var runs atomic.Int32
	r, err := eval.Run(t.Context(), eval.Config{Set: set, Network: eval.Target{File: supportFile,
		Load: service.LoadOptions{WrapModel: forbidden(t), Tools: counting(&runs)}}})
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 0 {
		t.Errorf("tools ran %d times: replayed tools must have no side effects", runs.Load())
	}
	recorded := 0
	for _, c := range set.Cases {
		for _, o := range c.Recording.Turns {
			recorded += len(o.ModelCalls)
		}
	}
	s := r.Summary
	if s.Live != 0 || s.Replayed != recorded || recorded < 10 || s.Unmatched != 0 {
		t.Errorf("live %d, replayed %d, unmatched %d model calls: want every one of the %d recorded replayed", s.Live, s.Replayed, s.Unmatched, recorded)
	}
	if r.Failed() || s.Passed != 3 {
		t.Errorf("summary %v: the recorded runs must pass their own expectations:\n%s", s, failures(r))
	}
	for _, c := range r.Cases {
		if c.Reference != "recording" || len(c.Changes) != 0 {
			t.Errorf("case %s: reference %q, changes %+v", c.ID, c.Reference, c.Changes)
		}
	}
}

// TestChangedAgentCallsItsModel: a network whose billing agent changed
// (its instructions) answers billing with its model, and the other agents
// from the recording; the tools still never run.
func TestChangedAgentCallsItsModel(t *testing.T) {
	t.Parallel()
	set := exported(t)
	var runs atomic.Int32
	var mu sync.Mutex
	called := map[string]int{}
	file := variant(t, "You resolve billing problems.", "You resolve billing problems, kindly.")
	r, err := eval.Run(t.Context(), eval.Config{Set: set, Network: eval.Target{File: file, Load: service.LoadOptions{Tools: counting(&runs),
		WrapModel: func(name string, m model.Model) model.Model {
			return counted(name, m, &mu, called)
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 0 {
		t.Errorf("tools ran %d times", runs.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if called["billing"] != 3 || len(called) != 1 {
		t.Errorf("models called: %v; want billing's only (three answers)", called)
	}
	if r.Summary.Live != 3 || r.Failed() {
		t.Errorf("summary %+v:\n%s", r.Summary, failures(r))
	}
}

// TestBaselineRegression: a candidate whose triage sends double charges to
// refunds regresses against the baseline: the report says what changed,
// the gate fails.
func TestBaselineRegression(t *testing.T) {
	t.Parallel()
	set := parse(t, `
version: 1
name: routing
cases:
  - id: double-charge
    turns:
      - user: I was charged twice for order 1234
        expect:
          transfers: [{to: billing}]
          status: completed
  - id: crash
    turns:
      - user: The app crashes when I log in
        expect: {transfers: [{to: tech}], answer: {contains: [degraded]}}
`)
	candidate := variant(t, "- name: transfer_to_billing", "- name: transfer_to_refunds")
	r, err := eval.Run(t.Context(), eval.Config{Set: set, LiveTools: true, Network: eval.Target{File: candidate}, Baseline: &eval.Target{File: supportFile}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed() || r.Summary.Regressed != 1 || r.Summary.Passed != 1 {
		t.Fatalf("summary %v: want the double charge regressed", r.Summary)
	}
	dc := r.Cases[0]
	if dc.Pass || dc.Baseline == nil || !dc.Baseline.Pass || dc.Reference != "baseline" {
		t.Fatalf("case %+v", dc)
	}
	// Refunds need an approval: the run stops, interrupted.
	if len(dc.Regressions) != 2 || dc.Regressions[0].Metric != metric.Transfers || dc.Regressions[0].Baseline != 1 || dc.Regressions[0].Candidate != 0 || dc.Regressions[1].Metric != metric.Status {
		t.Errorf("regressions = %+v", dc.Regressions)
	}
	var aspects []string
	for _, ch := range dc.Changes {
		aspects = append(aspects, ch.Aspect)
	}
	if got := strings.Join(aspects, ","); got != "transfers,tools,status,answer" {
		t.Errorf("changes %s: want transfers, tools, status and answer", got)
	}
	if r.Summary.BaselineUsage == nil || r.Summary.Metrics[0].BaselineMean == nil {
		t.Errorf("summary without the baseline's figures: %+v", r.Summary)
	}
}

// TestUnmatchedTools: a case without a recording runs no tool unless live
// tools are on; the calls are reported.
func TestUnmatchedTools(t *testing.T) {
	t.Parallel()
	set := parse(t, `
version: 1
name: live
cases:
  - id: double-charge
    turns: [{user: I was charged twice for order 1234, expect: {tools: {calls: [{name: lookup_order, args: {order_id: "1234"}}]}}}]
`)
	for _, live := range []bool{false, true} {
		var runs atomic.Int32
		r, err := eval.Run(t.Context(), eval.Config{Set: set, LiveTools: live, Network: eval.Target{File: supportFile, Load: service.LoadOptions{Tools: counting(&runs)}}})
		if err != nil {
			t.Fatal(err)
		}
		c := r.Cases[0].Candidate
		if len(c.Unmatched) != 1 || c.Unmatched[0].Name != "lookup_order" || r.Summary.Unmatched != 1 {
			t.Errorf("live tools %v: unmatched %+v", live, c.Unmatched)
		}
		want := int32(0)
		if live {
			want = 1
		}
		if runs.Load() != want {
			t.Errorf("live tools %v: the tool ran %d times, want %d", live, runs.Load(), want)
		}
		tool := c.Turns[0].Tools[0]
		if tool.IsError == live || (!live && !strings.Contains(tool.Output, "no result for this call")) {
			t.Errorf("live tools %v: the call's result %+v", live, tool)
		}
	}
}

// TestJudgeByName: a rubric's judge is a model named as --model names
// them, here an OpenAI-compatible server; a score under the threshold
// fails.
func TestJudgeByName(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		verdict := `{\"score\": 0.8, \"reason\": \"It names the refund.\"}`
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"judge\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"%s\"},\"finish_reason\":null}]}\n\n", verdict)
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"judge\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	judge := "openai-compatible:judge@" + srv.URL + "/v1"
	set := parse(t, `
version: 1
name: judged
cases:
  - id: refund
    turns:
      - user: I want a refund for order 1234
        decisions: [{type: approve}]
        expect:
          answer:
            rubrics:
              - {id: names-refund, text: The answer gives the refund's id.}
              - {id: strict, text: The answer apologises., judge: "`+judge+`", threshold: 0.9}
`)
	r, err := eval.Run(t.Context(), eval.Config{Set: set, LiveTools: true, Judge: judge, Network: eval.Target{File: supportFile}})
	if err != nil {
		t.Fatal(err)
	}
	checks := r.Cases[0].Candidate.Checks
	if len(checks) != 2 || !checks[0].Pass || checks[0].Score != 0.8 || checks[0].Detail != "It names the refund." || checks[1].Pass {
		t.Fatalf("checks = %+v", checks)
	}
	if asked.Load() != 2 || !r.Failed() {
		t.Errorf("judge asked %d times, failed %v", asked.Load(), r.Failed())
	}
	// Without a judge, a rubric fails and says why.
	r, err = eval.Run(t.Context(), eval.Config{Set: set, LiveTools: true, Network: eval.Target{File: supportFile}})
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Cases[0].Candidate.Checks[0]; c.Pass || !strings.Contains(c.Detail, "no judge model") {
		t.Errorf("check without a judge = %+v", c)
	}
}

// TestConcurrency: cases run -j at once, reported in the set's order, with
// the progress of each.
func TestConcurrency(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("version: 1\nname: many\ncases:\n")
	for i := range 8 {
		fmt.Fprintf(&b, "  - id: c%d\n    turns: [{user: hello %d, expect: {routing: triage, status: completed}}]\n", i, i)
	}
	var progress []int
	r, err := eval.Run(t.Context(), eval.Config{Set: parse(t, b.String()), Concurrency: 3, Network: eval.Target{File: supportFile},
		Progress: func(done, total int) {
			if total != 8 {
				t.Errorf("total %d", total)
			}
			progress = append(progress, done)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(progress, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("progress %v", progress)
	}
	for i, c := range r.Cases {
		if c.ID != fmt.Sprintf("c%d", i) || !c.Pass {
			t.Errorf("case %d: %s pass=%v", i, c.ID, c.Pass)
		}
	}
	if r.Summary.CasesPerSecond <= 0 {
		t.Errorf("cases per second %v", r.Summary.CasesPerSecond)
	}
}

// failures lists a report's failed checks, for test messages.
func failures(r *eval.Report) string {
	var b strings.Builder
	for _, c := range r.Cases {
		for _, ck := range c.Candidate.Checks {
			if !ck.Pass {
				fmt.Fprintf(&b, "  %s turn %d %s: %s\n", c.ID, ck.Turn, ck.Metric, ck.Detail)
			}
		}
	}
	return b.String()
}

// TestADKSet runs an evalset written from ADK's schema on the support
// network: its tool responses answer the tools, its final responses are
// scored by ROUGE-1 at its test_config.json's threshold, its transfer as a
// transfer, its rubrics by the judge.
func TestADKSet(t *testing.T) {
	t.Parallel()
	set, err := evalset.Load("evalset/testdata/adk/support.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	judge := &verdicts{score: 1}
	r, err := eval.Run(t.Context(), eval.Config{Set: set, Network: eval.Target{File: supportFile, Load: service.LoadOptions{Tools: counting(&runs)}},
		Judges: func(string) (metric.Judge, error) { return judge, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Failed() || r.Summary.Unmatched != 0 || runs.Load() != 0 {
		t.Fatalf("%s, %d unmatched, %d tool runs:\n%s", r.Summary, r.Summary.Unmatched, runs.Load(), failures(r))
	}
	var metrics []string
	for _, m := range r.Summary.Metrics {
		metrics = append(metrics, fmt.Sprintf("%s %d", m.Metric, m.Checks))
	}
	if got := strings.Join(metrics, ", "); got != "transfers 1, tools 2, rouge1 2, rubric 3" {
		t.Errorf("checks: %s", got)
	}
	if out := r.Cases[0].Candidate.Turns[0].Tools[0].Output; !strings.Contains(out, `"charges": 2`) {
		t.Errorf("lookup_order answered %q, not by the ADK recording", out)
	}
}

// verdicts is a judge that gives every rubric the same score.
type verdicts struct{ score float64 }

func (v *verdicts) Judge(context.Context, *metric.JudgeInput) (*metric.Verdict, error) {
	return &metric.Verdict{Score: v.score, Reason: "fixed"}, nil
}
