package draft

import "time"

// WithTimers returns o with its throttle timers armed by afterFunc instead
// of time.AfterFunc, so that a test fires them by hand.
func WithTimers(o Options, afterFunc func(d time.Duration, f func()) func() bool) Options {
	o.afterFunc = afterFunc
	return o
}
