package openaimodel

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/outputschema"
)

// chatParams maps a request to Chat Completions parameters.
func (m *Model) chatParams(req *model.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(m.cfg.Model)}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i := range req.Messages {
		msg, ok, err := chatMessage(&req.Messages[i])
		if err != nil {
			return p, fmt.Errorf("message %d: %w", i, err)
		}
		if ok {
			p.Messages = append(p.Messages, msg...)
		}
	}
	for _, t := range req.Tools {
		params, err := outputschema.Object(t.Parameters)
		if err != nil {
			return p, fmt.Errorf("%w: tool %q parameters: %v", ErrUnsupported, t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fd.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	s := req.Settings
	if len(req.Tools) > 0 {
		switch s.ToolChoice {
		case "":
		case "auto", "none", "required":
			p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(s.ToolChoice)}
		default:
			if !hasTool(req.Tools, s.ToolChoice) {
				return p, fmt.Errorf("%w: tool_choice %q names no tool of the request", ErrUnsupported, s.ToolChoice)
			}
			p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: s.ToolChoice})
		}
		p.ParallelToolCalls = optional(s.ParallelToolCalls)
	}
	m.chatSettings(&p, &s)
	if o := req.Output; o != nil {
		if len(bytes.TrimSpace(o.Schema)) == 0 || !json.Valid(o.Schema) {
			return p, fmt.Errorf("%w: output schema is not JSON", ErrUnsupported)
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: schemaName(o.Name), Schema: o.Schema}
		if o.Strict {
			js.Strict = param.NewOpt(true)
		}
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}}
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}
	return p, nil
}

// chatSettings sets p's sampling, output and best-effort fields from s,
// each only where s has it (the compatible servers know max_tokens and
// user, OpenAI max_completion_tokens and safety_identifier; the prompt
// cache key and verbosity are OpenAI's only).
func (m *Model) chatSettings(p *openai.ChatCompletionNewParams, s *model.Settings) {
	p.Temperature = optional(s.Temperature)
	p.TopP = optional(s.TopP)
	if s.MaxTokens > 0 {
		if m.compat {
			p.MaxTokens = param.NewOpt(int64(s.MaxTokens))
		} else {
			p.MaxCompletionTokens = param.NewOpt(int64(s.MaxTokens))
		}
	}
	if len(s.Stop) > 0 {
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: s.Stop}
	}
	if s.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(s.ReasoningEffort)
	}
	p.Seed = optional(s.Seed)
	p.PresencePenalty = optional(s.PresencePenalty)
	p.FrequencyPenalty = optional(s.FrequencyPenalty)
	if len(s.LogitBias) > 0 {
		p.LogitBias = make(map[string]int64, len(s.LogitBias))
		for tok, b := range s.LogitBias {
			p.LogitBias[tok] = int64(b)
		}
	}
	if s.User != "" {
		// OpenAI replaced user with safety_identifier; the compatible
		// servers know user.
		if m.compat {
			p.User = param.NewOpt(s.User)
		} else {
			p.SafetyIdentifier = param.NewOpt(s.User)
		}
	}
	if s.PromptCacheKey != "" && !m.compat {
		p.PromptCacheKey = param.NewOpt(s.PromptCacheKey)
	}
	if s.Verbosity != "" && !m.compat {
		p.Verbosity = openai.ChatCompletionNewParamsVerbosity(s.Verbosity)
	}
}

func hasTool(tools []model.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// chatMessage maps one history message; ok is false when nothing is left to
// send (an assistant message holding only another provider's reasoning).
func chatMessage(msg *message.Message) ([]openai.ChatCompletionMessageParamUnion, bool, error) {
	switch msg.Role {
	case message.RoleSystem:
		text, err := textOnly(msg)
		if err != nil {
			return nil, false, err
		}
		return []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(text)}, true, nil
	case message.RoleUser:
		var parts []openai.ChatCompletionContentPartUnionParam
		images := false
		for j := range msg.Parts {
			pt := &msg.Parts[j]
			switch pt.Type {
			case message.PartText:
				parts = append(parts, openai.TextContentPart(pt.Text))
			case message.PartImage:
				u, err := imageURL(pt)
				if err != nil {
					return nil, false, err
				}
				images = true
				parts = append(parts, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: u}))
			case message.PartReasoning:
			default:
				return nil, false, fmt.Errorf("%w: %s part in a user message", ErrUnsupported, pt.Type)
			}
		}
		if !images {
			return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(msg.Text())}, true, nil
		}
		return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(parts)}, true, nil
	case message.RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		var text strings.Builder
		for j := range msg.Parts {
			pt := &msg.Parts[j]
			switch pt.Type {
			case message.PartText:
				text.WriteString(pt.Text)
			case message.PartToolCall:
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       pt.CallID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: pt.Name, Arguments: callArgs(pt)},
					},
				})
			case message.PartReasoning:
				// Chat Completions takes no reasoning back.
			default:
				return nil, false, fmt.Errorf("%w: %s part in an assistant message", ErrUnsupported, pt.Type)
			}
		}
		if text.Len() > 0 {
			a.Content.OfString = param.NewOpt(text.String())
		}
		if text.Len() == 0 && len(a.ToolCalls) == 0 {
			return nil, false, nil
		}
		return []openai.ChatCompletionMessageParamUnion{{OfAssistant: &a}}, true, nil
	case message.RoleTool:
		var out []openai.ChatCompletionMessageParamUnion
		for j := range msg.Parts {
			pt := &msg.Parts[j]
			if pt.Type != message.PartToolResult {
				return nil, false, fmt.Errorf("%w: %s part in a tool message", ErrUnsupported, pt.Type)
			}
			out = append(out, openai.ToolMessage(pt.Text, pt.CallID))
		}
		return out, len(out) > 0, nil
	}
	return nil, false, fmt.Errorf("%w: role %q", ErrUnsupported, msg.Role)
}

// optional is *v as an SDK parameter, or an omitted one when v is nil.
func optional[T comparable](v *T) param.Opt[T] {
	if v == nil {
		return param.Opt[T]{}
	}
	return param.NewOpt(*v)
}

func textOnly(msg *message.Message) (string, error) {
	for j := range msg.Parts {
		if t := msg.Parts[j].Type; t != message.PartText {
			return "", fmt.Errorf("%w: %s part in a %s message", ErrUnsupported, t, msg.Role)
		}
	}
	return msg.Text(), nil
}

// imageURL returns an image part as a URL: its own, or a data URL.
func imageURL(p *message.Part) (string, error) {
	if p.URL != "" {
		return p.URL, nil
	}
	if len(p.Data) == 0 {
		return "", fmt.Errorf("%w: image part without URL or data", ErrUnsupported)
	}
	mt := p.MediaType
	if mt == "" {
		mt = http.DetectContentType(p.Data)
	}
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(p.Data), nil
}

// callArgs is the arguments of a tool call part as the APIs take them back:
// blank arguments are the empty object.
func callArgs(pt *message.Part) string {
	if strings.TrimSpace(string(pt.Arguments)) == "" {
		return "{}"
	}
	return string(pt.Arguments)
}
