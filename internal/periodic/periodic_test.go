package periodic

import (
	"context"
	"testing"
	"time"
)

// calls runs loop with fn counting its calls until the third, and returns
// when each came, after loop started.
func calls(t *testing.T, loop func(context.Context, time.Duration, func(context.Context))) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	at := make(chan time.Duration, 10)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		loop(ctx, 50*time.Millisecond, func(got context.Context) {
			if got != ctx {
				t.Error("fn did not get the loop's context")
			}
			at <- time.Since(start)
			if len(at) == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not return after its context ended")
	}
	close(at)
	var out []time.Duration
	for d := range at {
		out = append(out, d)
	}
	if len(out) != 3 {
		t.Fatalf("%d calls, want 3", len(out))
	}
	return out
}

// TestNowAndEvery: the first call comes at once (long before a tick), the
// next ones a tick apart, and the loop returns when ctx ends.
func TestNowAndEvery(t *testing.T) {
	t.Parallel()
	at := calls(t, NowAndEvery)
	if at[0] >= 50*time.Millisecond {
		t.Errorf("first call after %v, want at once", at[0])
	}
	for i := 1; i < len(at); i++ {
		if at[i] < time.Duration(i)*50*time.Millisecond {
			t.Errorf("call %d after %v, want at tick %d", i+1, at[i], i)
		}
	}
}

// TestEvery: the first call comes at the first tick.
func TestEvery(t *testing.T) {
	t.Parallel()
	at := calls(t, Every)
	for i := range at {
		if at[i] < time.Duration(i+1)*50*time.Millisecond {
			t.Errorf("call %d after %v, want at tick %d", i+1, at[i], i+1)
		}
	}
}
