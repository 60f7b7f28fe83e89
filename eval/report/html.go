package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/metric"
)

//go:embed report.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("report").Parse(pageSource))

// HTML writes the report as one self-contained page (no script, no
// resource from elsewhere): the summary (cases, each metric's mean score
// beside the baseline's, tokens, model calls), then each case with a
// per-turn diff of the baseline (or the recording) and the candidate —
// routing, transfers, tools, status, answer, what changed marked — and its
// checks, scores side by side. Failed cases come first and open.
func HTML(w io.Writer, r *eval.Report) error {
	return pageTemplate.Execute(w, pageOf(r))
}

type page struct {
	R        *eval.Report
	Summary  string
	Metrics  []metricRow
	Cases    []caseView
	Duration string
	Started  string
	Tokens   string
	BaseTok  string
}

type metricRow struct {
	Name           string
	Passed, Checks int
	Mean, Baseline string
	Pass           bool
}

type caseView struct {
	ID, Description, Result string
	Pass                    bool
	Line                    int
	// Reference names the left column of the diff: baseline, recording,
	// or "" (no diff).
	Reference string
	Turns     []turnView
	Checks    []checkRow
	Regressed []string
	Unmatched []string
	Calls     string
	Tokens    string
	Latency   string
}

type turnView struct {
	N       int
	User    string
	Rows    []aspectRow
	Changed int
}

type aspectRow struct {
	Aspect, Before, After string
	Changed               bool
}

type checkRow struct {
	Turn             int
	Metric           string
	Base, Cand, Thre string
	Pass             bool
	Detail           string
}

func pageOf(r *eval.Report) page {
	p := page{R: r, Summary: r.Summary.String(), Duration: ms(r.DurationMS), Started: r.StartedAt.UTC().Format(time.RFC3339),
		Tokens: fmt.Sprint(r.Summary.Usage.Total())}
	if b := r.Summary.BaselineUsage; b != nil {
		p.BaseTok = fmt.Sprint(b.Total())
	}
	for _, m := range r.Summary.Metrics {
		row := metricRow{Name: m.Metric, Passed: m.Passed, Checks: m.Checks, Mean: fmt.Sprintf("%.2f", m.Mean), Pass: m.Passed == m.Checks}
		if m.BaselineMean != nil {
			row.Baseline = fmt.Sprintf("%.2f", *m.BaselineMean)
		}
		p.Metrics = append(p.Metrics, row)
	}
	var failed, passed []caseView
	for _, c := range r.Cases {
		v := caseOf(c)
		if c.Pass {
			passed = append(passed, v)
		} else {
			failed = append(failed, v)
		}
	}
	p.Cases = append(failed, passed...)
	return p
}

func caseOf(c *eval.CaseResult) caseView {
	cand := c.Candidate
	v := caseView{ID: c.ID, Description: c.Description, Result: Result(c), Pass: c.Pass, Line: c.Line, Reference: c.Reference,
		Calls: fmt.Sprintf("%d live, %d replayed", cand.Live, cand.Replayed), Tokens: fmt.Sprint(cand.Usage.Total()), Latency: ms(cand.LatencyMS)}
	if b := c.Baseline; b != nil {
		v.Tokens = fmt.Sprintf("%d → %d", b.Usage.Total(), cand.Usage.Total())
		v.Latency = ms(b.LatencyMS) + " → " + ms(cand.LatencyMS)
	}
	for i, o := range cand.Turns {
		tv := turnView{N: i + 1}
		if i < len(c.Inputs) {
			tv.User = c.Inputs[i]
		}
		tv.Rows = aspects(&o, c.Changes, i+1)
		for _, row := range tv.Rows {
			if row.Changed {
				tv.Changed++
			}
		}
		v.Turns = append(v.Turns, tv)
	}
	v.Checks = checks(c)
	for _, rg := range c.Regressions {
		v.Regressed = append(v.Regressed, fmt.Sprintf("turn %d %s: %s → %s", rg.Turn, rg.Metric, trimFloat(rg.Baseline), trimFloat(rg.Candidate)))
	}
	for _, u := range cand.Unmatched {
		v.Unmatched = append(v.Unmatched, fmt.Sprintf("%s(%s) by %s", u.Name, string(u.Arguments), u.Agent))
	}
	return v
}

// aspects are a turn's rows of the diff: what the candidate did, and where
// it changed, what the reference did.
func aspects(o *evalset.Outcome, changes []metric.Change, turn int) []aspectRow {
	after := map[string]string{
		metric.AspectRouting:   orNone(o.FirstAgent),
		metric.AspectTransfers: metric.FormatTransfers(o.Transfers),
		metric.AspectTools:     metric.FormatTools(o.Tools),
		metric.AspectStatus:    orNone(o.Status),
		metric.AspectAnswer:    o.Answer,
	}
	var rows []aspectRow
	for _, a := range []string{metric.AspectRouting, metric.AspectTransfers, metric.AspectTools, metric.AspectStatus, metric.AspectAnswer} {
		row := aspectRow{Aspect: a, Before: after[a], After: after[a]}
		for _, ch := range changes {
			if ch.Turn == turn && ch.Aspect == a {
				row.Before, row.Changed = ch.Before, true
			}
		}
		rows = append(rows, row)
	}
	if o.Error != "" {
		rows = append(rows, aspectRow{Aspect: "error", After: o.Error})
	}
	return rows
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// checks are the case's checks, the baseline's score beside the
// candidate's.
func checks(c *eval.CaseResult) []checkRow {
	base := map[string]metric.Check{}
	if c.Baseline != nil {
		for _, ck := range c.Baseline.Checks {
			base[ck.Key()] = ck
		}
	}
	var out []checkRow
	for _, ck := range c.Candidate.Checks {
		row := checkRow{Turn: ck.Turn, Metric: checkName(ck), Cand: trimFloat(ck.Score), Thre: trimFloat(ck.Threshold), Pass: ck.Pass, Detail: ck.Detail}
		if b, ok := base[ck.Key()]; ok {
			row.Base = trimFloat(b.Score)
		}
		out = append(out, row)
	}
	return out
}
