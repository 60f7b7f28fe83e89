package sqlitestore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"

	"modernc.org/sqlite"
)

// maxCachedStmts bounds the statements a connection keeps. The store and
// River run about 150 distinct texts; past the bound, the idle statements
// are dropped and the cache refills with what is used.
const maxCachedStmts = 512

// newConnector returns a connector of the SQLite driver whose connections
// keep a prepared statement per SQL text for the queries database/sql runs
// without a prepared statement of its own (Exec and Query on a DB or a Tx):
// every query of the store and of River, which shares the write
// connection. The driver otherwise parses and plans the SQL at every call,
// which was a quarter of the CPU of a continuation, most of it River's
// large queries.
//
// On the write connection (uninterrupted) a statement runs to its end
// even when its context is cancelled: the driver would interrupt it, and
// SQLite rolls back the whole transaction of an interrupted write, which
// on the write connection may hold the writes of other calls (group
// commit, see group.go). database/sql still refuses to start a statement
// whose context has ended.
//
// Transactions begin and end with cached statements too (BeginTx, and
// beginOwn for connTx), instead of the driver's, which prepares its BEGIN
// and its COMMIT anew for each transaction; and a *sql.Tx can then join a
// transaction connTx began (see connTx.sqlTx). uninterrupted marks the
// write connection, whose transactions are BEGIN IMMEDIATE, as the DSN's
// _txlock=immediate makes the driver's.
func newConnector(dsn string, uninterrupted bool) (driver.Connector, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return &connector{inner: c, uninterrupted: uninterrupted}, nil
}

type connector struct {
	inner         driver.Connector
	uninterrupted bool
}

// Connect implements [driver.Connector].
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ic, ok := conn.(innerConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlitestore: the SQLite driver's connection %T lacks a context interface", conn)
	}
	begin := "BEGIN"
	if c.uninterrupted {
		begin = "BEGIN IMMEDIATE"
	}
	return &cachingConn{innerConn: ic, stmts: map[string]*cachedStmt{}, uninterrupted: c.uninterrupted, begin: begin}, nil
}

// Driver implements [driver.Connector].
func (c *connector) Driver() driver.Driver { return c.inner.Driver() }

// innerConn is what the driver's connections implement and database/sql
// uses.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn is a connection that reuses prepared statements for Exec
// and Query. database/sql uses a connection from one goroutine at a time
// (rows included), so it needs no lock.
type cachingConn struct {
	innerConn
	stmts         map[string]*cachedStmt
	uninterrupted bool   // see newConnector
	begin         string // the statement that begins a transaction that writes
	open          bool   // a transaction of BeginTx or beginOwn is open
}

// stmtContext is the context a statement runs with: without its
// cancellation on an uninterrupted connection.
func (c *cachingConn) stmtContext(ctx context.Context) context.Context {
	if c.uninterrupted {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// cachedStmt is a prepared statement; busy while rows of it are open,
// since the driver resets the statement when they close.
type cachedStmt struct {
	st   stmt
	busy bool
}

type stmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// stmt returns the idle prepared statement of query, preparing it if it
// is new; nil when it is busy (the caller runs the query unprepared).
func (c *cachingConn) stmt(ctx context.Context, query string) (*cachedStmt, error) {
	if s := c.stmts[query]; s != nil {
		if s.busy {
			return nil, nil
		}
		return s, nil
	}
	ds, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	st, ok := ds.(stmt)
	if !ok {
		ds.Close()
		return nil, nil
	}
	if len(c.stmts) >= maxCachedStmts {
		c.evictIdle()
	}
	s := &cachedStmt{st: st}
	c.stmts[query] = s
	return s, nil
}

func (c *cachingConn) evictIdle() {
	for q, s := range c.stmts {
		if !s.busy {
			s.st.Close()
			delete(c.stmts, q)
		}
	}
}

// ExecContext implements [driver.ExecerContext] with a cached statement.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	ctx = c.stmtContext(ctx)
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.innerConn.ExecContext(ctx, query, args)
	}
	s.busy = true
	defer func() { s.busy = false }()
	return s.st.ExecContext(ctx, args)
}

// QueryContext implements [driver.QueryerContext] with a cached statement.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	ctx = c.stmtContext(ctx)
	s, err := c.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.innerConn.QueryContext(ctx, query, args)
	}
	s.busy = true
	rows, err := s.st.QueryContext(ctx, args)
	if err != nil {
		s.busy = false
		return nil, err
	}
	return &cachedRows{Rows: rows, s: s}, nil
}

// BeginTx implements [driver.ConnBeginTx] with cached statements: c's
// BEGIN (BEGIN for a read-only transaction), then COMMIT or ROLLBACK, as
// the driver's transactions run them. Within a transaction of beginOwn,
// it begins nothing and returns that transaction (connTx.sqlTx). Other
// options go to the driver.
func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.open {
		return &cachedTx{c: c, ctx: ctx}, nil
	}
	if opts.Isolation != driver.IsolationLevel(0) {
		return c.innerConn.BeginTx(ctx, opts)
	}
	begin := c.begin
	if opts.ReadOnly {
		begin = "BEGIN"
	}
	if _, err := c.ExecContext(ctx, begin, nil); err != nil {
		return nil, err
	}
	c.open = true
	return &cachedTx{c: c, ctx: ctx}, nil
}

// beginOwn begins a transaction outside database/sql's (connTx).
func (c *cachingConn) beginOwn(ctx context.Context) error {
	if _, err := c.ExecContext(ctx, c.begin, nil); err != nil {
		return err
	}
	c.open = true
	return nil
}

// endOwn ends the transaction with stmt, COMMIT or ROLLBACK, run with ctx
// (a COMMIT that waits for a lock stops waiting when ctx is done, but on
// the write connection). A COMMIT that fails may leave the transaction
// open (SQLITE_BUSY): it is rolled back, since the connection goes back to
// the pool as out of any transaction, and the COMMIT's error returned.
func (c *cachingConn) endOwn(ctx context.Context, stmt string) error {
	c.open = false
	_, err := c.ExecContext(ctx, stmt, nil)
	if err != nil && stmt != "ROLLBACK" {
		_, _ = c.ExecContext(context.Background(), "ROLLBACK", nil)
	}
	return err
}

// ResetSession implements [driver.SessionResetter]: a transaction left
// open (none should be) is rolled back before the connection is used
// again.
func (c *cachingConn) ResetSession(ctx context.Context) error {
	if c.open {
		_ = c.endOwn(context.Background(), "ROLLBACK")
	}
	return c.innerConn.ResetSession(ctx)
}

// cachedTx is a transaction of a cachingConn. ctx is the context given to
// BeginTx, which database/sql keeps in use until the transaction ends: its
// COMMIT runs with it (see endOwn).
type cachedTx struct {
	c   *cachingConn
	ctx context.Context
}

// Commit implements [driver.Tx].
func (t *cachedTx) Commit() error { return t.c.endOwn(t.ctx, "COMMIT") }

// Rollback implements [driver.Tx]. It runs whatever the context, as the
// driver's does: database/sql rolls back a transaction whose context ended.
func (t *cachedTx) Rollback() error { return t.c.endOwn(context.Background(), "ROLLBACK") }

// Close implements [driver.Conn]: it closes the cached statements, then
// the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.st.Close())
		delete(c.stmts, q)
	}
	errs = append(errs, c.innerConn.Close())
	return errors.Join(errs...)
}

// cachedRows frees its statement when closed. It passes the driver's
// column type information through.
type cachedRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.s.busy = false
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
