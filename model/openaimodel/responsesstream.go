package openaimodel

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
	"github.com/batonhq/baton/model/internal/outputschema"
	"github.com/batonhq/baton/model/internal/toolargs"
)

// streamResponses runs one Responses API call.
func (m *Model) streamResponses(ctx context.Context, req *model.Request, yield func(model.Chunk, error) bool) {
	streamCall(ctx, m, req, m.responsesParams, m.responses.New, func(requestID string) apiStream {
		return &respAcc{m: m, req: req, requestID: requestID, byID: map[string]*respItem{}, byIndex: map[int64]*respItem{}}
	}, yield)
}

func (a *respAcc) whole(b []byte, yield func(model.Chunk, error) bool) { a.m.responseJSON(b, a, yield) }

func (a *respAcc) event(data []byte, yield func(model.Chunk, error) bool) bool {
	var e responses.ResponseStreamEventUnion
	if err := json.Unmarshal(data, &e); err != nil {
		yield(model.Chunk{}, httperr.InvalidEvent(a.m.provider, a.requestID, "malformed stream event", data, err, a.m.cfg.APIKey))
		return false
	}
	if e.Type == "" && isErrorEvent(data) {
		yield(model.Chunk{}, httperr.StreamEvent(a.m.provider, a.requestID, data, a.m.cfg.APIKey))
		return false
	}
	return a.add(&e, data, yield)
}

// terminal reports that the response's terminal event was read.
func (a *respAcc) terminal() bool { return a.sawTerminal }

func (a *respAcc) end(ctx context.Context, ev *events, body *httperr.Content, yield func(model.Chunk, error) bool) {
	if !a.sawTerminal {
		yield(model.Chunk{}, a.m.unfinished(ctx, a.requestID, ev.dec, body, "response.completed"))
		return
	}
	a.finish(yield)
}

// responseJSON accepts a whole Response object b from a server that ignored
// "stream": true: it is folded in as the terminal event of its status would
// be. An error object ({"error": {...}}, or a failed response with its
// error) does not come here: eventStream yields it as the provider's error.
func (m *Model) responseJSON(b []byte, acc *respAcc, yield func(model.Chunk, error) bool) {
	var r struct {
		Object string          `json:"object"`
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		yield(model.Chunk{}, m.malformed(acc.requestID, "malformed response", b, err))
		return
	}
	status := r.Status
	if status == "" && r.Object != "" && r.Object != "response" {
		yield(model.Chunk{}, m.malformed(acc.requestID, "the JSON body is not a response (object "+strconv.Quote(r.Object)+")", b, nil))
		return
	}
	if status == "" && len(r.Output) > 0 {
		status = "completed" // a compatible server that leaves the status out
	}
	switch status {
	case "completed", "incomplete", "failed":
	case "":
		yield(model.Chunk{}, m.malformed(acc.requestID, "the JSON body is not a response (no status, no output)", b, nil))
		return
	default:
		yield(model.Chunk{}, m.malformed(acc.requestID, "the response is "+strconv.Quote(status)+", not completed", b, nil))
		return
	}
	data := make([]byte, 0, len(b)+48)
	data = append(append(append(data, `{"type":"response.`+status+`","response":`...), b...), '}')
	var e responses.ResponseStreamEventUnion
	if err := json.Unmarshal(data, &e); err != nil {
		yield(model.Chunk{}, m.malformed(acc.requestID, "malformed response", b, err))
		return
	}
	if !acc.add(&e, data, yield) {
		return
	}
	acc.finish(yield)
}

// respAcc folds Responses stream events into one assistant message.
type respAcc struct {
	m           *Model
	req         *model.Request
	requestID   string
	model       string
	items       []*respItem
	byID        map[string]*respItem
	byIndex     map[int64]*respItem
	sawTerminal bool
	reason      string // incomplete_details.reason of an incomplete response
	usage       message.Usage
	callIDs     toolargs.IDs // ids given out, to keep them unique
}

type respItem struct {
	kind      string // "message", "function_call", "reasoning", or another item type (ignored)
	id        string
	text      strings.Builder
	refusal   strings.Builder
	callID    string
	name      string
	args      strings.Builder
	encrypted string
	summary   int64 // index of the summary part being streamed
	done      bool  // output_item.done seen (calls: emitted)
	call      *message.ToolCall
}

func (a *respAcc) item(id string, index int64, kind string) *respItem {
	if it := a.byID[id]; id != "" && it != nil {
		return it
	}
	if it := a.byIndex[index]; it != nil && (id == "" || it.id == "" || it.id == id) {
		return it
	}
	it := &respItem{kind: kind, id: id}
	a.items = append(a.items, it)
	if id != "" {
		a.byID[id] = it
	}
	a.byIndex[index] = it
	return it
}

