package metric

import "github.com/batonhq/baton/eval/evalset"

// Change is one aspect of a turn that differs between two runs of it.
type Change struct {
	// Turn is the turn's number, from 1.
	Turn int `json:"turn"`
	// Aspect is routing, transfers, tools, status or answer.
	Aspect string `json:"aspect"`
	Before string `json:"before"`
	After  string `json:"after"`
}

// Aspects compared by [Changes] (the metric names of the same things).
const (
	AspectRouting   = Routing
	AspectTransfers = Transfers
	AspectTools     = Tools
	AspectStatus    = Status
	AspectAnswer    = "answer"
)

// Changes returns what turn (from 1) did differently in after than in
// before: its first agent, its transfers (agents and context), its tool
// calls (names and arguments), its status and its answer.
func Changes(turn int, before, after *evalset.Outcome) []Change {
	var out []Change
	add := func(aspect, b, a string) {
		if a != b {
			out = append(out, Change{Turn: turn, Aspect: aspect, Before: b, After: a})
		}
	}
	add(AspectRouting, orNone(before.FirstAgent), orNone(after.FirstAgent))
	add(AspectTransfers, FormatTransfers(before.Transfers), FormatTransfers(after.Transfers))
	add(AspectTools, FormatTools(before.Tools), FormatTools(after.Tools))
	add(AspectStatus, orNone(before.Status), orNone(after.Status))
	add(AspectAnswer, before.Answer, after.Answer)
	return out
}
