package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/anthropicmodel"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/openaimodel"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// apis are the three provider APIs, each with a model for a server's URL.
var apis = []struct {
	name  string
	wire  providertest.Wire
	model func(t *testing.T, url string) model.Model
}{
	{"Chat", providertest.ChatWire{Model: "gpt-4o-mini"}, func(t *testing.T, url string) model.Model {
		return providertest.NewModel(t, openaimodel.New, openaimodel.Config{Model: "gpt-4o-mini", BaseURL: url + "/v1", APIKey: "sk-test-key-000"})
	}},
	{"Responses", providertest.ResponsesWire{Model: "gpt-5.5"}, func(t *testing.T, url string) model.Model {
		return providertest.NewModel(t, openaimodel.New, openaimodel.Config{Model: "gpt-5.5", API: openaimodel.APIResponses, BaseURL: url + "/v1", APIKey: "sk-test-key-000"})
	}},
	{"Anthropic", providertest.AnthropicWire{Model: "claude-sonnet-4-5"}, func(t *testing.T, url string) model.Model {
		return providertest.NewModel(t, anthropicmodel.New, anthropicmodel.Config{Model: "claude-sonnet-4-5", BaseURL: url, APIKey: "sk-ant-test-000"})
	}},
}

func runOne(t *testing.T, m model.Model, tools ...*agent.Tool) (*runner.Result, *retry.Recorder, error) {
	t.Helper()
	a := &agent.Agent{Name: "support", Instructions: "Help.", Model: m, ModelName: "test", Tools: tools}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "edges", Agents: []*agent.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	s := &retry.Recorder{} // the runner's retry waits, not waited
	r, err := runner.New(runner.Config{Network: net, Logger: slog.New(slog.DiscardHandler), Sleep: s.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), "hello")
	return res, s, err
}

// TestOneLayerRetries counts the requests a server gets through the whole
// stack (runner, adapter, SDK): the SDKs' own retries are off
// (WithMaxRetries(0)) and the runner retries transient failures only —
// four attempts by default, waiting what Retry-After says — while a
// permanent failure (a malformed body, a 400) costs exactly one request.
func TestOneLayerRetries(t *testing.T) {
	t.Parallel()
	html := providertest.Reply{ContentType: "text/html", Body: []byte("<html><body>Gateway login</body></html>")}
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name     string
				replies  []providertest.Reply
				requests int
				kind     runner.Kind // "" for a completed run
				code     string
				waits    []time.Duration
			}{
				{name: "Overloaded", replies: []providertest.Reply{{Status: 503, ContentType: "application/json", Body: []byte(`{"error":{"message":"overloaded","type":"server_error"}}`)}},
					requests: 4, kind: runner.KindModelTransient},
				{name: "RateLimitedThenOK", replies: []providertest.Reply{
					{Status: 429, ContentType: "application/json", Header: http.Header{"Retry-After": {"3"}}, Body: []byte(`{"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}`)},
					providertest.SSE(api.wire.Stream("Hi there.", nil))},
					requests: 2, waits: []time.Duration{3 * time.Second}},
				{name: "BadRequest", replies: []providertest.Reply{{Status: 400, ContentType: "application/json", Body: []byte(`{"error":{"message":"bad field","type":"invalid_request_error"}}`)}},
					requests: 1, kind: runner.KindSystem},
				{name: "HTMLPage", replies: []providertest.Reply{html}, requests: 1, kind: runner.KindSystem, code: "invalid_response"},
				{name: "CutJSON", replies: []providertest.Reply{{ContentType: "application/json", Body: []byte(`{"id":"x","object":`)}},
					requests: 1, kind: runner.KindSystem, code: "invalid_response"},
				{name: "JSONAsEventStream", replies: []providertest.Reply{{Body: []byte(`{"id":"x","choices":[]}`)}},
					requests: 1, kind: runner.KindSystem, code: "invalid_response"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					srv := providertest.NewServer(t, tc.replies...)
					res, s, err := runOne(t, api.model(t, srv.URL))
					if n := len(srv.Requests()); n != tc.requests {
						t.Errorf("%d requests, want %d (err %v)", n, tc.requests, err)
					}
					if runner.KindOf(err) != tc.kind {
						t.Fatalf("kind %q, want %q: %v", runner.KindOf(err), tc.kind, err)
					}
					if tc.kind == "" && (res.Status != runstate.StatusCompleted || res.Output != "Hi there.") {
						t.Errorf("result %+v", res)
					}
					var me *model.Error
					if tc.code != "" && (!errors.As(err, &me) || me.Code != tc.code || !strings.Contains(me.Message, "the body began")) {
						t.Errorf("error %v, want code %s with a snippet", err, tc.code)
					}
					if tc.waits != nil && !slices.Equal(s.Waits(), tc.waits) {
						t.Errorf("waits %v, want %v", s.Waits(), tc.waits)
					}
				})
			}
		})
	}
}

