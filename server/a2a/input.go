package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/wire"
)

// a2aInput is what an A2A message asks: the user's input, the earlier
// history it brings for a new context, and the decisions that answer a
// task waiting for input.
type a2aInput struct {
	text      string
	history   []message.Message
	decisions []runner.Decision
}

// maxA2AHistory bounds the history a message brings.
const maxA2AHistory = 1000

// parseA2AMessage reads a message a client sends: its text parts are the
// input, a data part {"history": [{role, text, agent}]} the earlier
// conversation (for a new context), a data part with a decision ({"type":
// "approve"|"reject"|"edit", "args", "message", "call_id"} or {"decisions":
// [...]}) answers an interrupted task; the text "approve" or "reject"
// alone does too.
func parseA2AMessage(m *a2a.Message) (*a2aInput, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: message is required", a2a.ErrInvalidParams)
	}
	if m.Role != "" && m.Role != a2a.MessageRoleUser {
		return nil, fmt.Errorf("%w: a message to a baton agent is from the user (role %q)", a2a.ErrInvalidParams, m.Role)
	}
	in := &a2aInput{}
	var texts []string
	for i, p := range m.Parts {
		switch p := p.(type) {
		case a2a.TextPart:
			texts = append(texts, p.Text)
		case a2a.DataPart:
			if err := in.data(p.Data); err != nil {
				return nil, fmt.Errorf("%w: parts[%d]: %v", a2a.ErrInvalidParams, i, err)
			}
		case a2a.FilePart:
			return nil, fmt.Errorf("%w: parts[%d]: file parts are not supported (text and data only)", a2a.ErrUnsupportedContentType, i)
		default:
			return nil, fmt.Errorf("%w: parts[%d]: unknown part", a2a.ErrInvalidParams, i)
		}
	}
	in.text = strings.Join(texts, "\n")
	return in, nil
}

// data reads a data part.
func (in *a2aInput) data(d map[string]any) error {
	if h, ok := d["history"]; ok {
		items, ok := h.([]any)
		if !ok {
			return errors.New("history must be a list of {role, text}")
		}
		if len(items) > maxA2AHistory {
			return fmt.Errorf("history has %d messages, more than %d", len(items), maxA2AHistory)
		}
		for j, it := range items {
			e, _ := it.(map[string]any)
			role, _ := e["role"].(string)
			text, _ := e["text"].(string)
			if text == "" {
				continue
			}
			switch role {
			case "system":
				in.history = append(in.history, message.System(text))
			case "user":
				in.history = append(in.history, message.User(text))
			case "assistant", "agent":
				in.history = append(in.history, message.Assistant("", text))
			default:
				return fmt.Errorf("history[%d]: role %q is not system, user or assistant", j, role)
			}
		}
		return nil
	}
	if _, ok := d["type"]; ok {
		d = map[string]any{"decisions": []any{d}}
	}
	if ds, ok := d["decisions"]; ok {
		b, err := json.Marshal(ds)
		if err != nil {
			return err
		}
		var req wire.Decision
		if err := json.Unmarshal(b, &req.Decisions); err != nil {
			return fmt.Errorf("decisions: %v", err)
		}
		out, err := server.Decisions(&req)
		if err != nil {
			return err
		}
		in.decisions = append(in.decisions, out...)
		return nil
	}
	return errors.New(`a data part holds "history", a decision ("type") or "decisions"`)
}
