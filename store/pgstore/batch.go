package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store/internal/sqlcore"
)

// queued is a statement whose result is not needed.
type queued struct {
	sql  string
	args []any
}

// lazyQuerier runs one call of the Store in as few round trips as it can.
// Its prelude (scoping the transaction, locks) is pipelined with the
// call's first statement:
//
//   - a write sends BEGIN, the prelude and the first statement in one batch
//     and continues in the transaction that began;
//   - a read sends the prelude with every statement, each batch running in
//     an implicit transaction of its own, so that set_config(…, true)
//     covers the statement and no BEGIN or COMMIT is needed.
type lazyQuerier struct {
	pool    *pgxpool.Pool
	write   bool
	scope   queued   // scopes every transaction
	prelude []queued // deferred statements for the next batch
	tx      pgx.Tx   // the write transaction, once begun
}

// Defer queues a statement whose result is not needed to be sent with the
// next one. Dialect.LockRun uses it.
func (q *lazyQuerier) Defer(sql string, args ...any) {
	q.prelude = append(q.prelude, queued{sql, args})
}

// send sends the prelude and sql in one batch and returns the results
// positioned at sql's.
func (q *lazyQuerier) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	if q.write {
		b.BeginTx(pgx.TxOptions{})
	}
	b.Queue(q.scope.sql, q.scope.args...)
	for _, p := range q.prelude {
		b.Queue(p.sql, p.args...)
	}
	q.prelude = nil
	b.Queue(sql, args...)
	br := q.pool.SendBatch(ctx, b)
	if q.write {
		q.tx = br.Tx()
	}
	for range len(b.QueuedQueries) - 1 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

func (q *lazyQuerier) direct() bool { return q.tx != nil }

func (q *lazyQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	if q.direct() {
		return querier{q.tx}.Exec(ctx, sql, args...)
	}
	br, err := q.send(ctx, sql, args)
	if err != nil {
		return 0, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), err
}

func (q *lazyQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlcore.Row {
	if q.direct() {
		return q.tx.QueryRow(ctx, sql, args...)
	}
	br, err := q.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br.QueryRow(), br}
}

func (q *lazyQuerier) Query(ctx context.Context, sql string, args ...any) (sqlcore.Rows, error) {
	if q.direct() {
		return q.tx.Query(ctx, sql, args...)
	}
	br, err := q.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// commit commits the write transaction, if one began.
func (q *lazyQuerier) commit(ctx context.Context) error {
	if q.tx == nil {
		return nil
	}
	tx := q.tx
	q.tx = nil
	return tx.Commit(ctx)
}

// abort rolls the write transaction back, if one is open.
func (q *lazyQuerier) abort(ctx context.Context) {
	if q.tx != nil {
		rollback(ctx, q.tx)
		q.tx = nil
	}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow closes its batch once scanned.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil && cerr != nil && !errors.Is(cerr, pgx.ErrNoRows) {
		err = cerr
	}
	return err
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
