package anthropicmodel

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
	"github.com/batonhq/baton/model/internal/outputschema"
	"github.com/batonhq/baton/model/internal/toolargs"
)

// stream runs one Messages call. The raw response is taken (the request is
// the SDK's, with "stream": true) so that its body can be read as an event
// stream or, from a server that ignored "stream", as one JSON message,
// according to its Content-Type.
func (m *Model) stream(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
	params, outTool, err := m.params(req)
	if err != nil {
		yield(model.Chunk{}, fmt.Errorf("%s: %w", Provider, err))
		return
	}
	var capture httperr.Capture
	var res *http.Response
	err = m.client.Post(ctx, "v1/messages", params, &res,
		option.WithJSONSet("stream", true),
		option.WithMiddleware(capture.Middleware))
	if err == nil && res == nil {
		err = errors.New("no response")
	}
	if err != nil {
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		yield(model.Chunk{}, m.streamError(ctx, &capture, nil, httperr.RequestID(capture.Header), nil, err))
		return
	}
	defer res.Body.Close()
	requestID := httperr.RequestID(res.Header)
	acc := &accumulator{m: m, req: req, outTool: outTool, requestID: requestID, blocks: map[int64]*block{}}
	body := httperr.EventStream(ctx, res, Provider, requestID, func(b []byte) { m.messageJSON(b, acc, yield) }, yield, m.cfg.APIKey)
	if body == nil {
		return
	}
	dec := ssestream.NewDecoder(res)
	s := ssestream.NewStream[anthropic.MessageStreamEventUnion](dec, nil)
	defer s.Close()
	for !acc.stopped && s.Next() {
		ev := s.Current()
		if !acc.add(&ev, yield) {
			return
		}
	}
	if !acc.stopped {
		if err := s.Err(); err != nil {
			yield(model.Chunk{}, m.streamError(ctx, &capture, res, requestID, dec.Event().Data, err))
			return
		}
		if ctx.Err() != nil {
			yield(model.Chunk{}, httperr.Canceled(ctx, Provider))
			return
		}
		yield(model.Chunk{}, body.Cut(Provider, requestID, "message_stop", m.cfg.APIKey))
		return
	}
	acc.finish(yield)
}

