package eval

import (
	"fmt"
	"slices"
	"time"

	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/metric"
	"github.com/batonhq/baton/message"
)

// Report is the result of a [Run]: every case, scored, and a summary. It
// is what `baton eval --json` prints.
type Report struct {
	Set         string `json:"set"`
	Description string `json:"description,omitempty"`
	// Network and Baseline are the network files run.
	Network    string        `json:"network"`
	Baseline   string        `json:"baseline,omitempty"`
	StartedAt  time.Time     `json:"started_at"`
	DurationMS int64         `json:"duration_ms"`
	Cases      []*CaseResult `json:"cases"`
	Summary    Summary       `json:"summary"`
}

// CaseResult is one case's runs, checks and changes.
type CaseResult struct {
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	// Line is the case's line in its set's file (0 unknown).
	Line int `json:"line,omitempty"`
	// Inputs are the user messages of its turns.
	Inputs    []string   `json:"inputs"`
	Candidate *RunResult `json:"candidate"`
	Baseline  *RunResult `json:"baseline,omitempty"`
	// Reference is what Changes compare the candidate with: "baseline",
	// "recording" (no baseline, the case has a recording), or "".
	Reference string          `json:"reference,omitempty"`
	Changes   []metric.Change `json:"changes,omitempty"`
	// Regressions are the checks that pass on the baseline and fail on
	// the candidate.
	Regressions []Regression `json:"regressions,omitempty"`
	// Pass: every check of the candidate passes and nothing regressed.
	Pass bool `json:"pass"`
}

// RunResult is a case run on one network.
type RunResult struct {
	// Turns are what each turn did.
	Turns  []evalset.Outcome `json:"turns"`
	Checks []metric.Check    `json:"checks"`
	// Unmatched are the tool calls without a recorded result.
	Unmatched []evalset.ToolCall `json:"unmatched_tools,omitempty"`
	// Replayed and Live count the model calls answered from the recording
	// and by the models.
	Replayed int           `json:"replayed_calls"`
	Live     int           `json:"live_calls"`
	Usage    message.Usage `json:"usage"`
	// LatencyMS is the wall-clock time of the turns.
	LatencyMS int64 `json:"latency_ms"`
	Pass      bool  `json:"pass"`
}

// Regression is a check that passed on the baseline and fails on the
// candidate.
type Regression struct {
	Turn      int     `json:"turn"`
	Metric    string  `json:"metric"`
	Name      string  `json:"name,omitempty"`
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	Detail    string  `json:"detail,omitempty"`
}

// Summary sums up a report.
type Summary struct {
	Cases     int `json:"cases"`
	Passed    int `json:"passed"`
	Failed    int `json:"failed"`
	Regressed int `json:"regressed"`
	// Metrics are the checks by metric, in a fixed order.
	Metrics []MetricSummary `json:"metrics"`
	// Usage, Replayed and Live are the candidate's; the Baseline ones the
	// baseline's.
	Usage           message.Usage  `json:"usage"`
	Replayed        int            `json:"replayed_calls"`
	Live            int            `json:"live_calls"`
	Unmatched       int            `json:"unmatched_tools"`
	BaselineUsage   *message.Usage `json:"baseline_usage,omitempty"`
	LatencyMS       int64          `json:"latency_ms"`
	BaselineLatency int64          `json:"baseline_latency_ms,omitempty"`
	CasesPerSecond  float64        `json:"cases_per_second"`
}

// MetricSummary is one metric's checks: how many pass, the mean score.
type MetricSummary struct {
	Metric string  `json:"metric"`
	Checks int     `json:"checks"`
	Passed int     `json:"passed"`
	Mean   float64 `json:"mean"`
	// BaselineMean is the baseline's mean score, when it ran.
	BaselineMean *float64 `json:"baseline_mean,omitempty"`
}

// Failed reports whether the report fails the gate: a case whose check is
// under its threshold, or that regressed against the baseline.
func (r *Report) Failed() bool { return r.Summary.Failed > 0 }

// add adds a turn's outcome to the run.
func (rr *RunResult) add(o *evalset.Outcome, unmatched []evalset.ToolCall) {
	rr.Turns = append(rr.Turns, *o)
	rr.Unmatched = append(rr.Unmatched, unmatched...)
	for _, mc := range o.ModelCalls {
		if mc.Replayed {
			rr.Replayed++
		} else {
			rr.Live++
		}
	}
	rr.Usage.Add(o.Usage)
	rr.LatencyMS += o.LatencyMS
}

