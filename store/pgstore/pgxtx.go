package pgstore

import (
	"context"
	"errors"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errStoreOwnsTx is what Commit and Rollback of PgxTx's pgx.Tx return.
var errStoreOwnsTx = errors.New("pgstore: the transaction of PgxTx belongs to Store.Tx, which commits or rolls it back when its function returns")

// pgxTx is the pgx.Tx of a Store.Tx (PgxTx), on the transaction's
// lazyQuerier, so that its statements run in the same transaction, role and
// scope as the store's, on the same connection:
//
//   - Exec, Query and QueryRow are pipelined like the store's statements:
//     the transaction's first statement carries BEGIN and the scope, and
//     any statement carries what the store deferred (a change of scope, a
//     run's lock);
//   - CopyFrom, SendBatch and Prepare first send what is pending, in a
//     round trip of its own, then run on the connection;
//   - Begin makes a savepoint (a pgx.Tx whose Commit releases it and whose
//     Rollback rolls back to it), sent like Exec;
//   - Commit and Rollback fail with errStoreOwnsTx: Store.Tx ends the
//     transaction;
//   - Conn is nil until the transaction's first statement (River then
//     assumes the default query execution mode), then the connection;
//     statements run directly on it skip what is pending;
//   - LargeObjects is not supported: it returns a zero pgx.LargeObjects,
//     whose methods panic.
//
// After Store.Tx returns, its statements fail with pgx.ErrTxClosed.
type pgxTx struct {
	q          *lazyQuerier
	savepoints int // savepoints made, to name the next one
}

var _ pgx.Tx = (*pgxTx)(nil)

// Exec runs sql, pipelined with what is pending, or queues it under a
// context of DeferringExec.
func (t *pgxTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if d, _ := ctx.Value(deferredExecKey{}).(bool); d && t.q.DeferWrite(sql, args...) {
		return pgconn.CommandTag{}, nil
	}
	return t.q.exec(ctx, sql, args)
}

// Query runs sql, pipelined with what is pending.
func (t *pgxTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.q.query(ctx, sql, args)
}

// QueryRow runs sql, pipelined with what is pending.
func (t *pgxTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.q.queryRow(ctx, sql, args)
}

// CopyFrom sends what is pending, then copies on the connection.
func (t *pgxTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.q.flush(ctx); err != nil {
		return 0, err
	}
	return t.q.conn.CopyFrom(ctx, table, columns, src)
}

// SendBatch sends what is pending, then b on the connection.
func (t *pgxTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if err := t.q.flush(ctx); err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	return t.q.conn.SendBatch(ctx, b)
}

// Prepare sends what is pending, then prepares sql on the connection.
func (t *pgxTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if err := t.q.flush(ctx); err != nil {
		return nil, err
	}
	return t.q.conn.Conn().Prepare(ctx, name, sql)
}

// LargeObjects is not supported: the zero pgx.LargeObjects it returns
// panics when used.
func (t *pgxTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Conn returns the transaction's connection, or nil before its first
// statement.
func (t *pgxTx) Conn() *pgx.Conn {
	if t.q.conn == nil {
		return nil
	}
	return t.q.conn.Conn()
}

// Begin makes a savepoint, pipelined with what is pending.
func (t *pgxTx) Begin(ctx context.Context) (pgx.Tx, error) {
	t.savepoints++
	name := "sp_" + strconv.Itoa(t.savepoints)
	if _, err := t.Exec(ctx, "savepoint "+name); err != nil {
		return nil, err
	}
	return &nestedTx{pgxTx: t, name: name}, nil
}

// Commit fails: Store.Tx commits.
func (t *pgxTx) Commit(context.Context) error { return errStoreOwnsTx }

// Rollback fails: Store.Tx rolls back when its function fails.
func (t *pgxTx) Rollback(context.Context) error { return errStoreOwnsTx }

// nestedTx is a savepoint, the pgx.Tx of pgxTx.Begin. Its other methods
// are its parent's.
type nestedTx struct {
	*pgxTx
	name   string
	closed bool
}

// Commit releases the savepoint, pipelined with what is pending.
func (s *nestedTx) Commit(ctx context.Context) error { return s.end(ctx, "release savepoint ") }

// Rollback rolls back to the savepoint, pipelined with what is pending.
// That also undoes a change of scope made after the savepoint, so the
// store's current scope is set again, deferred to the next statement.
func (s *nestedTx) Rollback(ctx context.Context) error {
	err := s.end(ctx, "rollback to savepoint ")
	if err == nil {
		s.q.deferScope()
	}
	return err
}

// end runs stmt on the savepoint's name, once: a savepoint committed or
// rolled back is closed.
func (s *nestedTx) end(ctx context.Context, stmt string) error {
	if s.closed {
		return pgx.ErrTxClosed
	}
	s.closed = true
	_, err := s.Exec(ctx, stmt+s.name)
	return err
}
