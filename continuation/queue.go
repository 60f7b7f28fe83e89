package continuation

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// queue is River on one backend: the seam between the service, which does
// not care about River's transaction type, and River's generic client.
type queue interface {
	// insertTx enqueues args in the store transaction tx. quiet reports
	// that River sent no insert notification with it: this process's
	// workers need a wake once tx has committed (see wake.go).
	insertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (ir *rivertype.JobInsertResult, quiet bool, err error)
	// completeTx marks the running job completed in tx, as River's
	// JobCompleteTx does; ctx must be the worker's. A job no longer
	// running is left as it is, with or without an error
	// (rivertype.ErrNotFound).
	completeTx(ctx context.Context, tx store.Tx, job *river.Job[Args]) error
	// wake tells this process's workers, if any, that a job was
	// committed (see waker); call it after the commit.
	wake()
	// redeliver makes the running River job of continuation job run
	// jobRunID available again at once, as River's rescuer does for a job
	// whose worker died (River's own statement, JobRescueMany), with cause
	// among the job's errors. It reports whether it found the job running.
	redeliver(ctx context.Context, jobRunID, cause string) (bool, error)
	start(ctx context.Context) error
	stop(ctx context.Context) error
}

// riverQueue is a queue on River driver D with transaction type TTx.
type riverQueue[TTx any, D riverdriver.Driver[TTx]] struct {
	driver D
	client *river.Client[TTx]
	txOf   func(store.Tx) (TTx, bool)
	works  bool
	// waker wakes the workers' listener in process (see wake.go); nil for
	// a queue this process does not work.
	waker *waker
	// testQuiet, in tests, takes every insert for one River did not
	// notify.
	testQuiet bool
	// completeIn, if set, completes a running job in a store transaction
	// in River's stead (see pgComplete), reporting false for a
	// transaction it cannot use.
	completeIn func(tx store.Tx, id int64) bool
}

func (q *riverQueue[TTx, D]) wake() {
	if q.works {
		q.waker.wake()
	}
}

func (q *riverQueue[TTx, D]) insertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, bool, error) {
	t, ok := q.txOf(tx)
	if !ok {
		return nil, false, foreignTx(tx)
	}
	var notified bool
	ir, err := q.client.InsertTx(context.WithValue(ctx, notifiedKey{}, &notified), t, args, opts)
	return ir, !notified || q.testQuiet, err
}

func (q *riverQueue[TTx, D]) redeliver(ctx context.Context, jobRunID, cause string) (bool, error) {
	if q.client == nil {
		return false, errors.New("continuation: no River client")
	}
	// The running jobs are at most the workers of every process: one page.
	res, err := q.client.JobList(ctx, river.NewJobListParams().Kinds(Kind).States(rivertype.JobStateRunning).First(10000))
	if err != nil {
		return false, fmt.Errorf("continuation: list running jobs: %w", err)
	}
	for _, j := range res.Jobs {
		var a Args
		if json.Unmarshal(j.EncodedArgs, &a) != nil || a.JobRunID != jobRunID {
			continue
		}
		now := time.Now().UTC()
		e, _ := json.Marshal(rivertype.AttemptError{At: now, Attempt: j.Attempt, Error: cause})
		if _, err := q.driver.GetExecutor().JobRescueMany(ctx, &riverdriver.JobRescueManyParams{
			ID: []int64{j.ID}, Error: [][]byte{e}, FinalizedAt: []*time.Time{nil}, ScheduledAt: []time.Time{now},
			State: []string{string(rivertype.JobStateAvailable)}, StuckHorizon: now.Add(time.Second),
		}); err != nil {
			return false, fmt.Errorf("continuation: deliver job %d again: %w", j.ID, err)
		}
		return true, nil
	}
	return false, nil
}

func (q *riverQueue[TTx, D]) completeTx(ctx context.Context, tx store.Tx, job *river.Job[Args]) error {
	if q.completeIn != nil {
		if !q.completeIn(tx, job.ID) {
			return foreignTx(tx)
		}
		return nil
	}
	t, ok := q.txOf(tx)
	if !ok {
		return foreignTx(tx)
	}
	_, err := river.JobCompleteTx[D](ctx, t, job)
	return err
}

