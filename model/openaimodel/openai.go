package openaimodel

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
	"github.com/batonhq/baton/model/internal/sdkconfig"
)

// APIs.
const (
	// APIChat is the Chat Completions API (POST {base}/chat/completions).
	APIChat = "chat"
	// APIResponses is the Responses API (POST {base}/responses).
	APIResponses = "responses"
)

// Providers.
const (
	// ProviderOpenAI is OpenAI itself: strict stream checks.
	ProviderOpenAI = "openai"
	// ProviderCompatible is any OpenAI-compatible server: lenient stream checks.
	ProviderCompatible = "openai-compatible"
)

// DefaultBaseURL is the base URL used for OpenAI when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// Error codes of [*model.Error] values made by this package (besides the
// provider's own codes).
const (
	// CodeInvalidToolArguments: a tool call's arguments are not a JSON object.
	CodeInvalidToolArguments = "invalid_tool_arguments"
	// CodeOutputMismatch: structured output does not match Request.Output.
	CodeOutputMismatch = "output_schema_mismatch"
	// CodeRefusal: the model refused to produce structured output.
	CodeRefusal = model.CodeRefusal
)

var (
	// ErrConfig is wrapped by [New] for an invalid [Config].
	ErrConfig = errors.New("openai: invalid config")
	// ErrUnsupported is wrapped when a request holds something the API cannot
	// take (an image outside a user message, an unknown role, a bad schema).
	ErrUnsupported = errors.New("openai: unsupported request")
)

// Config configures a [Model]. The zero value of each optional field means
// its default.
type Config struct {
	// Model is the model name sent to the API, e.g. "gpt-4o-mini". Required.
	Model string
	// API is APIChat or APIResponses. Defaults to APIChat.
	API string
	// BaseURL is the API base, e.g. "http://localhost:11434/v1". Defaults to
	// DefaultBaseURL for OpenAI; required for ProviderCompatible.
	BaseURL string
	// APIKey is sent as a bearer token. Empty sends no Authorization header
	// (fine for local compatible servers). It never appears in errors.
	APIKey string
	// HTTPClient makes the requests. Defaults to a client without a total
	// timeout (streams may be long); cancel through the context instead.
	HTTPClient *http.Client
	// Provider is ProviderOpenAI or ProviderCompatible; it names the provider
	// in errors and selects strict or lenient stream checks. Defaults to
	// ProviderOpenAI.
	Provider string
	// Headers are added to every request.
	Headers map[string]string
	// Store sets the Responses API's store flag. Defaults to false: baton keeps
	// the history, and reasoning travels back as encrypted content.
	Store bool
	// ReasoningSummary asks reasoning models on the Responses API for a
	// summary of their reasoning ("auto", "concise", "detailed"), streamed as
	// ChunkReasoning. Defaults to none.
	ReasoningSummary string
	// EncryptedReasoning, when set, says whether to ask the Responses API for
	// reasoning.encrypted_content (needed to send reasoning back when Store is
	// false). Defaults to true for reasoning models (names starting with o1,
	// o3, o4, gpt-5 except gpt-5-chat) and whenever Settings.ReasoningEffort
	// is set, false otherwise: other models reject it.
	EncryptedReasoning *bool
}

// Model is an OpenAI or OpenAI-compatible model. It is safe for concurrent
// use; New it once and share it.
type Model struct {
	cfg       Config
	provider  string
	compat    bool
	chat      openai.ChatCompletionService
	responses responses.ResponseService
}

var _ model.Model = (*Model)(nil)

// New returns a Model for cfg after checking it.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%w: Model is required", ErrConfig)
	}
	if err := either("API", &cfg.API, APIChat, APIResponses); err != nil {
		return nil, err
	}
	if err := either("Provider", &cfg.Provider, ProviderOpenAI, ProviderCompatible); err != nil {
		return nil, err
	}
	if cfg.BaseURL == "" {
		if cfg.Provider == ProviderCompatible {
			return nil, fmt.Errorf("%w: BaseURL is required for %s", ErrConfig, ProviderCompatible)
		}
		cfg.BaseURL = DefaultBaseURL
	}
	if err := sdkconfig.CheckBaseURL(cfg.BaseURL, ErrConfig); err != nil {
		return nil, err
	}
	switch cfg.ReasoningSummary {
	case "", "auto", "concise", "detailed":
	default:
		return nil, fmt.Errorf("%w: ReasoningSummary %q is not auto, concise or detailed", ErrConfig, cfg.ReasoningSummary)
	}
	// The services are built directly (not through openai.NewClient) so that
	// no OPENAI_* environment variable leaks into the requests: a compatible
	// server must never receive the OpenAI key.
	opts := append([]option.RequestOption{
		option.WithHTTPClient(sdkconfig.Client(cfg.HTTPClient)),
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}, sdkconfig.Headers(cfg.Headers, option.WithHeader)...)
	m := &Model{
		cfg:       cfg,
		provider:  cfg.Provider,
		compat:    cfg.Provider == ProviderCompatible,
		chat:      openai.NewChatCompletionService(opts...),
		responses: responses.NewResponseService(opts...),
	}
	return m, nil
}

