package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// PickInput is what a picker sees of a new user turn.
type PickInput struct {
	// Input is the user's message.
	Input string
	// LastAgent is the last active agent of the thread, empty for a new thread.
	LastAgent string
	ThreadID  string
}

// Picker chooses the agent that receives a user turn. Pick returns an empty
// agent to have no opinion. Implementations must be safe for concurrent use.
type Picker interface {
	Pick(ctx context.Context, in PickInput) (agent, reason string, err error)
}

// PickRule routes input matching Match (a regexp) or containing any of
// Keywords (case-insensitive) to Agent.
type PickRule struct {
	Match    *regexp.Regexp
	Keywords []string
	Agent    string
}

// RulePicker picks by the first matching rule.
type RulePicker []PickRule

// Pick implements [Picker].
func (r RulePicker) Pick(_ context.Context, in PickInput) (string, string, error) {
	lower := ""
	for _, x := range r {
		if x.Match != nil && x.Match.MatchString(in.Input) {
			return x.Agent, "matched " + x.Match.String(), nil
		}
		for _, k := range x.Keywords {
			if lower == "" {
				lower = strings.ToLower(in.Input)
			}
			if strings.Contains(lower, strings.ToLower(k)) {
				return x.Agent, "keyword " + k, nil
			}
		}
	}
	return "", "", nil
}

// Sticky keeps the thread's last active agent.
type Sticky struct{}

// Pick implements [Picker].
func (Sticky) Pick(_ context.Context, in PickInput) (string, string, error) {
	if in.LastAgent != "" {
		return in.LastAgent, "sticky", nil
	}
	return "", "", nil
}

// Chain asks pickers in order and falls back to Default.
type Chain struct {
	Pickers []Picker
	Default string
}

// Pick implements [Picker].
func (c Chain) Pick(ctx context.Context, in PickInput) (string, string, error) {
	for _, p := range c.Pickers {
		a, why, err := p.Pick(ctx, in)
		if err != nil {
			return "", "", err
		}
		if a != "" {
			return a, why, nil
		}
	}
	return c.Default, "default", nil
}

// Candidate is an agent a classifier may choose.
type Candidate struct{ Name, Description string }

// Classifier asks a model, with structured output, which candidate should
// take the input. A model failure or an answer outside the candidates is
// reported as no opinion when Lenient, as an error otherwise.
type Classifier struct {
	Model      model.Model
	Candidates []Candidate
	Lenient    bool
}

// ErrClassifier is wrapped by classifier failures.
var ErrClassifier = errors.New("policy: classifier failed")

// Pick implements [Picker].
func (c *Classifier) Pick(ctx context.Context, in PickInput) (string, string, error) {
	names := make([]string, len(c.Candidates))
	var sys strings.Builder
	sys.WriteString("Route the user's message to the best agent. Agents:\n")
	for i, cand := range c.Candidates {
		names[i] = cand.Name
		fmt.Fprintf(&sys, "- %s: %s\n", cand.Name, cand.Description)
	}
	sys.WriteString(`Answer with JSON {"agent": NAME, "reason": WHY}.`)
	enum, _ := json.Marshal(names)
	schema := json.RawMessage(`{"type":"object","properties":{"agent":{"type":"string","enum":` + string(enum) + `},"reason":{"type":"string"}},"required":["agent","reason"],"additionalProperties":false}`)
	fail := func(err error) (string, string, error) {
		if c.Lenient {
			return "", "", nil
		}
		return "", "", fmt.Errorf("%w: %w", ErrClassifier, err)
	}
	resp, err := model.Collect(c.Model.Stream(ctx, &model.Request{
		Agent: "picker", System: sys.String(), Messages: []message.Message{message.User(in.Input)},
		Output: &model.OutputSchema{Name: "route", Schema: schema, Strict: true},
	}))
	if err != nil {
		return fail(err)
	}
	text := strings.TrimSpace(resp.Message.Text())
	s, err := schemas.Compile(schema)
	if err != nil {
		return fail(err)
	}
	if err := s.Validate(json.RawMessage(text)); err != nil {
		return fail(fmt.Errorf("answer %q: %w", text, err))
	}
	var out struct{ Agent, Reason string }
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return fail(err)
	}
	return out.Agent, "classifier: " + out.Reason, nil
}
