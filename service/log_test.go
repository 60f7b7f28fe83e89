package service_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/service/servicetest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/threads"
)

// slowNetwork is an assistant whose one tool is slow: an inline turn stops
// before it and a worker continues the run.
func slowNetwork(t *testing.T) service.Definition {
	t.Helper()
	ship := agent.FuncTool("ship", "Ships an order.", func(context.Context, struct {
		Order string `json:"order"`
	}) (string, error) {
		return `{"status":"shipped"}`, nil
	})
	ship.Slow = true
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "shop", Agents: []*agent.Agent{{
		Name: "assistant", Tools: []*agent.Tool{ship}, ModelName: "scripted",
		Model: scripted.New("assistant", []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "ship", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
			{Text: "Order 1234 has shipped."},
		}, scripted.Options{}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return service.Definition{Network: net}
}

// TestRunLog: given a logger, the service logs each run's start and end,
// inline and in its worker, each line with the trace id of the run's span;
// the worker's lines name the request's trace as linked_trace_id, the
// trace its continuation span links to.
func TestRunLog(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		ctx := t.Context()
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		tel, err := telemetry.New(telemetry.Config{TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		logs := &logtest.Buffer{}
		log, err := telemetry.NewLogger(logs, "json", slog.LevelInfo)
		if err != nil {
			t.Fatal(err)
		}
		svc := servicetest.Started(t, service.Config{Store: open(t), Networks: []service.Definition{slowNetwork(t)}, Workers: 1,
			Telemetry: tel, Logger: log})
		n, _ := svc.Network("shop")
		ran := runtest.Collect(t, n.Threads.Turn(ctx, "ann", "Ship order 1234", threads.TurnOptions{RunOptions: n.Continuation.RunOptions()}), nil)
		runID := ran.RunID()
		if e := ran.End; e != nil && e.Status != runstate.StatusSuspended {
			t.Fatalf("inline run ended %s, want suspended", e.Status)
		}
		var ended []map[string]any
		for deadline := time.Now().Add(30 * time.Second); len(ended) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			ended = logs.Records(t, "run ended")
		}
		started := logs.Records(t, "run started")
		if len(started) != 2 || len(ended) != 2 {
			t.Fatalf("%d started and %d ended lines, want 2 and 2 (inline, worker):\n%s", len(started), len(ended), logs)
		}

		// The spans: the inline run's invoke_agent root; the worker's
		// baton.continuation root linking to it, with the resumed run's
		// invoke_agent under it.
		var inline, cont tracetest.SpanStub
		for _, s := range spans.GetSpans() {
			switch {
			case s.Name == "invoke_agent assistant" && !s.Parent.IsValid():
				inline = s
			case s.Name == telemetry.SpanContinuation:
				cont = s
			}
		}
		if !inline.SpanContext.IsValid() || !cont.SpanContext.IsValid() || len(cont.Links) != 1 {
			t.Fatalf("spans %v: want the inline run's root and a linked continuation", spans.GetSpans())
		}
		reqTrace, workTrace := inline.SpanContext.TraceID().String(), cont.SpanContext.TraceID().String()
		// Which side a line is from: the worker's are resumed (the two
		// sides' lines may interleave).
		want := map[bool]struct{ trace, linked, status string }{false: {reqTrace, "", "suspended"}, true: {workTrace, reqTrace, "completed"}}
		sides := map[string]int{}
		for _, line := range append(started, ended...) {
			resumed, _ := line["resumed"].(bool)
			w := want[resumed]
			sides[line["msg"].(string)+" "+w.status]++
			linked, _ := line["linked_trace_id"].(string)
			if line["run_id"] != runID || line["network"] != "shop" || line["agent"] != "assistant" || line["trace_id"] != w.trace || linked != w.linked {
				t.Errorf("line %v: want run %s, trace %s, linked to %q", line, runID, w.trace, w.linked)
			}
			if line["msg"] == "run ended" && line["status"] != w.status {
				t.Errorf("ended line %v: want status %s", line, w.status)
			}
		}
		if len(sides) != 4 {
			t.Errorf("lines by side: %v, want a started and an ended line on each", sides)
		}
	})
}
