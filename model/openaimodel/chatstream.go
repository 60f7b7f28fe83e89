package openaimodel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
	"github.com/batonhq/baton/model/internal/outputschema"
	"github.com/batonhq/baton/model/internal/toolargs"
)

// streamChat runs one Chat Completions call. The raw response is taken
// (instead of the SDK's stream) so that the [DONE] line can be told apart
// from a connection that just closed.
func (m *Model) streamChat(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
	streamCall(ctx, m, req, m.chatParams, m.chat.New, func(requestID string) apiStream { return newChatAcc(m, req, requestID) }, yield)
}

func (a *chatAcc) whole(b []byte, yield func(model.Chunk, error) bool) { a.m.chatJSON(b, a, yield) }

func (a *chatAcc) event(data []byte, yield func(model.Chunk, error) bool) bool {
	var c openai.ChatCompletionChunk
	return a.m.decodeChat(a.requestID, data, &c, "malformed stream event", yield) && a.addChunk(&c, yield)
}

// terminal is false: a chat stream ends with [DONE], or just stops.
func (a *chatAcc) terminal() bool { return false }

func (a *chatAcc) end(ctx context.Context, ev *events, body *httperr.Content, yield func(model.Chunk, error) bool) {
	if !ev.done {
		if err := a.m.unfinished(ctx, a.requestID, ev.dec, body, ""); err != nil {
			yield(model.Chunk{}, err)
			return
		}
	}
	a.finish(ev.done, yield)
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
	if !a.ended(sawDone, yield) {
		return
	}
	finish := a.finishOf()
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
	calls, ok := a.toolCalls(msg, finish, yield)
	if !ok || !a.checkOutput(text, calls, finish, yield) {
		return
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

// ended reports whether the stream ended as it must: with [DONE] and a
// finish_reason from OpenAI, with either from a compatible server. If not,
// it yields the error.
func (a *chatAcc) ended(sawDone bool, yield func(model.Chunk, error) bool) bool {
	m := a.m
	switch {
	case !m.compat && !sawDone:
		yield(model.Chunk{}, httperr.Incomplete(m.provider, a.requestID, "[DONE]"))
		return false
	case !m.compat && a.finishReason == "":
		yield(model.Chunk{}, httperr.Invalid(m.provider, a.requestID, "stream ended without a finish_reason", nil))
		return false
	case m.compat && !sawDone && a.finishReason == "":
		yield(model.Chunk{}, httperr.Incomplete(m.provider, a.requestID, "a finish_reason or [DONE]"))
		return false
	}
	return true
}

// finishOf is the answer's finish reason: the stream's, normalised;
// stop or tool_calls when it gave none; refusal for a refusal that stopped.
func (a *chatAcc) finishOf() string {
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
	return finish
}

// toolCalls returns the calls folded from the stream, their arguments
// normalised and their ids unique, and adds them to msg. A call without a
// name or with arguments that are not JSON is an error, which it yields
// (ok false).
func (a *chatAcc) toolCalls(msg *message.Message, finish string, yield func(model.Chunk, error) bool) (calls []message.ToolCall, ok bool) {
	calls = make([]message.ToolCall, 0, len(a.calls))
	var ids toolargs.IDs
	for _, c := range a.calls {
		if c.name == "" {
			yield(model.Chunk{}, httperr.Invalid(a.m.provider, a.requestID, "tool call without a name", nil))
			return nil, false
		}
		args, err := toolargs.Normalize(c.args.String())
		if err != nil {
			yield(model.Chunk{}, a.m.invalidArgs(a.requestID, c.name, finish, err))
			return nil, false
		}
		id := ids.Unique(c.id)
		calls = append(calls, message.ToolCall{ID: id, Name: c.name, Arguments: args})
		msg.Parts = append(msg.Parts, message.Part{Type: message.PartToolCall, CallID: id, Name: c.name, Arguments: args})
	}
	return calls, true
}

// checkOutput reports whether an answer without calls (text) holds the
// request's structured output; if not, it yields the error.
func (a *chatAcc) checkOutput(text string, calls []message.ToolCall, finish string, yield func(model.Chunk, error) bool) bool {
	if a.req.Output == nil || len(calls) > 0 {
		return true
	}
	if finish == "length" {
		yield(model.Chunk{}, a.m.outputError(a.requestID, fmt.Errorf("%w: output cut at the token limit", outputschema.ErrMismatch)))
		return false
	}
	if err := outputschema.Validate(a.req.Output.Schema, []byte(text)); err != nil {
		yield(model.Chunk{}, a.m.outputError(a.requestID, err))
		return false
	}
	return true
}
