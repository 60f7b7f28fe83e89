package report_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/metric"
	"github.com/batonhq/baton/eval/report"
	"github.com/batonhq/baton/message"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sample is a report of two cases on a candidate and a baseline: one
// passes, one regressed.
func sample() *eval.Report {
	base := evalset.Outcome{FirstAgent: "triage", Status: "completed", Answer: "Two charges; one is reversed.",
		Transfers: []evalset.Transfer{{From: "triage", To: "billing", Context: json.RawMessage(`{"issue":"double_charge"}`)}},
		Tools:     []evalset.ToolCall{{Agent: "billing", Name: "lookup_order", Arguments: json.RawMessage(`{"order_id":"1234"}`)}}}
	cand := base
	cand.Transfers = []evalset.Transfer{{From: "triage", To: "refunds", Context: json.RawMessage(`{"issue":"double_charge"}`)}}
	cand.Status, cand.Answer = "interrupted", ""
	pass := func(m string, s float64) metric.Check {
		return metric.Check{Metric: m, Turn: 1, Score: s, Threshold: 1, Pass: s >= 1, Detail: "want <billing> & more"}
	}
	r := &eval.Report{Set: "support", Description: "Routing of the support network.", Network: "candidate.yaml", Baseline: "support.yaml",
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), DurationMS: 1250,
		Cases: []*eval.CaseResult{
			{ID: "double-charge", Line: 7, Inputs: []string{"I was charged twice"}, Reference: "baseline",
				Baseline:    &eval.RunResult{Turns: []evalset.Outcome{base}, Checks: []metric.Check{pass(metric.Transfers, 1), pass(metric.Status, 1)}, Live: 3, Usage: message.Usage{InputTokens: 300, OutputTokens: 80}, LatencyMS: 40, Pass: true},
				Candidate:   &eval.RunResult{Turns: []evalset.Outcome{cand}, Checks: []metric.Check{pass(metric.Transfers, 0), pass(metric.Status, 0)}, Live: 1, Replayed: 2, Usage: message.Usage{InputTokens: 200, OutputTokens: 40}, LatencyMS: 30},
				Changes:     metric.Changes(1, &base, &cand),
				Regressions: []eval.Regression{{Turn: 1, Metric: metric.Transfers, Baseline: 1, Candidate: 0}, {Turn: 1, Metric: metric.Status, Baseline: 1, Candidate: 0}}},
			{ID: "crash", Inputs: []string{"The app crashes"}, Reference: "baseline", Pass: true,
				Baseline: &eval.RunResult{Turns: []evalset.Outcome{{FirstAgent: "triage", Status: "completed", Answer: "Log-in is degraded."}}, Checks: []metric.Check{pass(metric.Routing, 1)}, Live: 3, Pass: true},
				Candidate: &eval.RunResult{Turns: []evalset.Outcome{{FirstAgent: "triage", Status: "completed", Answer: "Log-in is degraded."}}, Checks: []metric.Check{pass(metric.Routing, 1)}, Replayed: 3, Pass: true,
					Unmatched: []evalset.ToolCall{{Agent: "tech", Name: "check_status_page", Arguments: json.RawMessage(`{}`)}}}},
		},
	}
	bm := 1.0
	r.Summary = eval.Summary{Cases: 2, Passed: 1, Failed: 1, Regressed: 1, Live: 1, Replayed: 5, Unmatched: 1,
		Usage: message.Usage{InputTokens: 200, OutputTokens: 40}, BaselineUsage: &message.Usage{InputTokens: 300, OutputTokens: 80}, CasesPerSecond: 1.6,
		Metrics: []eval.MetricSummary{{Metric: metric.Routing, Checks: 1, Passed: 1, Mean: 1, BaselineMean: &bm}, {Metric: metric.Transfers, Checks: 1, Mean: 0, BaselineMean: &bm}, {Metric: metric.Status, Checks: 1, Mean: 0, BaselineMean: &bm}}}
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update):\n%s", name, got)
	}
}

// render writes sample() with write.
func render(t *testing.T, write func(io.Writer, *eval.Report) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, sample()); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTable(t *testing.T) {
	t.Parallel()
	golden(t, "table.golden", render(t, report.Table))
}

func TestJUnit(t *testing.T) {
	t.Parallel()
	got := render(t, report.JUnit)
	golden(t, "junit.golden.xml", got)
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	cases := doc.Suites[0].Cases
	if doc.Tests != 2 || doc.Failures != 1 || cases[0].Failure == nil || cases[1].Failure != nil {
		t.Fatalf("junit = %+v", doc)
	}
	if f := cases[0].Failure; !strings.Contains(f.Message, "regressed: turn 1 transfers") || !strings.Contains(f.Text, "turn 1 transfers: 0 under 1") {
		t.Errorf("failure = %+v", f)
	}
}

func TestHTML(t *testing.T) {
	t.Parallel()
	page := string(render(t, report.HTML))
	for _, want := range []string{
		`data-testid="summary" data-cases="2" data-passed="1" data-failed="1" data-regressed="1"`,
		`data-case="double-charge" data-result="REGRESSED" open`,
		`<tr data-aspect="transfers" class="changed" data-changed="true"><td>transfers</td><td class="value" data-side="before">triage→billing {&#34;issue&#34;:&#34;double_charge&#34;}</td><td class="value" data-side="after">triage→refunds`,
		`want &lt;billing&gt; &amp; more`, // escaped
		`check_status_page({}) by tech`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Failed cases first; nothing is fetched from elsewhere.
	if strings.Index(page, `data-case="double-charge"`) > strings.Index(page, `data-case="crash"`) {
		t.Error("the failed case is not first")
	}
	for _, external := range []string{"<script", "src=", "http://", "https://", "<link"} {
		if strings.Contains(page, external) {
			t.Errorf("the page is not self-contained: it has %q", external)
		}
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := report.Progress(&b)
	p(1, 4)
	p(4, 4)
	if got := b.String(); got != "\r[=======>                      ] 1/4 cases\r[==============================] 4/4 cases\n" {
		t.Errorf("progress = %q", got)
	}
}

// TestJUnitControlCharacters: whatever an answer holds, the XML parses.
func TestJUnitControlCharacters(t *testing.T) {
	t.Parallel()
	r := sample()
	r.Cases[0].Candidate.Checks[0].Detail = "bell \x07, nul \x00, bad \xff, end ]]> here"
	var b bytes.Buffer
	if err := report.JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct{}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("invalid XML: %v\n%s", err, b.String())
	}
	if !strings.Contains(b.String(), "end ]]") {
		t.Error("the detail is lost")
	}
}
