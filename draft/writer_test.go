package draft_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// flushLog is a broker that records when each flush was published.
type flushLog struct {
	*draft.Hub
	mu sync.Mutex
	at []time.Time
}

func (l *flushLog) Publish(ctx context.Context, ev draft.Event) error {
	l.mu.Lock()
	l.at = append(l.at, time.Now())
	l.mu.Unlock()
	return l.Hub.Publish(ctx, ev)
}

func (l *flushLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]time.Time(nil), l.at...)
}

func newTarget(t *testing.T, st store.Store) draft.Target {
	t.Helper()
	ctx := t.Context()
	if _, err := st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	th, err := st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o"})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "o", ThreadID: th.ID, Messages: []store.NewMessage{{
		Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}})
	if err != nil {
		t.Fatal(err)
	}
	return draft.Target{OwnerID: "o", ThreadID: th.ID, MessageID: ms[0].ID}
}

// TestWriterCadence checks the flush cadence against a real store and
// clock: a steady trickle of text is flushed every Interval, a burst as
// soon as Bytes accumulate, and a late subscriber sees the current draft.
func TestWriterCadence(t *testing.T) {
	t.Parallel()
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const interval = 200 * time.Millisecond
			st := open(t)
			t.Run("Interval", func(t *testing.T) {
				tg := newTarget(t, st)
				log := &flushLog{Hub: draft.NewHub(st)}
				w := draft.NewWriter(t.Context(), st, log, tg, draft.Options{Interval: interval, Bytes: 1536})
				start := time.Now()
				for time.Since(start) < 2*time.Second {
					w.WriteString("tok ")
					time.Sleep(10 * time.Millisecond)
				}
				at := log.times()
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				// 2s of trickle at one flush per 200ms: about 10 flushes, never
				// more often than the interval. (The upper bounds are loose: a
				// loaded machine delays timers and writes.)
				if len(at) < 4 || len(at) > 11 {
					t.Fatalf("%d flushes in 2s, want about 10", len(at))
				}
				if first := at[0].Sub(start); first < interval*3/4 || first > interval+time.Second {
					t.Errorf("first flush after %s, want about %s", first, interval)
				}
				for i := 1; i < len(at); i++ {
					gap := at[i].Sub(at[i-1])
					if gap < interval*3/4 || gap > interval+time.Second {
						t.Errorf("flush %d came %s after the previous one, want about %s", i, gap, interval)
					}
				}
			})
			t.Run("Bytes", func(t *testing.T) {
				tg := newTarget(t, st)
				log := &flushLog{Hub: draft.NewHub(st)}
				w := draft.NewWriter(t.Context(), st, log, tg, draft.Options{Interval: time.Hour, Bytes: 1024})
				start := time.Now()
				chunk := strings.Repeat("b", 256)
				for range 16 { // 4 KiB
					w.WriteString(chunk)
					time.Sleep(2 * time.Millisecond)
				}
				// No timer will fire: every byte must be flushed because Bytes
				// accumulated (flushes that overlap writes coalesce).
				var d *store.Draft
				deadline := time.Now().Add(5 * time.Second)
				for {
					var err error
					d, err = st.GetDraft(t.Context(), &store.GetDraftParams{OwnerID: "o", MessageID: tg.MessageID})
					if err == nil && len(d.Text) == 4096 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("draft not fully flushed by bytes: %v", err)
					}
					time.Sleep(5 * time.Millisecond)
				}
				at := log.times()
				if len(at) < 2 {
					t.Fatalf("%d flushes of 4 KiB with Bytes 1 KiB, want 2 or more", len(at))
				}
				if d := at[0].Sub(start); d > time.Second {
					t.Errorf("first byte-triggered flush after %s", d)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				// A late subscriber gets the current draft first.
				for u, err := range log.Subscribe(t.Context(), draft.Filter{OwnerID: "o", MessageID: tg.MessageID}) {
					if err != nil || len(u.Text) != 4096 || u.Version != d.Version {
						t.Fatalf("late subscriber's first update: %d bytes v%d, %v", len(u.Text), u.Version, err)
					}
					break
				}
			})
		})
	}
}
