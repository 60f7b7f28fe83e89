package netspec

import (
	"context"
	"regexp"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/transfer"
)

func (l *loader) policy(f *File, known func(string, string) bool) policy.Policy {
	ps := f.Policy
	if ps == nil {
		return policy.Explicit{}
	}
	switch ps.Type {
	case "", "explicit":
		if len(ps.Rules) > 0 {
			return policy.Composite{l.rules(ps, known), policy.Explicit{}}
		}
		return policy.Explicit{}
	case "sequential":
		if len(ps.Steps) < 2 {
			l.bad("$.policy.steps", "a sequential policy needs at least two steps")
		}
		for i, s := range ps.Steps {
			known(at("$.policy.steps", i), s)
		}
		seq := policy.Sequential{Steps: ps.Steps}
		if len(ps.Rules) > 0 {
			return policy.Composite{l.rules(ps, known), seq}
		}
		return seq
	case "rules":
		if len(ps.Rules) == 0 {
			l.bad("$.policy", "a rules policy needs rules")
		}
		return l.rules(ps, known)
	}
	l.bad("$.policy.type", "policy type must be explicit, sequential or rules (got %q)", ps.Type)
	return policy.Explicit{}
}

func (l *loader) rules(ps *PolicySpec, known func(string, string) bool) policy.Rules {
	var out policy.Rules
	for i, r := range ps.Rules {
		rp := at("$.policy.rules", i)
		if r.Name == "" {
			l.bad(rp, "a rule needs a name")
		}
		if r.To == "" {
			l.bad(rp, "a rule needs to: (the agent to transfer to)")
		} else {
			known(field(rp, "to"), r.To)
		}
		if r.From != "" {
			known(field(rp, "from"), r.From)
		}
		w := r.When
		var ans, inp, res *regexp.Regexp
		if w.AnswerMatches != "" {
			ans = l.regexp(field(rp, "when"), w.AnswerMatches)
		}
		if w.InputMatches != "" {
			inp = l.regexp(field(rp, "when"), w.InputMatches)
		}
		if w.ToolResultMatches != "" {
			res = l.regexp(field(rp, "when"), w.ToolResultMatches)
		}
		switch transfer.HistoryPolicy(r.History) {
		case "", transfer.HistoryFull, transfer.HistoryLastUser, transfer.HistoryNone:
		default:
			l.bad(field(rp, "history"), "history must be full, last_user or none (got %q)", r.History)
		}
		if w == (RuleCondition{}) {
			l.bad(rp, "rule %q has no when: condition", r.Name)
		}
		if w.AnswerMatches != "" && w.ToolResultMatches != "" {
			// An answer is a turn without tool calls: no tool result is
			// the last thing then.
			l.bad(field(rp, "when"), "answer_matches and tool_result_matches never hold together (one is checked after an answer, the other after tool results)")
		}
		at := policy.Point("")
		if ans != nil {
			at = policy.AfterAnswer
		} else if res != nil {
			at = policy.AfterTools
		}
		out = append(out, policy.Rule{Name: r.Name, From: r.From, To: r.To, At: at, History: transfer.HistoryPolicy(r.History),
			When: func(_ context.Context, v *policy.View) bool {
				if ans != nil && !ans.MatchString(v.Answer) {
					return false
				}
				if inp != nil && !inp.MatchString(v.Input) {
					return false
				}
				if res != nil && !lastResultsMatch(v.Messages, res) {
					return false
				}
				if w.TurnsAtLeast > 0 && v.Turns < w.TurnsAtLeast {
					return false
				}
				if w.TokensAtLeast > 0 && v.Usage.Total() < w.TokensAtLeast {
					return false
				}
				return true
			}})
	}
	return out
}

// lastResultsMatch reports whether a tool result of the last turn matches re.
func lastResultsMatch(msgs []message.Message, re *regexp.Regexp) bool {
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == message.RoleTool; i-- {
		for _, p := range msgs[i].Parts {
			if re.MatchString(p.Text) {
				return true
			}
		}
	}
	return false
}

func (l *loader) picker(f *File, known func(string, string) bool) (policy.Picker, bool) {
	ps := f.Picker
	if ps == nil {
		return nil, false
	}
	var chain policy.Chain
	if ps.Sticky {
		chain.Pickers = append(chain.Pickers, policy.Sticky{})
	}
	var rules policy.RulePicker
	for i, r := range ps.Rules {
		rp := at("$.picker.rules", i)
		if r.Agent == "" {
			l.bad(rp, "a picker rule needs agent: (the agent to start with)")
		} else {
			known(field(rp, "agent"), r.Agent)
		}
		pr := policy.PickRule{Agent: r.Agent, Keywords: r.Keywords}
		if r.Match != "" {
			pr.Match = l.regexp(field(rp, "match"), r.Match)
		}
		if r.Match == "" && len(r.Keywords) == 0 {
			l.bad(rp, "a picker rule needs match: or keywords:")
		}
		rules = append(rules, pr)
	}
	if len(rules) > 0 {
		chain.Pickers = append(chain.Pickers, rules)
	}
	if c := ps.Classifier; c != nil {
		cl := &policy.Classifier{Model: l.model("$.picker.classifier", "picker", &c.ModelSpec), Lenient: true}
		names := c.Agents
		if len(names) == 0 {
			for _, a := range f.Agents {
				names = append(names, a.Name)
			}
		}
		for i, n := range names {
			if len(c.Agents) > 0 && !known(at("$.picker.classifier.agents", i), n) {
				continue
			}
			for _, a := range f.Agents {
				if a.Name == n {
					cl.Candidates = append(cl.Candidates, policy.Candidate{Name: n, Description: a.Description})
				}
			}
		}
		chain.Pickers = append(chain.Pickers, cl)
	}
	if ps.Default != "" {
		known("$.picker.default", ps.Default)
		chain.Default = ps.Default
	}
	return chain, ps.Sticky
}
