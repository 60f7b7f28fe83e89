package pgstore_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// txFixture is a store in a fresh schema, whose round trips tr records
// (once taken), with a jobs table created after Migrate (River's stand-in),
// an owner and a thread of it.
type txFixture struct {
	s      *pgstore.Store
	tr     *testdb.Trips
	schema string
	owner  string
	thread *store.Thread
}

func newTxFixture(t *testing.T, maxConns int32) *txFixture {
	t.Helper()
	ctx := t.Context()
	f := &txFixture{tr: &testdb.Trips{}, schema: freshSchema(t), owner: randName("owner-")}
	s, err := pgstore.OpenWith(ctx, testdb.URL(t), &store.Options{Schema: f.schema, MaxConns: maxConns},
		func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = f.tr })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.s = s
	if _, err := admin(t).Exec(ctx, `CREATE TABLE `+f.schema+`.jobs (thread_id text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: f.owner}); err != nil {
		t.Fatal(err)
	}
	if f.thread, err = s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: f.owner}); err != nil {
		t.Fatal(err)
	}
	return f
}

// jobs counts the rows of the jobs table, as the test user.
func (f *txFixture) jobs(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func contains(sql string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(sql, p) {
			return false
		}
	}
	return true
}

// TestTxRoundTrips counts the round trips of store transactions: BEGIN,
// the scope and a run's lock (one statement) travel with the first
// statement, the scope is
// set once per owner, and a transaction that runs nothing sends nothing.
func TestTxRoundTrips(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	run, step := randName("run-"), 0
	// A checkpoint transaction, as threads' checkpointer and continuation's
	// hook write it: the fenced checkpoint, the new messages, River's job.
	checkpoint := func(tx store.Tx) error {
		step++
		st := &runstate.State{RunID: run, ThreadID: f.thread.ID, Network: "n", Fingerprint: "f", Agent: "a", Status: runstate.StatusRunning, Step: step}
		if _, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: f.owner, State: st}); err != nil {
			return err
		}
		if _, err := tx.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: f.owner, ThreadID: f.thread.ID,
			Messages: []store.NewMessage{{Message: message.User("hi")}}}); err != nil {
			return err
		}
		ptx, _ := pgstore.PgxTx(tx)
		_, err := ptx.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ($1)`, f.thread.ID)
		return err
	}
	trips := f.warm(t, checkpoint, nil, "")
	t.Logf("checkpoint transaction: %d round trips: %q", len(trips), trips)
	first := trips[0]
	if len(first) != 3 || first[0] != "begin" || !contains(first[1], "set_config('role'", "set_config('baton.owner'", "pg_advisory_xact_lock") ||
		!contains(first[2], "INSERT INTO checkpoints") {
		t.Errorf("first round trip %q, want BEGIN, the scope and the run's lock in one statement, and the checkpoint's INSERT", first)
	}
	for _, trip := range trips[1:] {
		if len(trip) != 1 || strings.Contains(trip[0], "set_config") || trip[0] == "begin" {
			t.Errorf("later round trip %q, want one statement, no BEGIN or scope", trip)
		}
	}
	if last := trips[len(trips)-1]; last[0] != "commit" {
		t.Errorf("last round trip %q, want commit", last)
	}

	// A transaction that locks the run first (a worker's claim: LockRun,
	// reads, then the checkpoint): the lock goes with the scope, and the
	// checkpoint does not take it again.
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.LockRun(ctx, &store.LockRunParams{OwnerID: f.owner, RunID: run}); err != nil {
			return err
		}
		if _, err := tx.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: f.owner, RunID: run}); err != nil {
			return err
		}
		step++
		st := &runstate.State{RunID: run, ThreadID: f.thread.ID, Network: "n", Fingerprint: "f", Agent: "a", Status: runstate.StatusRunning, Step: step}
		_, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: f.owner, State: st})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	trips = f.tr.Take()
	t.Logf("claim: %q", trips)
	locks := 0
	for _, trip := range trips {
		for _, q := range trip {
			locks += strings.Count(q, "pg_advisory_xact_lock")
		}
	}
	if len(trips) != 3 || len(trips[0]) != 3 || !contains(trips[0][1], "set_config('role'", "pg_advisory_xact_lock") ||
		!contains(trips[0][2], "FROM checkpoints") || !contains(trips[1][0], "INSERT INTO checkpoints") || locks != 1 {
		t.Errorf("claim: round trips %q, want [BEGIN, scope and lock, SELECT], [INSERT], [commit], the lock once", trips)
	}

	// A change of owner rescopes with the call's first statement.
	other := randName("other-")
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		if _, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: f.owner, ID: f.thread.ID}); err != nil {
			return err
		}
		if _, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: other, ID: f.thread.ID}); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		_, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: other, ID: f.thread.ID})
		if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	trips = f.tr.Take()
	t.Logf("two owners: %q", trips)
	if len(trips) != 4 || len(trips[0]) != 3 || len(trips[1]) != 2 || len(trips[2]) != 1 ||
		!contains(trips[1][0], "set_config('baton.owner'", "set_config('baton.api_key_hash'") || !contains(trips[1][1], "FROM threads") {
		t.Errorf("two owners: round trips %q, want [BEGIN, scope, SELECT], [rescope, SELECT], [SELECT], [commit]", trips)
	}

	// Nothing run, nothing sent: not even a connection is taken.
	acquired := f.s.Pool().Stat().AcquireCount()
	if err := f.s.Tx(ctx, func(store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := f.s.Tx(ctx, func(store.Tx) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Tx = %v, want boom", err)
	}
	if trips := f.tr.Take(); len(trips) != 0 {
		t.Errorf("empty transactions sent %q", trips)
	}
	if n := f.s.Pool().Stat().AcquireCount(); n != acquired {
		t.Errorf("empty transactions acquired %d connections", n-acquired)
	}
}

// TestPgxTxInTx runs statements on PgxTx's pgx.Tx, as River and pgbroker
// do: they are in the store's transaction, in the application role, scoped
// to the owner of the store call before them, and savepoints roll back on
// their own.
func TestPgxTxInTx(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	other := randName("other-")
	if _, err := f.s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: other}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var threadID string
	var ptx pgx.Tx
	err := f.s.Tx(ctx, func(tx store.Tx) error {
		ptx, _ = pgstore.PgxTx(tx)
		if ptx.Conn() != nil {
			t.Error("Conn before the first statement: not nil")
		}
		// scope checks who the pgx.Tx runs as.
		scope := func(wantOwner string) {
			t.Helper()
			var user, owner string
			if err := ptx.QueryRow(ctx, `SELECT current_user, coalesce(current_setting('baton.owner', true), '')`).Scan(&user, &owner); err != nil {
				t.Fatal(err)
			}
			if user != pgstore.DefaultAppRole || owner != wantOwner {
				t.Errorf("pgx.Tx runs as %q for owner %q, want %s for %q", user, owner, pgstore.DefaultAppRole, wantOwner)
			}
		}
		scope("") // the first statement: no call before it
		if ptx.Conn() == nil {
			t.Error("Conn after the first statement: nil")
		}
		th, err := tx.CreateThread(ctx, &store.CreateThreadParams{OwnerID: f.owner})
		if err != nil {
			return err
		}
		threadID = th.ID
		scope(f.owner)
		var threads int
		if err := ptx.QueryRow(ctx, `SELECT count(*) FROM threads`).Scan(&threads); err != nil || threads != 2 {
			t.Errorf("threads seen through the pgx.Tx: %d, %v; want the owner's 2", threads, err)
		}
		if _, err := tx.GetOwner(ctx, &store.GetOwnerParams{ID: other}); err != nil {
			return err
		}
		scope(other)
		if err := ptx.QueryRow(ctx, `SELECT count(*) FROM threads`).Scan(&threads); err != nil || threads != 0 {
			t.Errorf("threads seen through the pgx.Tx as another owner: %d, %v; want 0", threads, err)
		}
		if _, err := ptx.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ($1)`, "exec"); err != nil {
			return err
		}

		// A savepoint rolled back undoes only what followed it, the scope
		// included.
		sp, err := ptx.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := sp.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ('undone')`); err != nil {
			return err
		}
		if _, err := tx.GetOwner(ctx, &store.GetOwnerParams{ID: f.owner}); err != nil {
			return err
		}
		if _, err := sp.Exec(ctx, `SELECT 1/0`); err == nil {
			t.Error("division by zero succeeded")
		}
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		if err := sp.Rollback(ctx); !errors.Is(err, pgx.ErrTxClosed) {
			t.Errorf("second Rollback of a savepoint: %v, want ErrTxClosed", err)
		}
		scope(f.owner)
		// A savepoint released keeps its rows; savepoints nest.
		sp, err = ptx.Begin(ctx)
		if err != nil {
			return err
		}
		inner, err := sp.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := inner.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ('kept')`); err != nil {
			return err
		}
		if err := inner.Commit(ctx); err != nil {
			return err
		}
		if err := sp.Commit(ctx); err != nil {
			return err
		}
		var undone, kept int
		if err := ptx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE thread_id = 'undone'), count(*) FILTER (WHERE thread_id = 'kept') FROM jobs`).Scan(&undone, &kept); err != nil {
			return err
		}
		if undone != 0 || kept != 1 {
			t.Errorf("after the savepoints: %d undone rows, %d kept, want 0 and 1", undone, kept)
		}

		// The other methods River may call.
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO jobs (thread_id) VALUES ('batch')`)
		b.Queue(`SELECT current_user`)
		if err := ptx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if _, err := ptx.CopyFrom(ctx, pgx.Identifier{"jobs"}, []string{"thread_id"}, pgx.CopyFromRows([][]any{{"copy"}})); err != nil {
			return err
		}
		rows, err := ptx.Query(ctx, `SELECT thread_id FROM jobs ORDER BY thread_id`)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if strings.Join(got, ",") != "batch,copy,exec,kept" {
			t.Errorf("jobs in the transaction: %q", got)
		}
		if err := ptx.Commit(ctx); err == nil {
			t.Error("Commit of the pgx.Tx succeeded")
		}
		if err := ptx.Rollback(ctx); err == nil {
			t.Error("Rollback of the pgx.Tx succeeded")
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx = %v, want boom", err)
	}
	if n := f.jobs(t); n != 0 {
		t.Errorf("%d jobs after rollback, want 0", n)
	}
	if _, err := f.s.GetThread(ctx, &store.GetThreadParams{OwnerID: f.owner, ID: threadID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("thread after rollback: %v, want ErrNotFound", err)
	}
	if _, err := ptx.Exec(ctx, `SELECT 1`); !errors.Is(err, pgx.ErrTxClosed) {
		t.Errorf("pgx.Tx after Tx returned: %v, want ErrTxClosed", err)
	}
}

// TestTxEnds ends transactions every way but a commit, on a pool of one
// connection: each is rolled back, and its connection is not reused inside
// the transaction. A COMMIT that PostgreSQL turns into a rollback fails.
func TestTxEnds(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 1)
	ctx := t.Context()
	boom := errors.New("boom")
	for _, end := range []string{"error", "panic", "goexit", "failed statement"} {
		var threadID string
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() { _ = recover() }()
			err = f.s.Tx(ctx, func(tx store.Tx) error {
				th, err := tx.CreateThread(ctx, &store.CreateThreadParams{OwnerID: f.owner})
				if err != nil {
					return err
				}
				threadID = th.ID
				ptx, _ := pgstore.PgxTx(tx)
				if _, err := ptx.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ($1)`, th.ID); err != nil {
					return err
				}
				switch end {
				case "panic":
					panic(boom)
				case "goexit":
					runtime.Goexit()
				case "failed statement":
					_, err := ptx.Exec(ctx, `SELECT 1/0`)
					if err == nil {
						t.Error("division by zero succeeded")
					}
					return nil // and commit
				}
				return boom
			})
		}()
		<-done
		switch end {
		case "error":
			if !errors.Is(err, boom) {
				t.Errorf("%s: Tx = %v, want boom", end, err)
			}
		case "failed statement":
			if err == nil || !strings.HasPrefix(err.Error(), "commit: ") {
				t.Errorf("%s: Tx = %v, want a commit error", end, err)
			}
		}
		if _, err := f.s.GetThread(ctx, &store.GetThreadParams{OwnerID: f.owner, ID: threadID}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: thread after rollback: %v, want ErrNotFound", end, err)
		}
		if n := f.jobs(t); n != 0 {
			t.Errorf("%s: %d jobs after rollback, want 0", end, n)
		}
	}
}

