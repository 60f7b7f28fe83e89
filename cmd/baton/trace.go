package main

import (
	"context"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/telemetry"
)

// traceContinuations makes a continuation's worker spans link to the spans
// of the request that handed the run over: the request's trace context
// travels in the job's args. With tracing off both ends cost nothing.
func traceContinuations(c *continuation.Config, tel *telemetry.Telemetry) {
	if tel == nil || !tel.TracingEnabled() {
		return
	}
	c.Inject = telemetry.Inject
	c.Link = func(ctx context.Context, carrier map[string]string) (context.Context, func()) {
		ctx, span := tel.StartLinked(ctx, carrier, "")
		return ctx, func() { span.End() }
	}
}