// messageJSON accepts a whole Message b from a server that ignored "stream":
// true: it is folded in as the events of its stream would be (message_start,
// each block's start and stop, message_delta, message_stop), through the same
// code.
func (m *Model) messageJSON(b []byte, acc *accumulator, yield func(model.Chunk, error) bool) {
	var msg struct {
		Type       string            `json:"type"`
		Error      json.RawMessage   `json:"error"`
		Content    []json.RawMessage `json:"content"`
		StopReason *string           `json:"stop_reason"`
		Usage      json.RawMessage   `json:"usage"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		yield(model.Chunk{}, httperr.Malformed(Provider, acc.requestID, "malformed message", b, err, m.cfg.APIKey))
		return
	}
	switch {
	case msg.Type == "error" || (len(msg.Error) > 0 && string(msg.Error) != "null"):
		yield(model.Chunk{}, httperr.StreamEvent(Provider, acc.requestID, b, m.cfg.APIKey))
		return
	case msg.Type != "message" && msg.Type != "":
		yield(model.Chunk{}, httperr.Malformed(Provider, acc.requestID, "the JSON body is not a message (type "+strconv.Quote(msg.Type)+")", b, nil, m.cfg.APIKey))
		return
	case msg.Content == nil || msg.StopReason == nil:
		yield(model.Chunk{}, httperr.Malformed(Provider, acc.requestID, "the JSON body is not a whole message (no content or stop_reason)", b, nil, m.cfg.APIKey))
		return
	}
	usage := msg.Usage
	if len(usage) == 0 || string(usage) == "null" {
		usage = json.RawMessage(`{}`)
	}
	events := make([]string, 0, 2*len(msg.Content)+3)
	events = append(events, `{"type":"message_start","message":`+string(b)+`}`)
	for i, c := range msg.Content {
		n := strconv.Itoa(i)
		events = append(events, `{"type":"content_block_start","index":`+n+`,"content_block":`+string(c)+`}`,
			`{"type":"content_block_stop","index":`+n+`}`)
	}
	stop, _ := json.Marshal(*msg.StopReason)
	events = append(events, `{"type":"message_delta","delta":{"stop_reason":`+string(stop)+`},"usage":`+string(usage)+`}`, `{"type":"message_stop"}`)
	for _, e := range events {
		var ev anthropic.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(e), &ev); err != nil {
			yield(model.Chunk{}, httperr.Malformed(Provider, acc.requestID, "malformed message", b, err, m.cfg.APIKey))
			return
		}
		if !acc.add(&ev, yield) {
			return
		}
	}
	acc.finish(yield)
}

// streamError classifies the error that ended a call: an HTTP error status,
// an error event inside the stream, an event that could not be decoded (data
// is the last event's data, quoted in the error), or a failed connection.
func (m *Model) streamError(ctx context.Context, c *httperr.Capture, res *http.Response, requestID string, data []byte, err error) *model.Error {
	if ctx.Err() != nil {
		return httperr.Canceled(ctx, Provider)
	}
	if c.Status >= 400 {
		return httperr.Response(Provider, c.Status, c.Header, c.Body, err, m.cfg.APIKey)
	}
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		if res == nil || apiErr.StatusCode >= 400 {
			var h http.Header
			if apiErr.Response != nil {
				h = apiErr.Response.Header
			}
			return httperr.Response(Provider, apiErr.StatusCode, h, []byte(apiErr.RawJSON()), err, m.cfg.APIKey)
		}
		// An "error" event in a stream that had started (HTTP 200).
		e := httperr.StreamEvent(Provider, requestID, []byte(apiErr.RawJSON()), m.cfg.APIKey)
		e.Err = err
		return e
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) || errors.Is(err, bufio.ErrTooLong) {
		return httperr.InvalidEvent(Provider, requestID, "malformed stream event", data, err, m.cfg.APIKey)
	}
	if res != nil && strings.HasPrefix(err.Error(), "received error while streaming") {
		return httperr.StreamEvent(Provider, requestID, []byte(strings.TrimPrefix(err.Error(), "received error while streaming: ")), m.cfg.APIKey)
	}
	return httperr.Transport(ctx, Provider, requestID, err)
}

// block is one content block of the streamed message.
type block struct {
	index     int64
	kind      string // "text", "thinking", "redacted_thinking", "tool_use", "output", "skip"
	text      strings.Builder
	signature strings.Builder
	id, name  string
	input     strings.Builder
	inputInit string // the input of content_block_start, used when no delta comes
	deltas    bool
	done      bool
	call      *message.ToolCall
}

// accumulator folds stream events into one assistant message.
type accumulator struct {
	m         *Model
	req       *model.Request
	outTool   string
	requestID string
	model     string
	blocks    map[int64]*block
	order     []int64
	stopped   bool
	stop      string
	refusal   string // stop_details: "category: explanation"
	usage     usage
	callIDs   toolargs.IDs
}

type usage struct {
	input, cacheRead, cacheWrite, output, thinking int64
}

func (u usage) message() message.Usage {
	return message.Usage{
		InputTokens:         u.input + u.cacheRead + u.cacheWrite,
		OutputTokens:        u.output,
		CachedTokens:        u.cacheRead,
		CacheCreationTokens: u.cacheWrite,
		ReasoningTokens:     u.thinking,
	}
}

// add folds one event in and yields its deltas; false means stop.
func (a *accumulator) add(ev *anthropic.MessageStreamEventUnion, yield func(model.Chunk, error) bool) bool {
	switch ev.Type {
	case "message_start":
		msg := &ev.Message
		if msg.Model != "" {
			a.model = string(msg.Model)
		}
		u := &msg.Usage
		a.usage = usage{input: u.InputTokens, cacheRead: u.CacheReadInputTokens, cacheWrite: u.CacheCreationInputTokens, output: u.OutputTokens}
	case "content_block_start":
		return a.start(ev, yield)
	case "content_block_delta":
		return a.delta(ev, yield)
	case "content_block_stop":
		if b := a.blocks[ev.Index]; b != nil {
			return a.close(b, yield)
		}
	case "message_delta":
		a.messageDelta(ev)
	case "message_stop":
		a.stopped = true
	}
	return true
}

// start opens a content block (a repeated start changes nothing) and
// yields the text or thinking it starts with.
func (a *accumulator) start(ev *anthropic.MessageStreamEventUnion, yield func(model.Chunk, error) bool) bool {
	if b := a.blocks[ev.Index]; b != nil {
		return true // a repeated start changes nothing
	}
	cb := &ev.ContentBlock
	b := &block{index: ev.Index, kind: cb.Type}
	a.blocks[ev.Index] = b
	a.order = append(a.order, ev.Index)
	switch cb.Type {
	case "text":
		if cb.Text != "" {
			b.text.WriteString(cb.Text)
			return yield(model.Chunk{Type: model.ChunkText, Text: cb.Text}, nil)
		}
	case "thinking":
		b.signature.WriteString(cb.Signature)
		if cb.Thinking != "" {
			b.text.WriteString(cb.Thinking)
			return yield(model.Chunk{Type: model.ChunkReasoning, Text: cb.Thinking}, nil)
		}
	case "redacted_thinking":
		b.signature.WriteString(cb.Data)
	case "tool_use":
		b.id, b.name = cb.ID, cb.Name
		if b.name == a.outTool && a.outTool != "" {
			b.kind = "output"
		}
		if raw := strings.TrimSpace(cb.JSON.Input.Raw()); raw != "" && raw != "{}" && raw != "null" {
			b.inputInit = raw
		}
	default:
		b.kind = "skip" // server tool blocks and block types unknown here
	}
	return true
}

// delta adds a delta to its open block and yields text and thinking.
func (a *accumulator) delta(ev *anthropic.MessageStreamEventUnion, yield func(model.Chunk, error) bool) bool {
	b := a.blocks[ev.Index]
	if b == nil || b.done {
		return true
	}
	d := &ev.Delta
	switch d.Type {
	case "text_delta":
		if b.kind == "text" && d.Text != "" {
			b.text.WriteString(d.Text)
			return yield(model.Chunk{Type: model.ChunkText, Text: d.Text}, nil)
		}
	case "thinking_delta":
		if b.kind == "thinking" && d.Thinking != "" {
			b.text.WriteString(d.Thinking)
			return yield(model.Chunk{Type: model.ChunkReasoning, Text: d.Thinking}, nil)
		}
	case "signature_delta":
		if b.kind == "thinking" {
			b.signature.WriteString(d.Signature)
		}
	case "input_json_delta":
		if b.kind == "tool_use" || b.kind == "output" {
			b.deltas = true
			b.input.WriteString(d.PartialJSON)
		}
	}
	return true
}

// messageDelta takes the stop reason, a refusal's details and the usage a
// message_delta carries (a count it leaves out or reports as 0 is kept).
func (a *accumulator) messageDelta(ev *anthropic.MessageStreamEventUnion) {
	if ev.Delta.StopReason != "" {
		a.stop = string(ev.Delta.StopReason)
	}
	if d := &ev.Delta.StopDetails; d.Explanation != "" || d.Category != "" {
		a.refusal = string(d.Category)
		if d.Explanation != "" {
			a.refusal = strings.TrimPrefix(a.refusal+": "+d.Explanation, ": ")
		}
	}
	u := &ev.Usage
	if u.JSON.OutputTokens.Valid() {
		a.usage.output = u.OutputTokens
	}
	if u.JSON.InputTokens.Valid() && u.InputTokens > 0 {
		a.usage.input = u.InputTokens
	}
	if u.JSON.CacheReadInputTokens.Valid() && u.CacheReadInputTokens > 0 {
		a.usage.cacheRead = u.CacheReadInputTokens
	}
	if u.JSON.CacheCreationInputTokens.Valid() && u.CacheCreationInputTokens > 0 {
		a.usage.cacheWrite = u.CacheCreationInputTokens
	}
	if u.OutputTokensDetails.ThinkingTokens > 0 {
		a.usage.thinking = u.OutputTokensDetails.ThinkingTokens
	}
}

// close finishes a block: a tool call is checked and yielded, the
// structured-output tool's input is yielded as text.
func (a *accumulator) close(b *block, yield func(model.Chunk, error) bool) bool {
	if b.done {
		return true
	}
	b.done = true
	if b.kind != "tool_use" && b.kind != "output" {
		return true
	}
	in := b.input.String()
	if !b.deltas || strings.TrimSpace(in) == "" {
		in = b.inputInit
	}
	args, err := toolargs.Normalize(in)
	if err != nil {
		msg := fmt.Sprintf("tool call %q: %v", b.name, err)
		if a.stop == "max_tokens" {
			msg += " (the output hit max_tokens)"
		}
		yield(model.Chunk{}, &model.Error{Provider: Provider, Code: CodeInvalidToolArguments, Message: msg, RequestID: a.requestID, Err: err})
		return false
	}
	if b.kind == "output" {
		b.text.Write(args)
		return yield(model.Chunk{Type: model.ChunkText, Text: string(args)}, nil)
	}
	if b.name == "" {
		yield(model.Chunk{}, httperr.Invalid(Provider, a.requestID, "tool_use block without a name", nil))
		return false
	}
	b.call = &message.ToolCall{ID: a.callIDs.Unique(b.id), Name: b.name, Arguments: args}
	return yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: b.call}, nil)
}

func (a *accumulator) finish(yield func(model.Chunk, error) bool) {
	sort.Slice(a.order, func(i, j int) bool { return a.order[i] < a.order[j] })
	msg := &message.Message{Role: message.RoleAssistant}
	var text strings.Builder
	calls := 0
	for _, idx := range a.order {
		b := a.blocks[idx]
		if !b.done && !a.close(b, yield) {
			return
		}
		switch b.kind {
		case "text", "output":
			if b.text.Len() > 0 {
				text.WriteString(b.text.String())
				msg.Parts = append(msg.Parts, message.Part{Type: message.PartText, Text: b.text.String()})
			}
		case "thinking":
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartReasoning, Provider: Provider, Text: b.text.String(), Signature: b.signature.String()})
		case "redacted_thinking":
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartReasoning, Provider: Provider, ID: RedactedThinking, Signature: b.signature.String()})
		case "tool_use":
			calls++
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartToolCall, CallID: b.call.ID, Name: b.call.Name, Arguments: b.call.Arguments})
		}
	}
	finish := normStop(a.stop, calls > 0)
	if a.req.Output != nil && calls == 0 {
		if finish == "length" {
			err := fmt.Errorf("%w: output cut at max_tokens", outputschema.ErrMismatch)
			yield(model.Chunk{}, &model.Error{Provider: Provider, Code: CodeOutputMismatch, Message: err.Error(), RequestID: a.requestID, Err: err})
			return
		}
		if err := outputschema.Validate(a.req.Output.Schema, []byte(text.String())); err != nil {
			yield(model.Chunk{}, &model.Error{Provider: Provider, Code: CodeOutputMismatch, Message: err.Error(), RequestID: a.requestID, Err: err})
			return
		}
	}
	u := a.usage.message()
	msg.Usage = &u
	yield(model.Chunk{Type: model.ChunkDone, Message: msg, Usage: u, FinishReason: finish, Refusal: a.refusal, RequestID: a.requestID, Model: a.model}, nil)
}

// normStop maps a stop reason to baton's words.
func normStop(s string, hasCalls bool) string {
	switch s {
	case "", "end_turn", "stop_sequence", "tool_use":
		if hasCalls {
			return "tool_calls"
		}
		return "stop"
	case "max_tokens", "model_context_window_exceeded":
		return model.FinishLength
	case "refusal":
		return model.FinishRefusal
	case "pause_turn":
		return model.FinishPauseTurn
	}
	return s
}