func (a *respAcc) setUsage(r *responses.Response) {
	if r.Model != "" {
		a.model = string(r.Model)
	}
	if !r.JSON.Usage.Valid() {
		return
	}
	u := &r.Usage
	a.usage = message.Usage{
		InputTokens:     u.InputTokens,
		OutputTokens:    u.OutputTokens,
		CachedTokens:    u.InputTokensDetails.CachedTokens,
		ReasoningTokens: u.OutputTokensDetails.ReasoningTokens,
	}
}

// add folds one event in and yields its deltas; false means stop.
func (a *respAcc) add(e *responses.ResponseStreamEventUnion, data []byte, yield func(model.Chunk, error) bool) bool {
	m := a.m
	switch e.Type {
	case "response.created", "response.in_progress", "response.queued":
		if e.Response.Model != "" {
			a.model = string(e.Response.Model)
		}
	case "response.output_item.added":
		it := a.item(e.Item.ID, e.OutputIndex, e.Item.Type)
		if it.kind == "function_call" {
			it.callID, it.name = e.Item.CallID, e.Item.Name
			it.args.WriteString(e.Item.Arguments.OfString)
		}
	case "response.output_text.delta":
		it := a.item(e.ItemID, e.OutputIndex, "message")
		if it.kind != "message" || e.Delta == "" {
			return true
		}
		it.text.WriteString(e.Delta)
		return yield(model.Chunk{Type: model.ChunkText, Text: e.Delta}, nil)
	case "response.refusal.delta":
		it := a.item(e.ItemID, e.OutputIndex, "message")
		it.refusal.WriteString(e.Delta)
	case "response.function_call_arguments.delta":
		it := a.item(e.ItemID, e.OutputIndex, "function_call")
		it.args.WriteString(e.Delta)
	case "response.function_call_arguments.done":
		it := a.item(e.ItemID, e.OutputIndex, "function_call")
		if e.JSON.Arguments.Valid() {
			it.args.Reset()
			it.args.WriteString(e.Arguments)
		}
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		return a.reasoningDelta(e, yield)
	case "response.output_item.done":
		return a.itemDone(&e.Item, e.OutputIndex, yield)
	case "response.completed", "response.incomplete":
		return a.completed(e, yield)
	case "response.failed":
		a.sawTerminal = true
		body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": string(e.Response.Error.Code), "message": e.Response.Error.Message}})
		yield(model.Chunk{}, httperr.StreamEvent(m.provider, a.requestID, body, m.cfg.APIKey))
		return false
	case "error":
		yield(model.Chunk{}, httperr.StreamEvent(m.provider, a.requestID, data, m.cfg.APIKey))
		return false
	}
	return true
}

// reasoningDelta takes a delta of a reasoning item's summary or text, a
// new summary part after a blank line, and yields it.
func (a *respAcc) reasoningDelta(e *responses.ResponseStreamEventUnion, yield func(model.Chunk, error) bool) bool {
	it := a.item(e.ItemID, e.OutputIndex, "reasoning")
	if it.kind != "reasoning" || e.Delta == "" {
		return true
	}
	d := e.Delta
	if e.Type == "response.reasoning_summary_text.delta" && e.SummaryIndex != it.summary && it.text.Len() > 0 {
		d = "\n\n" + d
	}
	it.summary = e.SummaryIndex
	it.text.WriteString(d)
	return yield(model.Chunk{Type: model.ChunkReasoning, Text: d}, nil)
}

// completed takes the response's terminal event (completed or incomplete):
// its usage, why it is incomplete, and the items the stream did not
// announce one by one (some servers).
func (a *respAcc) completed(e *responses.ResponseStreamEventUnion, yield func(model.Chunk, error) bool) bool {
	a.sawTerminal = true
	a.setUsage(&e.Response)
	a.reason = e.Response.IncompleteDetails.Reason
	if e.Type == "response.incomplete" && a.reason == "" {
		a.reason = "incomplete"
	}
	for i := range e.Response.Output {
		o := &e.Response.Output[i]
		if it := a.byID[o.ID]; o.ID != "" && it != nil && it.done {
			continue
		}
		if !a.itemDone(o, int64(i), yield) {
			return false
		}
	}
	return true
}

