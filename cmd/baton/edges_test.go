package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// unknownToolServer is an OpenAI-compatible server whose model first calls
// a tool it was not offered (get_wether), a transfer it does not have and
// lookup_order with arguments its schema refuses, then answers. (A
// scripted model cannot: baton validate refuses scripts naming tools the
// agent cannot call.)
func unknownToolServer(t *testing.T) string {
	t.Helper()
	const calls = `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[` +
		`{"index":0,"id":"call_1","type":"function","function":{"name":"get_wether","arguments":"{\"city\":\"Paris\"}"}},` +
		`{"index":1,"id":"call_2","type":"function","function":{"name":"transfer_to_sales","arguments":"{}"}},` +
		`{"index":2,"id":"call_3","type":"function","function":{"name":"lookup_order","arguments":"{\"order_id\":1234}"}}]},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n"
	const answer = `data: {"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Sorry, I cannot check the weather; order 1234 is delivered."},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if n.Add(1)%2 == 1 {
			_, _ = w.Write([]byte(calls))
		} else {
			_, _ = w.Write([]byte(answer))
		}
	}))
	t.Cleanup(srv.Close)
	yaml := `version: 1
name: unknown_tool
tools:
  - name: lookup_order
    parameters:
      type: object
      properties: {order_id: {type: string}}
      required: [order_id]
    result: {order_id: "1234", status: delivered}
agents:
  - name: support
    model: openai-compatible:m
    base_url: ` + srv.URL + `/v1
    tools: [lookup_order]
    transfers: [{to: billing}]
  - name: billing
    model: scripted
    script:
      - text: unused
`
	path := filepath.Join(t.TempDir(), "unknown_tool.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunEdges: a call of an unknown tool (or transfer, or with arguments
// the schema refuses) is a tool error the model sees, not a failed command:
// baton run exits 0; a refusal fails the run with kind refusal (exit 1),
// with the reasoning and the finish reason shown.
func TestRunEdges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		contains []string
		events   map[string]map[string]any // type -> fields the first such event has
	}{
		{
			name: "UnknownTool", args: []string{"run", unknownToolServer(t), "weather?"},
			contains: []string{
				`  ← get_wether failed: unknown tool "get_wether" for agent support. Available tools: lookup_order, transfer_to_billing.`,
				`  ← transfer_to_sales failed: unknown tool "transfer_to_sales" for agent support: it cannot transfer to "sales"; it can transfer to billing (tool transfer_to_billing).`,
				"  ← lookup_order failed: invalid arguments for lookup_order: at /order_id:",
				"── completed · last agent support · 2 turns · 0 transfers",
			},
			events: map[string]map[string]any{
				"tool_result": {"name": "get_wether", "error": `unknown tool "get_wether" for agent support. Available tools: lookup_order, transfer_to_billing.`},
				"run_end":     {"status": "completed"},
			},
		},
		{
			name: "Refusal", args: []string{"run", "testdata/refusal.yaml", "do it"}, code: 1,
			contains: []string{
				"  … support thinks: The user asks for something I must not do.",
				"support: I'm sorry, I can't help with that.",
				"  (the answer ended with refusal)",
				"✗ error (refusal): runner: refusal: agent support: the model refused to answer: I'm sorry, I can't help with that.",
				"── failed · last agent support · 1 turns · 0 transfers",
			},
			events: map[string]map[string]any{
				"reasoning": {"agent": "support", "text": "The user asks for something I must not do."},
				"message":   {"finish_reason": "refusal", "request_id": "scripted-support-1"},
				"error":     {"kind": "refusal", "request_id": "scripted-support-1"},
				"run_end":   {"status": "failed"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s\nstdout:\n%s", code, tc.code, stderr, stdout)
			}
			for _, s := range tc.contains {
				if !strings.Contains(stdout, s) {
					t.Errorf("transcript lacks %q:\n%s", s, stdout)
				}
			}
			code, stdout, stderr = runCLI(t, append(tc.args, "--json")...)
			if code != tc.code {
				t.Fatalf("--json: exit code %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			events := decodeEvents(t, stdout)
			for typ, fields := range tc.events {
				ev := eventOf(events, typ)
				if ev == nil {
					t.Errorf("no %s event in\n%s", typ, stdout)
					continue
				}
				for k, v := range fields {
					if ev[k] != v {
						t.Errorf("%s.%s = %v, want %v", typ, k, ev[k], v)
					}
				}
			}
			if tc.name == "Refusal" {
				usage, _ := events[len(events)-1]["usage"].(map[string]any)
				if usage["cached_tokens"] != 64.0 || usage["reasoning_tokens"] != 5.0 {
					t.Errorf("run_end usage %v", usage)
				}
			}
		})
	}
}
