// Package oai holds the JSON shapes of OpenAI's API as baton serves it:
// /v1/chat/completions, /v1/responses and /v1/models, where a model is a
// network.
package oai

import (
	"encoding/json"
	"errors"
)

// OpenAI's error types, the "type" of an error body on its routes.
const (
	OpenAIInvalidRequest = "invalid_request_error"
	OpenAIRateLimit      = "requests"
	OpenAIServer         = "server_error"
)

// OpenAIRequest are the fields that OpenAI's chat completions and
// responses requests share and that shape a baton run. Pointers keep unset
// apart from zero.
type OpenAIRequest struct {
	Model             string            `json:"model"`
	Stream            bool              `json:"stream,omitempty"`
	User              string            `json:"user,omitempty"`
	Metadata          map[string]string `json:"metadata,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	Tools             []json.RawMessage `json:"tools,omitempty"`
	ToolChoice        json.RawMessage   `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	Store             *bool             `json:"store,omitempty"`
	ServiceTier       string            `json:"service_tier,omitempty"`
	TopLogprobs       *int              `json:"top_logprobs,omitempty"`
	SafetyIdentifier  string            `json:"safety_identifier,omitempty"`
	PromptCacheKey    string            `json:"prompt_cache_key,omitempty"`
}

// ChatRequest is the body of POST /v1/chat/completions. Every field is
// honoured, accepted without effect (docs/api.md lists them) or refused
// (400); an unknown field is refused.
type ChatRequest struct {
	OpenAIRequest
	Messages            []ChatMessage      `json:"messages"`
	StreamOptions       *StreamOptions     `json:"stream_options,omitempty"`
	MaxTokens           *int               `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int               `json:"max_completion_tokens,omitempty"`
	Stop                Stop               `json:"stop,omitempty"`
	N                   *int               `json:"n,omitempty"`
	ResponseFormat      *ResponseFormat    `json:"response_format,omitempty"`
	Seed                *int64             `json:"seed,omitempty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty,omitempty"`
	PresencePenalty     *float64           `json:"presence_penalty,omitempty"`
	Logprobs            *bool              `json:"logprobs,omitempty"`
	LogitBias           map[string]float64 `json:"logit_bias,omitempty"`
	ReasoningEffort     string             `json:"reasoning_effort,omitempty"`
	Modalities          []string           `json:"modalities,omitempty"`
	Verbosity           string             `json:"verbosity,omitempty"`
	// Prediction (a predicted output) is accepted and has no effect: it
	// only speeds a model up, never changes its answer.
	Prediction       json.RawMessage `json:"prediction,omitempty"`
	WebSearchOptions json.RawMessage `json:"web_search_options,omitempty"`
	Audio            json.RawMessage `json:"audio,omitempty"`
}

// Stop is a request's stop: one string or an array of them.
type Stop []string

// UnmarshalJSON reads a string, an array of strings or null.
func (s *Stop) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = Stop{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("stop must be a string or an array of strings")
	}
	*s = many
	return nil
}

// ResponseFormat is a chat request's response_format.
type ResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
}

// StreamOptions are the stream options of a [ChatRequest].
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
	// IncludeObfuscation is accepted: baton sends no obfuscation padding.
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
}

// ChatMessage is a message of a [ChatRequest]. Content is a string or an
// array of parts ({"type": "text", "text": …}).
type ChatMessage struct {
	Role       string            `json:"role"`
	Content    json.RawMessage   `json:"content,omitempty"`
	Name       string            `json:"name,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	ToolCalls  []json.RawMessage `json:"tool_calls,omitempty"`
	Refusal    *string           `json:"refusal,omitempty"`
}

// ChatCompletion is a chat completion or one chunk of a streamed one.
type ChatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	SystemFingerprint string       `json:"system_fingerprint,omitempty"`
	Choices           []ChatChoice `json:"choices"`
	Usage             *ChatUsage   `json:"usage,omitempty"`
	// Baton says what became of the run, on a completion and on the last
	// chunk of a stream.
	Baton *OpenAIRun `json:"baton,omitempty"`
}

// OpenAIRun is the "baton" field of a chat completion or response: the
// run behind it. A run waiting for a person's approval has status
// "interrupted" and its interrupt.
type OpenAIRun struct {
	ThreadID  string           `json:"thread_id"`
	RunID     string           `json:"run_id"`
	Status    string           `json:"status"`
	LastAgent string           `json:"last_agent,omitempty"`
	Interrupt *OpenAIInterrupt `json:"interrupt,omitempty"`
}

// OpenAIInterrupt is an approval a run waits for: decide it with POST
// DecisionURL ({"decisions": …}, docs/api.md).
type OpenAIInterrupt struct {
	ID          string   `json:"id"`
	Tools       []string `json:"tools"`
	DecisionURL string   `json:"decision_url"`
}

