package anthropicmodel

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
	"github.com/batonhq/baton/model/internal/outputschema"
	"github.com/batonhq/baton/model/internal/sdkconfig"
)

// Provider is the provider name in errors and reasoning parts.
const Provider = "anthropic"

// DefaultBaseURL is the API base used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultMaxTokens is max_tokens when neither the settings nor the config set it.
const DefaultMaxTokens = 4096

// RedactedThinking is the ID of a reasoning part that holds a
// redacted_thinking block (its data is in Signature).
const RedactedThinking = "redacted_thinking"

// Structured output modes.
const (
	// OutputNative sends Request.Output as output_config.format.
	OutputNative = "native"
	// OutputTool sends Request.Output as a tool the model must call.
	OutputTool = "tool"
)

// Error codes of [*model.Error] values made by this package.
const (
	// CodeInvalidToolArguments: a tool_use input is not a JSON object.
	CodeInvalidToolArguments = "invalid_tool_arguments"
	// CodeOutputMismatch: structured output does not match Request.Output.
	CodeOutputMismatch = "output_schema_mismatch"
)

var (
	// ErrConfig is wrapped by [New] for an invalid [Config].
	ErrConfig = errors.New("anthropic: invalid config")
	// ErrUnsupported is wrapped when a request holds something the API
	// cannot take (an image outside a user message, an unknown role, a bad
	// schema, a forced tool choice while thinking).
	ErrUnsupported = errors.New("anthropic: unsupported request")
)

// Config configures a [Model]. The zero value of each optional field means
// its default.
type Config struct {
	// Model is the model name, e.g. "claude-sonnet-4-5". Required.
	Model string
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as x-api-key. It never appears in errors.
	APIKey string
	// HTTPClient makes the requests. Defaults to a client without a total
	// timeout (streams may be long); cancel through the context instead.
	HTTPClient *http.Client
	// Headers are added to every request (e.g. anthropic-beta).
	Headers map[string]string
	// MaxTokens is max_tokens when Settings.MaxTokens is 0. Defaults to
	// DefaultMaxTokens.
	MaxTokens int
	// StructuredOutput is OutputNative (default) or OutputTool.
	StructuredOutput string
}

// Model is an Anthropic model. It is safe for concurrent use.
type Model struct {
	cfg    Config
	client anthropic.Client
}

var _ model.Model = (*Model)(nil)

// New returns a Model for cfg after checking it.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, fmt.Errorf("%w: Model is required", ErrConfig)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if err := sdkconfig.CheckBaseURL(cfg.BaseURL, ErrConfig); err != nil {
		return nil, err
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: MaxTokens %d is negative", ErrConfig, cfg.MaxTokens)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	switch cfg.StructuredOutput {
	case "":
		cfg.StructuredOutput = OutputNative
	case OutputNative, OutputTool:
	default:
		return nil, fmt.Errorf("%w: StructuredOutput %q is not %q or %q", ErrConfig, cfg.StructuredOutput, OutputNative, OutputTool)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(sdkconfig.Client(cfg.HTTPClient)),
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
		// baton's telemetry owns the model-call spans.
		option.WithoutOpenTelemetry(),
	}
	client := anthropic.NewClient(append(opts, sdkconfig.Headers(cfg.Headers, option.WithHeader)...)...)
	return &Model{cfg: cfg, client: client}, nil
}

// Name returns "anthropic:<model>".
func (m *Model) Name() string { return Provider + ":" + m.cfg.Model }

// Stream calls the Messages API once and streams its answer; see the package
// documentation and [model.Model] for the contract.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		if err := httperr.Refuse(ctx, Provider, req, ErrUnsupported); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		m.stream(ctx, req, yield)
	}
}

// thinkingBudget maps a reasoning effort to a thinking budget in tokens; 0
// means no thinking.
func thinkingBudget(effort string) (int64, error) {
	switch effort {
	case "", "none":
		return 0, nil
	case "minimal":
		return 1024, nil
	case "low":
		return 2048, nil
	case "medium":
		return 8192, nil
	case "high":
		return 16384, nil
	case "xhigh", "max":
		return 32000, nil
	}
	return 0, fmt.Errorf("%w: reasoning_effort %q", ErrUnsupported, effort)
}

// outputTool is the name of the structured-output tool (OutputTool mode).
func outputToolName(o *model.OutputSchema) string {
	b := []byte(o.Name)
	out := b[:0]
	for _, c := range b {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "final_output"
	}
	return string(out[:min(len(out), 64)])
}

