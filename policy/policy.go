package policy

import (
	"context"
	"strings"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/transfer"
)

// Point is when a policy is consulted.
type Point string

// Points.
const (
	// AfterTools: the active agent's tool calls have all been answered.
	AfterTools Point = "after_tools"
	// AfterAnswer: the active agent gave an answer without tool calls; with
	// no decision, the run ends with that answer.
	AfterAnswer Point = "after_answer"
)

// View is what a policy sees of the run. It is read-only and valid only
// during the call.
type View struct {
	Point    Point
	Agent    string
	Messages []message.Message
	// Answer is the active agent's answer at AfterAnswer.
	Answer    string
	Turns     int
	Transfers int
	Trail     []string
	Usage     message.Usage
	// Input is the user input that started the run.
	Input string
}

// Decision transfers control to another agent.
type Decision struct {
	To     string
	Reason string
	// Type is TypeSequential or TypeRule.
	Type transfer.Type
	// History is what the target sees. Defaults to full.
	History transfer.HistoryPolicy
	// Input, if set, replaces the target's history with one user message
	// (used by pipelines to hand on the previous step's answer).
	Input string
}

// Policy decides who acts next. Next returns ok=false to leave control where
// it is. Implementations must be safe for concurrent use.
type Policy interface {
	Next(ctx context.Context, v *View) (d Decision, ok bool, err error)
	// Name identifies the policy in fingerprints and logs.
	Name() string
}

// Explicit is the policy of model-chosen transfers: it never decides anything
// itself, leaving transfers to the transfer tools. It is the default.
type Explicit struct{}

// Name returns "explicit".
func (Explicit) Name() string { return "explicit" }

// Next implements [Policy].
func (Explicit) Next(context.Context, *View) (Decision, bool, error) { return Decision{}, false, nil }

// Sequential is a fixed pipeline: when step i answers, step i+1 gets the
// original input and that answer. The run ends when the last step answers.
type Sequential struct{ Steps []string }

// Name returns "sequential".
func (s Sequential) Name() string { return "sequential:" + strings.Join(s.Steps, ">") }

// Next implements [Policy].
func (s Sequential) Next(_ context.Context, v *View) (Decision, bool, error) {
	if v.Point != AfterAnswer {
		return Decision{}, false, nil
	}
	for i, step := range s.Steps {
		if step == v.Agent && i+1 < len(s.Steps) {
			next := s.Steps[i+1]
			var b strings.Builder
			b.WriteString(v.Input)
			b.WriteString("\n\n<previous_step agent=\"")
			b.WriteString(v.Agent)
			b.WriteString("\">\n")
			b.WriteString(v.Answer)
			b.WriteString("\n</previous_step>")
			return Decision{To: next, Type: transfer.TypeSequential, History: transfer.HistoryNone,
				Reason: "pipeline step " + v.Agent + " finished", Input: b.String()}, true, nil
		}
	}
	return Decision{}, false, nil
}

// Rule is an automatic transfer on run state.
type Rule struct {
	// Name identifies the rule in fingerprints, events and logs.
	Name string
	// From, if set, limits the rule to that active agent.
	From string
	// At, if set, limits the rule to one point; both points otherwise.
	At Point
	// When decides; it must not retain v.
	When func(ctx context.Context, v *View) bool
	To   string
	// History is what the target sees. Defaults to full.
	History transfer.HistoryPolicy
}

// Rules transfers by the first matching rule.
type Rules []Rule

// Name lists the rule names.
func (r Rules) Name() string {
	names := make([]string, len(r))
	for i, x := range r {
		names[i] = x.Name
	}
	return "rules:" + strings.Join(names, ",")
}

// Next implements [Policy].
func (r Rules) Next(ctx context.Context, v *View) (Decision, bool, error) {
	for _, x := range r {
		if x.From != "" && x.From != v.Agent || x.At != "" && x.At != v.Point || x.To == v.Agent {
			continue
		}
		if x.When != nil && x.When(ctx, v) {
			return Decision{To: x.To, Type: transfer.TypeRule, Reason: "rule " + x.Name, History: x.History}, true, nil
		}
	}
	return Decision{}, false, nil
}

// Composite consults policies in order; the first decision wins.
type Composite []Policy

// Name lists the member names.
func (c Composite) Name() string {
	names := make([]string, len(c))
	for i, p := range c {
		names[i] = p.Name()
	}
	return "composite(" + strings.Join(names, ";") + ")"
}

// Next implements [Policy].
func (c Composite) Next(ctx context.Context, v *View) (Decision, bool, error) {
	for _, p := range c {
		d, ok, err := p.Next(ctx, v)
		if err != nil || ok {
			return d, ok, err
		}
	}
	return Decision{}, false, nil
}