// foreignTx is the error of a transaction of another store than the
// queue's.
func foreignTx(tx store.Tx) error {
	return fmt.Errorf("continuation: transaction %T is not of the store the queue runs on", tx)
}

func (q *riverQueue[TTx, D]) newClient(rc *river.Config) error {
	if rc == nil {
		return nil
	}
	c, err := river.NewClient(q.driver, rc)
	if err != nil {
		return fmt.Errorf("continuation: river client: %w", err)
	}
	q.client = c
	return nil
}

func (q *riverQueue[TTx, D]) start(ctx context.Context) error {
	if !q.works {
		return nil
	}
	return q.client.Start(ctx)
}

func (q *riverQueue[TTx, D]) stop(ctx context.Context) error {
	if !q.works {
		return nil
	}
	err := q.client.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		// The grace period is over: cancel the jobs still running. Their
		// runs resume from their last checkpoint on the next delivery.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopCancelWait)
		defer cancel()
		return q.client.StopAndCancel(cctx)
	}
	return err
}

// riverMigrateLockKey serialises River's migrations on PostgreSQL across
// processes ("btnrivrm").
const riverMigrateLockKey int64 = 0x62746e726976726d

// stopCancelWait bounds how long Stop waits for cancelled jobs to return
// after its grace period.
const stopCancelWait = 10 * time.Second

// Driver is River on one store's database. Make it with [PostgresDriver] or
// [SQLiteDriver]; the caller that opened the store chooses (package service
// does, once, with the store and its draft broker).
type Driver interface {
	// Migrate applies River's migrations under a lock, so that processes
	// starting at once take turns, and on PostgreSQL puts River's job table
	// under the store's row-level security (pgstore's IsolateRiverJobs).
	// It is safe to call again.
	Migrate(ctx context.Context, log *slog.Logger) error
	// queue builds River's client with rc (nil: no client, migrations only).
	queue(rc *river.Config, works bool) (queue, error)
}

// PostgresDriver returns River on a PostgreSQL store's pool (riverpgxv5).
// River's jobs are inserted in the store's transactions through
// pgstore.PgxTx.
func PostgresDriver(st *pgstore.Store) Driver { return pgDriver{st} }

type pgDriver struct{ st *pgstore.Store }

func (d pgDriver) queue(rc *river.Config, works bool) (queue, error) {
	w := queueWaker(rc, works)
	q := &riverQueue[pgx.Tx, *pgWakeDriver]{driver: &pgWakeDriver{Driver: riverpgxv5.New(d.st.Pool()), w: w},
		txOf: pgstore.PgxTx, works: works, waker: w,
		completeIn: func(tx store.Tx, id int64) bool { return pgstore.DeferTx(tx, pgComplete, id) }}
	return q, q.newClient(rc)
}

// queueWaker returns the waker of the workers of rc's queue, nil for a
// client that works no queue.
func queueWaker(rc *river.Config, works bool) *waker {
	var w *waker
	if rc != nil && works {
		for name := range rc.Queues {
			w = newWaker(name)
		}
	}
	return w
}

// pgComplete completes a running River job on PostgreSQL: what River's
// JobCompleteTx writes for a job without metadata updates (its
// JobSetStateIfRunningMany with state completed: state and finalized_at,
// only while the job is running), as a statement of its own. River's
// statement, built for batches of any kind of state change, is planned
// anew at nearly every call (its generic plan is worse), which cost more
// than the rest of a continuation's final transaction; this one is a
// primary-key update, sent with the transaction's COMMIT (pgstore.DeferTx):
// no round trip of its own. River's completer, once the worker returns,
// finds the job completed and leaves it so. It is tied to the schema of
// the River version in go.mod: TestRiverJobCompletedWithRun checks it through
// River's API.
const pgComplete = `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1 AND state = 'running'`