// params maps a request to Messages API parameters. outTool is the name of
// the structured-output tool, if one is used.
func (m *Model) params(req *model.Request) (p anthropic.MessageNewParams, outTool string, err error) {
	p.Model = anthropic.Model(m.cfg.Model)
	s := req.Settings
	maxTokens, budget, err := m.tokens(s)
	if err != nil {
		return p, "", err
	}
	p.MaxTokens = maxTokens
	p.StopSequences = s.Stop
	if budget > 0 {
		p.Thinking = anthropic.ThinkingConfigParamUnion{OfEnabled: &anthropic.ThinkingConfigEnabledParam{BudgetTokens: budget}}
	}
	if err := m.conversation(req, &p); err != nil {
		return p, "", err
	}
	for _, t := range req.Tools {
		tp, err := toolParam(t.Name, t.Description, t.Parameters)
		if err != nil {
			return p, "", err
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
	}
	choice, err := toolChoice(req, budget)
	if err != nil {
		return p, "", err
	}
	if o := req.Output; o != nil {
		if outTool, err = m.output(req, o, &p, &choice, budget); err != nil {
			return p, "", err
		}
	}
	if s.ParallelToolCalls != nil && !*s.ParallelToolCalls {
		switch {
		case choice.OfAuto != nil:
			choice.OfAuto.DisableParallelToolUse = param.NewOpt(true)
		case choice.OfAny != nil:
			choice.OfAny.DisableParallelToolUse = param.NewOpt(true)
		case choice.OfTool != nil:
			choice.OfTool.DisableParallelToolUse = param.NewOpt(true)
		}
	}
	p.ToolChoice = choice

	if s.Temperature != nil && budget == 0 {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil && (budget == 0 || *s.TopP >= 0.95) {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.User != "" {
		p.Metadata.UserID = param.NewOpt(s.User)
	}
	// The Messages API has no seed, penalties or logit bias: best effort,
	// they are left out.
	if s.PromptCaching == nil || *s.PromptCaching {
		cacheBreakpoints(&p)
	}
	return p, outTool, nil
}

// tokens returns a call's max_tokens and its thinking budget (0: no
// thinking): the budget of the reasoning effort, below max_tokens, which
// grows by the budget unless the request sets it; a budget under the API's
// minimum of 1024 means no thinking.
func (m *Model) tokens(s model.Settings) (maxTokens, budget int64, err error) {
	maxTokens = int64(m.cfg.MaxTokens)
	if s.MaxTokens > 0 {
		maxTokens = int64(s.MaxTokens)
	}
	budget, err = thinkingBudget(s.ReasoningEffort)
	if err != nil {
		return 0, 0, err
	}
	if budget > 0 {
		if s.MaxTokens == 0 {
			maxTokens = max(maxTokens, budget+int64(m.cfg.MaxTokens))
		}
		budget = min(budget, maxTokens-1)
		if budget < 1024 {
			budget = 0
		}
	}
	return maxTokens, budget, nil
}

// conversation sets p's system prompt (the request's, then its system
// messages' text) and its messages, consecutive ones of a role merged.
func (m *Model) conversation(req *model.Request, p *anthropic.MessageNewParams) error {
	if req.System != "" {
		p.System = append(p.System, anthropic.TextBlockParam{Text: req.System})
	}
	var msgs []anthropic.MessageParam
	for i := range req.Messages {
		msg := &req.Messages[i]
		if msg.Role == message.RoleSystem {
			for j := range msg.Parts {
				pt := &msg.Parts[j]
				if pt.Type != message.PartText {
					return fmt.Errorf("message %d: %w: %s part in a system message", i, ErrUnsupported, pt.Type)
				}
				if pt.Text != "" {
					p.System = append(p.System, anthropic.TextBlockParam{Text: pt.Text})
				}
			}
			continue
		}
		role, blocks, err := m.blocks(msg)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role == role {
			msgs[n-1].Content = append(msgs[n-1].Content, blocks...)
			continue
		}
		msgs = append(msgs, anthropic.MessageParam{Role: role, Content: blocks})
	}
	p.Messages = msgs
	return nil
}

// toolChoice maps the request's tool_choice (auto when parallel calls are
// disabled, to carry that); a forced tool is refused while thinking
// (budget > 0).
func toolChoice(req *model.Request, budget int64) (anthropic.ToolChoiceUnionParam, error) {
	var choice anthropic.ToolChoiceUnionParam
	s := req.Settings
	if len(req.Tools) == 0 {
		return choice, nil
	}
	switch s.ToolChoice {
	case "":
		if s.ParallelToolCalls != nil && !*s.ParallelToolCalls {
			choice.OfAuto = &anthropic.ToolChoiceAutoParam{}
		}
	case "auto":
		choice.OfAuto = &anthropic.ToolChoiceAutoParam{}
	case "none":
		choice.OfNone = &anthropic.ToolChoiceNoneParam{}
	case "required":
		choice.OfAny = &anthropic.ToolChoiceAnyParam{}
	default:
		if !slices.ContainsFunc(req.Tools, func(t model.Tool) bool { return t.Name == s.ToolChoice }) {
			return choice, fmt.Errorf("%w: tool_choice %q names no tool of the request", ErrUnsupported, s.ToolChoice)
		}
		choice.OfTool = &anthropic.ToolChoiceToolParam{Name: s.ToolChoice}
	}
	if budget > 0 && (choice.OfAny != nil || choice.OfTool != nil) {
		return choice, fmt.Errorf("%w: tool_choice %q cannot force a tool while thinking (reasoning_effort %q)", ErrUnsupported, s.ToolChoice, s.ReasoningEffort)
	}
	return choice, nil
}

// output asks for the structured output o: a native JSON output format,
// or (OutputTool mode) a tool the answer calls, forced through choice when
// nothing else is and the model does not think. It returns that tool's
// name.
func (m *Model) output(req *model.Request, o *model.OutputSchema, p *anthropic.MessageNewParams, choice *anthropic.ToolChoiceUnionParam, budget int64) (outTool string, err error) {
	sch, err := outputschema.Object(o.Schema)
	if err != nil || len(strings.TrimSpace(string(o.Schema))) == 0 {
		return "", fmt.Errorf("%w: output schema is not a JSON object", ErrUnsupported)
	}
	if m.cfg.StructuredOutput != OutputTool {
		p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: sch}
		return "", nil
	}
	outTool = outputToolName(o)
	if slices.ContainsFunc(req.Tools, func(t model.Tool) bool { return t.Name == outTool }) {
		return "", fmt.Errorf("%w: output tool name %q is taken by a tool", ErrUnsupported, outTool)
	}
	tp, err := toolParam(outTool, "Give the final answer by calling this tool with it as input.", o.Schema)
	if err != nil {
		return "", err
	}
	p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tp})
	// A forced tool is not allowed while thinking.
	if budget == 0 && choice.OfNone == nil {
		if len(req.Tools) == 0 {
			*choice = anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: outTool}}
		} else if choice.OfTool == nil {
			*choice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
		}
	}
	return outTool, nil
}

