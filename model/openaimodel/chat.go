package openaimodel

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
	"github.com/batonhq/baton/model/internal/outputschema"
	"github.com/batonhq/baton/model/internal/toolargs"
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
				args := string(pt.Arguments)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       pt.CallID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: pt.Name, Arguments: args},
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

// rawStream maps req to the parameters of one API call with build, sends
// them as a streaming request through the SDK method call, and returns the
// raw response, whose body the caller closes. On failure it yields the
// error (a call failure classified by callError) and returns nil.
func rawStream[P, R any](ctx context.Context, m *Model, req *model.Request, build func(*model.Request) (P, error),
	call func(context.Context, P, ...option.RequestOption) (R, error), yield func(model.Chunk, error) bool) *http.Response {
	params, err := build(req)
	if err != nil {
		yield(model.Chunk{}, fmt.Errorf("%s: %w", m.provider, err))
		return nil
	}
	var capture httperr.Capture
	var res *http.Response
	_, err = call(ctx, params, option.WithJSONSet("stream", true), option.WithMiddleware(capture.Middleware), option.WithResponseBodyInto(&res))
	if err == nil && res == nil {
		err = errors.New("no response")
	}
	if err != nil {
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		yield(model.Chunk{}, m.callError(ctx, &capture, err))
		return nil
	}
	return res
}

// streamChat runs one Chat Completions call.
func (m *Model) streamChat(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
	// The raw response is taken (instead of the SDK's stream) so that the
	// [DONE] line can be told apart from a connection that just closed.
	res := rawStream(ctx, m, req, m.chatParams, m.chat.New, yield)
	if res == nil {
		return
	}
	defer res.Body.Close()
	acc := newChatAcc(m, req, httperr.RequestID(res.Header))
	body := m.eventStream(ctx, res, acc.requestID, func(b []byte) { m.chatJSON(b, acc, yield) }, yield)
	if body == nil {
		return
	}
	dec := ssestream.NewDecoder(res)
	sawDone := false
	for !sawDone && dec.Next() {
		data := bytes.TrimSpace(dec.Event().Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			sawDone = true
			break
		}
		var c openai.ChatCompletionChunk
		if !m.decodeChat(acc.requestID, data, &c, "malformed stream event", yield) || !acc.addChunk(&c, yield) {
			return
		}
	}
	if !sawDone {
		if err := m.unfinished(ctx, acc.requestID, dec, body); err != nil {
			yield(model.Chunk{}, err)
			return
		}
	}
	acc.finish(sawDone, yield)
}

// eventStream opens a successful response's body and returns it when it is
// an event stream; a whole JSON body goes to whole (see
// [httperr.EventStream]), unless it is an error object, which is the
// provider's error.
func (m *Model) eventStream(ctx context.Context, res *http.Response, requestID string, whole func([]byte), yield func(model.Chunk, error) bool) *httperr.Content {
	return httperr.EventStream(ctx, res, m.provider, requestID, func(b []byte) {
		if isErrorEvent(b) {
			yield(model.Chunk{}, httperr.StreamEvent(m.provider, requestID, b, m.cfg.APIKey))
			return
		}
		whole(b)
	}, yield, m.cfg.APIKey)
}

// unfinished is the error of an event stream that ended before its terminal
// event: a broken connection, the end of ctx, or a body that holds no event
// at all; nil when the stream just stopped.
func (m *Model) unfinished(ctx context.Context, requestID string, dec ssestream.Decoder, body *httperr.Content) error {
	if err := dec.Err(); err != nil || ctx.Err() != nil {
		return m.streamError(ctx, requestID, err)
	}
	return body.Eventless(m.provider, requestID, m.cfg.APIKey)
}

// malformed is the permanent error of a body the adapter cannot use, with a
// snippet of it.
func (m *Model) malformed(requestID, what string, body []byte, err error) *model.Error {
	return httperr.Malformed(m.provider, requestID, what, body, err, m.cfg.APIKey)
}

// chatJSON accepts a whole (non-streamed) completion b from a server that
// ignored "stream": true.
func (m *Model) chatJSON(b []byte, acc *chatAcc, yield func(model.Chunk, error) bool) {
	var c openai.ChatCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		yield(model.Chunk{}, m.malformed(acc.requestID, "malformed completion", b, err))
		return
	}
	first := -1
	for i := range c.Choices {
		if c.Choices[i].Index == 0 {
			first = i
			break
		}
	}
	switch {
	case first < 0:
		yield(model.Chunk{}, m.malformed(acc.requestID, "completion without a choice", b, nil))
		return
	case !m.compat && c.Choices[first].FinishReason == "":
		yield(model.Chunk{}, m.malformed(acc.requestID, "completion without a finish_reason", b, nil))
		return
	}
	acc.setModel(c.Model)
	ch := &c.Choices[first]
	msg := &ch.Message
	if r := extraString(msg.JSON.ExtraFields); r != "" && !acc.reasoningDelta(r, yield) {
		return
	}
	if msg.Content != "" && !acc.textDelta(msg.Content, yield) {
		return
	}
	acc.refusal.WriteString(msg.Refusal)
	for i, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		acc.callDelta(int64(i), true, tc.ID, tc.Function.Name, argsFragment(tc.Function.Arguments, tc.Function.JSON.Arguments))
	}
	acc.finishReason = ch.FinishReason
	if c.JSON.Usage.Valid() {
		acc.setUsage(&c.Usage)
	}
	acc.finish(true, yield)
}

