package openai_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
)

// pythonEvents splits a raw event stream as OpenAI's Python client does
// (openai._streaming.SSEDecoder): a blank line after any field (event,
// data, id, retry) yields an event; comment lines are skipped. It fails the
// test on an event whose data is not JSON or [DONE] — the client's
// JSONDecodeError — and on id: fields, after which the Python client would
// yield an event at every blank line. It returns the events' data and the
// count of comment pings.
func pythonEvents(t *testing.T, raw []byte) (data []string, pings int) {
	t.Helper()
	var fields bool
	var buf []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			if !fields {
				continue
			}
			d := strings.Join(buf, "\n")
			if d != "[DONE]" && !json.Valid([]byte(d)) {
				t.Fatalf("the Python client fails on an event whose data is %q (stream:\n%s)", d, raw)
			}
			data = append(data, d)
			fields, buf = false, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			pings++
			continue
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "data":
			buf = append(buf, value)
		case "event", "retry":
			t.Errorf("field %s: in an OpenAI stream: only data: events (stream:\n%s)", name, raw)
		case "id":
			t.Fatalf("field id: in an OpenAI stream: the Python client then yields an event at every blank line (stream:\n%s)", raw)
		default:
			continue
		}
		fields = true
	}
	if fields {
		t.Fatalf("the stream ends in the middle of an event:\n%s", raw)
	}
	return data, pings
}

// Both OpenAI streams (chat completions, responses) carry only data:
// events and comment pings, while a run is followed into the background
// and back: the Python client's rule applied to the raw bytes.
func TestOpenAIStreamsPythonRule(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t, servertest.WithServer(func(c *server.Config) { c.Heartbeat = 20 * time.Millisecond }))
	for _, tc := range []struct {
		path string
		body map[string]any
		last string
	}{
		{"/v1/chat/completions", map[string]any{"model": "research", "stream": true, "stream_options": map[string]any{"include_usage": true},
			"messages": []any{map[string]any{"role": "user", "content": "How did EV sales develop in 2025?"}}}, "[DONE]"},
		{"/v1/responses", map[string]any{"model": "research", "stream": true, "input": "How did EV sales develop in 2025?"}, `"type":"response.completed"`},
	} {
		r := b.Do(t, b.KeyA, "POST", tc.path, tc.body)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s: %d %s", tc.path, r.Status, r.Body)
		}
		data, pings := pythonEvents(t, r.Body)
		if len(data) < 5 || pings == 0 || !strings.Contains(data[len(data)-1], tc.last) || !strings.Contains(string(r.Body), "RPT-42") {
			t.Errorf("%s: %d events, %d pings, last %s", tc.path, len(data), pings, data[len(data)-1])
		}
	}
}

// openAIErr decodes an OpenAI error body.
func openAIErr(t *testing.T, r *servertest.Response) (typ, code, param string) {
	t.Helper()
	var e struct {
		Error struct{ Type, Code, Param, Message string }
	}
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("%d: not an error body: %s", r.Status, r.Body)
	}
	return e.Error.Type, e.Error.Code, e.Error.Param
}