// cacheBreakpoints marks the prefixes Anthropic may cache (cache_control,
// ephemeral): the system prompt (its last block), the tools (the last one)
// and the conversation (the last block of the last message that can carry
// a mark; thinking blocks cannot). Three of the four breakpoints the API
// allows; a prefix shorter than the model's minimum is simply not cached.
func cacheBreakpoints(p *anthropic.MessageNewParams) {
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	if n := len(p.Tools); n > 0 {
		if cc := p.Tools[n-1].GetCacheControl(); cc != nil {
			*cc = anthropic.NewCacheControlEphemeralParam()
		}
	}
	if n := len(p.Messages); n > 0 {
		content := p.Messages[n-1].Content
		for i := len(content) - 1; i >= 0; i-- {
			if cc := content[i].GetCacheControl(); cc != nil {
				*cc = anthropic.NewCacheControlEphemeralParam()
				return
			}
		}
	}
}

// toolParam maps a JSON Schema object to a tool's input_schema.
func toolParam(name, desc string, schema json.RawMessage) (*anthropic.ToolParam, error) {
	sch, err := outputschema.Object(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: tool %q parameters: %v", ErrUnsupported, name, err)
	}
	in := anthropic.ToolInputSchemaParam{Properties: map[string]any{}}
	for k, v := range sch {
		switch k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			l, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%w: tool %q: required is not a list", ErrUnsupported, name)
			}
			for _, e := range l {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%w: tool %q: required holds a non-string", ErrUnsupported, name)
				}
				in.Required = append(in.Required, s)
			}
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = make(map[string]any)
			}
			in.ExtraFields[k] = v
		}
	}
	tp := &anthropic.ToolParam{Name: name, InputSchema: in}
	if desc != "" {
		tp.Description = param.NewOpt(desc)
	}
	return tp, nil
}

