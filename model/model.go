package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/batonhq/baton/message"
)

// Model streams one model response.
//
// Stream must be safe for concurrent use: one Model value serves many runs
// at once. The returned sequence yields zero or more [ChunkText] and
// [ChunkReasoning] deltas and [ChunkToolCall] chunks as they are assembled,
// and ends with exactly one [ChunkDone] whose Message is the whole assistant
// message; or it yields a non-nil error once and stops. The sequence stops
// early, closing what it opened, when yield returns false or ctx ends.
// Requests are not modified.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Func adapts a function to [Model].
type Func func(ctx context.Context, req *Request) iter.Seq2[Chunk, error]

// Stream calls f.
func (f Func) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] { return f(ctx, req) }

// Request is one call of a model.
type Request struct {
	// Agent is the name of the calling agent (the scripted model keys on it).
	Agent string
	// System is the system prompt; adapters place it where their API wants it.
	System string
	// Messages is the history; it satisfies the pairing invariant.
	Messages []message.Message
	// Tools the model may call.
	Tools []Tool
	// Settings are the agent's model settings.
	Settings Settings
	// Output, when set, asks for a JSON object that matches a schema, through
	// the provider's native structured-output mode where it has one.
	Output *OutputSchema
}

// Tool describes a callable tool to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is a JSON Schema object.
	Parameters json.RawMessage
}

// OutputSchema asks for structured output.
type OutputSchema struct {
	Name   string
	Schema json.RawMessage
	// Strict asks the provider to enforce the schema where it can.
	Strict bool
}

// Settings are per-agent model knobs. Zero values mean the provider default.
type Settings struct {
	Temperature *float64 `json:"temperature,omitempty" yaml:"temperature"`
	TopP        *float64 `json:"top_p,omitempty" yaml:"top_p"`
	// MaxTokens caps output tokens.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens"`
	// Stop ends the answer before the first of these sequences (finish
	// reason "stop"); the sequence is not part of the answer. OpenAI Chat
	// takes up to 4, Anthropic more; the Responses API has no stop
	// parameter, and its adapter cuts the stream itself.
	Stop []string `json:"stop,omitempty" yaml:"stop"`
	// ToolChoice is "auto" (default), "none", "required", or a tool name.
	ToolChoice string `json:"tool_choice,omitempty" yaml:"tool_choice"`
	// ParallelToolCalls, when set, says whether the model may call several tools at once.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty" yaml:"parallel_tool_calls"`
	// ReasoningEffort is passed to reasoning models ("low", "medium", "high").
	ReasoningEffort string `json:"reasoning_effort,omitempty" yaml:"reasoning_effort"`
	// PromptCaching, when false, turns off the prompt-cache breakpoints the
	// Anthropic adapter sets by default (cache_control on the system prompt,
	// the tools and the conversation). OpenAI caches on its own and ignores it.
	PromptCaching *bool `json:"prompt_caching,omitempty" yaml:"prompt_caching"`

	// The best-effort knobs below reach the providers that take them and
	// are left out by the others (the Anthropic API has no seed, penalties
	// or logit bias; the OpenAI Responses API has no seed, penalties or
	// logit bias either).

	// Seed asks for reproducible sampling, best effort (OpenAI Chat).
	Seed *int64 `json:"seed,omitempty" yaml:"seed"`
	// PresencePenalty and FrequencyPenalty, between -2 and 2, penalise
	// tokens already present, or frequent, in the text (OpenAI Chat).
	PresencePenalty  *float64 `json:"presence_penalty,omitempty" yaml:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty" yaml:"frequency_penalty"`
	// LogitBias maps token ids (decimal strings) to a bias between -100 and
	// 100 (OpenAI Chat).
	LogitBias map[string]int `json:"logit_bias,omitempty" yaml:"logit_bias"`
	// User is an opaque id of the end user, for the provider's abuse
	// detection: OpenAI's safety_identifier, Anthropic's metadata.user_id.
	User string `json:"user,omitempty" yaml:"user"`
	// PromptCacheKey groups requests that share a prompt prefix for the
	// provider's cache (OpenAI).
	PromptCacheKey string `json:"prompt_cache_key,omitempty" yaml:"prompt_cache_key"`
	// Verbosity ("low", "medium", "high") asks for a shorter or longer
	// answer (OpenAI: Chat's verbosity, the Responses API's text.verbosity).
	Verbosity string `json:"verbosity,omitempty" yaml:"verbosity"`
}

