package telemetry_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/telemetry"
)

// job is what a continuation job carries between the processes: the
// checkpointed state and the trace carrier from its metadata.
type job struct {
	State []byte            `json:"state"`
	Trace map[string]string `json:"trace"`
}

// request plays the request process: a run whose lookup tool is slow stops
// at the background boundary; the checkpointer of the suspension stores the
// state and the trace carrier as the continuation would, in the checkpoint's
// context. It returns the JSON job, the request's spans and its log.
func request(t *testing.T) ([]byte, tracetest.SpanStubs, *logtest.Buffer) {
	t.Helper()
	_, b := setup(t, telemetry.Config{Traces: true}, network{slowLookup: true})
	var j job
	ck := runner.CheckpointFunc(func(ctx context.Context, st *runstate.State) error {
		if st.Status != runstate.StatusSuspended {
			return nil
		}
		var err error
		j.State, err = runstate.Encode(st)
		j.Trace = telemetry.Inject(ctx)
		return err
	})
	res, err := b.runner.Run(t.Context(), input, runner.WithBackgroundBoundary(), runner.WithCheckpointer(ck))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runstate.StatusSuspended || j.State == nil {
		t.Fatalf("run ended %s; want suspended with a checkpoint", res.Status)
	}
	if j.Trace["traceparent"] == "" {
		t.Fatalf("carrier %v has no traceparent", j.Trace)
	}
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return data, b.spans.GetSpans(), b.logs
}

// worker plays the worker process: it decodes the job, starts the linked
// continuation span and resumes the run under it, with its own tracer
// provider. It returns the worker's spans and its log.
func worker(tb testing.TB, ctx context.Context, data []byte) (tracetest.SpanStubs, *logtest.Buffer) {
	tb.Helper()
	var j job
	if err := json.Unmarshal(data, &j); err != nil {
		tb.Fatal(err)
	}
	st, err := runstate.Decode(j.State)
	if err != nil {
		tb.Fatal(err)
	}
	tel, b := setup(tb, telemetry.Config{Traces: true}, network{slowLookup: true})
	ctx, span := tel.StartLinked(ctx, j.Trace, "")
	res, err := b.runner.Resume(ctx, st)
	span.End()
	if err != nil {
		tb.Fatal(err)
	}
	if res.Status != runstate.StatusCompleted || res.LastAgent != "billing" {
		tb.Fatalf("resumed run ended %s with %s", res.Status, res.LastAgent)
	}
	return b.spans.GetSpans(), b.logs
}

// checkLinked checks the worker's span tree: a new trace whose root, the
// continuation span, links to the request's span that was current at the
// suspension checkpoint (the request's invoke_agent span), with the resumed
// run's invoke_agent span under it.
func checkLinked(t *testing.T, reqSpans, workSpans []span) {
	t.Helper()
	var reqRoot span
	for _, s := range reqSpans {
		if s.Parent == "" {
			reqRoot = s
		}
	}
	if reqRoot.Name != "invoke_agent triage" {
		t.Fatalf("request root %q", reqRoot.Name)
	}
	var cont, run span
	for _, s := range workSpans {
		switch s.Name {
		case telemetry.SpanContinuation:
			cont = s
		case "invoke_agent triage":
			run = s
		}
	}
	if cont.Name == "" || run.Name == "" {
		t.Fatalf("worker spans %v: want %s and invoke_agent triage", workSpans, telemetry.SpanContinuation)
	}
	if cont.Parent != "" || cont.Kind != trace.SpanKindConsumer.String() {
		t.Errorf("continuation span: parent %q, kind %s; want a consumer root", cont.Parent, cont.Kind)
	}
	if cont.TraceID == reqRoot.TraceID {
		t.Errorf("the worker continued the request's trace %s; want a new trace", cont.TraceID)
	}
	if len(cont.Links) != 1 || cont.Links[0].TraceID != reqRoot.TraceID || cont.Links[0].SpanID != reqRoot.SpanID {
		t.Errorf("continuation links %v, want one to %s/%s", cont.Links, reqRoot.TraceID, reqRoot.SpanID)
	}
	if run.Parent != cont.SpanID || run.TraceID != cont.TraceID || !run.Resumed {
		t.Errorf("resumed run span: parent %s, trace %s, resumed %v; want a resumed child of %s", run.Parent, run.TraceID, run.Resumed, cont.SpanID)
	}
	for _, s := range workSpans {
		if s.TraceID != cont.TraceID {
			t.Errorf("worker span %s in trace %s, want %s", s.Name, s.TraceID, cont.TraceID)
		}
	}
	var tool bool
	for _, s := range workSpans {
		tool = tool || s.Name == "execute_tool lookup_account" && s.Parent == run.SpanID
	}
	if !tool {
		t.Errorf("the worker did not run the slow tool under the resumed run: %v", workSpans)
	}
}