// TestDeferTx: a statement deferred with DeferTx goes with the next
// statement, or with COMMIT when none follows (a pg_notify after the
// transaction's last write costs no round trip); a transaction of deferred
// statements alone begins, runs them and commits in one round trip; a
// deferred statement that fails fails the commit and rolls the transaction
// back; it is refused for a transaction of another kind.
func TestDeferTx(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	channel, heard, insert := f.listen(t, "defer_")
	var err error
	trips := f.warm(t, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		if !pgstore.DeferTx(tx, `SELECT pg_notify($1, $2)`, channel, "after") {
			t.Fatal("DeferTx refused a store transaction")
		}
		return nil
	}, heard, "after")
	t.Logf("insert, then a deferred notify: %q", trips)
	if len(trips) != 2 || len(trips[1]) != 2 || !contains(trips[1][0], "pg_notify") || trips[1][1] != "commit" {
		t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [pg_notify, commit]", trips)
	}

	// Deferred, then a statement: they go together.
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		pgstore.DeferTx(tx, `SELECT pg_notify($1, $2)`, channel, "before")
		return insert(tx)
	}); err != nil {
		t.Fatal(err)
	}
	heard("before")
	if trips := f.tr.Take(); len(trips) != 3 || len(trips[1]) != 2 || !contains(trips[1][0], "pg_notify") || !contains(trips[1][1], "INSERT INTO jobs") {
		t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [pg_notify, INSERT], [commit]", trips)
	}

	// Deferred alone: one round trip.
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		pgstore.DeferTx(tx, `SELECT pg_notify($1, $2)`, channel, "alone")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	heard("alone")
	if trips := f.tr.Take(); len(trips) != 1 || len(trips[0]) != 3 || trips[0][0] != "begin" || !contains(trips[0][1], "set_config('role'", "pg_notify") || trips[0][2] != "commit" {
		t.Errorf("round trips %q, want [BEGIN, scope and pg_notify, commit]", trips)
	}

	// A deferred statement that fails: the commit fails, the insert is
	// rolled back, nothing is notified, and the pool's connection is usable.
	f.failsCommit(t, "a failing deferred statement", func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		pgstore.DeferTx(tx, `SELECT pg_notify($1, $2)`, channel, "x")
		pgstore.DeferTx(tx, `SELECT 1/0`)
		return nil
	})
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		pgstore.DeferTx(tx, `SELECT pg_notify($1, $2)`, channel, "next")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	heard("next") // not "x"

	if pgstore.DeferTx(nil, `SELECT 1`) {
		t.Error("DeferTx accepted a nil transaction")
	}

	// A deferred lease release (the hand-over's) goes with the COMMIT,
	// whether the transaction has begun or not (then with its BEGIN).
	run := randName("run-")
	lease := &store.AcquireLeaseParams{OwnerID: f.owner, RunID: run, ThreadID: f.thread.ID, Holder: "me", TTL: time.Minute}
	release := &store.ReleaseLeaseParams{OwnerID: f.owner, RunID: run, Holder: "me", Deferred: true}
	for _, begun := range []bool{true, false} {
		if _, err := f.s.AcquireLease(ctx, lease); err != nil {
			t.Fatal(err)
		}
		f.tr.Take()
		if err := f.s.Tx(ctx, func(tx store.Tx) error {
			if begun {
				if err := insert(tx); err != nil {
					return err
				}
			}
			ok, err := tx.ReleaseLease(ctx, release)
			if err == nil && ok {
				t.Errorf("begun %v: ReleaseLease reported true, deferred", begun)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if trips := f.tr.Take(); !deferredToCommit(trips, begun, "DELETE FROM run_leases") {
			t.Errorf("begun %v: round trips %q, want the DELETE with the commit", begun, trips)
		}
		if _, err := f.s.GetLease(ctx, &store.GetLeaseParams{OwnerID: f.owner, RunID: run}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("begun %v: lease after the release: %v, want ErrNotFound", begun, err)
		}
	}

	// A deferred lease acquisition (an inline run's first checkpoint's)
	// likewise; the lease is written as returned.
	for _, begun := range []bool{true, false} {
		acquire := *lease
		acquire.RunID, acquire.Deferred = randName("run-"), true
		f.tr.Take()
		var got *store.Lease
		if err := f.s.Tx(ctx, func(tx store.Tx) error {
			if begun {
				if err := insert(tx); err != nil {
					return err
				}
			}
			var err error
			got, err = tx.AcquireLease(ctx, &acquire)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if trips := f.tr.Take(); !deferredToCommit(trips, begun, "INSERT INTO run_leases") {
			t.Errorf("begun %v: round trips %q, want the INSERT with the commit", begun, trips)
		}
		stored, err := f.s.GetLease(ctx, &store.GetLeaseParams{OwnerID: f.owner, RunID: acquire.RunID})
		if err != nil {
			t.Fatalf("begun %v: lease after a deferred acquisition: %v", begun, err)
		}
		if stored.Holder != got.Holder || stored.ThreadID != got.ThreadID || stored.ExpiresAt.Sub(got.ExpiresAt).Abs() > time.Millisecond {
			t.Errorf("begun %v: stored %+v, returned %+v", begun, stored, got)
		}
	}
	// A deferred acquisition that fails (another owner's thread) fails the
	// commit, and nothing of the transaction stays.
	bad := &store.AcquireLeaseParams{OwnerID: f.owner, RunID: randName("run-"), ThreadID: randName("no-thread-"), Holder: "me", TTL: time.Minute, Deferred: true}
	err = f.s.Tx(ctx, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		_, err := tx.AcquireLease(ctx, bad)
		return err
	})
	if err == nil {
		t.Fatal("a deferred acquisition on a missing thread committed")
	}
	if _, err := f.s.GetLease(ctx, &store.GetLeaseParams{OwnerID: f.owner, RunID: bad.RunID}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lease after a failed deferred acquisition: %v", err)
	}
}

// TestAfterCommitTx: a statement queued with AfterCommitTx goes in the
// batch of the transaction's COMMIT, after it (no round trip of its own),
// and runs outside the transaction (its settings have ended) once it has
// committed; not when the transaction rolls back or its COMMIT fails. Its
// own failure does not undo or fail the committed transaction, and the
// connection stays usable. It is refused for a transaction of another kind.
func TestAfterCommitTx(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	channel, heard, insert := f.listen(t, "after_")
	var err error
	// The payload says whether the statement ran in the transaction: its
	// owner (set_config(…, true)) is gone once it has committed.
	const notify = `SELECT pg_notify($1, $2 || coalesce(current_setting('baton.owner', true), ''))`
	trips := f.warm(t, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		if !pgstore.AfterCommitTx(tx, notify, channel, "after:") {
			t.Fatal("AfterCommitTx refused a store transaction")
		}
		return nil
	}, heard, "after:")
	t.Logf("insert, then a notify after the commit: %q", trips)
	if len(trips) != 2 || len(trips[1]) != 2 || trips[1][0] != "commit" || !contains(trips[1][1], "pg_notify") {
		t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [commit, pg_notify]", trips)
	}

	// Rolled back: not run.
	before := f.jobs(t)
	err = f.s.Tx(ctx, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		pgstore.AfterCommitTx(tx, notify, channel, "rolled back:")
		return errors.New("no")
	})
	if err == nil {
		t.Fatal("Tx hid its function's error")
	}
	// The COMMIT fails (a deferred statement before it fails): not run, the
	// insert rolled back.
	err = f.s.Tx(ctx, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		pgstore.DeferTx(tx, `SELECT 1/0`)
		pgstore.AfterCommitTx(tx, notify, channel, "failed commit:")
		return nil
	})
	if err == nil {
		t.Fatal("a failing deferred statement committed")
	}
	if n := f.jobs(t); n != before {
		t.Errorf("%d jobs after the rollbacks, want %d", n, before)
	}
	// The statement after the COMMIT fails: the transaction has committed
	// all the same, Tx reports it so, and the pool's connections work.
	err = f.s.Tx(ctx, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		pgstore.AfterCommitTx(tx, `SELECT 1/0`)
		pgstore.AfterCommitTx(tx, notify, channel, "after a failure:")
		return nil
	})
	if err != nil {
		t.Fatalf("a failing statement after the commit failed the transaction: %v", err)
	}
	if n := f.jobs(t); n != before+1 {
		t.Errorf("%d jobs after a committed insert, want %d", n, before+1)
	}
	for range 3 {
		if err := f.s.Tx(ctx, func(tx store.Tx) error {
			pgstore.AfterCommitTx(tx, notify, channel, "next:")
			return insert(tx)
		}); err != nil {
			t.Fatal(err)
		}
		heard("next:") // not "rolled back:", "failed commit:" nor "after a failure:" (one SELECT with the failing one: selectList)
	}
	if pgstore.AfterCommitTx(nil, `SELECT 1`) {
		t.Error("AfterCommitTx accepted a nil transaction")
	}
}