// passes reports whether every check passes and every turn ran.
func (rr *RunResult) passes() bool {
	for _, c := range rr.Checks {
		if !c.Pass {
			return false
		}
	}
	for _, o := range rr.Turns {
		if o.Status == StatusError {
			return false
		}
	}
	return true
}

// compare fills the case's changes (against the baseline, else the
// recording) and regressions.
func (r *CaseResult) compare(c *evalset.Case) {
	cand := r.Candidate
	var ref []evalset.Outcome
	switch {
	case r.Baseline != nil:
		r.Reference, ref = "baseline", r.Baseline.Turns
	case c.Recording != nil && len(c.Recording.Turns) > 0:
		r.Reference, ref = "recording", c.Recording.Turns
	}
	for i := range min(len(ref), len(cand.Turns)) {
		r.Changes = append(r.Changes, metric.Changes(i+1, &ref[i], &cand.Turns[i])...)
	}
	if r.Baseline != nil {
		base := map[string]*metric.Check{}
		for i := range r.Baseline.Checks {
			base[r.Baseline.Checks[i].Key()] = &r.Baseline.Checks[i]
		}
		for _, ck := range cand.Checks {
			if b, ok := base[ck.Key()]; ok && b.Pass && !ck.Pass {
				r.Regressions = append(r.Regressions, Regression{Turn: ck.Turn, Metric: ck.Metric, Name: ck.Name, Baseline: b.Score, Candidate: ck.Score, Detail: ck.Detail})
			}
		}
		if r.Baseline.ran() && !cand.ran() {
			r.Regressions = append(r.Regressions, Regression{Metric: "run", Baseline: 1, Detail: "the case ran on the baseline and not on the candidate"})
		}
	}
	r.Pass = cand.Pass && len(r.Regressions) == 0
}

// ran reports whether every turn ran.
func (rr *RunResult) ran() bool {
	for _, o := range rr.Turns {
		if o.Status == StatusError {
			return false
		}
	}
	return true
}

// metricOrder is the order of metrics in summaries.
var metricOrder = []string{metric.Routing, metric.Transfers, metric.Tools, metric.Status, metric.Contains, metric.Regex, metric.JSONSchema, metric.ROUGE1, metric.Rubric}

func (r *Report) summarise() {
	s := &r.Summary
	s.Cases = len(r.Cases)
	type acc struct {
		n, passed, bn int
		sum, bsum     float64
	}
	by := map[string]*acc{}
	get := func(m string) *acc {
		if by[m] == nil {
			by[m] = &acc{}
		}
		return by[m]
	}
	for _, c := range r.Cases {
		switch {
		case c.Pass:
			s.Passed++
		default:
			s.Failed++
		}
		if len(c.Regressions) > 0 {
			s.Regressed++
		}
		cand := c.Candidate
		s.Usage.Add(cand.Usage)
		s.Replayed += cand.Replayed
		s.Live += cand.Live
		s.Unmatched += len(cand.Unmatched)
		s.LatencyMS += cand.LatencyMS
		for _, ck := range cand.Checks {
			a := get(ck.Metric)
			a.n++
			a.sum += ck.Score
			if ck.Pass {
				a.passed++
			}
		}
		if b := c.Baseline; b != nil {
			if s.BaselineUsage == nil {
				s.BaselineUsage = &message.Usage{}
			}
			s.BaselineUsage.Add(b.Usage)
			s.BaselineLatency += b.LatencyMS
			for _, ck := range b.Checks {
				a := get(ck.Metric)
				a.bn++
				a.bsum += ck.Score
			}
		}
	}
	names := slices.Clone(metricOrder)
	for m := range by {
		if !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	for _, m := range names {
		a := by[m]
		if a == nil || a.n+a.bn == 0 {
			continue
		}
		ms := MetricSummary{Metric: m, Checks: a.n, Passed: a.passed}
		if a.n > 0 {
			ms.Mean = a.sum / float64(a.n)
		}
		if a.bn > 0 {
			bm := a.bsum / float64(a.bn)
			ms.BaselineMean = &bm
		}
		s.Metrics = append(s.Metrics, ms)
	}
	if r.DurationMS > 0 {
		s.CasesPerSecond = float64(s.Cases) / (float64(r.DurationMS) / 1000)
	}
}

// String is a one-line summary: "12 cases: 11 passed, 1 failed (1 regressed)".
func (s Summary) String() string {
	out := fmt.Sprintf("%d cases: %d passed, %d failed", s.Cases, s.Passed, s.Failed)
	if s.Regressed > 0 {
		out += fmt.Sprintf(" (%d regressed)", s.Regressed)
	}
	return out
}
