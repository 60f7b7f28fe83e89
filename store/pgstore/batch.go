package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store/internal/sqlcore"
)

// queued is a statement whose result is not needed.
type queued struct {
	sql  string
	args []any
}

// lazyQuerier runs one call of the Store in as few round trips as it can,
// pipelining statements whose results are not needed with the next one:
//
//   - a write sends BEGIN, the scope (role and owner), deferred statements
//     (locks) and its first statement in one batch, continues on that
//     connection, and sends COMMIT with its last statement when the engine
//     marks it (Last); a write of one statement is sent like a read, in an
//     implicit transaction, with no BEGIN or COMMIT;
//   - a read sends the scope with every statement: each batch runs in an
//     implicit transaction of its own, which set_config(…, true) covers,
//     with no BEGIN or COMMIT.
type lazyQuerier struct {
	pool    *pgxpool.Pool
	write   bool
	scope   queued   // scopes every transaction
	prelude []queued // deferred statements for the next batch
	last    bool     // commit with the next statement

	conn *pgxpool.Conn // the write transaction's connection, once begun
	done bool          // the write transaction was committed in a batch
}

var errRolledBack = errors.New("pgstore: transaction rolled back at commit")

// Defer queues a statement whose result is not needed to be sent with the
// next one. Dialect.LockRun uses it.
func (q *lazyQuerier) Defer(sql string, args ...any) {
	q.prelude = append(q.prelude, queued{sql, args})
}

// Last marks the next statement as the transaction's last.
func (q *lazyQuerier) Last() { q.last = q.write }

// batch is a sent batch positioned at the result of the statement, with
// how many results (a COMMIT) follow it.
type batch struct {
	q      *lazyQuerier
	br     pgx.BatchResults
	commit bool
}

// finish reads the results after the statement's and closes the batch.
// When the statement or the COMMIT failed, the transaction is left for
// abort to roll back.
func (b *batch) finish(err error) error {
	if b.commit && err == nil {
		var tag pgconn.CommandTag
		tag, err = b.br.Exec()
		if err == nil && tag.String() == "ROLLBACK" {
			err = errRolledBack
		}
	}
	if cerr := b.br.Close(); err == nil {
		err = cerr
	}
	if b.commit && err != nil {
		b.q.done = false
	}
	return err
}

// send runs sql, with what must precede it, and returns the batch
// positioned at its result, or nil to run sql directly on q.conn.
func (q *lazyQuerier) send(ctx context.Context, sql string, args []any) (*batch, error) {
	b := &pgx.Batch{}
	inTx := q.write && !q.done
	commit := inTx && q.last
	q.last = false
	if inTx && commit && q.conn == nil {
		// A write of one statement: the batch's implicit transaction,
		// committed at its end (or rolled back on error), is the
		// transaction; no BEGIN or COMMIT needed.
		inTx, commit, q.done = false, false, true
	}
	if inTx && q.conn == nil {
		conn, err := q.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		q.conn = conn
		b.Queue("begin")
		b.Queue(q.scope.sql, q.scope.args...)
	} else if !inTx {
		b.Queue(q.scope.sql, q.scope.args...)
	}
	for _, p := range q.prelude {
		b.Queue(p.sql, p.args...)
	}
	q.prelude = nil
	if len(b.QueuedQueries) == 0 && !commit {
		return nil, nil // nothing to pipeline
	}
	b.Queue(sql, args...)
	if commit {
		b.Queue("commit")
		q.done = true
	}
	var br pgx.BatchResults
	if q.conn != nil {
		// The transaction's connection, also once committed: taking a
		// second connection while holding one can exhaust the pool.
		br = q.conn.SendBatch(ctx, b)
	} else {
		br = q.pool.SendBatch(ctx, b)
	}
	lead := len(b.QueuedQueries) - 1
	if commit {
		lead--
	}
	for range lead {
		if _, err := br.Exec(); err != nil {
			return nil, (&batch{q: q, br: br, commit: commit}).finish(err)
		}
	}
	return &batch{q: q, br: br, commit: commit}, nil
}

func (q *lazyQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	b, err := q.send(ctx, sql, args)
	if err != nil {
		return 0, err
	}
	if b == nil {
		return querier{q.conn}.Exec(ctx, sql, args...)
	}
	tag, err := b.br.Exec()
	return tag.RowsAffected(), b.finish(err)
}

func (q *lazyQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlcore.Row {
	b, err := q.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	if b == nil {
		return q.conn.QueryRow(ctx, sql, args...)
	}
	return batchRow{b.br.QueryRow(), b}
}

func (q *lazyQuerier) Query(ctx context.Context, sql string, args ...any) (sqlcore.Rows, error) {
	q.last = false // rows are read by the caller: commit separately
	b, err := q.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return q.conn.Query(ctx, sql, args...)
	}
	rows, err := b.br.Query()
	if err != nil {
		return nil, b.finish(err)
	}
	return &batchRows{Rows: rows, br: b.br}, nil
}

// commit ends the write transaction, if one began, and releases its
// connection.
func (q *lazyQuerier) commit(ctx context.Context) error {
	if q.conn == nil {
		return nil
	}
	var err error
	if !q.done {
		var tag pgconn.CommandTag
		tag, err = q.conn.Exec(ctx, "commit")
		if err == nil && tag.String() == "ROLLBACK" {
			err = errRolledBack
		}
		q.done = true
	}
	q.conn.Release() // a connection left in a transaction is closed, not reused
	q.conn = nil
	return err
}

// abort rolls the write transaction back, if one is open, and releases its
// connection.
func (q *lazyQuerier) abort(ctx context.Context) {
	if q.conn == nil {
		return
	}
	if !q.done {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, _ = q.conn.Exec(ctx, "rollback")
		cancel()
	}
	q.conn.Release()
	q.conn = nil
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow finishes its batch once scanned.
type batchRow struct {
	row pgx.Row
	b   *batch
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		// No row is not a failure of the batch: still read the COMMIT.
		if ferr := r.b.finish(nil); ferr != nil {
			return ferr
		}
		return err
	}
	return r.b.finish(err)
}

// batchRows closes its batch with the rows.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}
