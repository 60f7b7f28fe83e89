package providertest

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/modeltest"
)

// Wire writes streams in one provider's wire format.
type Wire interface {
	// Stream is a whole stream answering text then calls; its finish reason
	// is the provider's word for tool use when there are calls.
	Stream(text string, calls []message.ToolCall) []byte
	// Prefix is the start of a stream that has sent text and nothing else.
	Prefix(text string) []byte
}

// ChatWire writes Chat Completions streams.
type ChatWire struct{ Model string }

func chatChunk(model string, delta map[string]any, finish any) string {
	return MustJSON(map[string]any{
		"id": "chatcmpl-synth", "object": "chat.completion.chunk", "created": 1754693439, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	})
}

// Prefix implements Wire.
func (w ChatWire) Prefix(text string) []byte {
	return SSEEvents(
		[2]string{"", chatChunk(w.Model, map[string]any{"role": "assistant", "content": ""}, nil)},
		[2]string{"", chatChunk(w.Model, map[string]any{"content": text}, nil)},
	)
}

// Stream implements Wire. Text comes in two deltas and each call's
// arguments in two fragments, as OpenAI streams them.
func (w ChatWire) Stream(text string, calls []message.ToolCall) []byte {
	var ev [][2]string
	ev = append(ev, [2]string{"", chatChunk(w.Model, map[string]any{"role": "assistant", "content": ""}, nil)})
	if text != "" {
		h := len(text) / 2
		ev = append(ev, [2]string{"", chatChunk(w.Model, map[string]any{"content": text[:h]}, nil)})
		ev = append(ev, [2]string{"", chatChunk(w.Model, map[string]any{"content": text[h:]}, nil)})
	}
	for i, c := range calls {
		a := string(c.Arguments)
		h := len(a) / 2
		ev = append(ev, [2]string{"", chatChunk(w.Model, map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": a[:h]},
		}}}, nil)})
		ev = append(ev, [2]string{"", chatChunk(w.Model, map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "function": map[string]any{"arguments": a[h:]},
		}}}, nil)})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	ev = append(ev, [2]string{"", chatChunk(w.Model, map[string]any{}, finish)})
	ev = append(ev, [2]string{"", MustJSON(map[string]any{
		"id": "chatcmpl-synth", "object": "chat.completion.chunk", "created": 1754693439, "model": w.Model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
	})})
	ev = append(ev, [2]string{"", "[DONE]"})
	return SSEEvents(ev...)
}

// ResponsesWire writes Responses API streams.
type ResponsesWire struct{ Model string }

