package threads_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// TestStoredForms: a run's checkpoints refer to its thread's rows (the
// stored form) and rebuild the same state; a run whose latest checkpoint
// holds the whole state (the form written before) resumes as well, and
// both end the same; a fork at the latest checkpoint of each form, resumed
// by a new service (a process after a crash), ends as its source does. On
// both backends.
func TestStoredForms(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		for _, name := range []string{"New", "Old", "V3"} {
			old := name == "Old"
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				st := open(t)
				var refunds atomic.Int32
				svc := threads.New(st, support(t, &refunds), nil)
				id, end, err := threadOf(t, svc.Turn(ctx, owner, "I was charged twice", threads.TurnOptions{}))
				if err != nil || end.Status != runstate.StatusCompleted {
					t.Fatalf("turn 1: %+v, %v", end, err)
				}
				if _, err := drain(t, svc.Turn(ctx, owner, "refund", threads.TurnOptions{ThreadID: id})); err != nil {
					t.Fatal(err)
				}
				cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: id})
				if err != nil || cp.State.Status != runstate.StatusInterrupted {
					t.Fatalf("latest = %+v, %v", cp, err)
				}
				// The checkpoint referred to turn 1's rows and its own: read
				// back, they are the history and the transcript.
				if cp.Rows == nil || len(cp.Rows.History) < 3 || cp.Rows.Transcript != len(cp.State.Transcript) {
					t.Fatalf("rows of the interrupted run's checkpoint: %+v (transcript %d)", cp.Rows, len(cp.State.Transcript))
				}
				if len(cp.State.Messages) < len(cp.Rows.History)+len(cp.State.Transcript) {
					t.Fatalf("working history %d messages, rows %d + transcript %d", len(cp.State.Messages), len(cp.Rows.History), len(cp.State.Transcript))
				}
				if got, err := st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ID}); err != nil ||
					!bytes.Equal(encode(t, got.State), encode(t, cp.State)) {
					t.Fatalf("GetCheckpoint: %v", err)
				}
				if name == "V3" {
					// The stored form's first version, as the build before
					// version 4 wrote it: the run resumes from it.
					b, err := runstate.EncodeStoredVersion(cp.State, cp.Rows, 3)
					if err != nil {
						t.Fatal(err)
					}
					setState(t, st, cp.ID, b)
					back, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: cp.RunID})
					if err != nil || back.ID != cp.ID || back.Rows == nil || !bytes.Equal(encode(t, back.State), encode(t, cp.State)) {
						t.Fatalf("version 3 read back: %+v, %v", back, err)
					}
				}
				at := cp.ID // the run's latest checkpoint, in the form under test
				if old {
					// The form written before: the whole state, as a step
					// of the run.
					s := *cp.State
					s.Step++
					cp2, err := st.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: &s, ParentID: cp.ID})
					if err != nil {
						t.Fatal(err)
					}
					at = cp2.ID
					back, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: cp.RunID})
					if err != nil || back.ID != cp2.ID || back.Rows != nil {
						t.Fatalf("the whole state read back: %+v, %v", back, err)
					}
					cs := *cp.State
					cs.Step++
					if !bytes.Equal(encode(t, back.State), encode(t, &cs)) {
						t.Fatalf("the two forms read differently:\n%s\n%s", encode(t, back.State), encode(t, &cs))
					}
				}
				// A fork at that checkpoint, resumed by a new service (a
				// process after a crash) from the store.
				forkDecided(t, st, id, at)
				end, err = drain(t, svc.Resume(ctx, owner, cp.RunID, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
				if err != nil || end.Status != runstate.StatusCompleted || refunds.Load() != 1 {
					t.Fatalf("resume: %+v, %v, %d refunds", end, err, refunds.Load())
				}
				last, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: cp.RunID})
				if err != nil || last.Rows == nil || (!old && last.Rows.Transcript != len(last.State.Transcript)) {
					t.Fatalf("the resumed run's last checkpoint: %+v, %v", last, err)
				}
				msgs, err := st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: id})
				if err != nil {
					t.Fatal(err)
				}
				// The thread: turn 1's messages, then the run's transcript.
				tr := last.State.Transcript
				if len(msgs) < len(tr) {
					t.Fatalf("%d messages, transcript %d", len(msgs), len(tr))
				}
				for i, m := range msgs[len(msgs)-len(tr):] {
					if m.ID != tr[i].ID || m.Text() != tr[i].Text() {
						t.Errorf("message %d: %s %q, transcript %s %q", i, m.ID, m.Text(), tr[i].ID, tr[i].Text())
					}
				}
				if got := last.State.Messages; got[len(got)-1].Text() != "Refunded." {
					t.Errorf("last message %q", got[len(got)-1].Text())
				}
			})
		}
	})
}

// setState overwrites the stored state of checkpoint id with b.
func setState(t *testing.T, st store.Store, id string, b []byte) {
	t.Helper()
	var err error
	switch s := st.(type) {
	case interface{ DB() *sql.DB }:
		_, err = s.DB().ExecContext(t.Context(), `UPDATE checkpoints SET state = $1 WHERE id = $2`, b, id)
	case interface{ Pool() *pgxpool.Pool }:
		_, err = s.Pool().Exec(t.Context(), `UPDATE checkpoints SET state = $1 WHERE id = $2`, b, id)
	default:
		t.Fatalf("store %T: no database", st)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func encode(t *testing.T, s *runstate.State) []byte {
	t.Helper()
	b, err := runstate.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forkDecided forks thread at the checkpoint at (an approval) and has a new
// service approve the fork's run: it ends with the refund made once, in
// its own process.
func forkDecided(t *testing.T, st store.Store, thread, at string) {
	t.Helper()
	ctx := t.Context()
	var refunds atomic.Int32
	svc := threads.New(st, support(t, &refunds), nil)
	f, err := svc.Fork(ctx, owner, thread, at, threads.ForkOptions{})
	if err != nil {
		t.Fatalf("fork at %s: %v", at, err)
	}
	var info threads.ForkInfo
	if err := json.Unmarshal(f.Metadata[threads.MetadataFork], &info); err != nil || info.RunID == "" {
		t.Fatalf("the fork's info %+v, %v", info, err)
	}
	end, err := drain(t, threads.New(st, support(t, &refunds), nil).Resume(ctx, owner, info.RunID, runner.WithDecisions(runner.Decision{Type: runner.DecisionApprove})))
	if err != nil || end.Status != runstate.StatusCompleted || end.Output != "Refunded." || refunds.Load() != 1 {
		t.Fatalf("the fork's run: %+v, %v, %d refunds", end, err, refunds.Load())
	}
}
