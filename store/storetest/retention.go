package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/store"
)

// testPruneCheckpoints: retention deletes, across owners, the checkpoints
// written before its horizon that a later step of their run supersedes,
// in batches, and keeps every run's latest and whatever is newer.
func testPruneCheckpoints(t *testing.T, s store.Store, b *bundle) {
	ctx := b.ctx
	// Two owners' runs: run a of 4 steps, run b of 1, run c of 3 (the
	// other owner's).
	runs := map[string]struct {
		owner string
		steps int
	}{"a": {b.owner, 4}, "b": {b.owner, 1}, "c": {b.other, 3}}
	ids := map[string][]string{}
	for name, r := range runs {
		run := "run-" + name + "-" + uuid.NewString()
		var th *store.Thread
		if r.owner == b.owner {
			th = newThread(t, s, b)
		} else {
			th = Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: b.other, Name: "t"}))(t)
		}
		parent := ""
		for step := 1; step <= r.steps; step++ {
			cp := Must(s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: r.owner, State: newState(run, th.ID, step), ParentID: parent}))(t)
			parent = cp.ID
			ids[name] = append(ids[name], cp.ID)
		}
	}
	exists := func(owner, id string) bool {
		_, err := s.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: id})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetCheckpoint %s: %v", id, err)
		}
		return err == nil
	}
	// A horizon before every checkpoint: nothing goes.
	res := Must(s.PruneCheckpoints(ctx, &store.PruneCheckpointsParams{Before: time.Now().Add(-time.Hour)}))(t)
	if res.Deleted != 0 || res.Next != "" {
		t.Fatalf("horizon in the past: %+v", res)
	}
	// A horizon after every checkpoint, in batches of 2: the superseded
	// steps go (3 of a, 2 of c), every run's latest stays.
	deleted, calls, after := 0, 0, ""
	for {
		res := Must(s.PruneCheckpoints(ctx, &store.PruneCheckpointsParams{Before: time.Now().Add(time.Hour), After: after, Limit: 2}))(t)
		deleted += res.Deleted
		calls++
		if res.Next == "" {
			break
		}
		if res.Next <= after {
			t.Fatalf("the walk does not move on: %q after %q", res.Next, after)
		}
		after = res.Next
	}
	if deleted != 5 || calls < 4 {
		t.Fatalf("deleted %d in %d calls, want 5 in batches of 2", deleted, calls)
	}
	for name, r := range runs {
		for i, id := range ids[name] {
			latest := i == len(ids[name])-1
			if got := exists(r.owner, id); got != latest {
				t.Errorf("run %s step %d: exists %v, want %v", name, i+1, got, latest)
			}
		}
		// The run resumes from its latest, as ever.
		cp, err := s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: r.owner, RunID: Must(s.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: r.owner, ID: ids[name][len(ids[name])-1]}))(t).RunID})
		if err != nil || cp.Step != r.steps {
			t.Errorf("run %s: latest %+v, %v", name, cp, err)
		}
	}
	if res := Must(s.PruneCheckpoints(ctx, &store.PruneCheckpointsParams{Before: time.Now().Add(time.Hour)}))(t); res.Deleted != 0 {
		t.Fatalf("a second sweep deleted %d", res.Deleted)
	}
	if _, err := s.PruneCheckpoints(ctx, &store.PruneCheckpointsParams{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("no horizon: %v", err)
	}
}

// Retention checks [store.Store.PruneCheckpoints] on s, a store of its own:
// a sweep deletes other tests' checkpoints too.
func Retention(t *testing.T, s store.Store) {
	t.Helper()
	testPruneCheckpoints(t, s, setup(t, s))
}
