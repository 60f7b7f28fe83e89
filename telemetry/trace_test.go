package telemetry_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/telemetry"
)

// attrs returns a span's attributes by key.
func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// wantAttrs checks the listed attributes of s; a nil want value means the
// attribute must be absent.
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, w := range want {
		v, ok := got[attribute.Key(k)]
		if w == nil {
			if ok {
				t.Errorf("%s: %s = %v, want absent", s.Name, k, v.String())
			}
			continue
		}
		if !ok {
			t.Errorf("%s: no attribute %s, want %v", s.Name, k, w)
			continue
		}
		var match bool
		switch w := w.(type) {
		case string:
			match = v.Type() == attribute.STRING && v.AsString() == w
		case int:
			match = v.Type() == attribute.INT64 && v.AsInt64() == int64(w)
		case int64:
			match = v.Type() == attribute.INT64 && v.AsInt64() == w
		case bool:
			match = v.Type() == attribute.BOOL && v.AsBool() == w
		case []string:
			match = v.Type() == attribute.STRINGSLICE && slices.Equal(v.AsStringSlice(), w)
		default:
			t.Fatalf("unsupported want type %T", w)
		}
		if !match {
			t.Errorf("%s: %s = %v (%s), want %v", s.Name, k, v.String(), v.Type(), w)
		}
	}
}

