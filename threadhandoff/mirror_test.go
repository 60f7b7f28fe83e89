package threadhandoff

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// fakeTarget counts upserts; it fails while down and blocks while gate is set.
type fakeTarget struct {
	calls atomic.Int32
	down  atomic.Bool
	gate  chan struct{}
	mu    sync.Mutex
	got   map[string]int
}

func (f *fakeTarget) UpsertThreadSummary(ctx context.Context, p *store.UpsertThreadSummaryParams) (*store.ThreadSummary, error) {
	f.calls.Add(1)
	if f.gate != nil {
		<-f.gate
	}
	if f.down.Load() {
		return nil, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.got == nil {
		f.got = map[string]int{}
	}
	f.got[p.HandoffID]++
	return &store.ThreadSummary{UpsertThreadSummaryParams: store.UpsertThreadSummaryParams{HandoffID: p.HandoffID}}, nil
}

func testMirror(target MirrorTarget, now func() time.Time) *mirror {
	return newMirror(target, Config{Sleep: func(context.Context, time.Duration) error { return nil }}, slog.New(slog.DiscardHandler), now)
}

func TestMirrorStormGuard(t *testing.T) {
	t.Parallel()
	clock := time.Unix(1000, 0)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }

	f := &fakeTarget{gate: make(chan struct{})}
	m := testMirror(f, now)
	p := &store.UpsertThreadSummaryParams{OwnerID: "o", HandoffID: "h"}
	// Many concurrent upserts of one handoff: one reaches the store.
	const n = 10
	statuses := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses[i] = m.upsert(t.Context(), p) })
	}
	for f.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the others pile up behind it
	close(f.gate)
	wg.Wait()
	ok := 0
	for _, s := range statuses {
		if s == MirrorOK {
			ok++
		} else if s != MirrorSkipped {
			t.Fatalf("status %q", s)
		}
	}
	if f.calls.Load() != 1 || ok != 1 {
		t.Fatalf("%d calls, %d ok; want 1 and 1 (%v)", f.calls.Load(), ok, statuses)
	}
	// Within the minimum interval: skipped; after it: mirrored again.
	if s := m.upsert(t.Context(), p); s != MirrorSkipped || f.calls.Load() != 1 {
		t.Fatalf("within interval: %s, %d calls", s, f.calls.Load())
	}
	advance(2 * time.Second)
	if s := m.upsert(t.Context(), p); s != MirrorOK || f.calls.Load() != 2 {
		t.Fatalf("after interval: %s, %d calls", s, f.calls.Load())
	}
}

func TestMirrorPendingRetried(t *testing.T) {
	t.Parallel()
	f := &fakeTarget{}
	f.down.Store(true)
	clock := time.Unix(1000, 0)
	m := testMirror(f, func() time.Time { return clock })
	for i := range 3 {
		if s := m.upsert(t.Context(), &store.UpsertThreadSummaryParams{OwnerID: "o", HandoffID: fmt.Sprint("h", i)}); s != MirrorDegraded {
			t.Fatalf("status %s", s)
		}
	}
	if m.pendingCount() != 3 || f.calls.Load() != 9 {
		t.Fatalf("pending %d, calls %d; want 3 pending after 3×3 attempts", m.pendingCount(), f.calls.Load())
	}
	// A retry within the interval of a failed handoff is not attempted.
	if s := m.upsert(t.Context(), &store.UpsertThreadSummaryParams{OwnerID: "o", HandoffID: "h0"}); s != MirrorDegraded || f.calls.Load() != 9 {
		t.Fatalf("storm guard: %s, %d calls", s, f.calls.Load())
	}
	f.down.Store(false)
	clock = clock.Add(time.Minute)
	if s := m.upsert(t.Context(), &store.UpsertThreadSummaryParams{OwnerID: "o", HandoffID: "new"}); s != MirrorOK {
		t.Fatalf("status %s", s)
	}
	if m.pendingCount() != 0 || f.got["h0"] != 1 || f.got["h1"] != 1 || f.got["h2"] != 1 || f.got["new"] != 1 {
		t.Fatalf("pending %d, mirrored %v", m.pendingCount(), f.got)
	}
}

func TestMirrorBacklogBounded(t *testing.T) {
	t.Parallel()
	f := &fakeTarget{}
	f.down.Store(true)
	m := testMirror(f, time.Now)
	m.policy.MaxAttempts = 1
	for i := range maxPendingMirror + 5 {
		m.upsert(t.Context(), &store.UpsertThreadSummaryParams{OwnerID: "o", HandoffID: fmt.Sprint(i)})
	}
	if m.pendingCount() != maxPendingMirror {
		t.Fatalf("pending %d; want %d", m.pendingCount(), maxPendingMirror)
	}
}

func TestMirrorTransient(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		fmt.Errorf("x: %w", store.ErrUnavailable): true,
		context.DeadlineExceeded:                  true,
		fmt.Errorf("x: %w", store.ErrInvalid):     false,
		context.Canceled:                          false,
		errors.New("boom"):                        false,
	} {
		if got := mirrorTransient(err); got != want {
			t.Errorf("mirrorTransient(%v) = %v", err, got)
		}
	}
}