// span is the part of a span the propagation tests check, as JSON.
type span struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
	Parent  string `json:"parent,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	Links   []link `json:"links,omitempty"`
}

type link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

func toSpans(stubs tracetest.SpanStubs) []span {
	out := make([]span, 0, len(stubs))
	for _, s := range stubs {
		sp := span{Name: s.Name, Kind: s.SpanKind.String(), TraceID: s.SpanContext.TraceID().String(), SpanID: s.SpanContext.SpanID().String()}
		if s.Parent.IsValid() {
			sp.Parent = s.Parent.SpanID().String()
		}
		for _, kv := range s.Attributes {
			if kv.Key == "baton.run.resumed" {
				sp.Resumed = kv.Value.AsBool()
			}
		}
		for _, l := range s.Links {
			sp.Links = append(sp.Links, link{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String()})
		}
		out = append(out, sp)
	}
	return out
}

// TestContinuationLink passes a continuation between two tracer providers
// in one process, the job JSON-encoded in between.
func TestContinuationLink(t *testing.T) {
	t.Parallel()
	data, reqSpans, reqLog := request(t)
	workSpans, workLog := worker(t, t.Context(), data)
	checkLinked(t, toSpans(reqSpans), toSpans(workSpans))

	// The run log joins each side's lines to its own trace, and the
	// worker's to the request's trace too.
	reqTrace := rootSpan(t, reqSpans).SpanContext.TraceID().String()
	workTrace := rootSpan(t, workSpans).SpanContext.TraceID().String()
	for _, side := range []struct {
		name         string
		log          *logtest.Buffer
		trace, links string
		status       string
	}{
		{"request", reqLog, reqTrace, "", "suspended"},
		{"worker", workLog, workTrace, reqTrace, "completed"},
	} {
		started, ended := side.log.Records(t, "run started"), side.log.Records(t, "run ended")
		if len(started) != 1 || len(ended) != 1 {
			t.Fatalf("%s: %d started and %d ended lines, want 1 and 1:\n%s", side.name, len(started), len(ended), side.log)
		}
		if started[0]["run_id"] != ended[0]["run_id"] || started[0]["run_id"] == "" || ended[0]["status"] != side.status {
			t.Errorf("%s: started %v, ended %v", side.name, started[0], ended[0])
		}
		for _, line := range []map[string]any{started[0], ended[0]} {
			linked, _ := line["linked_trace_id"].(string)
			if line["trace_id"] != side.trace || linked != side.links {
				t.Errorf("%s %s: trace_id %v, linked_trace_id %q; want %s and %q", side.name, line["msg"], line["trace_id"], linked, side.trace, side.links)
			}
		}
	}
	if a, b := reqLog.Records(t, "run started")[0]["run_id"], workLog.Records(t, "run started")[0]["run_id"]; a != b {
		t.Errorf("the worker logged run %v, the request %v", b, a)
	}
}

// TestContinuationTwoProcesses passes a continuation to a second process,
// this test binary re-executed as TestHelperProcess, through its stdin; it
// writes its spans to a file.
func TestContinuationTwoProcesses(t *testing.T) {
	t.Parallel()
	data, reqSpans, _ := request(t)
	out := filepath.Join(t.TempDir(), "spans.json")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BATON_TELEMETRY_HELPER=1", "BATON_TELEMETRY_HELPER_OUT="+out)
	cmd.Stdin = strings.NewReader(string(data))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("worker process: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var workSpans []span
	if err := json.Unmarshal(b, &workSpans); err != nil {
		t.Fatal(err)
	}
	checkLinked(t, toSpans(reqSpans), workSpans)
}

// TestHelperProcess is the worker process of TestContinuationTwoProcesses.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("BATON_TELEMETRY_HELPER") != "1" {
		t.Skip("helper process of TestContinuationTwoProcesses")
	}
	data, err := io.ReadAll(os.Stdin)
	if err != nil {
		t.Fatal(err)
	}
	spans, _ := worker(t, t.Context(), data)
	b, err := json.Marshal(toSpans(spans))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("BATON_TELEMETRY_HELPER_OUT"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestInjectExtract(t *testing.T) {
	t.Parallel()
	if c := telemetry.Inject(t.Context()); c != nil {
		t.Errorf("Inject without a span = %v, want nil", c)
	}
	if sc := telemetry.SpanContextOf(map[string]string{"traceparent": "garbage"}); sc.IsValid() {
		t.Error("a malformed traceparent gave a valid span context")
	}
	tel, b := setup(t, telemetry.Config{Traces: true}, network{})
	ctx, sp := tel.TracerProvider().Tracer("test").Start(t.Context(), "request")
	carrier := telemetry.Inject(ctx)
	sp.End()
	// Child semantics with Extract.
	_, child := tel.TracerProvider().Tracer("test").Start(telemetry.Extract(t.Context(), carrier), "child")
	child.End()
	if got, want := child.SpanContext().TraceID(), sp.SpanContext().TraceID(); got != want {
		t.Errorf("Extract: child in trace %s, want %s", got, want)
	}
	// A missing carrier gives a root without links.
	_, root := tel.StartLinked(t.Context(), nil, "orphan")
	root.End()
	for _, s := range b.spans.GetSpans() {
		if s.Name == "orphan" && (s.Parent.IsValid() || len(s.Links) != 0) {
			t.Errorf("orphan span: parent %v, links %v", s.Parent, s.Links)
		}
	}
}

// TestOff checks that telemetry with everything off costs nothing and its
// helpers are safe.
func TestOff(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Observer() != nil || tel.TracingEnabled() || tel.MetricsEnabled() {
		t.Error("telemetry with the zero Config is on")
	}
	ctx := t.Context()
	ctx2, sp := tel.StartLinked(ctx, map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "")
	if ctx2 != ctx || sp.IsRecording() {
		t.Error("StartLinked with tracing off started a span")
	}
	sp.End()
	tel.StreamOpened(ctx)
	tel.StreamClosed(ctx)
	tel.RecordContinuationLatency(ctx, 0)
	tel.RecordError(ctx, "x")
	unregister, err := tel.RegisterQueueDepth(func(context.Context) (map[string]int64, error) { return nil, nil })
	if err != nil || unregister() != nil {
		t.Errorf("RegisterQueueDepth with metrics off: %v", err)
	}
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/metrics with metrics off: %d", rec.Code)
	}
	var nilTel *telemetry.Telemetry
	nilTel.StreamOpened(ctx)
	if nilTel.Observer() != nil {
		t.Error("nil telemetry has an observer")
	}
	if _, sp := nilTel.StartLinked(ctx, nil, ""); sp.IsRecording() {
		t.Error("nil telemetry recorded a span")
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	if _, err := telemetry.New(telemetry.Config{TracerProvider: tel.TracerProvider(), SpanExporter: tracetest.NewNoopExporter()}); err == nil {
		t.Error("New accepted both TracerProvider and SpanExporter")
	}
}