func (w ResponsesWire) head() [][2]string {
	r := map[string]any{"id": "resp_synth", "object": "response", "status": "in_progress", "model": w.Model, "output": []any{}, "usage": nil}
	return [][2]string{
		{"response.created", MustJSON(map[string]any{"type": "response.created", "response": r, "sequence_number": 0})},
		{"response.output_item.added", MustJSON(map[string]any{"type": "response.output_item.added", "output_index": 0,
			"item": map[string]any{"id": "msg_synth", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})},
	}
}

func textDelta(d string) [2]string {
	return [2]string{"response.output_text.delta", MustJSON(map[string]any{"type": "response.output_text.delta", "item_id": "msg_synth", "output_index": 0, "content_index": 0, "delta": d})}
}

// Prefix implements Wire.
func (w ResponsesWire) Prefix(text string) []byte {
	return SSEEvents(append(w.head(), textDelta(text))...)
}

// Stream implements Wire.
func (w ResponsesWire) Stream(text string, calls []message.ToolCall) []byte {
	ev := w.head()
	var output []any
	if text != "" {
		h := len(text) / 2
		ev = append(ev, textDelta(text[:h]), textDelta(text[h:]))
	}
	msgItem := map[string]any{"id": "msg_synth", "type": "message", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	ev = append(ev, [2]string{"response.output_item.done", MustJSON(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": msgItem})})
	output = append(output, msgItem)
	for i, c := range calls {
		id := fmt.Sprintf("fc_synth_%d", i)
		a := string(c.Arguments)
		h := len(a) / 2
		item := map[string]any{"id": id, "type": "function_call", "status": "in_progress", "call_id": c.ID, "name": c.Name, "arguments": ""}
		ev = append(ev, [2]string{"response.output_item.added", MustJSON(map[string]any{"type": "response.output_item.added", "output_index": i + 1, "item": item})})
		for _, frag := range []string{a[:h], a[h:]} {
			ev = append(ev, [2]string{"response.function_call_arguments.delta", MustJSON(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i + 1, "delta": frag})})
		}
		done := map[string]any{"id": id, "type": "function_call", "status": "completed", "call_id": c.ID, "name": c.Name, "arguments": a}
		ev = append(ev, [2]string{"response.output_item.done", MustJSON(map[string]any{"type": "response.output_item.done", "output_index": i + 1, "item": done})})
		output = append(output, done)
	}
	r := map[string]any{"id": "resp_synth", "object": "response", "status": "completed", "model": w.Model, "output": output,
		"usage": map[string]any{"input_tokens": 50, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 60}}
	ev = append(ev, [2]string{"response.completed", MustJSON(map[string]any{"type": "response.completed", "response": r})})
	return SSEEvents(ev...)
}

// AnthropicWire writes Anthropic Messages streams.
type AnthropicWire struct{ Model string }

func (w AnthropicWire) head() [][2]string {
	return [][2]string{
		{"message_start", MustJSON(map[string]any{"type": "message_start", "message": map[string]any{
			"id": "msg_synth", "type": "message", "role": "assistant", "content": []any{}, "model": w.Model, "stop_reason": nil,
			"usage": map[string]any{"input_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1},
		}})},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
	}
}

func anthropicText(d string) [2]string {
	return [2]string{"content_block_delta", MustJSON(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": d}})}
}

// Prefix implements Wire.
func (w AnthropicWire) Prefix(text string) []byte {
	return SSEEvents(append(w.head(), anthropicText(text))...)
}

// Stream implements Wire.
func (w AnthropicWire) Stream(text string, calls []message.ToolCall) []byte {
	ev := w.head()
	if text != "" {
		h := len(text) / 2
		ev = append(ev, anthropicText(text[:h]), anthropicText(text[h:]))
	}
	ev = append(ev, [2]string{"content_block_stop", `{"type":"content_block_stop","index":0}`})
	for i, c := range calls {
		idx := i + 1
		ev = append(ev, [2]string{"content_block_start", MustJSON(map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})})
		a := string(c.Arguments)
		h := len(a) / 2
		for _, frag := range []string{"", a[:h], a[h:]} {
			ev = append(ev, [2]string{"content_block_delta", MustJSON(map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": frag}})})
		}
		ev = append(ev, [2]string{"content_block_stop", MustJSON(map[string]any{"type": "content_block_stop", "index": idx})})
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	ev = append(ev,
		[2]string{"message_delta", MustJSON(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})},
		[2]string{"message_stop", `{"type":"message_stop"}`},
	)
	return SSEEvents(ev...)
}

// Conformance runs the [modeltest] suite against the models build makes,
// each for the base URL of a server that plays its scenario in wire format
// w, with header on the reply.
func Conformance(t *testing.T, w Wire, header http.Header, build func(t *testing.T, baseURL string) model.Model) {
	t.Helper()
	modeltest.Run(t, func(t *testing.T, sc modeltest.Scenario) model.Model {
		return build(t, scenarioServer(t, w, sc, header))
	})
}

// scenarioServer starts a server that plays sc in wire format w and returns
// its URL.
func scenarioServer(t *testing.T, w Wire, sc modeltest.Scenario, header http.Header) string {
	t.Helper()
	var rep Reply
	switch sc.Kind {
	case modeltest.KindText:
		rep = Reply{Body: w.Stream(sc.Text, nil)}
	case modeltest.KindToolCalls:
		rep = Reply{Body: w.Stream(sc.Text, sc.Calls)}
	case modeltest.KindStall:
		rep = Reply{Body: w.Prefix(sc.Text), Hold: true, OnDisconnect: sync.OnceFunc(func() {
			if sc.OnDisconnect != nil {
				sc.OnDisconnect()
			}
		})}
	default:
		t.Fatalf("unknown scenario %v", sc.Kind)
	}
	rep.Header = header
	return NewServer(t, rep).URL
}
