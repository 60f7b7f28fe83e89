package telemetry_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/telemetry"
)

// benchRun measures one triage → billing transfer per iteration (scripted
// models: triage's transfer call with a typed context, the transfer,
// billing's answer), observed by telemetry built from cfg. The runner logs
// to a discarding handler, as in bench/. Besides wall time it reports
// cpu-ns/op, the process's CPU time per run (the batch span processor's
// goroutine and GC included), which is steadier on a shared machine.
func benchRun(b *testing.B, cfg telemetry.Config) {
	benchRunLog(b, cfg, nil)
}

// benchRunLog is benchRun with the run log on log (LoggingObserver), when
// log is not nil.
func benchRunLog(b *testing.B, cfg telemetry.Config, log *slog.Logger) {
	tel, err := telemetry.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	net := network{triageSteps: []scripted.Step{{ToolCalls: []scripted.Call{{Name: "transfer_to_billing",
		Arguments: json.RawMessage(`{"reason":"duplicate charge","account_id":"acct_42"}`)}}, Usage: &usageTransfer}}}
	r, err := runner.New(runner.Config{Network: net.build(b), Observer: tel.LoggingObserver(log), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	res, err := r.Run(ctx, input)
	if err != nil || res.Status != runstate.StatusCompleted || res.Transfers != 1 {
		b.Fatalf("run: %v, %+v", err, res)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := r.Run(ctx, input); err != nil {
			b.Fatal(err)
		}
	}
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkRunTracingOff is the transfer with telemetry off: Observer() is
// nil and the runner uses its no-op observer.
func BenchmarkRunTracingOff(b *testing.B) { benchRun(b, telemetry.Config{}) }

// BenchmarkRunTracingNoopExporter is the transfer with tracing on through a
// real SDK tracer provider (batch span processor, always-on sampler) whose
// exporter drops the spans.
func BenchmarkRunTracingNoopExporter(b *testing.B) {
	benchRun(b, telemetry.Config{SpanExporter: tracetest.NewNoopExporter()})
}

// BenchmarkRunMetrics is the transfer with metrics on (Prometheus exporter)
// and tracing off.
func BenchmarkRunMetrics(b *testing.B) { benchRun(b, telemetry.Config{Metrics: true}) }

// BenchmarkRunTracingAndMetrics is the transfer with tracing (no-op
// exporter) and metrics on, as a server with an OTLP collector runs.
func BenchmarkRunTracingAndMetrics(b *testing.B) {
	benchRun(b, telemetry.Config{SpanExporter: tracetest.NewNoopExporter(), Metrics: true})
}

// BenchmarkRunLogWarn is the transfer with the run log on a logger at Warn
// (the CLI's default: baton run, chat): the observer is on, its lines are
// not written.
func BenchmarkRunLogWarn(b *testing.B) {
	log, err := telemetry.NewLogger(io.Discard, "json", slog.LevelWarn)
	if err != nil {
		b.Fatal(err)
	}
	benchRunLog(b, telemetry.Config{}, log)
}

// BenchmarkRunLogInfo is the transfer with the run log written (its two
// lines, JSON, redacting handler) to io.Discard: what serve and worker pay
// per run besides tracing.
func BenchmarkRunLogInfo(b *testing.B) {
	log, err := telemetry.NewLogger(io.Discard, "json", slog.LevelInfo)
	if err != nil {
		b.Fatal(err)
	}
	benchRunLog(b, telemetry.Config{}, log)
}
