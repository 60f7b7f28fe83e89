package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/schemas"
)

// ArgumentError says why a tool call's arguments were refused. It goes back
// to the model as the call's error result, so the model can correct itself.
type ArgumentError struct {
	Tool   string
	Detail string
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, e.Detail)
}

// maxArgumentBytes bounds one call's arguments (1 MiB).
const maxArgumentBytes = 1 << 20

// ParseArguments checks the raw arguments of a call of tool: they must be one
// JSON object (empty means {}) in valid UTF-8, at most 1 MiB, and match s
// when s is not nil.
// It returns the arguments to pass to the tool, or an *[ArgumentError].
func ParseArguments(tool string, raw json.RawMessage, s *schemas.Schema) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	if len(trimmed) > maxArgumentBytes {
		return nil, &ArgumentError{Tool: tool, Detail: fmt.Sprintf("arguments are %d bytes, more than the %d allowed", len(trimmed), maxArgumentBytes)}
	}
	if trimmed[0] != '{' {
		return nil, &ArgumentError{Tool: tool, Detail: "arguments must be a JSON object"}
	}
	if !json.Valid(trimmed) {
		return nil, &ArgumentError{Tool: tool, Detail: "arguments are not valid JSON"}
	}
	if !utf8.Valid(trimmed) {
		// json.Valid accepts invalid UTF-8 in strings; providers do not.
		return nil, &ArgumentError{Tool: tool, Detail: "arguments are not valid UTF-8"}
	}
	if s != nil {
		if err := s.Validate(trimmed); err != nil {
			return nil, &ArgumentError{Tool: tool, Detail: err.Error()}
		}
	}
	return json.RawMessage(trimmed), nil
}

// FuncTool returns a tool whose parameters are the JSON Schema of In and whose
// result is Out encoded as JSON (a string Out is passed through as is).
func FuncTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error)) *Tool {
	params, err := schemas.For[In]()
	if err != nil {
		panic("agent: tool " + name + ": " + err.Error())
	}
	return &Tool{
		Name:        name,
		Description: description,
		Parameters:  params,
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in In
			if err := json.Unmarshal(args, &in); err != nil {
				return "", &ArgumentError{Tool: name, Detail: err.Error()}
			}
			out, err := fn(ctx, in)
			if err != nil {
				return "", err
			}
			if s, ok := any(out).(string); ok {
				return s, nil
			}
			b, err := json.Marshal(out)
			if err != nil {
				return "", fmt.Errorf("encode result: %w", err)
			}
			return string(b), nil
		},
	}
}

// StaticTool returns a tool that always answers result, for offline networks.
func StaticTool(name, description string, params json.RawMessage, result string) *Tool {
	return &Tool{Name: name, Description: description, Parameters: params,
		Func: func(context.Context, json.RawMessage) (string, error) { return result, nil }}
}

// ErrGuardrail is wrapped by errors a guardrail check returns through [Tripwire].
var ErrGuardrail = errors.New("agent: guardrail tripped")

// Tripwire returns the error a guardrail returns to stop the run, with a
// reason that is reported to the caller.
func Tripwire(reason string) error { return fmt.Errorf("%w: %s", ErrGuardrail, reason) }