func TestTraceTransfer(t *testing.T) {
	t.Parallel()
	_, b := setup(t, telemetry.Config{Traces: true}, network{})
	res, err := b.runner.Run(t.Context(), input, runner.WithThread("thread-1"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runstate.StatusCompleted || res.LastAgent != "billing" {
		t.Fatalf("run ended %s with %s", res.Status, res.LastAgent)
	}
	spans := b.spans.GetSpans()

	// One root: the run's invoke_agent span; everything else is its child,
	// in one trace.
	var root tracetest.SpanStub
	roots := 0
	for _, s := range spans {
		if !s.Parent.IsValid() {
			root = s
			roots++
		}
	}
	if roots != 1 || root.Name != "invoke_agent triage" {
		t.Fatalf("want one root invoke_agent triage; spans: %v", names(spans))
	}
	if root.SpanKind != trace.SpanKindInternal {
		t.Errorf("root kind %v", root.SpanKind)
	}
	var children []string
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("%s is in trace %s, want %s", s.Name, s.SpanContext.TraceID(), root.SpanContext.TraceID())
		}
		if s.Parent.IsValid() {
			if s.Parent.SpanID() != root.SpanContext.SpanID() {
				t.Errorf("%s: parent %s, want the root %s", s.Name, s.Parent.SpanID(), root.SpanContext.SpanID())
			}
			if s.StartTime.Before(root.StartTime) || s.EndTime.After(root.EndTime) {
				t.Errorf("%s is not within the root's time", s.Name)
			}
			children = append(children, s.Name)
		}
	}
	// Children in the order they ended: triage's two model calls around its
	// tool call, the transfer, billing's model call.
	wantChildren := []string{"chat scripted", "execute_tool lookup_account", "chat scripted", telemetry.SpanTransfer, "chat claude-sonnet-4-5"}
	if !slices.Equal(children, wantChildren) {
		t.Fatalf("children %q, want %q", children, wantChildren)
	}

	wantAttrs(t, root, map[string]any{
		"gen_ai.operation.name":      "invoke_agent",
		"gen_ai.agent.name":          "triage",
		"gen_ai.conversation.id":     "thread-1",
		"baton.run_id":               res.RunID,
		"baton.thread_id":            "thread-1",
		"baton.network":              "support",
		"baton.run.resumed":          nil,
		"baton.run.status":           "completed",
		"baton.run.last_agent":       "billing",
		"baton.run.turns":            3,
		"baton.run.transfers":        1,
		"gen_ai.usage.input_tokens":  usageLookup.InputTokens + usageTransfer.InputTokens + usageAnswer.InputTokens,
		"gen_ai.usage.output_tokens": usageLookup.OutputTokens + usageTransfer.OutputTokens + usageAnswer.OutputTokens,
	})
	if root.Status.Code != codes.Unset {
		t.Errorf("root status %v", root.Status)
	}

	byName := func(i int) tracetest.SpanStub {
		n := 0
		for _, s := range spans {
			if s.Parent.IsValid() {
				if n == i {
					return s
				}
				n++
			}
		}
		t.Fatalf("no child %d", i)
		return tracetest.SpanStub{}
	}
	chat1, tool, chat2, hand, chat3 := byName(0), byName(1), byName(2), byName(3), byName(4)
	for _, c := range []tracetest.SpanStub{chat1, chat2, chat3} {
		if c.SpanKind != trace.SpanKindClient {
			t.Errorf("%s kind %v, want client", c.Name, c.SpanKind)
		}
	}
	wantAttrs(t, chat1, map[string]any{
		"gen_ai.operation.name":          "chat",
		"gen_ai.provider.name":           "scripted",
		"gen_ai.request.model":           "scripted",
		"gen_ai.response.model":          "scripted",
		"gen_ai.response.id":             "scripted-triage-1",
		"gen_ai.agent.name":              "triage",
		"gen_ai.usage.input_tokens":      usageLookup.InputTokens,
		"gen_ai.usage.output_tokens":     usageLookup.OutputTokens,
		"gen_ai.response.finish_reasons": []string{"tool_calls"},
		"baton.model.attempt":            1,
		"error.type":                     nil,
	})
	wantAttrs(t, chat2, map[string]any{
		"gen_ai.response.id":         "scripted-triage-2",
		"gen_ai.usage.input_tokens":  usageTransfer.InputTokens,
		"gen_ai.usage.output_tokens": usageTransfer.OutputTokens,
	})
	wantAttrs(t, chat3, map[string]any{
		"gen_ai.operation.name":          "chat",
		"gen_ai.provider.name":           "anthropic",
		"gen_ai.request.model":           "claude-sonnet-4-5",
		"baton.model":                    billingModel,
		"gen_ai.response.model":          "scripted",
		"gen_ai.response.id":             "scripted-billing-1",
		"gen_ai.agent.name":              "billing",
		"gen_ai.usage.input_tokens":      usageAnswer.InputTokens,
		"gen_ai.usage.output_tokens":     usageAnswer.OutputTokens,
		"gen_ai.response.finish_reasons": []string{"stop"},
	})
	wantAttrs(t, tool, map[string]any{
		"gen_ai.operation.name": "execute_tool",
		"gen_ai.tool.name":      "lookup_account",
		"gen_ai.tool.call.id":   "call_triage_1_1",
		"gen_ai.tool.type":      "function",
		"baton.tool.kind":       "tool",
		"gen_ai.agent.name":     "triage",
		"error.type":            nil,
	})
	wantAttrs(t, hand, map[string]any{
		"baton.transfer.id":             res.RunID + "-h1",
		"baton.transfer.from":           "triage",
		"baton.transfer.to":             "billing",
		"baton.transfer.type":           "transfer",
		"baton.transfer.tool":           "transfer_to_billing",
		"baton.transfer.history_policy": "full",
		"baton.transfer.transforms":     []string{"drop_tool_traffic"},
		"baton.transfer.outcome":        "ok",
	})
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func TestTraceFailures(t *testing.T) {
	t.Parallel()

	t.Run("ModelError", func(t *testing.T) {
		t.Parallel()
		key := "sk-proj-" + strings.Repeat("A1b2", 8)
		_, b := setup(t, telemetry.Config{Traces: true}, network{billingSteps: []scripted.Step{
			{Text: answer, Fail: &scripted.Fail{Status: 401, Message: "invalid api key " + key}},
		}})
		_, err := b.runner.Run(t.Context(), input)
		if err == nil {
			t.Fatal("run succeeded")
		}
		spans := b.spans.GetSpans()
		var chat, root tracetest.SpanStub
		for _, s := range spans {
			switch s.Name {
			case "chat claude-sonnet-4-5":
				chat = s
			case "invoke_agent triage":
				root = s
			}
		}
		if chat.Status.Code != codes.Error || root.Status.Code != codes.Error {
			t.Fatalf("chat status %v, root status %v; want errors", chat.Status, root.Status)
		}
		wantAttrs(t, chat, map[string]any{"error.type": "401", "gen_ai.response.id": nil})
		wantAttrs(t, root, map[string]any{"error.type": string(runner.KindOf(err)), "baton.run.status": "failed"})
		for _, s := range spans {
			if strings.Contains(s.Status.Description, key) {
				t.Errorf("%s: status description leaks the key: %q", s.Name, s.Status.Description)
			}
		}
		if !strings.Contains(chat.Status.Description, telemetry.Redacted) {
			t.Errorf("chat status description %q is not redacted", chat.Status.Description)
		}
	})

	t.Run("Refusal", func(t *testing.T) {
		t.Parallel()
		// The model call succeeds (its span is not an error) and carries the
		// finish reason, the request id and the cache counts; the run fails
		// with kind refusal.
		u := message.Usage{InputTokens: 3000, OutputTokens: 5, CachedTokens: 2048, CacheCreationTokens: 512}
		_, b := setup(t, telemetry.Config{Traces: true}, network{billingSteps: []scripted.Step{
			{Text: "I can't help with that.", FinishReason: "refusal", Usage: &u},
		}})
		_, err := b.runner.Run(t.Context(), input)
		if runner.KindOf(err) != runner.KindRefusal {
			t.Fatalf("err = %v", err)
		}
		var chat, root tracetest.SpanStub
		for _, s := range b.spans.GetSpans() {
			switch s.Name {
			case "chat claude-sonnet-4-5":
				chat = s
			case "invoke_agent triage":
				root = s
			}
		}
		if chat.Status.Code == codes.Error {
			t.Errorf("chat status %v", chat.Status)
		}
		wantAttrs(t, chat, map[string]any{
			"gen_ai.response.finish_reasons":           []string{"refusal"},
			"gen_ai.response.id":                       "scripted-billing-1",
			"gen_ai.usage.cache_read.input_tokens":     int64(2048),
			"gen_ai.usage.cache_creation.input_tokens": int64(512),
		})
		wantAttrs(t, root, map[string]any{"error.type": "refusal", "baton.run.status": "failed"})
	})

	t.Run("TransferRejected", func(t *testing.T) {
		t.Parallel()
		// The transfer arguments lack account_id: the transfer is rejected and
		// triage answers itself.
		_, b := setup(t, telemetry.Config{Traces: true}, network{triageSteps: []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "transfer_to_billing", Arguments: json.RawMessage(`{"reason":"duplicate charge"}`)}}},
			{Text: "I cannot transfer you; here is what I know."},
		}})
		res, err := b.runner.Run(t.Context(), input)
		if err != nil {
			t.Fatal(err)
		}
		if res.Transfers != 0 {
			t.Fatalf("%d transfers", res.Transfers)
		}
		var hand []tracetest.SpanStub
		for _, s := range b.spans.GetSpans() {
			if s.Name == telemetry.SpanTransfer {
				hand = append(hand, s)
			}
		}
		if len(hand) != 1 {
			t.Fatalf("%d transfer spans, want 1", len(hand))
		}
		wantAttrs(t, hand[0], map[string]any{
			"baton.transfer.from":    "triage",
			"baton.transfer.to":      "billing",
			"baton.transfer.type":    "transfer",
			"baton.transfer.outcome": "rejected",
			"baton.transfer.id":      nil,
		})
	})
}
