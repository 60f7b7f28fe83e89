package metric

import (
	"context"
	"fmt"
	"strings"

	"github.com/batonhq/baton/eval/evalset"
)

// Metric names, as reports show them.
const (
	Routing    = "routing"
	Transfers  = "transfers"
	Tools      = "tools"
	Status     = "status"
	Contains   = "contains"
	Regex      = "regex"
	JSONSchema = "json_schema"
	ROUGE1     = "rouge1"
	Rubric     = "rubric"
)

// Check is one expectation of a turn, scored.
type Check struct {
	Metric string `json:"metric"`
	// Turn is the turn's number, from 1.
	Turn int `json:"turn"`
	// Name tells checks of one metric apart (a rubric's id).
	Name string `json:"name,omitempty"`
	// Score is from 0 to 1; the check passes when it is at least
	// Threshold.
	Score     float64 `json:"score"`
	Threshold float64 `json:"threshold"`
	Pass      bool    `json:"pass"`
	// Detail says what was expected and what happened, or the judge's
	// reason.
	Detail string `json:"detail,omitempty"`
}

// Key identifies the check within its case: turn, metric and name.
func (c *Check) Key() string {
	k := fmt.Sprintf("%d:%s", c.Turn, c.Metric)
	if c.Name != "" {
		k += ":" + c.Name
	}
	return k
}

func check(metric string, turn int, score, threshold float64, detail string) Check {
	return Check{Metric: metric, Turn: turn, Score: score, Threshold: threshold, Pass: score >= threshold, Detail: detail}
}

func boolCheck(metric string, turn int, ok bool, detail string) Check {
	score := 0.0
	if ok {
		score = 1
	}
	return check(metric, turn, score, 1, detail)
}

// Score scores turn (numbered from 1), whose user message was user and
// which did o, against e. Rubrics are judged by judges (nil: a rubric
// fails, saying there is no judge). It is safe for concurrent use if
// judges is.
func Score(ctx context.Context, turn int, user string, e *evalset.Expect, o *evalset.Outcome, judges Judges) []Check {
	if e == nil {
		return nil
	}
	var out []Check
	if e.Routing != "" {
		out = append(out, boolCheck(Routing, turn, o.FirstAgent == e.Routing, fmt.Sprintf("want %s first, got %s", e.Routing, orNone(o.FirstAgent))))
	}
	if e.Transfers != nil {
		ok, detail := transfersMatch(*e.Transfers, o.Transfers)
		out = append(out, boolCheck(Transfers, turn, ok, detail))
	}
	if e.Tools != nil {
		ok, detail := toolsMatch(e.Tools, o.Tools)
		out = append(out, boolCheck(Tools, turn, ok, detail))
	}
	if e.Status != "" {
		detail := fmt.Sprintf("want %s, got %s", e.Status, orNone(o.Status))
		if o.Error != "" && o.Status != e.Status {
			detail += ": " + o.Error
		}
		out = append(out, boolCheck(Status, turn, o.Status == e.Status, detail))
	}
	if e.Answer != nil {
		out = append(out, answer(ctx, turn, user, e.Answer, o, judges)...)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// transfersMatch compares the transfers taken with the expected ones:
// the same number, in order, each to (and from) the expected agent with
// the listed context fields.
func transfersMatch(want []evalset.TransferExpect, got []evalset.Transfer) (bool, string) {
	detail := fmt.Sprintf("want %s, got %s", describeExpectedTransfers(want), FormatTransfers(got))
	if len(want) != len(got) {
		return false, detail
	}
	for i, w := range want {
		g := got[i]
		if g.To != w.To || (w.From != "" && g.From != w.From) {
			return false, detail
		}
		if ok, field := fieldsMatch(w.Context, keys(w.Context), g.Context); !ok {
			return false, detail + fmt.Sprintf(" (transfer %d: context field %s)", i+1, field)
		}
	}
	return true, detail
}

func describeExpectedTransfers(want []evalset.TransferExpect) string {
	return oneLine(want, "no transfer", func(w evalset.TransferExpect) string {
		s := w.To
		if w.From != "" {
			s = w.From + "→" + w.To
		}
		if len(w.Context) > 0 {
			s += " " + canonical(w.Context)
		}
		return s
	})
}

// FormatTransfers renders transfers in one line: "triage→billing {…}, …".
func FormatTransfers(ts []evalset.Transfer) string {
	return oneLine(ts, "no transfer", func(t evalset.Transfer) string {
		s := t.From + "→" + t.To
		if len(t.Context) > 0 {
			s += " " + canonicalJSON(t.Context)
		}
		return s
	})
}

// FormatTools renders tool calls in one line: "lookup_order({…}), …".
func FormatTools(ts []evalset.ToolCall) string {
	return oneLine(ts, "no tool call", func(t evalset.ToolCall) string {
		return t.Name + "(" + CanonicalArgs(t.Arguments) + ")"
	})
}

// oneLine renders each of ts with render and joins them with ", "; none
// stands for an empty list.
func oneLine[T any](ts []T, none string, render func(T) string) string {
	if len(ts) == 0 {
		return none
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = render(t)
	}
	return strings.Join(parts, ", ")
}
