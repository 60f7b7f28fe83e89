package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names as the OpenTelemetry instruments are named; the Prometheus
// exporter appends _total to counters.
const (
	metricTransfers       = "baton_transfers"
	metricModelCalls      = "baton_model_calls"
	metricModelDuration   = "baton_model_call_duration_seconds"
	metricTokens          = "baton_tokens"
	metricToolCalls       = "baton_tool_calls"
	metricToolDuration    = "baton_tool_call_duration_seconds"
	metricRuns            = "baton_runs"
	metricErrors          = "baton_errors"
	metricOpenStreams     = "baton_open_streams"
	metricQueueDepth      = "baton_job_queue_depth"
	metricContinuationLat = "baton_continuation_latency_seconds"
)

// Bucket boundaries, in seconds.
var (
	modelBuckets        = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120, 300}
	toolBuckets         = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	continuationBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900}
)

// instruments are baton's metrics. Labels are low-cardinality only: agent,
// model, provider and tool names come from the network's configuration,
// never from ids or user input.
type instruments struct {
	meter       metric.Meter
	transfers   metric.Int64Counter
	modelCalls  metric.Int64Counter
	modelDur    metric.Float64Histogram
	tokens      metric.Int64Counter
	toolCalls   metric.Int64Counter
	toolDur     metric.Float64Histogram
	runs        metric.Int64Counter
	errors      metric.Int64Counter
	openStreams metric.Int64UpDownCounter
	queueDepth  metric.Int64ObservableGauge
	contLatency metric.Float64Histogram

	// sets caches measurement options by label values, so that the hot path
	// does not build an attribute set per measurement. Label values are
	// bounded, and so is the cache.
	sets sync.Map // labelKey -> metric.MeasurementOption
}

type labelKey struct {
	metric     string
	a, b, c, d string
}

func newInstruments(m metric.Meter) (*instruments, error) {
	in := &instruments{meter: m}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string, buckets []float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(buckets...))
		errs = append(errs, err)
		return h
	}
	in.transfers = counter(metricTransfers, "{transfer}",
		"Transfer attempts by source and target agent, transfer type and outcome (ok, rejected, limit).")
	in.modelCalls = counter(metricModelCalls, "{call}",
		"Model call attempts by provider, model and outcome (ok, error).")
	in.modelDur = histogram(metricModelDuration, "Model call latency, from request to the last chunk, by provider, model and outcome.", modelBuckets)
	in.tokens = counter(metricTokens, "{token}",
		"Tokens reported by providers, by provider, model and direction (input, output).")
	in.toolCalls = counter(metricToolCalls, "{call}",
		"Tool executions by tool and outcome (ok, error).")
	in.toolDur = histogram(metricToolDuration, "Tool execution latency by tool.", toolBuckets)
	in.runs = counter(metricRuns, "{run}",
		"Runs (and resumed runs) that ended, by status.")
	in.errors = counter(metricErrors, "{error}",
		"Errors by kind: the runner's error kinds for failed runs, and kinds other components record.")
	var err error
	in.openStreams, err = m.Int64UpDownCounter(metricOpenStreams, metric.WithUnit("{stream}"),
		metric.WithDescription("Event streams (SSE) open now."))
	errs = append(errs, err)
	in.queueDepth, err = m.Int64ObservableGauge(metricQueueDepth, metric.WithUnit("{job}"),
		metric.WithDescription("Continuation jobs waiting to run, by queue."))
	errs = append(errs, err)
	in.contLatency = histogram(metricContinuationLat, "Time from a run's suspension (job enqueued) to a worker resuming it.", continuationBuckets)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: create instruments: %w", err)
	}
	return in, nil
}

// opt returns the cached measurement option for k, made by kvs on first use.
func (in *instruments) opt(k labelKey, kvs func() []attribute.KeyValue) metric.MeasurementOption {
	if o, ok := in.sets.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(kvs()...))
	in.sets.Store(k, o)
	return o
}

// StreamOpened counts an event stream (an SSE connection) as open in
// baton_open_streams. Call [Telemetry.StreamClosed] exactly once when it
// closes. It does nothing when metrics are off or t is nil.
func (t *Telemetry) StreamOpened(ctx context.Context) {
	if t != nil && t.inst != nil {
		t.inst.openStreams.Add(ctx, 1)
	}
}

// StreamClosed counts an event stream opened with [Telemetry.StreamOpened]
// as closed.
func (t *Telemetry) StreamClosed(ctx context.Context) {
	if t != nil && t.inst != nil {
		t.inst.openStreams.Add(ctx, -1)
	}
}

// RecordContinuationLatency records d, the time from a run's suspension
// (its continuation job enqueued) to a worker resuming it, in
// baton_continuation_latency_seconds. It does nothing when metrics are off.
func (t *Telemetry) RecordContinuationLatency(ctx context.Context, d time.Duration) {
	if t != nil && t.inst != nil {
		t.inst.contLatency.Record(ctx, d.Seconds())
	}
}

// RecordError counts an error of kind in baton_errors_total{kind}. kind
// must come from a small fixed set (runner.Kind values, or a component's
// own such as "stream_write"), never from error text. Failed runs are
// counted by the observer already. It does nothing when metrics are off.
func (t *Telemetry) RecordError(ctx context.Context, kind string) {
	if t != nil && t.inst != nil {
		t.inst.errors.Add(ctx, 1, t.inst.opt(labelKey{metric: metricErrors, a: kind}, func() []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("kind", kind)}
		}))
	}
}

// QueueDepthFunc reports the number of jobs waiting in each queue, keyed by
// queue name. It is called at every scrape of /metrics, with a context that
// ends after [QueueDepthTimeout]; it must be safe for concurrent use.
type QueueDepthFunc func(ctx context.Context) (map[string]int64, error)

// QueueDepthTimeout bounds each call of a [QueueDepthFunc].
const QueueDepthTimeout = 2 * time.Second

// RegisterQueueDepth makes f a source of baton_job_queue_depth{queue}. Each
// registered func reports its own queues. The returned func unregisters f
// (call it before closing what f reads). When metrics are off it does
// nothing and returns a no-op unregister.
func (t *Telemetry) RegisterQueueDepth(f QueueDepthFunc) (unregister func() error, err error) {
	if t == nil || t.inst == nil {
		return func() error { return nil }, nil
	}
	gauge := t.inst.queueDepth
	reg, err := t.inst.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, QueueDepthTimeout)
		defer cancel()
		depths, err := f(ctx)
		if err != nil {
			return fmt.Errorf("telemetry: job queue depth: %w", err)
		}
		for q, n := range depths {
			o.ObserveInt64(gauge, n, metric.WithAttributes(attribute.String("queue", q)))
		}
		return nil
	}, gauge)
	if err != nil {
		return nil, fmt.Errorf("telemetry: register job queue depth: %w", err)
	}
	return reg.Unregister, nil
}
