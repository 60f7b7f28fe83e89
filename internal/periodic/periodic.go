// Package periodic runs background work at the ticks of a ticker, the shape
// of the retention sweeps, the lease renewals and the adoption of orphaned
// runs.
package periodic

import (
	"context"
	"time"
)

// Every calls fn at each tick of a ticker of period every until ctx ends;
// a tick that comes while fn runs is taken once it returns, the others it
// covered are dropped (see [time.Ticker]). fn gets ctx. Every returns once
// ctx has ended and no call is running.
func Every(ctx context.Context, every time.Duration, fn func(context.Context)) {
	run(ctx, every, false, fn)
}

// NowAndEvery calls fn at once, then as [Every] does.
func NowAndEvery(ctx context.Context, every time.Duration, fn func(context.Context)) {
	run(ctx, every, true, fn)
}

func run(ctx context.Context, every time.Duration, now bool, fn func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	if now {
		fn(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn(ctx)
	}
}
