package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// Transform rewrites a history on its way to a transfer target. Apply must not
// modify its input; it returns a new slice (it may share unchanged messages).
// Its output is repaired to keep the pairing invariant. An error makes the
// transfer keep the history the transform was given.
type Transform interface {
	Name() string
	Apply(ctx context.Context, msgs []message.Message) ([]message.Message, error)
}

var errEmpty = errors.New("transform produced an empty history")

// DropToolTraffic removes tool calls and tool results, keeping text.
type DropToolTraffic struct{}

// Name returns "drop_tool_traffic".
func (DropToolTraffic) Name() string { return "drop_tool_traffic" }

// Apply implements [Transform].
func (DropToolTraffic) Apply(_ context.Context, msgs []message.Message) ([]message.Message, error) {
	out := make([]message.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == message.RoleTool {
			continue
		}
		if m.HasToolCalls() {
			parts := make([]message.Part, 0, len(m.Parts))
			for _, p := range m.Parts {
				if p.Type != message.PartToolCall {
					parts = append(parts, p)
				}
			}
			if len(parts) == 0 {
				continue
			}
			m.Parts = parts
		}
		out = append(out, m)
	}
	return out, nil
}

// Redact replaces every match of its patterns in text, tool arguments and tool
// results with Replacement (default "[REDACTED]").
type Redact struct {
	Patterns    []*regexp.Regexp
	Replacement string
}

// Name returns "redact".
func (Redact) Name() string { return "redact" }

// Apply implements [Transform].
func (r Redact) Apply(_ context.Context, msgs []message.Message) ([]message.Message, error) {
	repl := r.Replacement
	if repl == "" {
		repl = "[REDACTED]"
	}
	red := func(s string) string {
		for _, p := range r.Patterns {
			s = p.ReplaceAllLiteralString(s, repl)
		}
		return s
	}
	out := make([]message.Message, len(msgs))
	for i, m := range msgs {
		m = m.Clone()
		for j := range m.Parts {
			p := &m.Parts[j]
			switch p.Type {
			case message.PartText, message.PartToolResult:
				p.Text = red(p.Text)
			case message.PartToolCall:
				a, err := redactJSON(p.Arguments, red)
				if err != nil {
					return nil, fmt.Errorf("redact arguments of call %s: %w", p.CallID, err)
				}
				p.Arguments = a
			}
		}
		out[i] = m
	}
	return out, nil
}

// redactJSON applies red to every string (keys excluded) of a JSON document.
func redactJSON(b json.RawMessage, red func(string) string) (json.RawMessage, error) {
	if len(b) == 0 {
		return b, nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return red(x)
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	return json.Marshal(walk(v))
}

// Compact replaces all but the most recent messages with a summary written by
// Model. The kept tail never starts inside a tool call/result pair.
type Compact struct {
	Model model.Model
	// KeepRecent is how many recent messages stay verbatim. Defaults to 6.
	KeepRecent int
	// Prompt instructs the summariser. Defaults to a short neutral prompt.
	Prompt string
}

// Name returns "compact".
func (Compact) Name() string { return "compact" }

// Apply implements [Transform].
func (c Compact) Apply(ctx context.Context, msgs []message.Message) ([]message.Message, error) {
	keep := c.KeepRecent
	if keep <= 0 {
		keep = 6
	}
	if len(msgs) <= keep {
		return msgs, nil
	}
	if c.Model == nil {
		return nil, errors.New("compact: no model")
	}
	cut := len(msgs) - keep
	for cut > 0 && msgs[cut].Role == message.RoleTool {
		cut-- // keep the call with its results
	}
	if cut == 0 {
		return msgs, nil
	}
	prompt := c.Prompt
	if prompt == "" {
		prompt = "Summarise the conversation so far for another assistant who will continue it. Keep facts, names, numbers, decisions and open questions. Answer with the summary only."
	}
	var b strings.Builder
	for _, m := range msgs[:cut] {
		fmt.Fprintf(&b, "%s", m.Role)
		if m.Agent != "" {
			fmt.Fprintf(&b, " (%s)", m.Agent)
		}
		b.WriteString(": ")
		for _, p := range m.Parts {
			switch p.Type {
			case message.PartText:
				b.WriteString(p.Text)
			case message.PartToolCall:
				fmt.Fprintf(&b, "[called %s %s]", p.Name, p.Arguments)
			case message.PartToolResult:
				fmt.Fprintf(&b, "[%s returned %s]", p.Name, p.Text)
			}
		}
		b.WriteByte('\n')
	}
	resp, err := model.Collect(c.Model.Stream(ctx, &model.Request{
		Agent:    "compact",
		System:   prompt,
		Messages: []message.Message{message.User(b.String())},
	}))
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	summary := strings.TrimSpace(resp.Message.Text())
	if summary == "" {
		return nil, errors.New("compact: empty summary")
	}
	out := make([]message.Message, 0, keep+1)
	out = append(out, message.User("Summary of the earlier conversation:\n"+summary))
	return append(out, msgs[cut:]...), nil
}

// Func adapts a function to a named [Transform].
func Func(name string, fn func(ctx context.Context, msgs []message.Message) ([]message.Message, error)) Transform {
	return funcTransform{name, fn}
}

type funcTransform struct {
	name string
	fn   func(ctx context.Context, msgs []message.Message) ([]message.Message, error)
}

func (f funcTransform) Name() string { return f.name }
func (f funcTransform) Apply(ctx context.Context, msgs []message.Message) ([]message.Message, error) {
	return f.fn(ctx, msgs)
}
