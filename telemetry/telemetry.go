package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/batonhq/baton/runner"
)

// ScopeName is the instrumentation scope of baton's spans and metrics.
const ScopeName = "github.com/batonhq/baton/telemetry"

// Config configures [New]. The zero Config turns everything off.
type Config struct {
	// ServiceName is the service.name resource attribute of the providers New
	// builds. Defaults to "baton"; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override it.
	ServiceName string

	// Traces turns tracing on. It is on as well when TracerProvider or
	// SpanExporter is set. Off by default: no spans, no cost.
	Traces bool
	// TracerProvider, if set, makes the spans instead of a provider built by
	// New (tests pass an SDK provider with a tracetest exporter). New does
	// not take ownership: Shutdown does not shut it down.
	TracerProvider trace.TracerProvider
	// SpanExporter is where the spans of the provider New builds go, through
	// a batch span processor (OTEL_BSP_* variables apply). Defaults to OTLP
	// over HTTP/protobuf configured by the OTEL_EXPORTER_OTLP_* variables
	// (endpoint, headers, timeout, compression, certificates). The sampler
	// follows OTEL_TRACES_SAMPLER, parent-based always-on by default.
	SpanExporter sdktrace.SpanExporter

	// Metrics turns metrics on: the baton_* instruments, exported for
	// Prometheus from a private registry (with the Go runtime and process
	// collectors) that [Telemetry.MetricsHandler] serves. It is on as well
	// when MeterProvider is set.
	Metrics bool
	// MeterProvider, if set, records the metrics instead of the Prometheus
	// exporter (tests pass an SDK provider with a ManualReader);
	// MetricsHandler then answers 404. New does not take ownership.
	MeterProvider metric.MeterProvider

	// RunLog, if set, gets two lines per run (see docs/observability.md):
	// "run started" at Info, and "run ended" at Info, or Error when the run
	// failed, each with the run's trace_id. Use a logger from [NewLogger],
	// which redacts secrets. [Telemetry.LoggingObserver] gives an observer
	// with another run log.
	RunLog *slog.Logger
}

func (c *Config) validate() error {
	if c.TracerProvider != nil && c.SpanExporter != nil {
		return errors.New("telemetry: TracerProvider and SpanExporter are both set; set one")
	}
	return nil
}

// Telemetry holds the tracer, the instruments and the metrics registry. It
// is safe for concurrent use. Call Shutdown when done to flush spans.
type Telemetry struct {
	tp      trace.TracerProvider
	tracer  trace.Tracer // nil when tracing is off
	mp      metric.MeterProvider
	inst    *instruments // nil when metrics are off
	handler http.Handler
	obs     runner.Observer // nil when everything is off

	ownTP *sdktrace.TracerProvider // built by New, shut down by Shutdown
	ownMP *sdkmetric.MeterProvider
}

// New returns telemetry configured by cfg. It does not connect anywhere:
// the OTLP exporter dials on its first export.
func New(cfg Config) (*Telemetry, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &Telemetry{tp: tracenoop.NewTracerProvider(), mp: metricnoop.NewMeterProvider(), handler: metricsOff{}}
	traces := cfg.Traces || cfg.TracerProvider != nil || cfg.SpanExporter != nil
	metrics := cfg.Metrics || cfg.MeterProvider != nil
	var res *resource.Resource
	if (traces && cfg.TracerProvider == nil) || (metrics && cfg.MeterProvider == nil) {
		var err error
		if res, err = newResource(cfg.ServiceName); err != nil {
			return nil, err
		}
	}
	if traces {
		tp := cfg.TracerProvider
		if tp == nil {
			exp := cfg.SpanExporter
			if exp == nil {
				var err error
				if exp, err = otlptracehttp.New(context.Background()); err != nil {
					return nil, fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
				}
			}
			t.ownTP = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
			tp = t.ownTP
		}
		t.tp = tp
		t.tracer = tp.Tracer(ScopeName)
	}
	if metrics {
		mp := cfg.MeterProvider
		if mp == nil {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
			if err != nil {
				_ = t.Shutdown(context.Background())
				return nil, fmt.Errorf("telemetry: Prometheus exporter: %w", err)
			}
			t.ownMP = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithResource(res))
			mp = t.ownMP
			t.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		}
		t.mp = mp
		inst, err := newInstruments(mp.Meter(ScopeName))
		if err != nil {
			_ = t.Shutdown(context.Background())
			return nil, err
		}
		t.inst = inst
	}
	if t.tracer != nil || t.inst != nil || cfg.RunLog != nil {
		t.obs = &observer{tracer: t.tracer, m: t.inst, log: cfg.RunLog}
	}
	return t, nil
}

