package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

type tempErr struct {
	temp  bool
	after time.Duration
}

func (e tempErr) Error() string             { return "temp" }
func (e tempErr) Temporary() bool           { return e.temp }
func (e tempErr) RetryDelay() time.Duration { return e.after }

func TestDelay(t *testing.T) {
	t.Parallel()
	p := Policy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for attempt, hi := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 3: 400 * time.Millisecond, 5: time.Second, 9: time.Second} {
		for range 50 {
			d := p.Delay(attempt, errors.New("x"))
			if d < hi/2 || d > hi {
				t.Fatalf("attempt %d: delay %v outside [%v, %v]", attempt, d, hi/2, hi)
			}
		}
	}
	if d := p.Delay(1, fmt.Errorf("wrapped: %w", tempErr{true, 700 * time.Millisecond})); d != 700*time.Millisecond {
		t.Errorf("Retry-After ignored: %v", d)
	}
	if d := p.Delay(1, tempErr{true, time.Hour}); d != time.Second {
		t.Errorf("Retry-After not capped: %v", d)
	}
}

func TestTransient(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		nil:                  false,
		errors.New("x"):      false,
		tempErr{temp: true}:  true,
		tempErr{temp: false}: false,
		fmt.Errorf("read: %w", io.ErrUnexpectedEOF): true,
		context.Canceled: false,
	} {
		if got := Transient(err); got != want {
			t.Errorf("Transient(%v) = %v", err, got)
		}
	}
}

func TestDo(t *testing.T) {
	t.Parallel()
	var waits []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	n := 0
	err := Do(t.Context(), Policy{MaxAttempts: 3}, sleep, nil, nil, func(int) error {
		n++
		return tempErr{true, 5 * time.Second}
	})
	if n != 3 || len(waits) != 2 || waits[0] != 5*time.Second || err == nil {
		t.Fatalf("n=%d waits=%v err=%v", n, waits, err)
	}
	n = 0
	err = Do(t.Context(), Policy{}, sleep, nil, nil, func(int) error { n++; return errors.New("permanent") })
	if n != 1 || err == nil {
		t.Fatalf("permanent error retried: n=%d", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	n = 0
	_ = Do(ctx, Policy{}, Sleep, nil, nil, func(int) error { n++; return tempErr{temp: true} })
	if n != 1 {
		t.Fatalf("cancelled context retried %d times", n)
	}
}
