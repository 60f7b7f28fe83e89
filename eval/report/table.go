package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/metric"
)

// Table writes the report for a terminal: one row per case with its
// result, each metric's score (baseline → candidate when a baseline ran),
// its model calls, tokens and latency; then what failed, regressed or
// changed, case by case; then each metric's totals and the summary.
func Table(w io.Writer, r *eval.Report) error {
	metrics := metricNames(r)
	base := r.Baseline != ""
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := append([]string{"CASE", "RESULT"}, upper(metrics)...)
	head = append(head, "CALLS", "TOKENS", "LATENCY")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, c := range r.Cases {
		row := []string{c.ID, Result(c)}
		for _, m := range metrics {
			cell := score(c.Candidate, m)
			if b := score(c.Baseline, m); base && (b != "-" || cell != "-") {
				cell = b + "→" + cell
			}
			row = append(row, cell)
		}
		calls := fmt.Sprintf("%d live, %d replayed", c.Candidate.Live, c.Candidate.Replayed)
		tokens := fmt.Sprint(c.Candidate.Usage.Total())
		latency := ms(c.Candidate.LatencyMS)
		if b := c.Baseline; b != nil {
			tokens = fmt.Sprintf("%d→%s", b.Usage.Total(), tokens)
			latency = ms(b.LatencyMS) + "→" + latency
		}
		row = append(row, calls, tokens, latency)
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	details(w, r)
	totals(w, r)
	return nil
}

// Result is a case's result in one word: pass, FAIL, REGRESSED or ERROR.
func Result(c *eval.CaseResult) string {
	switch {
	case c.Pass:
		return "pass"
	case len(c.Regressions) > 0:
		return "REGRESSED"
	}
	for _, o := range c.Candidate.Turns {
		if o.Status == eval.StatusError {
			return "ERROR"
		}
	}
	return "FAIL"
}

// metricNames are the metrics the report scored, in the summary's order.
func metricNames(r *eval.Report) []string {
	out := make([]string, len(r.Summary.Metrics))
	for i, m := range r.Summary.Metrics {
		out[i] = m.Metric
	}
	return out
}

func upper(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToUpper(s)
	}
	return out
}

// score is a run's mean score of a metric, "-" when it has no such check,
// marked ✗ when one of them fails.
func score(rr *eval.RunResult, m string) string {
	if rr == nil {
		return "-"
	}
	n, sum, failed := 0, 0.0, false
	for _, c := range rr.Checks {
		if c.Metric == m {
			n++
			sum += c.Score
			failed = failed || !c.Pass
		}
	}
	if n == 0 {
		return "-"
	}
	s := trimFloat(sum / float64(n))
	if failed {
		s += "✗"
	}
	return s
}

func trimFloat(x float64) string {
	s := fmt.Sprintf("%.2f", x)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-" {
		return "0"
	}
	return s
}

func ms(v int64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.1fs", float64(v)/1000)
	}
	return fmt.Sprintf("%dms", v)
}

// details writes, for each case that failed, regressed, left tool calls
// unanswered or changed, what did.
func details(w io.Writer, r *eval.Report) {
	for _, c := range r.Cases {
		var lines []string
		for _, ck := range c.Candidate.Checks {
			if !ck.Pass {
				lines = append(lines, fmt.Sprintf("  turn %d %s: %s under %s: %s", ck.Turn, checkName(ck), trimFloat(ck.Score), trimFloat(ck.Threshold), ck.Detail))
			}
		}
		for _, rg := range c.Regressions {
			lines = append(lines, fmt.Sprintf("  regressed: turn %d %s %s → %s", rg.Turn, rg.Metric, trimFloat(rg.Baseline), trimFloat(rg.Candidate)))
		}
		for _, o := range c.Candidate.Turns {
			if o.Status == eval.StatusError {
				lines = append(lines, "  did not run: "+o.Error)
			}
		}
		for _, u := range c.Candidate.Unmatched {
			lines = append(lines, fmt.Sprintf("  no recorded result: %s(%s) by %s", u.Name, string(u.Arguments), u.Agent))
		}
		for _, ch := range c.Changes {
			lines = append(lines, fmt.Sprintf("  changed since the %s: turn %d %s: %s → %s", c.Reference, ch.Turn, ch.Aspect, clip(ch.Before), clip(ch.After)))
		}
		if len(lines) == 0 {
			continue
		}
		where := ""
		if c.Line > 0 {
			where = fmt.Sprintf(" (line %d)", c.Line)
		}
		fmt.Fprintf(w, "\n%s %s%s\n%s\n", Result(c), c.ID, where, strings.Join(lines, "\n"))
	}
}

func checkName(c metric.Check) string {
	if c.Name != "" {
		return c.Metric + " " + c.Name
	}
	return c.Metric
}

// clip shortens a value for a line of the table.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:100]) + "…"
	}
	if s == "" {
		return `""`
	}
	return s
}

func totals(w io.Writer, r *eval.Report) {
	s := r.Summary
	fmt.Fprintln(w)
	for _, m := range s.Metrics {
		line := fmt.Sprintf("%-12s %d/%d passed, mean %.2f", m.Metric, m.Passed, m.Checks, m.Mean)
		if m.BaselineMean != nil {
			line += fmt.Sprintf(" (baseline %.2f)", *m.BaselineMean)
		}
		fmt.Fprintln(w, line)
	}
	tokens := fmt.Sprint(s.Usage.Total())
	if s.BaselineUsage != nil {
		tokens = fmt.Sprintf("%d (baseline %d)", s.Usage.Total(), s.BaselineUsage.Total())
	}
	fmt.Fprintf(w, "%s; model calls: %d live, %d replayed; %d tool calls without a recording; tokens %s; %s (%.1f cases/s)\n",
		s, s.Live, s.Replayed, s.Unmatched, tokens, ms(r.DurationMS), s.CasesPerSecond)
}