// Every field of a request is honoured, accepted without effect (listed in
// docs/api.md) or refused with a 400 that names it.
func TestOpenAIRequestFields(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	user := func(s string) []any { return []any{map[string]any{"role": "user", "content": s}} }
	chat := func(extra map[string]any) map[string]any {
		m := map[string]any{"model": "support", "messages": user("hello")}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	resp := func(extra map[string]any) map[string]any {
		m := map[string]any{"model": "support", "input": "hello"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	t.Run("Refused", func(t *testing.T) {
		t.Parallel()
		tool := map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}
		for _, tc := range []struct {
			name, path  string
			body        map[string]any
			param, code string
		}{
			{"n", "/v1/chat/completions", chat(map[string]any{"n": 2}), "n", "unsupported_parameter"},
			{"json schema", "/v1/chat/completions", chat(map[string]any{"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{}}}}), "response_format", "unsupported_parameter"},
			{"tools", "/v1/chat/completions", chat(map[string]any{"tools": []any{tool}, "tool_choice": "required"}), "tools", "unsupported_parameter"},
			{"tool choice", "/v1/chat/completions", chat(map[string]any{"tool_choice": "required"}), "tool_choice", "unsupported_parameter"},
			{"tool results", "/v1/chat/completions", chat(map[string]any{"messages": []any{
				map[string]any{"role": "user", "content": "weather?"},
				map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": "c1", "content": "sunny"},
				map[string]any{"role": "user", "content": "thanks"}}}), "messages", "unsupported_parameter"},
			{"bad penalty", "/v1/chat/completions", chat(map[string]any{"presence_penalty": 2.5}), "presence_penalty", "invalid_value"},
			{"bad logit bias token", "/v1/chat/completions", chat(map[string]any{"logit_bias": map[string]any{"the": 5}}), "logit_bias", "invalid_value"},
			{"bad logit bias", "/v1/chat/completions", chat(map[string]any{"logit_bias": map[string]any{"50256": 101}}), "logit_bias", "invalid_value"},
			{"logprobs", "/v1/chat/completions", chat(map[string]any{"logprobs": true}), "logprobs", "unsupported_parameter"},
			{"unknown field", "/v1/chat/completions", chat(map[string]any{"frobnicate": true}), "frobnicate", "invalid_value"},
			{"bad temperature", "/v1/chat/completions", chat(map[string]any{"temperature": 3}), "temperature", "invalid_value"},
			{"previous response", "/v1/responses", resp(map[string]any{"previous_response_id": "resp_x"}), "previous_response_id", "unsupported_parameter"},
			{"function output", "/v1/responses", resp(map[string]any{"input": []any{map[string]any{"type": "function_call_output", "call_id": "c1", "output": "sunny"}}}), "input", "unsupported_parameter"},
			{"text format", "/v1/responses", resp(map[string]any{"text": map[string]any{"format": map[string]any{"type": "json_object"}}}), "text.format", "unsupported_parameter"},
			{"response tools", "/v1/responses", resp(map[string]any{"tools": []any{map[string]any{"type": "function", "name": "f"}}}), "tools", "unsupported_parameter"},
			{"bad verbosity", "/v1/chat/completions", chat(map[string]any{"verbosity": "loud"}), "verbosity", "invalid_value"},
			{"web search", "/v1/chat/completions", chat(map[string]any{"web_search_options": map[string]any{}}), "web_search_options", "unsupported_parameter"},
			{"audio", "/v1/chat/completions", chat(map[string]any{"audio": map[string]any{"voice": "alloy", "format": "mp3"}}), "audio", "unsupported_parameter"},
			{"bad text verbosity", "/v1/responses", resp(map[string]any{"text": map[string]any{"verbosity": "loud"}}), "text.verbosity", "invalid_value"},
			{"bad reasoning summary", "/v1/responses", resp(map[string]any{"reasoning": map[string]any{"summary": "long"}}), "reasoning.summary", "invalid_value"},
			{"bad truncation", "/v1/responses", resp(map[string]any{"truncation": "middle"}), "truncation", "invalid_value"},
			{"include logprobs", "/v1/responses", resp(map[string]any{"include": []any{"reasoning.encrypted_content", "message.output_text.logprobs"}}), "include", "unsupported_parameter"},
			{"bad include", "/v1/responses", resp(map[string]any{"include": []any{"output.everything"}}), "include", "invalid_value"},
			{"max tool calls", "/v1/responses", resp(map[string]any{"max_tool_calls": 3}), "max_tool_calls", "unsupported_parameter"},
			{"background", "/v1/responses", resp(map[string]any{"background": true}), "background", "unsupported_parameter"},
		} {
			r := b.Do(t, b.KeyA, "POST", tc.path, tc.body)
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
				continue
			}
			typ, code, param := openAIErr(t, r)
			if typ != "invalid_request_error" || code != tc.code || param != tc.param {
				t.Errorf("%s: type %q code %q param %q: %s", tc.name, typ, code, param, r.Body)
			}
		}
	})
	t.Run("MaxTokensCut", func(t *testing.T) {
		t.Parallel()
		var full, cut struct {
			Choices []struct {
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
		}
		b.Do(t, b.KeyA, "POST", "/v1/chat/completions", chat(nil)).JSON(t, &full)
		r := b.Do(t, b.KeyA, "POST", "/v1/chat/completions", chat(map[string]any{"max_tokens": 3}))
		r.JSON(t, &cut)
		if r.Status != 200 || cut.Choices[0].FinishReason != "length" || len(cut.Choices[0].Message.Content) >= len(full.Choices[0].Message.Content) ||
			!strings.HasPrefix(full.Choices[0].Message.Content, cut.Choices[0].Message.Content) {
			t.Errorf("max_tokens 3: %d %s\nfull: %+v", r.Status, r.Body, full)
		}
		var rs struct {
			Status            string
			IncompleteDetails struct{ Reason string } `json:"incomplete_details"`
		}
		r = b.Do(t, b.KeyA, "POST", "/v1/responses", resp(map[string]any{"max_output_tokens": 3}))
		r.JSON(t, &rs)
		if r.Status != 200 || rs.Status != "incomplete" || rs.IncompleteDetails.Reason != "max_output_tokens" {
			t.Errorf("max_output_tokens 3: %d %s", r.Status, r.Body)
		}
	})
	t.Run("Stop", func(t *testing.T) {
		t.Parallel()
		var c struct {
			Choices []struct {
				Message      struct{ Content string }
				FinishReason string `json:"finish_reason"`
			}
		}
		r := b.Do(t, b.KeyA, "POST", "/v1/chat/completions", chat(map[string]any{"stop": "billing"}))
		r.JSON(t, &c)
		if r.Status != 200 || c.Choices[0].FinishReason != "stop" || c.Choices[0].Message.Content == "" || strings.Contains(c.Choices[0].Message.Content, "billing") {
			t.Errorf("stop: %d %s", r.Status, r.Body)
		}
	})
	t.Run("Honoured", func(t *testing.T) {
		t.Parallel()
		r := b.Do(t, b.KeyA, "POST", "/v1/chat/completions", chat(map[string]any{"temperature": 0.2, "top_p": 0.9, "n": 1, "user": "u1",
			"response_format": map[string]any{"type": "text"}, "tool_choice": "auto", "max_completion_tokens": 500, "metadata": map[string]any{"app": "x"}}))
		if r.Status != 200 {
			t.Errorf("%d %s", r.Status, r.Body)
		}
	})
	// OpenAI's best-effort parameters are accepted on both APIs and reach
	// the run's models (its settings, kept with its state); store is
	// accepted either way; Chat's prediction and the Responses API's
	// include (of items a response never has), reasoning.summary and
	// truncation are accepted without effect on the settings, and a
	// response echoes its text.verbosity and truncation.
	t.Run("BestEffort", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			path string
			body map[string]any
			want model.Settings
		}{
			{"/v1/chat/completions", chat(map[string]any{"seed": 7, "presence_penalty": 0.5, "frequency_penalty": -0.5, "logit_bias": map[string]any{"50256": -100},
				"parallel_tool_calls": false, "store": false, "user": "u1", "metadata": map[string]any{"app": "x"}, "prompt_cache_key": "pk",
				"verbosity": "low", "prediction": map[string]any{"type": "content", "content": "Let me get billing"}}),
				model.Settings{Seed: new(int64(7)), PresencePenalty: new(0.5), FrequencyPenalty: new(-0.5), LogitBias: map[string]int{"50256": -100},
					ParallelToolCalls: new(false), User: "u1", PromptCacheKey: "pk", Verbosity: "low"}},
			{"/v1/responses", resp(map[string]any{"parallel_tool_calls": true, "store": true, "safety_identifier": "s1", "user": "u1", "prompt_cache_key": "pk",
				"metadata": map[string]any{"app": "x"}, "text": map[string]any{"format": map[string]any{"type": "text"}, "verbosity": "high"},
				"include":   []any{"reasoning.encrypted_content", "web_search_call.action.sources", "file_search_call.results", "message.input_image.image_url"},
				"reasoning": map[string]any{"summary": "auto"}, "truncation": "auto"}),
				model.Settings{ParallelToolCalls: new(true), User: "s1", PromptCacheKey: "pk", Verbosity: "high"}},
		} {
			r := b.Do(t, b.KeyA, "POST", tc.path, tc.body)
			if r.Status != 200 {
				t.Errorf("%s: %d %s", tc.path, r.Status, r.Body)
				continue
			}
			if tc.path == "/v1/responses" {
				var echo struct {
					Text       struct{ Verbosity string }
					Truncation string
				}
				if r.JSON(t, &echo); echo.Text.Verbosity != "high" || echo.Truncation != "auto" {
					t.Errorf("the response echoes text %+v, truncation %q: %s", echo.Text, echo.Truncation, r.Body)
				}
			}
			cp, err := b.St.LatestCheckpoint(t.Context(), &store.LatestCheckpointParams{OwnerID: "alice", RunID: r.Header.Get("Baton-Run-Id")})
			if err != nil {
				t.Fatal(err)
			}
			var got model.Settings
			if err := json.Unmarshal(cp.State.Values[runner.SettingsValue], &got); err != nil {
				t.Fatalf("%s: settings %s: %v", tc.path, cp.State.Values[runner.SettingsValue], err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s: the run's settings are %+v, want %+v", tc.path, got, tc.want)
			}
		}
	})
}

// Every answer has an x-request-id; OpenAI's routes word their errors as
// OpenAI does; GET /v1/models/{id} retrieves a network as a model.
func TestOpenAIRequestIDsAndErrors(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	for _, tc := range []struct{ key, method, path string }{
		{"", "GET", "/healthz"}, {b.KeyA, "GET", "/v1/threads"}, {b.KeyA, "GET", "/v1/nothing"}, {"", "GET", "/v1/models"}, {b.KeyA, "GET", "/v1/models/support"},
	} {
		if r := b.Do(t, tc.key, tc.method, tc.path, nil); !strings.HasPrefix(r.Header.Get("X-Request-Id"), "req_") {
			t.Errorf("%s %s: %d without x-request-id", tc.method, tc.path, r.Status)
		}
	}
	for _, tc := range []struct {
		name, key, path  string
		status           int
		typ, code, param string
	}{
		{"unknown model", b.KeyA, "/v1/models/nope", 404, "invalid_request_error", "model_not_found", "model"},
		{"bad key", "wrong", "/v1/models", 401, "invalid_request_error", "invalid_api_key", ""},
	} {
		r := b.Do(t, tc.key, "GET", tc.path, nil)
		typ, code, param := openAIErr(t, r)
		if r.Status != tc.status || typ != tc.typ || code != tc.code || param != tc.param {
			t.Errorf("%s: %d type %q code %q param %q", tc.name, r.Status, typ, code, param)
		}
	}
	c := sdkClient(b, b.KeyA)
	m, err := c.Models.Get(t.Context(), "research")
	if err != nil || m.ID != "research" || m.Object != "model" || m.OwnedBy != "baton" || m.Created == 0 {
		t.Fatalf("models.Get: %+v %v", m, err)
	}
	_, err = c.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "nope", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.Code != "model_not_found" || apiErr.Type != "invalid_request_error" || !strings.HasPrefix(apiErr.Response.Header.Get("x-request-id"), "req_") {
		t.Fatalf("unknown model: %v", err)
	}
}

// The Responses API, through the official SDK: an answer, a stream, and a
// run waiting for approval, which says so (status incomplete, reason
// interrupted, the interrupt in the "baton" field).
func TestResponsesSDK(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	c := sdkClient(b, b.KeyA)
	ctx := t.Context()
	var httpResp *http.Response
	res, err := c.Responses.New(ctx, responses.ResponseNewParams{Model: "support", Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("I was charged twice for order 1234")}}, option.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || !strings.Contains(res.OutputText(), "duplicate") || !strings.HasPrefix(res.OutputText(), "Let me get billing") ||
		res.Usage.TotalTokens == 0 || res.Model != "support" || httpResp.Header.Get(server.ThreadHeader) == "" {
		t.Fatalf("response: %s", res.RawJSON())
	}

	stream := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "research",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("How did EV sales develop in 2025?")}})
	var text strings.Builder
	var types []string
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if types[0] != "response.created" || final.Status != "completed" || final.OutputText() != text.String() || !strings.Contains(text.String(), "RPT-42") || final.Usage.TotalTokens == 0 {
		t.Fatalf("stream: %v\n%q\n%s", types, text.String(), final.RawJSON())
	}

	res, err = c.Responses.New(ctx, responses.ResponseNewParams{Model: "support",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("I want a refund for order 1234")}})
	if err != nil {
		t.Fatal(err)
	}
	var ext struct {
		Baton struct {
			Status    string
			Interrupt struct {
				ID          string
				Tools       []string
				DecisionURL string `json:"decision_url"`
			}
		}
	}
	_ = json.Unmarshal([]byte(res.RawJSON()), &ext)
	if res.Status != "incomplete" || res.IncompleteDetails.Reason != "interrupted" || ext.Baton.Status != "interrupted" ||
		ext.Baton.Interrupt.ID == "" || ext.Baton.Interrupt.DecisionURL != "/v1/interrupts/"+ext.Baton.Interrupt.ID+"/decision" {
		t.Fatalf("interrupted: %s", res.RawJSON())
	}
	// The decision URL works.
	if r := b.Do(t, b.KeyA, "POST", ext.Baton.Interrupt.DecisionURL, map[string]any{"type": "approve"}); r.Status != 200 {
		t.Fatalf("decision: %d %s", r.Status, r.Body)
	}
}

// TestModels lists the networks as OpenAI's models.
func TestModels(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	r := b.Do(t, b.KeyA, "GET", "/v1/models", nil)
	if !strings.Contains(string(r.Body), `"id":"support"`) {
		t.Fatalf("models: %s", r.Body)
	}
}
