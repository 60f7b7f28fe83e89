package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/batonhq/baton/store/internal/sqlcore"
)

// connTx is a write transaction held on the write connection as a
// *sql.Conn, begun and ended by statements of the connection (cached, see
// cachingConn.beginOwn), not by database/sql: a *sql.Tx starts a goroutine
// per transaction, to roll it back when its context ends, and on a loaded
// machine waking it and ending it cost a checkpoint step (a transaction of
// one INSERT) about half as much again as a bare INSERT (bench/RESULTS.md:
// the step 2.06–2.17× the insert before, 1.64–1.72× after). The store's
// transactions outlive their contexts anyway (see group.go). As a *sql.Tx's, its statements are refused once their
// context has ended, and never interrupted once started.
//
// When a *sql.Tx is needed (SQLTx: River's InsertTx), one is made on the
// same SQLite transaction (cachingConn.BeginTx joins it), and the
// transaction's statements, its COMMIT and its ROLLBACK go through it from
// then on. A connTx is used by one goroutine at a time.
//
// The transaction begins at its first statement, not when the connection
// is taken; and a deferred checkpoint that comes first is held
// (HoldWrite) until the transaction's next statement, which sends it
// first, or its end: a transaction of that one write runs it on its own
// (autocommit), as atomic, without BEGIN and COMMIT — a run's step.
type connTx struct {
	conn    *sql.Conn
	tx      *sql.Tx // the *sql.Tx made for SQLTx, if any
	begun   bool    // BEGIN has run
	pending *heldWrite
}

// heldWrite is the write a connTx holds (HoldWrite).
type heldWrite struct {
	query string
	args  []any
	done  func(q sqlcore.Querier, n int64, err error) error
}

// takeConnTx takes db's connection (a cachingConn) for a transaction,
// which begins at its first statement.
func takeConnTx(ctx context.Context, db *sql.DB) (*connTx, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if err := conn.Raw(func(dc any) error {
		if _, ok := dc.(*cachingConn); !ok {
			return fmt.Errorf("sqlitestore: connection %T is not the store's", dc)
		}
		return nil
	}); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return &connTx{conn: conn}, nil
}

// ready begins the transaction, if it has not begun, and sends the write
// it holds, whose error it returns.
func (t *connTx) ready(ctx context.Context) error {
	if t.begun {
		return nil
	}
	if err := t.conn.Raw(func(dc any) error { return dc.(*cachingConn).beginOwn(ctx) }); err != nil {
		return err
	}
	t.begun = true
	return t.send()
}

// holding reports whether the transaction holds a write and has not begun.
func (t *connTx) holding() bool { return t.pending != nil }

// send runs the held write, in the transaction once it has begun, else on
// its own, and reports its result to its done.
func (t *connTx) send() error {
	w := t.pending
	if w == nil {
		return nil
	}
	t.pending = nil
	q := querier{db: t.db()}
	n, err := q.Exec(context.Background(), w.query, w.args...)
	return w.done(q, n, err)
}

// sqlTx returns the *sql.Tx of the transaction, making it if needed.
func (t *connTx) sqlTx() (*sql.Tx, error) {
	if err := t.ready(context.Background()); err != nil {
		return nil, err
	}
	if t.tx == nil {
		tx, err := t.conn.BeginTx(context.Background(), nil)
		if err != nil {
			return nil, err
		}
		t.tx = tx
	}
	return t.tx, nil
}

// commit commits the transaction and gives the connection back. A COMMIT
// that fails rolls the transaction back (cachingConn.endOwn). A
// transaction that has not begun runs the write it holds, on its own.
func (t *connTx) commit() error {
	if !t.begun {
		err := t.send()
		if cerr := t.conn.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return t.end("COMMIT")
}

// rollback rolls the transaction back and gives the connection back; a
// write it holds is dropped.
func (t *connTx) rollback() error {
	if !t.begun {
		t.pending = nil
		return t.conn.Close()
	}
	return t.end("ROLLBACK")
}

func (t *connTx) end(stmt string) error {
	var err error
	switch {
	case t.tx != nil && stmt == "COMMIT":
		err = t.tx.Commit()
	case t.tx != nil:
		err = t.tx.Rollback()
	default:
		err = t.conn.Raw(func(dc any) error { return dc.(*cachingConn).endOwn(context.Background(), stmt) })
	}
	if cerr := t.conn.Close(); err == nil {
		err = cerr
	}
	return err
}

// db is what runs the transaction's statements.
func (t *connTx) db() interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
} {
	if t.tx != nil {
		return t.tx
	}
	return t.conn
}

// ExecContext runs query in the transaction, unless ctx has ended.
func (t *connTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.ready(ctx); err != nil {
		return nil, err
	}
	return t.db().ExecContext(ctx, query, args...)
}

// querier returns the transaction as a sqlcore.Querier.
func (t *connTx) querier() sqlcore.Querier { return connQuerier{t} }

// connQuerier is a connTx's sqlcore.Querier.
type connQuerier struct{ t *connTx }

func (q connQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := q.ready(ctx); err != nil {
		return 0, err
	}
	return querier{db: q.t.db()}.Exec(ctx, query, args...)
}

func (q connQuerier) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	if err := q.ready(ctx); err != nil {
		return errRow{err}
	}
	return querier{db: q.t.db()}.QueryRow(ctx, query, args...)
}

func (q connQuerier) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	if err := q.ready(ctx); err != nil {
		return nil, err
	}
	return querier{db: q.t.db()}.Query(ctx, query, args...)
}

// ready refuses a statement whose context has ended, and otherwise
// readies the transaction for it (connTx.ready).
func (q connQuerier) ready(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return q.t.ready(ctx)
}

// HoldWrite implements [sqlcore.WriteHolder]: it holds the transaction's
// first statement, while nothing has begun it.
func (q connQuerier) HoldWrite(query string, args []any, done func(sqlcore.Querier, int64, error) error) bool {
	t := q.t
	if t.begun || t.pending != nil {
		return false
	}
	t.pending = &heldWrite{query: query, args: args, done: done}
	return true
}
