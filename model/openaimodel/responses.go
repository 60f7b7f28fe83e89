package openaimodel

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/outputschema"
)

// isReasoningModel guesses from its name whether a model reasons (and so
// accepts reasoning.encrypted_content).
func isReasoningModel(name string) bool {
	n := strings.ToLower(name)
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	if strings.HasPrefix(n, "gpt-5") {
		return !strings.HasPrefix(n, "gpt-5-chat")
	}
	return len(n) >= 2 && n[0] == 'o' && n[1] >= '1' && n[1] <= '9'
}

func (m *Model) wantEncrypted(s model.Settings) bool {
	if m.cfg.EncryptedReasoning != nil {
		return *m.cfg.EncryptedReasoning
	}
	if m.cfg.Store {
		return false
	}
	return (s.ReasoningEffort != "" && s.ReasoningEffort != "none") || isReasoningModel(m.cfg.Model)
}

// responsesParams maps a request to Responses API parameters.
func (m *Model) responsesParams(req *model.Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{
		Model: shared.ResponsesModel(m.cfg.Model),
		Store: param.NewOpt(m.cfg.Store),
	}
	if req.System != "" {
		p.Instructions = param.NewOpt(req.System)
	}
	items := responses.ResponseInputParam{}
	for i := range req.Messages {
		it, err := m.responsesItems(&req.Messages[i])
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		items = append(items, it...)
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		params, err := outputschema.Object(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("%w: tool %q parameters: %v", ErrUnsupported, t.Name, err)
		}
		// Strict is sent as false: strict mode rejects schemas with optional
		// properties, and the arguments are checked here anyway.
		ft := responses.FunctionToolParam{Name: t.Name, Parameters: params, Strict: param.NewOpt(false)}
		if t.Description != "" {
			ft.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: &ft})
	}
	s := req.Settings
	if len(req.Tools) > 0 {
		switch s.ToolChoice {
		case "":
		case "auto", "none", "required":
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: param.NewOpt(responses.ToolChoiceOptions(s.ToolChoice))}
		default:
			if !hasTool(req.Tools, s.ToolChoice) {
				return p, fmt.Errorf("%w: tool_choice %q names no tool of the request", ErrUnsupported, s.ToolChoice)
			}
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: s.ToolChoice}}
		}
		p.ParallelToolCalls = optional(s.ParallelToolCalls)
	}
	p.Temperature = optional(s.Temperature)
	p.TopP = optional(s.TopP)
	if s.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(s.MaxTokens))
	}
	if s.ReasoningEffort != "" {
		p.Reasoning.Effort = shared.ReasoningEffort(s.ReasoningEffort)
	}
	// The Responses API has no seed, penalties or logit bias: best effort,
	// they are left out.
	if s.User != "" {
		p.SafetyIdentifier = param.NewOpt(s.User)
	}
	if s.PromptCacheKey != "" {
		p.PromptCacheKey = param.NewOpt(s.PromptCacheKey)
	}
	if s.Verbosity != "" {
		p.Text.Verbosity = responses.ResponseTextConfigVerbosity(s.Verbosity)
	}
	if m.cfg.ReasoningSummary != "" {
		p.Reasoning.Summary = shared.ReasoningSummary(m.cfg.ReasoningSummary)
	}
	if m.wantEncrypted(s) {
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	if o := req.Output; o != nil {
		sch, err := outputschema.Object(o.Schema)
		if err != nil || len(bytes.TrimSpace(o.Schema)) == 0 {
			return p, fmt.Errorf("%w: output schema is not a JSON object", ErrUnsupported)
		}
		js := &responses.ResponseFormatTextJSONSchemaConfigParam{Name: schemaName(o.Name), Schema: sch}
		if o.Strict {
			js.Strict = param.NewOpt(true)
		}
		p.Text.Format = responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: js}
	}
	return p, nil
}

