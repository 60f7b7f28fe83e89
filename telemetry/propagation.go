package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// propagator carries span contexts across processes as W3C Trace Context
// (traceparent, tracestate).
var propagator = propagation.TraceContext{}

// SpanContinuation is the suggested name of the worker's span that
// [Telemetry.StartLinked] starts for a continuation job.
const SpanContinuation = "baton.continuation"

// Inject returns ctx's span context as a W3C Trace Context carrier
// ("traceparent", and "tracestate" when set), to store in a job's metadata
// as a JSON object. It returns nil when ctx has no valid span context
// (tracing off), so that nothing is stored.
func Inject(ctx context.Context) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c
}

// Extract returns ctx with the remote span context of carrier (made by
// [Inject]), so that spans started from it are children in the request's
// trace. A missing or malformed carrier leaves ctx unchanged. Workers
// should prefer [Telemetry.StartLinked].
func Extract(ctx context.Context, carrier map[string]string) context.Context {
	if len(carrier) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier(carrier))
}

// SpanContextOf returns the span context carried by carrier, invalid when
// there is none.
func SpanContextOf(carrier map[string]string) trace.SpanContext {
	return trace.SpanContextFromContext(Extract(context.Background(), carrier))
}

// StartLinked starts the span a worker runs a continuation under: the root
// of a NEW trace, of kind consumer, with a link to the span context in
// carrier (made by [Inject] on the request side), so that the request's
// trace and the worker's are joined without one trace spanning the hours a
// run may wait for a worker or an approval, and so that the worker's
// sampler decides for itself. Start the resumed run with the returned
// context, so that its invoke_agent span is a child of this one, and End
// the span when the job is done. name defaults to [SpanContinuation].
//
// The run log's lines of runs started with the returned context carry the
// linked trace's id as linked_trace_id, beside their own trace_id.
//
// When tracing is off it returns ctx and a no-op span. A missing or
// malformed carrier gives a root span without a link.
func (t *Telemetry) StartLinked(ctx context.Context, carrier map[string]string, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil || t.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background()) // a no-op span, never the caller's
	}
	if name == "" {
		name = SpanContinuation
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	if sc := SpanContextOf(carrier); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		// The run log names the request's trace beside the worker's.
		ctx = context.WithValue(ctx, linkedKey{}, sc)
	}
	return t.tracer.Start(ctx, name, opts...)
}

// linkedKey is the context key of the span context a continuation's span
// links to.
type linkedKey struct{}
