package continuation

import (
	"context"
	"database/sql"
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
	// insertTx enqueues args in the store transaction tx.
	insertTx(ctx context.Context, tx store.Tx, args Args, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	// completeTx marks the running job completed in tx (River's
	// JobCompleteTx); ctx must be the worker's.
	completeTx(ctx context.Context, tx store.Tx, job *river.Job[Args]) error
	// migrate applies River's migrations under a lock.
	migrate(ctx context.Context, log *slog.Logger) error
	start(ctx context.Context) error
	stop(ctx context.Context) error
}

// riverQueue is a queue on River driver D with transaction type TTx.
type riverQueue[TTx any, D riverdriver.Driver[TTx]] struct {
	driver    D
	client    *river.Client[TTx]
	txOf      func(store.Tx) (TTx, bool)
	migrateTx func(ctx context.Context, m *rivermigrate.Migrator[TTx]) error
	works     bool
}

func (q *riverQueue[TTx, D]) insertTx(ctx context.Context, tx store.Tx, args Args, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	t, ok := q.txOf(tx)
	if !ok {
		return nil, fmt.Errorf("continuation: transaction %T is not of the store the queue runs on", tx)
	}
	return q.client.InsertTx(ctx, t, args, opts)
}

func (q *riverQueue[TTx, D]) completeTx(ctx context.Context, tx store.Tx, job *river.Job[Args]) error {
	t, ok := q.txOf(tx)
	if !ok {
		return fmt.Errorf("continuation: transaction %T is not of the store the queue runs on", tx)
	}
	_, err := river.JobCompleteTx[D](ctx, t, job)
	return err
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

func (q *riverQueue[TTx, D]) migrate(ctx context.Context, log *slog.Logger) error {
	m, err := rivermigrate.New[TTx](q.driver, &rivermigrate.Config{Logger: log})
	if err != nil {
		return fmt.Errorf("continuation: river migrations: %w", err)
	}
	if err := q.migrateTx(ctx, m); err != nil {
		return fmt.Errorf("continuation: river migrations: %w", err)
	}
	return nil
}

// riverMigrateLockKey serialises River's migrations on PostgreSQL across
// processes ("btnrivrm").
const riverMigrateLockKey int64 = 0x62746e726976726d

// stopCancelWait bounds how long Stop waits for cancelled jobs to return
// after its grace period.
const stopCancelWait = 10 * time.Second

// newQueue builds River on the store's backend. With a nil rc it builds no
// client: the queue can only migrate.
func newQueue(st store.Store, rc *river.Config, works bool) (queue, error) {
	switch s := st.(type) {
	case *pgstore.Store:
		pool := s.Pool()
		q := &riverQueue[pgx.Tx, *riverpgxv5.Driver]{driver: riverpgxv5.New(pool), txOf: pgstore.PgxTx, works: works}
		q.migrateTx = func(ctx context.Context, m *rivermigrate.Migrator[pgx.Tx]) error {
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
			_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
			return err
		}
		return q, q.newClient(rc)
	case *sqlitestore.Store:
		// River's SQLite driver runs on the store's write pool: a single
		// connection whose transactions BEGIN IMMEDIATE, with a busy timeout
		// (see sqlitestore.Open). Sharing it, rather than opening a second
		// pool on the same file, is what makes this robust:
		//
		//   - InsertTx and JobCompleteTx must run in the store's transaction
		//     anyway, which lives on that connection;
		//   - River's documentation asks for one connection (SetMaxOpenConns(1)):
		//     River runs many statements concurrently, and SQLite allows one
		//     writer; with one connection they queue in database/sql instead of
		//     failing with SQLITE_BUSY, in this process;
		//   - BEGIN IMMEDIATE takes the write lock up front, so a transaction
		//     never fails at the moment it upgrades a read lock, and the busy
		//     timeout makes a writer of another process (a second `baton
		//     worker` on the same file) wait instead of failing.
		//
		// Nothing in this package holds that connection while waiting for
		// another one, which would deadlock: the worker's reads go to the
		// store's read pool, and River's calls made inside a store
		// transaction use that transaction.
		db := s.DB()
		q := &riverQueue[*sql.Tx, *riversqlite.Driver]{driver: riversqlite.New(db), txOf: sqlitestore.SQLTx, works: works}
		q.migrateTx = func(ctx context.Context, m *rivermigrate.Migrator[*sql.Tx]) error {
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
		}
		return q, q.newClient(rc)
	case nil:
		return nil, errors.New("continuation: no store")
	}
	return nil, fmt.Errorf("continuation: store %T is not supported (want *sqlitestore.Store or *pgstore.Store)", st)
}
