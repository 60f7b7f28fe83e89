// Package sqlcore implements [store.Ops] once, in SQL both backends accept
// ($n placeholders, ON CONFLICT, RETURNING), over a small seam: a [Querier]
// (database/sql or pgx), a [Dialect] (time encoding, row locks, error
// classes) and an [Executor] that opens and scopes transactions. The
// backends sqlitestore and pgstore supply those and the migrations.
package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/store"
)

// Querier runs statements. Both a database/sql transaction and a pgx
// transaction are adapted to it.
type Querier interface {
	// Exec runs a statement and returns the number of rows it affected.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// QueryRow runs a query expected to return at most one row. Scan returns
	// an error for which errors.Is(err, sql.ErrNoRows) holds when it found none.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query runs a query returning rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Row is one row of QueryRow.
type Row interface {
	Scan(dest ...any) error
}

// Rows are the rows of Query. Close must be called.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Scope is who a transaction acts for; PostgreSQL row-level security is
// configured from it.
type Scope struct {
	// Owner is the owner every row read or written belongs to.
	Owner string
	// APIKeyHash is set only to look an API key up by its hash.
	APIKeyHash string
	// Leases is set only to renew and sweep run leases, across owners.
	Leases bool
	// Sweep is set only to delete, across owners, call records past their
	// retention (SweepCallRecords) and the checkpoints retention no longer
	// keeps (PruneCheckpoints).
	Sweep bool
}

// Executor runs a function in a transaction.
type Executor interface {
	// Run calls fn with a Querier inside a transaction scoped to sc and
	// commits if fn returns nil. write reports whether fn writes. In a
	// caller's transaction (store.Tx), Run only rescopes it.
	Run(ctx context.Context, sc Scope, write bool, fn func(q Querier) error) error
}

// RunTx calls fn, then commit when fn returns nil, or abort when fn fails,
// panics or calls runtime.Goexit (t.FailNow), so that a transaction is
// never left open.
func RunTx(fn, commit func() error, abort func()) error {
	committed := false
	defer func() {
		if !committed {
			abort()
		}
	}()
	if err := fn(); err != nil {
		return err
	}
	committed = true
	return commit()
}

// ErrClass is what a driver error means to the store.
type ErrClass int

// Error classes.
const (
	ClassOther       ErrClass = iota
	ClassUnique               // a unique constraint was violated
	ClassForeignKey           // a referenced row does not exist
	ClassUnavailable          // the database cannot be reached or is locked
	// ClassInvalid: the database refused a value (PostgreSQL's SQLSTATE
	// classes 22, data exception, and 54, program limit exceeded; SQLite's
	// SQLITE_TOOBIG). The checks of holdable.go refuse such values first,
	// alike on both backends; this class is what escapes them.
	ClassInvalid
	// ClassDiskFull: the database's disk is full (a kind of unavailable).
	ClassDiskFull
)

// Dialect is what differs between the backends' SQL.
type Dialect interface {
	// Time encodes t as a query argument; the zero time is NULL.
	Time(t time.Time) any
	// ForUpdate is appended to a SELECT of a row the transaction will then
	// write: " FOR UPDATE" on PostgreSQL, "" on SQLite (writers are
	// serialised by BEGIN IMMEDIATE).
	ForUpdate() string
	// LockRun serialises the checkpoint writers of one run until the
	// transaction ends.
	LockRun(ctx context.Context, q Querier, ownerID, runID string) error
	// Classify says what a driver error means.
	Classify(err error) ErrClass
}

// Engine implements [store.Ops].
type Engine struct {
	Dialect Dialect
	Exec    Executor
	// Clock defaults to time.Now.
	Clock func() time.Time
}

func (e *Engine) now() time.Time {
	c := e.Clock
	if c == nil {
		c = time.Now
	}
	return c().UTC().Truncate(time.Microsecond)
}

// newID returns a new UUIDv7 string.
func newID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// write runs fn, which writes, scoped to owner.
func (e *Engine) write(ctx context.Context, owner string, fn func(q Querier) error) error {
	return e.Exec.Run(ctx, Scope{Owner: owner}, true, fn)
}

// inTx runs fn in a transaction scoped to sc (write: fn writes) and returns
// fn's value, or fn's or the commit's error wrapped with what.
func inTx[T any](ctx context.Context, e *Engine, sc Scope, write bool, what string, fn func(q Querier) (T, error)) (T, error) {
	var v T
	err := e.Exec.Run(ctx, sc, write, func(q Querier) error {
		var err error
		v, err = fn(q)
		return err
	})
	return result(v, e.wrap(what, err))
}

// readRow reads the one row of query as owner, scanned by scan; its error
// is wrapped with what.
func readRow[T any](ctx context.Context, e *Engine, owner, what string, scan func(Row) (T, error), query string, args ...any) (T, error) {
	return inTx(ctx, e, Scope{Owner: owner}, false, what, func(q Querier) (T, error) {
		return scan(q.QueryRow(ctx, query, args...))
	})
}

// getByKey is a Get of the one row that an owner's key names: it checks p,
// whose OwnerID is owner and whose field keyField is key, both required,
// then reads the row of query ($1 the owner, $2 the key) as the owner,
// scanned by scan. A refused p is wrapped with op, an error of the read
// with op+what (the words naming the row: " of message "+key).
func getByKey[T any](ctx context.Context, e *Engine, p any, op, owner, keyField, key, what string, scan func(Row) (T, error), query string) (T, error) {
	if err := need(p, "OwnerID", owner, keyField, key); err != nil {
		var zero T
		return zero, e.wrap(op, err)
	}
	return readRow(ctx, e, owner, op+what, scan, query, owner, key)
}

// writeRow runs query, one statement returning one row, as owner in a
// transaction of its own, and returns the row scanned by scan; its error is
// wrapped with what.
func writeRow[T any](ctx context.Context, e *Engine, owner, what string, scan func(Row) (T, error), query string, args ...any) (T, error) {
	return inTx(ctx, e, Scope{Owner: owner}, true, what, func(q Querier) (T, error) {
		last(q)
		return scan(q.QueryRow(ctx, query, args...))
	})
}

// exists returns sql.ErrNoRows when query, a SELECT 1, finds no row.
func exists(ctx context.Context, q Querier, query string, args ...any) error {
	var one int
	return q.QueryRow(ctx, query, args...).Scan(&one)
}

// queryAll appends to out each row of query, scanned by scan.
func queryAll[T any](ctx context.Context, q Querier, out []T, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// last tells q that the next statement is the last of the transaction, so
// that a backend may send the COMMIT with it. Statements after it, if any,
// run outside the transaction and must only read.
func last(q Querier) {
	if l, ok := q.(interface{ Last() }); ok {
		l.Last()
	}
}

// deferWithRead queues query, a write whose result is not needed, to go
// with the read that follows, in its round trip and its implicit
// transaction, whose commit then does not wait for its WAL flush, when q
// can (pgstore's DeferWithRead, for a call of the Store, not in a
// Store.Tx); it reports whether it did. Otherwise the caller runs the
// write another way.
func deferWithRead(q Querier, query string, args ...any) bool {
	d, ok := q.(interface{ DeferWithRead(string, ...any) bool })
	return ok && d.DeferWithRead(query, args...)
}

// deferWrite queues query, a write whose result is not needed, to go with
// the transaction's next statement or its COMMIT, when deferred is set and
// q can (pgstore's DeferWrite, in a Store.Tx); it reports whether it did.
// Otherwise the caller runs the write at once.
func deferWrite(q Querier, deferred bool, query string, args ...any) bool {
	d, ok := q.(interface{ DeferWrite(string, ...any) bool })
	return ok && deferred && d.DeferWrite(query, args...)
}

// deferAsserted queues query, a write that calls baton_refused when its
// condition does not hold, to go with the transaction's next statement or
// its COMMIT, when deferred is set and q can (pgstore's DeferAsserted, in a
// Store.Tx); refused maps what the refusal found to the write's error,
// which fails that statement or the commit. It reports
// whether it did. Otherwise the caller runs the write at once.
func deferAsserted(q Querier, deferred bool, refused func(found string) error, query string, args ...any) bool {
	d, ok := q.(interface {
		DeferAsserted(func(string) error, string, ...any) bool
	})
	return ok && deferred && d.DeferAsserted(refused, query, args...)
}

// storeSentinels are errors that already say what happened.
var storeSentinels = []error{
	store.ErrNotFound, store.ErrConflict, store.ErrIncompatible, store.ErrUnavailable,
	store.ErrCorrupt, store.ErrInvalid, store.ErrSchemaVersion,
}

// wrap adds op to err and maps driver errors to store sentinels.
func (e *Engine) wrap(op string, err error) error {
	return Wrap(e.Dialect, op, err)
}

// Wrap adds op to err and maps driver errors of d to store sentinels. It
// returns nil for a nil err.
func Wrap(d Dialect, op string, err error) error {
	if err == nil {
		return nil
	}
	for _, s := range storeSentinels {
		if errors.Is(err, s) {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", op, store.ErrNotFound)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	switch d.Classify(err) {
	case ClassUnique:
		return fmt.Errorf("%s: %w: %w", op, store.ErrConflict, err)
	case ClassForeignKey:
		return fmt.Errorf("%s: %w: %w", op, store.ErrNotFound, err)
	case ClassUnavailable:
		return fmt.Errorf("%s: %w: %w", op, store.ErrUnavailable, err)
	case ClassDiskFull:
		return fmt.Errorf("%s: %w: %w", op, store.ErrDiskFull, err)
	case ClassInvalid:
		return fmt.Errorf("%s: %w: %w", op, store.ErrInvalid, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", store.ErrInvalid, fmt.Sprintf(format, args...))
}

// need returns an ErrInvalid error naming the first empty field, then
// the first string field of the params p points to (nil: none) that the
// store cannot hold ([checkParams]), or nil. Fields come in name, value
// pairs.
func need(p any, fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			return invalid("%s is required", fields[i])
		}
	}
	if p == nil {
		return checkTexts("", fields...)
	}
	return checkParams(p)
}

// nullTime scans a time stored as microseconds since the epoch (SQLite) or
// as a timestamptz (PostgreSQL); NULL is the zero time.
type nullTime struct{ T time.Time }

func (n *nullTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		n.T = time.Time{}
	case int64:
		n.T = time.UnixMicro(v).UTC()
	case time.Time:
		n.T = v.UTC()
	default:
		return fmt.Errorf("sqlcore: cannot scan %T into a time", src)
	}
	return nil
}

// nullString maps "" to NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// result returns v and nil, or the zero value and err when err is not nil,
// so that a row read before a failed commit is never returned.
func result[T any](v T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