// TestJSONBodiesEndToEnd runs a turn against servers that ignore
// "stream": true and answer one JSON body (real OpenAI recordings for
// Chat and Responses, Anthropic's documented format): one request each,
// and the run completes with the call made and answered.
func TestJSONBodiesEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		model  func(t *testing.T, url string) model.Model
		first  string
		second providertest.Reply
		tool   string
		want   string
	}{
		{"Responses", apis[1].model, "openai_responses_json_1.json",
			providertest.Reply{ContentType: "application/json", Body: nil}, "multiply", "1231 * 2331 = 2,869,461"},
		{"Chat", apis[0].model, "openai_chat_json_1.json", providertest.SSE(apis[0].wire.Stream("Done.", nil)), "", "Done."},
		{"Anthropic", apis[2].model, "anthropic_json_tool_use.json", providertest.SSE(apis[2].wire.Stream("18°C in Paris.", nil)), "get_weather", "18°C in Paris."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			second := tc.second
			if tc.name == "Responses" {
				second.Body = providertest.Fixture(t, "openai_responses_json_2.json")
			}
			srv := providertest.NewServer(t, providertest.Reply{ContentType: "application/json", Body: providertest.Fixture(t, tc.first)}, second)
			var tools []*agent.Tool
			name := tc.tool
			if name == "" {
				var rec map[string]any
				providertest.FixtureJSON(t, tc.first, &rec)
				name = rec["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["name"].(string)
			}
			tools = append(tools, &agent.Tool{Name: name, Func: func(context.Context, json.RawMessage) (string, error) { return "42", nil }})
			res, _, err := runOne(t, tc.model(t, srv.URL), tools...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != runstate.StatusCompleted || res.Output != tc.want || res.Turns != 2 {
				t.Errorf("result %s %q turns %d", res.Status, res.Output, res.Turns)
			}
			if n := len(srv.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

// TestUnknownToolEndToEnd replays a model calling a tool it was not
// offered (get_wether): the runner answers it with a tool error naming the
// tools, the model's next request carries that error, the run completes.
func TestUnknownToolEndToEnd(t *testing.T) {
	t.Parallel()
	srv := providertest.NewServer(t,
		providertest.SSE(providertest.Fixture(t, "openai_chat_stream_unknown_tool.sse")),
		providertest.SSE(apis[0].wire.Stream("It is sunny in Paris.", nil)))
	weather := &agent.Tool{Name: "get_weather", Func: func(context.Context, json.RawMessage) (string, error) { return "sunny", nil }}
	res, _, err := runOne(t, apis[0].model(t, srv.URL), weather)
	if err != nil || res.Output != "It is sunny in Paris." {
		t.Fatalf("run %+v, %v", res, err)
	}
	second := srv.Requests()[1].JSON(t)
	var toolMsg map[string]any
	for _, m := range second["messages"].([]any) {
		if mm := m.(map[string]any); mm["role"] == "tool" {
			toolMsg = mm
		}
	}
	want := `unknown tool "get_wether" for agent support. Available tools: get_weather.`
	if toolMsg == nil || toolMsg["tool_call_id"] != "call_Wether0000000000000000001" || toolMsg["content"] != want {
		t.Errorf("tool message %v, want content %q", toolMsg, want)
	}
}

// TestRefusalEndToEnd replays the real Anthropic refusal: the run fails
// with kind refusal, the provider's explanation and its request id.
func TestRefusalEndToEnd(t *testing.T) {
	t.Parallel()
	srv := providertest.NewServer(t, providertest.Reply{Header: http.Header{"Request-Id": {"req_011Cef1BeSqcyH3S7gNQq2MN"}}, Body: providertest.Fixture(t, "anthropic_stream_refusal.sse")})
	res, _, err := runOne(t, apis[2].model(t, srv.URL))
	var fe *runner.FinishError
	if runner.KindOf(err) != runner.KindRefusal || !errors.As(err, &fe) || fe.RequestID != "req_011Cef1BeSqcyH3S7gNQq2MN" ||
		!strings.Contains(err.Error(), "reasoning_extraction: This request was blocked") {
		t.Fatalf("err = %v", err)
	}
	if res.Status != runstate.StatusFailed || res.State.Failure.Kind != "refusal" || res.State.Failure.RequestID != "req_011Cef1BeSqcyH3S7gNQq2MN" {
		t.Errorf("result %s %+v", res.Status, res.State.Failure)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests", n)
	}
}