// either sets the config field *v, called name, to def when it is empty, and
// checks that it is def or other.
func either(name string, v *string, def, other string) error {
	if *v == "" {
		*v = def
	}
	if *v != def && *v != other {
		return fmt.Errorf("%w: %s %q is not %q or %q", ErrConfig, name, *v, def, other)
	}
	return nil
}

// Name returns "<provider>:<model>", e.g. "openai:gpt-4o-mini".
func (m *Model) Name() string { return m.provider + ":" + m.cfg.Model }

// Stream calls the configured API once and streams its answer; see the
// package documentation and [model.Model] for the contract.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if err := httperr.Refuse(ctx, m.provider, req, ErrUnsupported); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if m.cfg.API == APIResponses {
			// The Responses API has no stop parameter: the stream is cut here.
			seq := model.CutAtStop(func(y func(model.Chunk, error) bool) { m.streamResponses(ctx, req, y) }, req.Settings.Stop)
			for c, err := range seq {
				if !yield(c, err) {
					return
				}
			}
			return
		}
		m.streamChat(ctx, req, yield)
	}
}

// callError classifies the error of the SDK call that should have returned
// the response.
func (m *Model) callError(ctx context.Context, c *httperr.Capture, err error) *model.Error {
	if ctx.Err() != nil {
		return httperr.Canceled(ctx, m.provider)
	}
	if c.Status >= 400 {
		return httperr.Response(m.provider, c.Status, c.Header, c.Body, err, m.cfg.APIKey)
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode >= 400 {
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return httperr.Response(m.provider, apiErr.StatusCode, h, []byte(apiErr.RawJSON()), err, m.cfg.APIKey)
	}
	return httperr.Transport(ctx, m.provider, httperr.RequestID(c.Header), err)
}

// streamError classifies an error that ended a stream that had started.
func (m *Model) streamError(ctx context.Context, requestID string, err error) *model.Error {
	return httperr.Transport(ctx, m.provider, requestID, err)
}

func (m *Model) invalidArgs(requestID, name string, finish string, err error) *model.Error {
	msg := fmt.Sprintf("tool call %q: %v", name, err)
	if finish == "length" {
		msg += " (the output hit its token limit; raise max_tokens)"
	}
	return &model.Error{Provider: m.provider, Code: CodeInvalidToolArguments, Message: msg, RequestID: requestID, Err: err}
}

func (m *Model) outputError(requestID string, err error) *model.Error {
	return &model.Error{Provider: m.provider, Code: CodeOutputMismatch, Message: err.Error(), RequestID: requestID, Err: err}
}

// normFinish maps a provider finish reason to baton's words.
func normFinish(s string, hasCalls bool) string {
	switch s {
	case "stop", "end_turn", "stop_sequence", "eos", "completed":
		if hasCalls {
			return "tool_calls"
		}
		return "stop"
	case "length", "max_tokens", "max_output_tokens", "model_length":
		return "length"
	case "tool_calls", "function_call", "tool_use":
		return "tool_calls"
	case "content_filter", "safety":
		return "content_filter"
	case "refusal":
		return "refusal"
	}
	return s
}

// schemaName makes a name the APIs accept (^[a-zA-Z0-9_-]{1,64}$).
func schemaName(s string) string {
	b := []byte(s)
	out := b[:0]
	for _, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			out = append(out, c)
		} else {
			out = append(out, '_')
		}
	}
	if len(out) == 0 {
		return "output"
	}
	if len(out) > 64 {
		out = out[:64]
	}
	return string(out)
}