// itemDone takes an item's final form: a call is checked and emitted, text
// that came without deltas is yielded, reasoning gets its encrypted content.
func (a *respAcc) itemDone(o *responses.ResponseOutputItemUnion, index int64, yield func(model.Chunk, error) bool) bool {
	it := a.item(o.ID, index, o.Type)
	if it.done {
		return true
	}
	it.done = true
	switch it.kind {
	case "function_call":
		if o.CallID != "" {
			it.callID = o.CallID
		}
		if o.Name != "" {
			it.name = o.Name
		}
		if o.Arguments.JSON.OfString.Valid() {
			it.args.Reset()
			it.args.WriteString(o.Arguments.OfString)
		}
		c, err := a.checkCall(it)
		if err != nil {
			yield(model.Chunk{}, err)
			return false
		}
		it.call = c
		return yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: c}, nil)
	case "reasoning":
		it.encrypted = o.EncryptedContent
		if it.text.Len() == 0 {
			for i, s := range o.Summary {
				if i > 0 {
					it.text.WriteString("\n\n")
				}
				it.text.WriteString(s.Text)
			}
		}
	case "message":
		if it.text.Len() > 0 || it.refusal.Len() > 0 {
			return true
		}
		for _, c := range o.Content {
			switch c.Type {
			case "output_text":
				if c.Text == "" {
					continue
				}
				it.text.WriteString(c.Text)
				if !yield(model.Chunk{Type: model.ChunkText, Text: c.Text}, nil) {
					return false
				}
			case "refusal":
				it.refusal.WriteString(c.Refusal)
			}
		}
	}
	return true
}

func (a *respAcc) checkCall(it *respItem) (*message.ToolCall, error) {
	if it.name == "" {
		return nil, httperr.Invalid(a.m.provider, a.requestID, "function call without a name", nil)
	}
	args, err := toolargs.Normalize(it.args.String())
	if err != nil {
		return nil, a.m.invalidArgs(a.requestID, it.name, normFinish(a.reason, true), err)
	}
	return &message.ToolCall{ID: a.callIDs.Unique(it.callID), Name: it.name, Arguments: args}, nil
}

func (a *respAcc) finish(yield func(model.Chunk, error) bool) {
	m := a.m
	msg := &message.Message{Role: message.RoleAssistant}
	var text, refusal strings.Builder
	calls := 0
	for _, it := range a.items {
		switch it.kind {
		case "reasoning":
			if it.id == "" && it.encrypted == "" && it.text.Len() == 0 {
				continue
			}
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartReasoning, Provider: ProviderOpenAI, ID: it.id, Signature: it.encrypted, Text: it.text.String()})
		case "message":
			refusal.WriteString(it.refusal.String())
			if it.text.Len() == 0 {
				continue
			}
			text.WriteString(it.text.String())
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartText, Text: it.text.String()})
		case "function_call":
			if it.call == nil {
				c, err := a.checkCall(it)
				if err != nil {
					yield(model.Chunk{}, err)
					return
				}
				it.call = c
				if !yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: c}, nil) {
					return
				}
			}
			calls++
			msg.Parts = append(msg.Parts, message.Part{Type: message.PartToolCall, ID: it.id, CallID: it.call.ID, Name: it.call.Name, Arguments: it.call.Arguments})
		}
	}
	finish := model.FinishStop
	switch {
	case calls > 0:
		finish = model.FinishToolCalls
	case a.reason == "max_output_tokens":
		finish = model.FinishLength
	case a.reason != "":
		finish = normFinish(a.reason, false)
	case refusal.Len() > 0:
		finish = model.FinishRefusal
	}
	if refusal.Len() > 0 {
		if a.req.Output != nil && calls == 0 {
			yield(model.Chunk{}, &model.Error{Provider: m.provider, Code: CodeRefusal, Message: "model refused: " + refusal.String(), RequestID: a.requestID})
			return
		}
		if !yield(model.Chunk{Type: model.ChunkText, Text: refusal.String()}, nil) {
			return
		}
		text.WriteString(refusal.String())
		msg.Parts = append(msg.Parts, message.Part{Type: message.PartText, Text: refusal.String()})
	}
	if a.req.Output != nil && calls == 0 {
		if finish == "length" {
			yield(model.Chunk{}, m.outputError(a.requestID, fmt.Errorf("%w: output cut at the token limit", outputschema.ErrMismatch)))
			return
		}
		if err := outputschema.Validate(a.req.Output.Schema, []byte(text.String())); err != nil {
			yield(model.Chunk{}, m.outputError(a.requestID, err))
			return
		}
	}
	u := a.usage
	msg.Usage = &u
	yield(model.Chunk{Type: model.ChunkDone, Message: msg, Usage: u, FinishReason: finish, Refusal: refusal.String(), RequestID: a.requestID, Model: a.model}, nil)
}
