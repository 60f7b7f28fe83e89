package service

import (
	"errors"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// eachWithOwner runs fn on each backend's store, which has the owner "o".
func eachWithOwner(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Helper()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		st := open(t)
		if _, err := st.EnsureOwner(t.Context(), &store.EnsureOwnerParams{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		fn(t, st)
	})
}

// TestRetention: the service's sweeper deletes, in batches, the
// checkpoints older than its period except every run's latest, on both
// backends; a negative period sweeps nothing.
func TestRetention(t *testing.T) {
	t.Parallel()
	if newCheckpointSweeper(nil, -1, nil) != nil {
		t.Fatal("a negative period has a sweeper")
	}
	if r := newCheckpointSweeper(nil, 0, nil); r.period != DefaultCheckpointRetention || r.every != time.Hour {
		t.Fatalf("default sweeper: period %v every %v", r.period, r.every)
	}
	eachWithOwner(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		// 3 runs of 400 steps: more than two batches of 500.
		const runs, steps = 3, 400
		var ids []string
		latest := map[string]bool{}
		for i := range runs {
			run := "run_" + strconv.Itoa(i)
			parent := ""
			for step := 1; step <= steps; step++ {
				cp, err := st.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: "o", ParentID: parent, State: &runstate.State{
					RunID: run, Network: "n", Fingerprint: "fp", Agent: "a", Status: runstate.StatusRunning, Step: step}})
				if err != nil {
					t.Fatal(err)
				}
				parent = cp.ID
				ids = append(ids, cp.ID)
			}
			latest[parent] = true
		}
		exists := func(id string) bool {
			_, err := st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: "o", ID: id})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		r := newCheckpointSweeper(st, time.Hour, slog.New(slog.DiscardHandler))
		if n, err := r.sweep(ctx); err != nil || n != 0 {
			t.Fatalf("sweep within the period: %d, %v", n, err)
		}
		// Two hours on, every checkpoint is older than the period: the
		// sweep at start deletes the superseded steps, the last of them
		// (in write order) last.
		r.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		r.start(ctx)
		deadline := time.Now().Add(time.Minute)
		for exists(ids[len(ids)-2]) {
			if time.Now().After(deadline) {
				t.Fatal("the sweep did not reach the last superseded checkpoint in a minute")
			}
			time.Sleep(20 * time.Millisecond)
		}
		r.stop()
		for i, id := range ids {
			if got := exists(id); got != latest[id] {
				t.Fatalf("checkpoint %d: exists %v, latest %v", i, got, latest[id])
			}
		}
		for i := range runs {
			cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: "o", RunID: "run_" + strconv.Itoa(i)})
			if err != nil || !latest[cp.ID] || cp.Step != steps {
				t.Fatalf("latest of run %d: %+v, %v", i, cp, err)
			}
		}
	})
}

// TestWebhookRetention: the webhook delivery log's sweeper deletes the
// attempts of deliveries that ended before its period and keeps a pending
// delivery's, on both backends; its default is 7 days, and a negative
// period keeps nothing once a delivery ended.
func TestWebhookRetention(t *testing.T) {
	t.Parallel()
	if r := newWebhookSweeper(nil, 0, nil); r.period != DefaultWebhookRetention || r.every != time.Hour {
		t.Fatalf("default sweeper: period %v every %v", r.period, r.every)
	}
	if r := newWebhookSweeper(nil, -1, nil); r.period != 0 || r.every != time.Minute {
		t.Fatalf("keep-none sweeper: period %v every %v", r.period, r.every)
	}
	eachWithOwner(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		add := func(id string, attempt, status int, final bool) {
			if _, err := st.AppendWebhookDelivery(ctx, &store.AppendWebhookDeliveryParams{OwnerID: "o", WebhookID: id, EventType: "run.completed",
				URL: "https://example.com/hook", Attempt: attempt, StatusCode: status, Final: final}); err != nil {
				t.Fatal(err)
			}
		}
		// More than a batch of ended deliveries, and a pending one.
		for i := range store.DefaultPruneLimit {
			add("msg_"+strconv.Itoa(i), 1, 204, true)
		}
		add("msg_pending", 1, 500, false)
		count := func() map[string]int {
			m := map[string]int{}
			p := &store.ListWebhookDeliveriesParams{OwnerID: "o", Limit: 1000}
			for {
				page, err := st.ListWebhookDeliveries(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range page.Deliveries {
					m[d.WebhookID]++
				}
				if page.NextCursor == "" {
					return m
				}
				p.Cursor = page.NextCursor
			}
		}
		r := newWebhookSweeper(st, time.Hour, slog.New(slog.DiscardHandler))
		if n, err := r.sweep(ctx); err != nil || n != 0 {
			t.Fatalf("sweep within the period: %d, %v", n, err)
		}
		r.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		if n, err := r.sweep(ctx); err != nil || n != store.DefaultPruneLimit {
			t.Fatalf("sweep past the period: %d, %v; want %d", n, err, store.DefaultPruneLimit)
		}
		if got := count(); len(got) != 1 || got["msg_pending"] != 1 {
			t.Fatalf("after the sweep: %d deliveries (%v), want msg_pending's attempt", len(got), got["msg_pending"])
		}
		// Kept none: once it ended, the next sweep deletes it.
		add("msg_pending", 2, 204, true)
		none := newWebhookSweeper(st, -1, slog.New(slog.DiscardHandler))
		if n, err := none.sweep(ctx); err != nil || n != 2 {
			t.Fatalf("keep-none sweep: %d, %v; want the 2 attempts", n, err)
		}
	})
}
