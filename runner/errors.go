package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
)

// Kind classifies a run failure. It is persisted and sent to clients as a
// stable string.
type Kind string

// Error kinds.
const (
	// KindModelTransient: the model kept failing with retryable errors.
	KindModelTransient Kind = "model_transient"
	// KindToolTransient: a tool kept failing with retryable errors.
	KindToolTransient Kind = "tool_transient"
	// KindUserInput: the input was refused (empty, guardrail, bad decision).
	KindUserInput Kind = "user_input"
	// KindSystem: everything else (permanent model errors, bad state, store).
	KindSystem Kind = "system"
	// KindLimit: a limit ended the run; the error is a *LimitError.
	KindLimit Kind = "limit"
	// KindRefusal: the model refused to answer (a *FinishError with the
	// provider's words).
	KindRefusal Kind = "refusal"
	// KindContentFilter: the provider's content filter stopped the answer
	// (a *FinishError).
	KindContentFilter Kind = "content_filter"
	// KindLength: the answer was cut at the model's output token limit (or
	// its context window) before it was whole (a *FinishError). Raise the
	// agent's max_tokens, or ask for a shorter answer.
	KindLength Kind = "length"
)

// FinishError is a model answer whose finish ended the run: a refusal, a
// content-filter stop, or an answer without tool calls cut at the output
// token limit. The answer itself is recorded in the run's messages (and
// its message event carries the finish reason); the run fails with the
// kind of the finish, never as an ordinary completed run.
type FinishError struct {
	Agent string
	// Reason is model.FinishRefusal, model.FinishContentFilter or
	// model.FinishLength.
	Reason string
	// Text is what the provider said: its refusal's words, else the text of
	// the answer (for a refusal), else empty.
	Text string
	// RequestID is the provider's request id of the call.
	RequestID string
}

func (e *FinishError) Error() string {
	var s string
	switch e.Reason {
	case model.FinishRefusal:
		s = "the model refused to answer"
	case model.FinishContentFilter:
		s = "the provider's content filter stopped the answer"
	case model.FinishLength:
		s = "the answer was cut at the model's output token limit (raise the agent's max_tokens)"
	default:
		s = "the answer ended with " + e.Reason
	}
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

// finishKind is the Kind of a finish reason that ends a run, "" for others.
func finishKind(reason string) Kind {
	switch reason {
	case model.FinishRefusal:
		return KindRefusal
	case model.FinishContentFilter:
		return KindContentFilter
	case model.FinishLength:
		return KindLength
	}
	return ""
}

// requestIDOf returns the provider request id err carries, if any.
func requestIDOf(err error) string {
	var fe *FinishError
	if errors.As(err, &fe) {
		return fe.RequestID
	}
	var me *model.Error
	if errors.As(err, &me) {
		return me.RequestID
	}
	return ""
}

// EditError is an approval edit refused before anything runs: the edited
// arguments of a call are not what its tool accepts (not one JSON object,
// or not matching the tool's JSON Schema). The resume that carried it is
// refused with an *Error of kind [KindUserInput] wrapping it; nothing is
// written, so the interrupt stays pending and can be decided again.
type EditError struct {
	// InterruptID and CallID name the action whose edit was refused; Tool
	// is the tool it calls.
	InterruptID string
	CallID      string
	Tool        string
	// Err says why: an *agent.ArgumentError whose Detail is the schema
	// error (a JSON pointer to the value, and what was expected).
	Err error
}

func (e *EditError) Error() string {
	return fmt.Sprintf("resume: the edited arguments of call %s of interrupt %s are refused: %v", e.CallID, e.InterruptID, e.Err)
}

// Unwrap returns the cause.
func (e *EditError) Unwrap() error { return e.Err }

// Error is a classified run failure. Use errors.As to read it; the Err it
// wraps stays reachable (model.Error, runstate.IncompatibleError, …).
type Error struct {
	Kind  Kind
	Agent string
	Err   error
}

func (e *Error) Error() string {
	if e.Agent != "" {
		return fmt.Sprintf("runner: %s: agent %s: %v", e.Kind, e.Agent, e.Err)
	}
	return fmt.Sprintf("runner: %s: %v", e.Kind, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Limit names.
const (
	LimitMaxTurns     = "max_turns"
	LimitMaxTransfers = "max_transfers"
	LimitPingPong     = "ping_pong"
	LimitTokenBudget  = "token_budget"
	LimitTimeout      = "timeout"
)

// LimitError ends a run that reached a limit.
type LimitError struct {
	// Limit is one of the Limit* names.
	Limit string
	// Max is the configured bound (for timeout, in milliseconds).
	Max   int64
	Agent string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("runner: limit %s reached (%d) while %s was active", e.Limit, e.Max, e.Agent)
}

// GuardrailError is a tripped guardrail.
type GuardrailError struct {
	Guardrail string
	Agent     string
	// Phase is "input" or "output".
	Phase string
	Err   error
}

func (e *GuardrailError) Error() string {
	return fmt.Sprintf("runner: %s guardrail %s of agent %s: %v", e.Phase, e.Guardrail, e.Agent, e.Err)
}

// Unwrap returns the guardrail's error.
func (e *GuardrailError) Unwrap() error { return e.Err }

// ErrInputEmpty is the cause of a run started with no input.
var ErrInputEmpty = errors.New("runner: empty input")

// KindOf returns the kind of err: the Kind of a *Error or *LimitError in its
// chain, else KindSystem. It returns "" for nil.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var le *LimitError
	if errors.As(err, &le) {
		return KindLimit
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindSystem
}

// LimitOf returns the limit name when err is a *LimitError.
func LimitOf(err error) string {
	var le *LimitError
	if errors.As(err, &le) {
		return le.Limit
	}
	return ""
}

// modelError classifies a failed model call.
func modelError(agent string, err error) error {
	var se *scripted.ScriptError
	var me *model.Error
	switch {
	case errors.As(err, &me) && me.Code == model.CodeRefusal:
		// A refusal where an answer had to be structured output.
		return &Error{Kind: KindRefusal, Agent: agent, Err: err}
	case errors.As(err, &se):
		return &Error{Kind: KindSystem, Agent: agent, Err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case retry.Transient(err):
		return &Error{Kind: KindModelTransient, Agent: agent, Err: err}
	}
	return &Error{Kind: KindSystem, Agent: agent, Err: err}
}