// responsesItems maps one history message to input items.
func (m *Model) responsesItems(msg *message.Message) ([]responses.ResponseInputItemUnionParam, error) {
	switch msg.Role {
	case message.RoleSystem:
		text, err := textOnly(msg)
		if err != nil {
			return nil, err
		}
		return []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleSystem)}, nil
	case message.RoleUser:
		return userItems(msg)
	case message.RoleAssistant:
		return m.assistantItems(msg)
	case message.RoleTool:
		return toolItems(msg)
	}
	return nil, fmt.Errorf("%w: role %q", ErrUnsupported, msg.Role)
}

// userItems maps a user message: its text, or its text and images.
func userItems(msg *message.Message) ([]responses.ResponseInputItemUnionParam, error) {
	var content responses.ResponseInputMessageContentListParam
	images := false
	for j := range msg.Parts {
		pt := &msg.Parts[j]
		switch pt.Type {
		case message.PartText:
			content = append(content, responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: pt.Text}})
		case message.PartImage:
			u, err := imageURL(pt)
			if err != nil {
				return nil, err
			}
			images = true
			content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
				ImageURL: param.NewOpt(u), Detail: responses.ResponseInputImageDetailAuto,
			}})
		case message.PartReasoning:
		default:
			return nil, fmt.Errorf("%w: %s part in a user message", ErrUnsupported, pt.Type)
		}
	}
	if !images {
		return []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage(msg.Text(), responses.EasyInputMessageRoleUser)}, nil
	}
	return []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser)}, nil
}

// assistantItems maps an assistant message: its text between its items,
// OpenAI's own reasoning items that can be resolved, its function calls.
func (m *Model) assistantItems(msg *message.Message) ([]responses.ResponseInputItemUnionParam, error) {
	var out []responses.ResponseInputItemUnionParam
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			out = append(out, responses.ResponseInputItemParamOfMessage(text.String(), responses.EasyInputMessageRoleAssistant))
			text.Reset()
		}
	}
	for j := range msg.Parts {
		pt := &msg.Parts[j]
		switch pt.Type {
		case message.PartText:
			text.WriteString(pt.Text)
		case message.PartReasoning:
			// Only OpenAI's own reasoning items go back, and only when
			// they can be resolved: by encrypted content, or by id from
			// a stored response.
			if pt.Provider != ProviderOpenAI || pt.ID == "" || (pt.Signature == "" && !m.cfg.Store) {
				continue
			}
			flush()
			r := &responses.ResponseReasoningItemParam{ID: pt.ID, Summary: []responses.ResponseReasoningItemSummaryParam{}}
			if pt.Text != "" {
				r.Summary = append(r.Summary, responses.ResponseReasoningItemSummaryParam{Text: pt.Text})
			}
			if pt.Signature != "" {
				r.EncryptedContent = param.NewOpt(pt.Signature)
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfReasoning: r})
		case message.PartToolCall:
			flush()
			fc := &responses.ResponseFunctionToolCallParam{Arguments: callArgs(pt), CallID: pt.CallID, Name: pt.Name}
			if strings.HasPrefix(pt.ID, "fc") {
				fc.ID = param.NewOpt(pt.ID)
			}
			out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCall: fc})
		default:
			return nil, fmt.Errorf("%w: %s part in an assistant message", ErrUnsupported, pt.Type)
		}
	}
	flush()
	return out, nil
}

// toolItems maps a tool message: one function call output per result.
func toolItems(msg *message.Message) ([]responses.ResponseInputItemUnionParam, error) {
	var out []responses.ResponseInputItemUnionParam
	for j := range msg.Parts {
		pt := &msg.Parts[j]
		if pt.Type != message.PartToolResult {
			return nil, fmt.Errorf("%w: %s part in a tool message", ErrUnsupported, pt.Type)
		}
		out = append(out, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
			CallID: param.NewOpt(pt.CallID),
			Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(pt.Text)},
		}})
	}
	return out, nil
}