func (d pgDriver) Migrate(ctx context.Context, log *slog.Logger) error {
	pool := d.st.Pool()
	return migrate(riverpgxv5.New(pool), log, func(ctx context.Context, m *rivermigrate.Migrator[pgx.Tx]) error {
		// rivermigrate takes no lock of its own: several `baton worker`
		// processes starting at once take turns on a session advisory
		// lock (released if the process dies). The migrations run one
		// transaction each, as River requires on PostgreSQL (a new enum
		// value cannot be used in the transaction that adds it).
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, riverMigrateLockKey); err != nil {
			return err
		}
		defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, riverMigrateLockKey)
		if _, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return err
		}
		// River's jobs carry owners' run ids and errors: under row-level
		// security for the store's transactions, like baton's tables.
		return d.st.IsolateRiverJobs(ctx)
	})(ctx)
}

// SQLiteDriver returns River on an SQLite store (riversqlite).
//
// River's SQLite driver runs on the store's write pool: a single
// connection whose transactions BEGIN IMMEDIATE, with a busy timeout (see
// sqlitestore.Open). Sharing it, rather than opening a second pool on the
// same file, is what makes this robust:
//
//   - InsertTx and JobCompleteTx must run in the store's transaction anyway,
//     which lives on that connection;
//   - River's documentation asks for one connection (SetMaxOpenConns(1)):
//     River runs many statements concurrently, and SQLite allows one writer;
//     with one connection they queue in database/sql instead of failing
//     with SQLITE_BUSY, in this process;
//   - BEGIN IMMEDIATE takes the write lock up front, so a transaction never
//     fails at the moment it upgrades a read lock, and the busy timeout
//     makes a writer of another process (a second `baton worker` on the
//     same file) wait instead of failing.
//
// Nothing in this package holds that connection while waiting for another
// one, which would deadlock: the worker's reads go to the store's read
// pool, and River's calls made inside a store transaction use that
// transaction.
func SQLiteDriver(st *sqlitestore.Store) Driver { return sqliteDriver{st} }

type sqliteDriver struct{ st *sqlitestore.Store }

// sqliteFetchCooldown is River's FetchCooldown on SQLite unless the
// config sets one: a wake right after another fetch waits at most this
// long (River's default, 100ms, would hold it that long).
const sqliteFetchCooldown = 5 * time.Millisecond

func (d sqliteDriver) queue(rc *river.Config, works bool) (queue, error) {
	w := queueWaker(rc, works)
	if w != nil {
		if rc.FetchCooldown == 0 {
			rc.FetchCooldown = sqliteFetchCooldown
			if rc.FetchPollInterval > 0 {
				rc.FetchCooldown = min(rc.FetchCooldown, rc.FetchPollInterval)
			}
		}
	}
	q := &riverQueue[*sql.Tx, *sqliteWakeDriver]{driver: &sqliteWakeDriver{Driver: riversqlite.New(d.st.DB()), w: w},
		txOf: sqlitestore.SQLTx, works: works, waker: w}
	return q, q.newClient(rc)
}

func (d sqliteDriver) Migrate(ctx context.Context, log *slog.Logger) error {
	db := d.st.DB()
	return migrate(riversqlite.New(db), log, func(ctx context.Context, m *rivermigrate.Migrator[*sql.Tx]) error {
		// An IMMEDIATE transaction: other processes wait for it.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// One transaction for all of them is what serialises processes
		// here, and River's SQLite migrations (unlike PostgreSQL's enum
		// changes) run in one transaction: TestMigrateConcurrently.
		//lint:ignore SA1019 deprecated for PostgreSQL's migrations, which cannot share a transaction; SQLite's can
		if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil); err != nil {
			return err
		}
		return tx.Commit()
	})(ctx)
}

// migrate returns the migration of River's tables on driver by run.
func migrate[TTx any](driver riverdriver.Driver[TTx], log *slog.Logger, run func(ctx context.Context, m *rivermigrate.Migrator[TTx]) error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		m, err := rivermigrate.New[TTx](driver, &rivermigrate.Config{Logger: log})
		if err != nil {
			return fmt.Errorf("continuation: river migrations: %w", err)
		}
		if err := run(ctx, m); err != nil {
			return fmt.Errorf("continuation: river migrations: %w", err)
		}
		return nil
	}
}