func newResource(service string) (*resource.Resource, error) {
	if service == "" {
		service = "baton"
	}
	// Later detectors win: the environment overrides the configured name.
	res, err := resource.New(context.Background(),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// Shutdown flushes and stops the providers New built (not those passed in
// Config), waiting at most until ctx ends. Telemetry must not be used after.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	var errs []error
	if t.ownTP != nil {
		if err := t.ownTP.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: shut down tracer provider: %w", err))
		}
	}
	if t.ownMP != nil {
		if err := t.ownMP.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: shut down meter provider: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Observer returns the observer to set as runner.Config.Observer, or nil
// when tracing, metrics and the run log are all off, so that the runner
// keeps its built-in no-op observer (also when t is nil). It is safe for
// concurrent use.
func (t *Telemetry) Observer() runner.Observer {
	if t == nil {
		return nil
	}
	return t.obs
}

// LoggingObserver returns an observer that does what [Telemetry.Observer]'s
// does (spans and metrics, as configured) and logs each run's start and
// end on log (the lines of Config.RunLog, on log instead): package service
// gives its runners this observer with its logger, so that every process
// logs its runs the same. t may be nil: the observer then only logs. With
// log nil it returns Observer(). The lines are written only at the levels
// log enables, checked at each run. It is safe for concurrent use; each
// call returns a new observer.
func (t *Telemetry) LoggingObserver(log *slog.Logger) runner.Observer {
	if log == nil {
		return t.Observer()
	}
	o := &observer{log: log}
	if t != nil {
		o.tracer, o.m = t.tracer, t.inst
	}
	return o
}

// TracingEnabled reports whether spans are made.
func (t *Telemetry) TracingEnabled() bool { return t.tracer != nil }

// MetricsEnabled reports whether metrics are recorded.
func (t *Telemetry) MetricsEnabled() bool { return t.inst != nil }

// TracerProvider returns the tracer provider in use, a no-op one when
// tracing is off (for HTTP instrumentation, for instance).
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.tp }

// MeterProvider returns the meter provider in use, a no-op one when metrics
// are off.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.mp }

// MetricsHandler returns the handler to mount at /metrics: the Prometheus
// text (or negotiated) exposition of baton's metrics. When metrics are off,
// or recorded by a Config.MeterProvider, it answers 404.
func (t *Telemetry) MetricsHandler() http.Handler { return t.handler }

type metricsOff struct{}

func (metricsOff) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "telemetry: metrics are off", http.StatusNotFound)
}

// FromEnv returns the Config described by the standard OpenTelemetry
// environment variables:
//
//   - OTEL_SDK_DISABLED=true turns everything off.
//   - Tracing is on, exporting OTLP over HTTP, when OTEL_TRACES_EXPORTER is
//     "otlp", or when it is unset and OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set. "none" turns it off.
//     OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL must be unset or "http/protobuf".
//   - Metrics (for /metrics) are on unless OTEL_METRICS_EXPORTER is "none";
//     unset and "prometheus" mean on.
//   - OTEL_SERVICE_NAME sets ServiceName.
//
// Other values of these variables are errors. The exporter, sampler, batch
// processor and resource read their own OTEL_* variables in [New].
func FromEnv() (Config, error) { return fromEnv(os.Getenv) }

func fromEnv(getenv func(string) string) (Config, error) {
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	cfg := Config{ServiceName: env("OTEL_SERVICE_NAME")}
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return cfg, nil
	}
	switch exp := strings.ToLower(env("OTEL_TRACES_EXPORTER")); exp {
	case "":
		cfg.Traces = env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	case "otlp":
		cfg.Traces = true
	case "none":
	default:
		return Config{}, fmt.Errorf("telemetry: OTEL_TRACES_EXPORTER=%q is not supported; use otlp or none", exp)
	}
	if cfg.Traces {
		key := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		p := env(key)
		if p == "" {
			key = "OTEL_EXPORTER_OTLP_PROTOCOL"
			p = env(key)
		}
		if p != "" && p != "http/protobuf" {
			return Config{}, fmt.Errorf("telemetry: %s=%q is not supported; use http/protobuf", key, p)
		}
	}
	switch exp := strings.ToLower(env("OTEL_METRICS_EXPORTER")); exp {
	case "", "prometheus":
		cfg.Metrics = true
	case "none":
	default:
		return Config{}, fmt.Errorf("telemetry: OTEL_METRICS_EXPORTER=%q is not supported; use prometheus or none", exp)
	}
	return cfg, nil
}