// ChatChoice is the one choice of a [ChatCompletion].
type ChatChoice struct {
	Index        int         `json:"index"`
	Message      *ChatOutput `json:"message,omitempty"`
	Delta        *ChatOutput `json:"delta,omitempty"`
	FinishReason *string     `json:"finish_reason"`
	Logprobs     *struct{}   `json:"logprobs"`
}

// ChatOutput is the assistant message (or delta) of a [ChatChoice].
type ChatOutput struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
	Refusal *string `json:"refusal,omitempty"`
}

// ChatUsage counts the tokens of a chat completion.
type ChatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Model is an entry of GET /v1/models and the body of GET
// /v1/models/{id}: a network.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ResponsesRequest is the body of POST /v1/responses. Every field is
// honoured, accepted without effect (docs/api.md lists them) or refused
// (400); an unknown field is refused.
type ResponsesRequest struct {
	OpenAIRequest
	// Input is a string (the user's message) or an array of input items.
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions,omitempty"`
	MaxOutputTokens    *int            `json:"max_output_tokens,omitempty"`
	PreviousResponseID string          `json:"previous_response_id,omitempty"`
	Text               *ResponseText   `json:"text,omitempty"`
	Reasoning          *struct {
		Effort  string `json:"effort,omitempty"`
		Summary string `json:"summary,omitempty"`
	} `json:"reasoning,omitempty"`
	Truncation    string          `json:"truncation,omitempty"`
	Include       []string        `json:"include,omitempty"`
	MaxToolCalls  *int            `json:"max_tool_calls,omitempty"`
	Background    *bool           `json:"background,omitempty"`
	Conversation  json.RawMessage `json:"conversation,omitempty"`
	StreamOptions *StreamOptions  `json:"stream_options,omitempty"`
}

// ResponseText is a responses request's text options.
type ResponseText struct {
	Format *struct {
		Type string `json:"type"`
	} `json:"format,omitempty"`
	Verbosity string `json:"verbosity,omitempty"`
}

// ResponseInputItem is an item of a responses request's input: a message
// ({"role", "content"}, type "message" or absent). Content is a string or
// an array of parts (input_text, output_text).
type ResponseInputItem struct {
	Type    string          `json:"type,omitempty"`
	ID      string          `json:"id,omitempty"`
	Role    string          `json:"role,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	Status  string          `json:"status,omitempty"`
}

// Response is a response of the Responses API.
type Response struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	CreatedAt         int64              `json:"created_at"`
	Status            string             `json:"status"`
	Model             string             `json:"model"`
	Output            []ResponseItem     `json:"output"`
	OutputText        string             `json:"output_text"`
	Usage             *ResponseUsage     `json:"usage"`
	IncompleteDetails *IncompleteDetails `json:"incomplete_details"`
	Error             *ResponseError     `json:"error"`
	Instructions      *string            `json:"instructions"`
	Metadata          map[string]string  `json:"metadata"`
	ParallelToolCalls bool               `json:"parallel_tool_calls"`
	Temperature       *float64           `json:"temperature"`
	TopP              *float64           `json:"top_p"`
	MaxOutputTokens   *int               `json:"max_output_tokens"`
	ToolChoice        string             `json:"tool_choice"`
	Tools             []struct{}         `json:"tools"`
	Text              ResponseTextOut    `json:"text"`
	Store             bool               `json:"store"`
	Truncation        string             `json:"truncation"`
	Baton             *OpenAIRun         `json:"baton,omitempty"`
}

// ResponseTextOut is a response's text options: plain text.
type ResponseTextOut struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
	Verbosity string `json:"verbosity,omitempty"`
}

// ResponseItem is an output item of a [Response]: the assistant's message.
type ResponseItem struct {
	Type    string            `json:"type"`
	ID      string            `json:"id"`
	Status  string            `json:"status"`
	Role    string            `json:"role"`
	Content []ResponseContent `json:"content"`
}

// ResponseContent is a part of a [ResponseItem]'s content.
type ResponseContent struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
}

// ResponseUsage counts a response's tokens.
type ResponseUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// IncompleteDetails says why a response is incomplete: max_output_tokens,
// content_filter, or (baton's) interrupted, for a run waiting for a
// person's approval.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseError is a failed response's error.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ResponseEvent is an event of a streamed response: its type, its
// sequence number and the fields of its type.
type ResponseEvent struct {
	Type           string           `json:"type"`
	SequenceNumber int              `json:"sequence_number"`
	Response       *Response        `json:"response,omitempty"`
	OutputIndex    *int             `json:"output_index,omitempty"`
	ContentIndex   *int             `json:"content_index,omitempty"`
	ItemID         string           `json:"item_id,omitempty"`
	Item           *ResponseItem    `json:"item,omitempty"`
	Part           *ResponseContent `json:"part,omitempty"`
	Delta          *string          `json:"delta,omitempty"`
	Text           *string          `json:"text,omitempty"`
	Logprobs       []struct{}       `json:"logprobs,omitempty"`
	// Code, Message and Param are an "error" event's.
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	Param   string `json:"param,omitempty"`
}