// CodeRefusal is the [Error] Code of a model's refusal where a refusal
// cannot be an answer (structured output was asked for).
const CodeRefusal = "refusal"

// Finish reasons of [Chunk.FinishReason] that callers branch on.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
	FinishRefusal       = "refusal"
	FinishPauseTurn     = "pause_turn"
)

// ChunkType names the kind of a [Chunk].
type ChunkType uint8

// Chunk types.
const (
	ChunkText      ChunkType = iota + 1 // Text is an answer-text delta
	ChunkReasoning                      // Text is a reasoning delta, never answer text
	ChunkToolCall                       // ToolCall is a complete call
	ChunkDone                           // Message, Usage, FinishReason, RequestID are set
)

// Chunk is one item of a model stream.
type Chunk struct {
	Type     ChunkType
	Text     string
	ToolCall *message.ToolCall
	// Message is the whole assistant message, on ChunkDone.
	Message *message.Message
	Usage   message.Usage
	// FinishReason is the provider's reason, normalised: "stop" (a whole
	// answer), "tool_calls", "length" (cut at the output token limit or the
	// context window), "content_filter" (stopped by the provider's safety
	// system), "refusal" (the model declined; its text is the refusal),
	// "pause_turn" (Anthropic paused a long turn: call again with the answer
	// in the history to continue it), or the provider's own word.
	FinishReason string
	// Refusal is what the provider said about a "refusal" or
	// "content_filter" finish, where it said something: OpenAI's refusal
	// text (also the message's text), Anthropic's stop_details ("category:
	// explanation"). On ChunkDone.
	Refusal string
	// RequestID is the provider's request id, where it sends one.
	RequestID string
	// Model is the model name the provider reports.
	Model string
}

// Response is a collected model stream.
type Response struct {
	Message      message.Message
	Usage        message.Usage
	FinishReason string
	// Refusal is [Chunk.Refusal].
	Refusal   string
	RequestID string
	Model     string
}

// ErrNoDone is returned by [Collect] when a stream ends without a ChunkDone.
var ErrNoDone = errors.New("model: stream ended without a final chunk")

// ErrStopRequested is the cause (context.Cause) of the context of a model
// call cut because its run was asked to stop (cancelled, or stopped by a
// newer turn): a model whose call started work elsewhere (a remote agent's
// task) stops that work too. A call cut for another reason (a shutdown
// that hands the run to another process) leaves it going.
var ErrStopRequested = errors.New("model: the run was asked to stop")

// Collect drains seq and returns the final response.
func Collect(seq iter.Seq2[Chunk, error]) (*Response, error) {
	for c, err := range seq {
		if err != nil {
			return nil, err
		}
		if c.Type == ChunkDone {
			if c.Message == nil {
				return nil, ErrNoDone
			}
			return &Response{Message: *c.Message, Usage: c.Usage, FinishReason: c.FinishReason, Refusal: c.Refusal, RequestID: c.RequestID, Model: c.Model}, nil
		}
	}
	return nil, ErrNoDone
}

// Error is a failed model call, classified for retries. Adapters return it
// (wrapping the SDK's own error in Err) so that callers can branch with
// errors.As without knowing the provider.
type Error struct {
	Provider   string
	StatusCode int    // HTTP status, 0 when none (broken stream, timeout)
	Code       string // provider error type or code, e.g. "rate_limit_error"
	Message    string // the provider's message
	RequestID  string
	// Transient reports whether retrying the same request may succeed
	// (429, 5xx, overloaded, timeouts, broken streams).
	Transient bool
	// RetryAfter is how long the provider asked to wait, 0 if it did not say.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	s := e.Provider + ": "
	if e.StatusCode != 0 {
		s += fmt.Sprintf("status %d: ", e.StatusCode)
	}
	if e.Message != "" {
		s += e.Message
	} else if e.Err != nil {
		s += e.Err.Error()
	} else {
		s += "model call failed"
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports e.Transient; the retry classifier reads it.
func (e *Error) Temporary() bool { return e.Transient }

// RetryDelay reports e.RetryAfter; the retry backoff honours it.
func (e *Error) RetryDelay() time.Duration { return e.RetryAfter }