// blocks maps a user, assistant or tool message to content blocks, part by
// part (see partBlock).
func (m *Model) blocks(msg *message.Message) (anthropic.MessageParamRole, []anthropic.ContentBlockParamUnion, error) {
	var role anthropic.MessageParamRole
	var where string
	switch msg.Role {
	case message.RoleUser:
		role, where = anthropic.MessageParamRoleUser, "a user message"
	case message.RoleAssistant:
		role, where = anthropic.MessageParamRoleAssistant, "an assistant message"
	case message.RoleTool:
		role, where = anthropic.MessageParamRoleUser, "a tool message"
	default:
		return "", nil, fmt.Errorf("%w: role %q", ErrUnsupported, msg.Role)
	}
	var out []anthropic.ContentBlockParamUnion
	for j := range msg.Parts {
		pt := &msg.Parts[j]
		b, ok, err := partBlock(msg.Role, pt)
		if err != nil {
			return role, nil, err
		}
		if !ok {
			return role, nil, fmt.Errorf("%w: %s part in %s", ErrUnsupported, pt.Type, where)
		}
		if b != nil {
			out = append(out, *b)
		}
	}
	return role, out, nil
}

// partBlock maps one part of a message of role: a user message holds text
// and images, an assistant message text, Anthropic's own signed thinking
// (redacted or not) and tool calls, a tool message one tool_result block
// per result. It returns ok false for a part that has no place in such a
// message, and no block for a part that is dropped (empty text, another
// provider's reasoning).
func partBlock(role message.Role, pt *message.Part) (*anthropic.ContentBlockParamUnion, bool, error) {
	switch {
	case pt.Type == message.PartText && role != message.RoleTool:
		if pt.Text == "" {
			return nil, true, nil
		}
		b := anthropic.NewTextBlock(pt.Text)
		return &b, true, nil
	case pt.Type == message.PartImage && role == message.RoleUser:
		b, err := imageBlock(pt)
		return &b, true, err
	case pt.Type == message.PartReasoning && role == message.RoleUser:
		return nil, true, nil
	case pt.Type == message.PartReasoning && role == message.RoleAssistant:
		if pt.Provider != Provider || pt.Signature == "" {
			return nil, true, nil
		}
		if pt.ID == RedactedThinking {
			return &anthropic.ContentBlockParamUnion{OfRedactedThinking: &anthropic.RedactedThinkingBlockParam{Data: pt.Signature}}, true, nil
		}
		return &anthropic.ContentBlockParamUnion{OfThinking: &anthropic.ThinkingBlockParam{Thinking: pt.Text, Signature: pt.Signature}}, true, nil
	case pt.Type == message.PartToolCall && role == message.RoleAssistant:
		args := json.RawMessage(pt.Arguments)
		if len(strings.TrimSpace(string(args))) == 0 || !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		return &anthropic.ContentBlockParamUnion{OfToolUse: &anthropic.ToolUseBlockParam{ID: pt.CallID, Name: pt.Name, Input: args}}, true, nil
	case pt.Type == message.PartToolResult && role == message.RoleTool:
		r := &anthropic.ToolResultBlockParam{ToolUseID: pt.CallID}
		if pt.Text != "" {
			r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: pt.Text}}}
		}
		if pt.IsError {
			r.IsError = param.NewOpt(true)
		}
		return &anthropic.ContentBlockParamUnion{OfToolResult: r}, true, nil
	}
	return nil, false, nil
}

func imageBlock(p *message.Part) (anthropic.ContentBlockParamUnion, error) {
	if p.URL != "" {
		return anthropic.ContentBlockParamUnion{OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{OfURL: &anthropic.URLImageSourceParam{URL: p.URL}}}}, nil
	}
	if len(p.Data) == 0 {
		return anthropic.ContentBlockParamUnion{}, fmt.Errorf("%w: image part without URL or data", ErrUnsupported)
	}
	mt := p.MediaType
	if mt == "" {
		mt = http.DetectContentType(p.Data)
	}
	switch mt {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
	default:
		return anthropic.ContentBlockParamUnion{}, fmt.Errorf("%w: image media type %q (want jpeg, png, gif or webp)", ErrUnsupported, mt)
	}
	return anthropic.ContentBlockParamUnion{OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
		Data: base64.StdEncoding.EncodeToString(p.Data), MediaType: anthropic.Base64ImageSourceMediaType(mt),
	}}}}, nil
}