// decodeChat decodes data, a Chat Completions stream event, into v. It
// yields an error object as the provider's error, and data it cannot decode
// as an invalid stream (what names it, with a snippet of data), and then
// reports false.
func (m *Model) decodeChat(requestID string, data []byte, v any, what string, yield func(model.Chunk, error) bool) bool {
	if isErrorEvent(data) {
		yield(model.Chunk{}, httperr.StreamEvent(m.provider, requestID, data, m.cfg.APIKey))
		return false
	}
	if err := json.Unmarshal(data, v); err != nil {
		yield(model.Chunk{}, httperr.InvalidEvent(m.provider, requestID, what, data, err, m.cfg.APIKey))
		return false
	}
	return true
}

// isErrorEvent reports whether a stream event is an error object rather than
// a chunk: {"error":...} (OpenAI and most servers) or {"object":"error",...}
// (vLLM).
func isErrorEvent(data []byte) bool {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return false
	}
	var probe struct {
		Error  json.RawMessage `json:"error"`
		Object string          `json:"object"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	e := bytes.TrimSpace(probe.Error)
	return (len(e) > 0 && !bytes.Equal(e, []byte("null"))) || probe.Object == "error"
}

// extraString returns the reasoning text compatible servers put in
// reasoning_content (vLLM, DeepSeek, LM Studio) or reasoning (Ollama,
// OpenRouter).
func extraString(extra map[string]respjson.Field) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		f, ok := extra[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// argsFragment returns a fragment of arguments; servers that send the
// arguments as a JSON object instead of a string get the object's text.
func argsFragment(s string, f respjson.Field) string {
	if s != "" {
		return s
	}
	raw := strings.TrimSpace(f.Raw())
	if strings.HasPrefix(raw, "{") {
		return raw
	}
	return ""
}

// chatAcc folds Chat Completions chunks into one assistant message.
type chatAcc struct {
	m            *Model
	req          *model.Request
	requestID    string
	model        string
	text         strings.Builder
	refusal      strings.Builder
	reasoning    strings.Builder
	calls        []*chatCall
	byIndex      map[int64]*chatCall
	finishReason string
	usage        message.Usage
}

type chatCall struct {
	id, name string
	args     strings.Builder
}

func newChatAcc(m *Model, req *model.Request, requestID string) *chatAcc {
	return &chatAcc{m: m, req: req, requestID: requestID, byIndex: make(map[int64]*chatCall)}
}

func (a *chatAcc) setModel(s string) {
	if s != "" {
		a.model = s
	}
}

func (a *chatAcc) setUsage(u *openai.CompletionUsage) {
	if u.PromptTokens == 0 && u.CompletionTokens == 0 && !a.usage.IsZero() {
		return // an empty usage object after the real one (some servers)
	}
	a.usage = message.Usage{
		InputTokens:     u.PromptTokens,
		OutputTokens:    u.CompletionTokens,
		CachedTokens:    u.PromptTokensDetails.CachedTokens,
		ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
	}
}

func (a *chatAcc) textDelta(s string, yield func(model.Chunk, error) bool) bool {
	a.text.WriteString(s)
	return yield(model.Chunk{Type: model.ChunkText, Text: s}, nil)
}

func (a *chatAcc) reasoningDelta(s string, yield func(model.Chunk, error) bool) bool {
	a.reasoning.WriteString(s)
	return yield(model.Chunk{Type: model.ChunkReasoning, Text: s}, nil)
}

// addChunk folds one chunk in and yields its deltas; false means stop.
func (a *chatAcc) addChunk(c *openai.ChatCompletionChunk, yield func(model.Chunk, error) bool) bool {
	a.setModel(c.Model)
	if c.JSON.Usage.Valid() {
		a.setUsage(&c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n > 1 is never requested
		}
		d := &ch.Delta
		if r := extraString(d.JSON.ExtraFields); r != "" && !a.reasoningDelta(r, yield) {
			return false
		}
		if d.Content != "" && !a.textDelta(d.Content, yield) {
			return false
		}
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			a.callDelta(tc.Index, tc.JSON.Index.Valid(), tc.ID, tc.Function.Name, argsFragment(tc.Function.Arguments, tc.Function.JSON.Arguments))
		}
		if ch.FinishReason != "" {
			a.finishReason = ch.FinishReason
		}
	}
	return true
}

// callDelta folds one tool-call fragment in. Calls are keyed by index; a
// fragment without an index continues the last call unless it brings a new
// id; a new id on a known index starts a new call (servers that number every
// call 0). A name equal to the one known is a repeat (servers that send it
// in every fragment); a different one continues it.
func (a *chatAcc) callDelta(index int64, indexValid bool, id, name, args string) {
	var last *chatCall
	if n := len(a.calls); n > 0 {
		last = a.calls[n-1]
	}
	var c *chatCall
	if indexValid {
		c = a.byIndex[index]
	} else {
		c = last
	}
	if c != nil && id != "" && c.id != "" && id != c.id {
		c = nil
	}
	if c == nil {
		c = &chatCall{}
		a.calls = append(a.calls, c)
		if !indexValid {
			index = -int64(len(a.calls)) // never collides with a real index
		}
		a.byIndex[index] = c
	}
	if id != "" && c.id == "" {
		c.id = id
	}
	switch {
	case name == "" || name == c.name:
	case c.name == "":
		c.name = name
	default:
		c.name += name
	}
	c.args.WriteString(args)
}

// finish checks the stream's end and yields the calls and the final chunk.
func (a *chatAcc) finish(sawDone bool, yield func(model.Chunk, error) bool) {
	m := a.m
	switch {
	case !m.compat && !sawDone:
		yield(model.Chunk{}, httperr.Incomplete(m.provider, a.requestID, "[DONE]"))
		return
	case !m.compat && a.finishReason == "":
		yield(model.Chunk{}, httperr.Invalid(m.provider, a.requestID, "stream ended without a finish_reason", nil))
		return
	case m.compat && !sawDone && a.finishReason == "":
		yield(model.Chunk{}, httperr.Incomplete(m.provider, a.requestID, "a finish_reason or [DONE]"))
		return
	}
	finish := normFinish(a.finishReason, len(a.calls) > 0)
	if finish == "" {
		finish = "stop"
		if len(a.calls) > 0 {
			finish = "tool_calls"
		}
	}
	if a.refusal.Len() > 0 && finish == model.FinishStop {
		finish = model.FinishRefusal
	}
	msg := &message.Message{Role: message.RoleAssistant}
	if a.reasoning.Len() > 0 {
		msg.Parts = append(msg.Parts, message.Part{Type: message.PartReasoning, Text: a.reasoning.String(), Provider: m.provider})
	}
	text := a.text.String()
	if a.refusal.Len() > 0 {
		if a.req.Output != nil && len(a.calls) == 0 {
			yield(model.Chunk{}, &model.Error{Provider: m.provider, Code: CodeRefusal, Message: "model refused: " + a.refusal.String(), RequestID: a.requestID})
			return
		}
		if !yield(model.Chunk{Type: model.ChunkText, Text: a.refusal.String()}, nil) {
			return
		}
		text += a.refusal.String()
	}
	if text != "" {
		msg.Parts = append(msg.Parts, message.Part{Type: message.PartText, Text: text})
	}
	calls := make([]message.ToolCall, 0, len(a.calls))
	var ids toolargs.IDs
	for _, c := range a.calls {
		if c.name == "" {
			yield(model.Chunk{}, httperr.Invalid(m.provider, a.requestID, "tool call without a name", nil))
			return
		}
		args, err := toolargs.Normalize(c.args.String())
		if err != nil {
			yield(model.Chunk{}, m.invalidArgs(a.requestID, c.name, finish, err))
			return
		}
		id := ids.Unique(c.id)
		calls = append(calls, message.ToolCall{ID: id, Name: c.name, Arguments: args})
		msg.Parts = append(msg.Parts, message.Part{Type: message.PartToolCall, CallID: id, Name: c.name, Arguments: args})
	}
	if a.req.Output != nil && len(calls) == 0 {
		if finish == "length" {
			yield(model.Chunk{}, m.outputError(a.requestID, fmt.Errorf("%w: output cut at the token limit", outputschema.ErrMismatch)))
			return
		}
		if err := outputschema.Validate(a.req.Output.Schema, []byte(text)); err != nil {
			yield(model.Chunk{}, m.outputError(a.requestID, err))
			return
		}
	}
	for i := range calls {
		if !yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: &calls[i]}, nil) {
			return
		}
	}
	u := a.usage
	msg.Usage = &u
	yield(model.Chunk{Type: model.ChunkDone, Message: msg, Usage: u, FinishReason: finish, Refusal: a.refusal.String(), RequestID: a.requestID, Model: a.model}, nil)
}