// listen LISTENs on a new channel named from prefix, on a connection of the
// fixture's pool held until t ends, and returns the channel, a check of the
// next notification's payload, and an insert into the fixture's jobs table
// through PgxTx.
func (f *txFixture) listen(t *testing.T, prefix string) (channel string, heard func(want string), insert func(tx store.Tx) error) {
	t.Helper()
	ctx := t.Context()
	channel = randName(prefix)
	lc, err := f.s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lc.Release)
	if _, err := lc.Exec(ctx, `LISTEN "`+channel+`"`); err != nil {
		t.Fatal(err)
	}
	heard = func(want string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		n, err := lc.Conn().WaitForNotification(wctx)
		if err != nil || n.Payload != want {
			t.Fatalf("notification %v, %v; want %q", n, err, want)
		}
	}
	insert = func(tx store.Tx) error {
		ptx, _ := pgstore.PgxTx(tx)
		_, err := ptx.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ($1)`, f.thread.ID)
		return err
	}
	return channel, heard, insert
}

// TestDeferredUpdateMessage: a deferred message update (a continuation's
// placeholder as its run finishes) goes with the transaction's next
// statement, in its round trip, or before the COMMIT in a batch of its
// own; refused (the message is not in the expected status, or missing),
// it fails that statement or the commit with the error the update would
// have returned at once, and nothing of the transaction stays.
func TestDeferredUpdateMessage(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	_, _, insert := f.listen(t, "upd_")
	newMessage := func() string {
		t.Helper()
		ms, err := f.s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: f.owner, ThreadID: f.thread.ID,
			Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}})
		if err != nil {
			t.Fatal(err)
		}
		return ms[0].ID
	}
	status := func(id string) message.Status {
		t.Helper()
		m, err := f.s.GetMessage(ctx, &store.GetMessageParams{OwnerID: f.owner, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		return m.Status
	}
	update := func(id string, expected message.Status) *store.UpdateMessageParams {
		return &store.UpdateMessageParams{OwnerID: f.owner, ID: id, Status: message.StatusCompleted,
			Parts: []message.Part{{Type: message.PartText, Text: "done"}}, Metadata: map[string]any{"k": "v"},
			ExpectedStatus: expected, Deferred: true}
	}
	isUpdate := func(q string) bool { return strings.Contains(q, "UPDATE messages") }

	// Then a statement: one round trip for both, the update first.
	for range 2 { // the first prepares the statements
		id := newMessage()
		f.tr.Take()
		if err := f.s.Tx(ctx, func(tx store.Tx) error {
			if err := insert(tx); err != nil {
				return err
			}
			m, err := tx.UpdateMessage(ctx, update(id, message.StatusStreaming))
			if err != nil || m != nil {
				t.Fatalf("deferred update: %v, %v; want nil, nil", m, err)
			}
			return insert(tx)
		}); err != nil {
			t.Fatal(err)
		}
		trips := f.tr.Take()
		t.Logf("insert, deferred update, insert: %q", trips)
		// The owner's scope, set for the update, goes first.
		if n := len(trips); n != 3 || len(trips[1]) < 2 || !isUpdate(trips[1][len(trips[1])-2]) ||
			!contains(trips[1][len(trips[1])-1], "INSERT INTO jobs") || !slices.Equal(trips[2], []string{"commit"}) {
			t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [(scope), UPDATE, INSERT], [commit]", trips)
		}
		if got := status(id); got != message.StatusCompleted {
			t.Fatalf("status %q after the deferred update, want completed", got)
		}
	}

	// Then the commit: the update goes with the COMMIT, in its round trip
	// (a refusal is the database's error, which rolls the transaction
	// back: below).
	id := newMessage()
	f.tr.Take()
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		_, err := tx.UpdateMessage(ctx, update(id, message.StatusStreaming))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	trips := f.tr.Take()
	if len(trips) != 2 || len(trips[1]) < 2 || !isUpdate(trips[1][len(trips[1])-2]) || trips[1][len(trips[1])-1] != "commit" {
		t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [(scope), UPDATE, commit]", trips)
	}
	if got := status(id); got != message.StatusCompleted {
		t.Errorf("status %q, want completed", got)
	}

	// Refused: the next statement fails with the update's error, as does
	// the commit when the caller carries on regardless; nothing stays.
	for _, c := range []struct {
		name     string
		expected message.Status
		missing  bool
		next     bool // a statement follows the update
		ignore   bool // the transaction's function ignores that statement's error
	}{
		{name: "status, then a statement", expected: message.StatusQueued, next: true},
		{name: "status, then the commit", expected: message.StatusQueued},
		{name: "status, error ignored", expected: message.StatusQueued, next: true, ignore: true},
		{name: "missing, then a statement", expected: message.StatusStreaming, missing: true, next: true},
		{name: "missing, then the commit", missing: true},
	} {
		id := newMessage()
		target := id
		if c.missing {
			target = randName("no-message-")
		}
		before := f.jobs(t)
		var stmtErr error
		err := f.s.Tx(ctx, func(tx store.Tx) error {
			if err := insert(tx); err != nil {
				return err
			}
			if _, err := tx.UpdateMessage(ctx, update(target, c.expected)); err != nil {
				t.Fatalf("%s: the deferred update failed at once: %v", c.name, err)
			}
			if !c.next {
				return nil
			}
			stmtErr = insert(tx)
			if c.ignore {
				return nil
			}
			return stmtErr
		})
		for what, e := range map[string]error{"transaction": err, "next statement": stmtErr} {
			if what == "next statement" && !c.next {
				continue
			}
			var te *store.TransitionError
			switch {
			case c.missing && !errors.Is(e, store.ErrNotFound):
				t.Errorf("%s: %s: %v, want ErrNotFound", c.name, what, e)
			case !c.missing && (!errors.As(e, &te) || te.From != string(message.StatusStreaming) || te.ID != id):
				t.Errorf("%s: %s: %v, want a *store.TransitionError from streaming", c.name, what, e)
			}
		}
		if n := f.jobs(t); n != before {
			t.Errorf("%s: %d jobs after the refused update, want %d", c.name, n, before)
		}
		if got := status(id); got != message.StatusStreaming {
			t.Errorf("%s: status %q, want streaming", c.name, got)
		}
	}

	// Outside a transaction that has begun, it runs at once and returns
	// the message.
	id = newMessage()
	m, err := f.s.UpdateMessage(ctx, update(id, message.StatusStreaming))
	if err != nil || m == nil || m.Status != message.StatusCompleted {
		t.Errorf("UpdateMessage outside a transaction: %+v, %v", m, err)
	}
}

// TestDeferringExec: under DeferringExec, an Exec of PgxTx's pgx.Tx (River's
// insert NOTIFY) goes with the transaction's next statement or its COMMIT
// once the transaction has begun, and at once before; a Query is not
// deferred; a deferred Exec that fails fails the commit.
func TestDeferringExec(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	channel, heard, insert := f.listen(t, "dexec_")
	dctx := pgstore.DeferringExec(ctx)
	notify := func(tx store.Tx, payload string) error {
		ptx, _ := pgstore.PgxTx(tx)
		_, err := ptx.Exec(dctx, `SELECT pg_notify($1, $2)`, channel, payload)
		return err
	}
	if trips := f.warm(t, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		return notify(tx, "with commit")
	}, heard, "with commit"); len(trips) != 2 || !slices.Equal(trips[1][len(trips[1])-1:], []string{"commit"}) || !contains(trips[1][len(trips[1])-2], "pg_notify") {
		t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [pg_notify, commit]", trips)
	}
	// Before the first statement: with BEGIN and the next statement.
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		if err := notify(tx, "first"); err != nil {
			return err
		}
		return insert(tx)
	}); err != nil {
		t.Fatal(err)
	}
	heard("first")
	if trips := f.tr.Take(); len(trips) != 2 || trips[0][0] != "begin" || !contains(trips[0][len(trips[0])-2], "pg_notify") || !contains(trips[0][len(trips[0])-1], "INSERT INTO jobs") {
		t.Errorf("round trips %q, want [BEGIN, scope and pg_notify, INSERT], [commit]", trips)
	}
	// A Query is sent at once.
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		ptx, _ := pgstore.PgxTx(tx)
		var one int
		return ptx.QueryRow(dctx, `SELECT 1`).Scan(&one)
	}); err != nil {
		t.Fatal(err)
	}
	if trips := f.tr.Take(); len(trips) != 3 || !slices.Equal(trips[1], []string{"SELECT 1"}) {
		t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [SELECT 1], [commit]", trips)
	}
	// A deferred Exec that fails: the commit fails, nothing stays.
	f.failsCommit(t, "a failing deferred Exec", func(tx store.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		ptx, _ := pgstore.PgxTx(tx)
		_, err := ptx.Exec(dctx, `SELECT 1/0`)
		return err
	})
}

// warm runs fn in a Store.Tx twice, the first to prepare its statements,
// each followed by heard(payload) when heard is not nil, and returns the
// second's round trips.
func (f *txFixture) warm(t *testing.T, fn func(tx store.Tx) error, heard func(string), payload string) [][]string {
	t.Helper()
	for range 2 {
		f.tr.Take()
		if err := f.s.Tx(t.Context(), fn); err != nil {
			t.Fatal(err)
		}
		if heard != nil {
			heard(payload)
		}
	}
	return f.tr.Take()
}

// failsCommit runs fn in a Store.Tx that must fail (what names it) and
// leave the jobs table as it was.
func (f *txFixture) failsCommit(t *testing.T, what string, fn func(tx store.Tx) error) {
	t.Helper()
	before := f.jobs(t)
	if err := f.s.Tx(t.Context(), fn); err == nil {
		t.Fatalf("%s committed", what)
	}
	if n := f.jobs(t); n != before {
		t.Errorf("%s: %d jobs after the failed commit, want %d", what, n, before)
	}
}

// TestDeferredTransitionJobRun: a deferred job run transition goes with
// the transaction's COMMIT, in its round trip, as a continuation's final
// transaction sends it (with its placeholder's update): one round trip
// fewer than a transition read back. (Its semantics on both backends:
// storetest's JobRunDeferred.)
func TestDeferredTransitionJobRun(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	_, _, insert := f.listen(t, "tjr_")
	for range 2 { // the first prepares the statements
		jr, err := f.s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: f.owner, IdempotencyKey: randName("k-"), Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		f.tr.Take()
		if err := f.s.Tx(ctx, func(tx store.Tx) error {
			if err := insert(tx); err != nil {
				return err
			}
			j, err := tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: f.owner, ID: jr.Run.ID, To: store.JobCompleted,
				Fence: true, ViaProcessing: true, Deferred: true})
			if err != nil || j != nil {
				t.Fatalf("deferred transition: %v, %v; want nil, nil", j, err)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		trips := f.tr.Take()
		if len(trips) != 2 || len(trips[1]) < 2 || !contains(trips[1][len(trips[1])-2], "UPDATE job_runs") || trips[1][len(trips[1])-1] != "commit" {
			t.Errorf("round trips %q, want [BEGIN, scope, INSERT], [(scope), transition, commit]", trips)
		}
		got, err := f.s.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: f.owner, ID: jr.Run.ID})
		if err != nil || got.Status != store.JobCompleted || got.Attempt != 1 {
			t.Fatalf("after the deferred transition: %+v, %v", got, err)
		}
	}
}

// TestDeferredNewThreadCheckpoint: a new thread's first checkpoint,
// deferred, goes with the transaction's BEGIN and its COMMIT — with the
// run's lock, a deferred statement after it — in one round trip, as a
// turn's start on a new thread sends it. (Its semantics on both backends:
// storetest's CheckpointNewThreadDeferred.)
func TestDeferredCheckpoint(t *testing.T) {
	t.Parallel()
	f := newTxFixture(t, 0)
	ctx := t.Context()
	for i := range 2 { // the first prepares the statements
		thread := randName("thread-")
		st := &runstate.State{RunID: randName("run-"), ThreadID: thread, Fingerprint: "fp", Agent: "a", Step: 1, Status: runstate.StatusRunning}
		first := deferredCheckpointTrip(t, f, i == 1, &store.SaveCheckpointParams{OwnerID: f.owner, State: st,
			NewThread: &store.CreateThreadParams{Messages: []store.NewMessage{{Message: message.User("hi")}}}})
		if _, err := f.s.GetThread(ctx, &store.GetThreadParams{OwnerID: f.owner, ID: thread}); err != nil {
			t.Fatalf("the new thread: %v", err)
		}
		// The run's next checkpoints on the thread, with messages and
		// alone: one round trip each too.
		next := *st
		next.Step = 2
		cp := deferredCheckpointTrip(t, f, i == 1, &store.SaveCheckpointParams{OwnerID: f.owner, State: &next, ParentID: first.ID,
			Messages: []store.NewMessage{{Message: message.Assistant("a", "ok")}}})
		last := next
		last.Step = 3
		deferredCheckpointTrip(t, f, i == 1, &store.SaveCheckpointParams{OwnerID: f.owner, State: &last, ParentID: cp.ID})
		if got, err := f.s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: f.owner, RunID: st.RunID}); err != nil || got.Step != 3 || got.ParentID != cp.ID {
			t.Fatalf("the run's newest checkpoint: %+v, %v", got, err)
		}
	}
}

// deferredCheckpointTrip saves p deferred in a Store.Tx with a DeferTx
// write after it and, with check, wants one round trip: BEGIN, the scope
// and lock, the checkpoint, the write and COMMIT. It returns the
// checkpoint.
func deferredCheckpointTrip(t *testing.T, f *txFixture, check bool, p *store.SaveCheckpointParams) *store.Checkpoint {
	t.Helper()
	ctx := t.Context()
	p.Deferred = true
	var cp *store.Checkpoint
	f.tr.Take()
	if err := f.s.Tx(ctx, func(tx store.Tx) error {
		var err error
		cp, err = tx.SaveCheckpoint(ctx, p)
		if err != nil || cp == nil || cp.ID == "" {
			t.Fatalf("deferred checkpoint: %+v, %v", cp, err)
		}
		if !pgstore.DeferTx(tx, `INSERT INTO jobs (thread_id) VALUES ($1)`, p.State.ThreadID) { // rides with COMMIT
			t.Fatal("DeferTx refused")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	trips := f.tr.Take()
	if check && (len(trips) != 1 || trips[0][0] != "begin" || trips[0][len(trips[0])-1] != "commit" ||
		!slices.ContainsFunc(trips[0], func(q string) bool { return contains(q, "INSERT INTO checkpoints") })) {
		t.Errorf("round trips %q, want one: [BEGIN, scope and lock, checkpoint, INSERT, commit]", trips)
	}
	return cp
}

// deferredToCommit reports whether trips, a Store.Tx's round trips, sent
// the statement starting with prefix with the COMMIT: in the transaction's
// second round trip when a statement began it (begun), else in its only
// one, with BEGIN.
func deferredToCommit(trips [][]string, begun bool, prefix string) bool {
	want := 1
	if begun {
		want = 2
	}
	if len(trips) != want {
		return false
	}
	last := trips[len(trips)-1]
	return (begun || last[0] == "begin") && last[len(last)-1] == "commit" &&
		slices.ContainsFunc(last, func(q string) bool { return strings.HasPrefix(q, prefix) })
}
