// Package retry implements exponential backoff with full jitter that honours
// a server's Retry-After, and the classifier that decides what is transient.
package retry

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"
)

// Policy configures retries. The zero Policy means the defaults.
type Policy struct {
	// MaxAttempts is the number of tries in all, including the first.
	// Defaults to 4. Set 1 to disable retries.
	MaxAttempts int
	// BaseDelay is the delay before the second try, doubled each time.
	// Defaults to 250ms.
	BaseDelay time.Duration
	// MaxDelay caps one delay, Retry-After included. Defaults to 30s.
	MaxDelay time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 250 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	return p
}

// Attempts returns the effective number of tries.
func (p Policy) Attempts() int { return p.withDefaults().MaxAttempts }

// Delay returns how long to wait after try number attempt (1-based) failed
// with err: the server's requested delay when err carries one (see
// [RetryAfter]), else exponential backoff with full jitter, capped at MaxDelay.
func (p Policy) Delay(attempt int, err error) time.Duration {
	p = p.withDefaults()
	if d := RetryAfter(err); d > 0 {
		return min(d, p.MaxDelay)
	}
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	// Full jitter over [d/2, d] keeps some spacing while spreading retries.
	return d/2 + rand.N(d/2+1)
}

// Sleeper waits for d or until ctx ends. Tests replace it to observe delays.
type Sleeper func(ctx context.Context, d time.Duration) error

// Sleep is the real [Sleeper].
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Recorder is a [Sleeper] for tests: Sleep records the wait asked of it
// instead of waiting. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

// Sleep records d and returns ctx's error.
func (r *Recorder) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

// Waits returns the waits recorded so far, oldest first.
func (r *Recorder) Waits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waits)
}

// Transient reports whether err is worth retrying: an error that says so via
// a Temporary() bool method, a network timeout, or a stream cut short.
// Cancellation of the caller's context is never transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var t interface{ Temporary() bool }
	if errors.As(err, &t) {
		return t.Temporary()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// RetryAfter returns the delay an error asks for through a
// RetryDelay() time.Duration method, or 0.
func RetryAfter(err error) time.Duration {
	var r interface{ RetryDelay() time.Duration }
	if errors.As(err, &r) {
		return r.RetryDelay()
	}
	return 0
}

// Do calls fn until it succeeds, fails with an error that transient rejects,
// attempts run out, or ctx ends. It returns fn's last error. onRetry, if not
// nil, is told about each retry before the wait.
func Do(ctx context.Context, p Policy, sleep Sleeper, transient func(error) bool, onRetry func(attempt int, err error, delay time.Duration), fn func(attempt int) error) error {
	if sleep == nil {
		sleep = Sleep
	}
	if transient == nil {
		transient = Transient
	}
	n := p.Attempts()
	var err error
	for attempt := 1; ; attempt++ {
		err = fn(attempt)
		if err == nil || attempt >= n || !transient(err) || ctx.Err() != nil {
			return err
		}
		d := p.Delay(attempt, err)
		if onRetry != nil {
			onRetry(attempt, err, d)
		}
		if serr := sleep(ctx, d); serr != nil {
			return err
		}
	}
}
