package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/internal/sqlcore"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// migrations are the embedded migrations, checked at init.
var migrations = sqlcore.MustLoadMigrations(migrationFS, "migration", "sqlitestore")

// engine lets Store and its transactions embed the shared implementation
// without exporting it.
type engine = sqlcore.Engine

// Store is a [store.Store] on SQLite. It is safe for concurrent use. Close
// it when done.
type Store struct {
	*engine
	writer *sql.DB
	reader *sql.DB // == writer for in-memory databases
	group  groupCommit
	log    *slog.Logger
	clock  func() time.Time
}

var _ store.Store = (*Store)(nil)

// Defaults of [store.Options] for SQLite.
const (
	DefaultBusyTimeout  = 10 * time.Second
	DefaultMaxReadConns = 4
)

// Open opens (creating it if needed, but not its folder, which must exist)
// the SQLite database at path and, unless opts.NoMigrate, migrates it. path is a file path,
// ":memory:" for a private in-memory database, or a "file:" URI whose query
// parameters are passed to the driver.
//
// Connections are set up so that baton and River's SQLite driver
// (riversqlite) can share the database:
//
//   - journal_mode=WAL, so that readers never block the writer or each other;
//   - busy_timeout (opts.BusyTimeout), so that another process holding the
//     write lock (a `baton migrate`, a second server) makes a statement wait
//     instead of failing at once with SQLITE_BUSY;
//   - foreign_keys=on;
//   - a single write connection (SetMaxOpenConns(1)) on which every
//     transaction is BEGIN IMMEDIATE (_txlock=immediate).
//
// SQLite allows one writer at a time. With a single write connection, writers
// in this process queue in database/sql's pool instead of contending for
// SQLite's lock, which River's documentation requires of riversqlite. And
// beginning IMMEDIATE takes the write lock up front: a deferred transaction
// that reads and then writes can fail with SQLITE_BUSY without waiting, at
// the moment it upgrades its lock, while another connection (another process)
// writes. Reads outside transactions use a separate pool of
// opts.MaxReadConns query_only connections, so that streaming readers do not
// queue behind writers. In-memory databases live in one connection, which
// both pools are.
func Open(ctx context.Context, path string, opts *store.Options) (*Store, error) {
	if opts == nil {
		opts = &store.Options{}
	}
	if path == "" {
		return nil, fmt.Errorf("sqlitestore: open: %w: empty path", store.ErrInvalid)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	readConns := opts.MaxReadConns
	if readConns <= 0 {
		readConns = DefaultMaxReadConns
	}
	file, query, memory, err := parsePath(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w: %v", path, store.ErrInvalid, err)
	}
	if !memory {
		// The folder must exist: a mistyped path creates no folders.
		dir := filepath.Dir(file)
		switch fi, err := os.Stat(dir); {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("sqlitestore: open %s: %w: the folder %s does not exist (baton creates no folder for a database: create it, or check the path)", path, store.ErrInvalid, dir)
		case err != nil:
			return nil, fmt.Errorf("sqlitestore: open %s: %w: %w", path, store.ErrUnavailable, err)
		case !fi.IsDir():
			return nil, fmt.Errorf("sqlitestore: open %s: %w: %s is not a folder", path, store.ErrInvalid, dir)
		}
	}
	s := &Store{log: opts.Logger, clock: opts.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	wc, err := newConnector(dsn(file, query, memory, busy, false), true)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w: %v", path, store.ErrInvalid, err)
	}
	s.writer = sql.OpenDB(wc)
	s.writer.SetMaxOpenConns(1)
	s.writer.SetMaxIdleConns(1)
	s.writer.SetConnMaxLifetime(0)
	s.writer.SetConnMaxIdleTime(0)
	s.reader = s.writer
	if !memory {
		rc, err := newConnector(dsn(file, query, memory, busy, true), false)
		if err != nil {
			s.writer.Close()
			return nil, fmt.Errorf("sqlitestore: open %s: %w: %v", path, store.ErrInvalid, err)
		}
		s.reader = sql.OpenDB(rc)
		s.reader.SetMaxOpenConns(readConns)
		s.reader.SetMaxIdleConns(readConns)
		s.reader.SetConnMaxIdleTime(5 * time.Minute)
	}
	s.engine = &sqlcore.Engine{Dialect: dialect{}, Exec: storeExec{s}, Clock: s.clock}
	// The first connection applies the pragmas; WAL needs the write lock
	// once, so Ping sets it up on the writer first.
	if !memory {
		if err := connectWaiting(ctx, s.writer, busy); err != nil {
			s.Close()
			return nil, fmt.Errorf("sqlitestore: open %s: %w", path, wrap("ping", err))
		}
	}
	if err := sqlcore.Ready(ctx, s, opts.NoMigrate, len(migrations)); err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	return s, nil
}

// connectWaiting makes db's first connection, which applies the pragmas,
// waiting up to busy while the file is locked. Switching a new file to WAL
// takes its lock without SQLite's busy handler: a process that opens the
// same new file at that moment (two `baton worker` starting at once) got
// SQLITE_BUSY at once (TestMigrateConcurrent, one run in eleven).
func connectWaiting(ctx context.Context, db *sql.DB, busy time.Duration) error {
	deadline := time.Now().Add(busy)
	wait := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		var se *sqlite.Error
		if err == nil || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY || time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// parsePath splits a path or file: URI into the file part and its query.
func parsePath(path string) (file string, query url.Values, memory bool, err error) {
	query = url.Values{}
	if rest, ok := strings.CutPrefix(path, "file:"); ok {
		file, q, _ := strings.Cut(rest, "?")
		if query, err = url.ParseQuery(q); err != nil {
			return "", nil, false, err
		}
		if file, err = url.PathUnescape(file); err != nil {
			return "", nil, false, err
		}
		file = strings.TrimPrefix(file, "//localhost")
		if strings.HasPrefix(file, "///") {
			file = file[2:]
		}
		memory = file == ":memory:" || query.Get("mode") == "memory"
		return file, query, memory, nil
	}
	if path == ":memory:" {
		return path, query, true, nil
	}
	return path, query, false, nil
}

// dsn builds the driver DSN. Baton's settings override the caller's.
func dsn(file string, query url.Values, memory bool, busy time.Duration, readOnly bool) string {
	q := url.Values{}
	for k, vs := range query {
		for _, v := range vs {
			if k == "_txlock" || k == "_pragma" && isBatonPragma(v) {
				continue
			}
			q.Add(k, v)
		}
	}
	pragmas := []string{
		"busy_timeout(" + strconv.FormatInt(busy.Milliseconds(), 10) + ")",
		"foreign_keys(1)",
	}
	if !memory {
		pragmas = append(pragmas, "journal_mode(WAL)", "synchronous(FULL)")
	}
	if readOnly {
		pragmas = append(pragmas, "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
		// The statement journal in memory: group commit (group.go) runs
		// each Tx in a savepoint, which copies every page it changes to
		// the statement journal first, and past 64 KiB SQLite spilled that
		// journal to a temporary file, one write(2) per page. It holds
		// nothing durable (only what rolls a savepoint back, within the
		// open transaction), and a savepoint's pages are a Tx's: small.
		pragmas = append(pragmas, "temp_store(MEMORY)")
	}
	q["_pragma"] = append(q["_pragma"], pragmas...)
	// Escape what a SQLite URI path cannot hold literally.
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(file) + "?" + q.Encode()
}

// isBatonPragma reports whether a _pragma value sets something Open sets.
func isBatonPragma(v string) bool {
	name, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(v)), "(")
	switch strings.TrimSpace(name) {
	case "busy_timeout", "foreign_keys", "journal_mode", "query_only", "synchronous":
		return true
	}
	return false
}

// DB returns the write pool: one connection, transactions BEGIN IMMEDIATE.
// Give it to riversqlite.New so that River's jobs live in the same database
// and queue behind the same single writer. Do not change its pool settings
// or close it; Close does.
func (s *Store) DB() *sql.DB { return s.writer }

// SQLTx returns the database/sql transaction under tx, a transaction of a
// SQLite store, so that other rows (River's InsertTx) commit with it. It
// reports false for a tx of another backend (or, which should not happen,
// when the transaction's connection is gone).
func SQLTx(tx store.Tx) (*sql.Tx, bool) {
	t, ok := tx.(*txOps)
	if !ok {
		return nil, false
	}
	sqlTx, err := t.tx.sqlTx()
	return sqlTx, err == nil
}

// Tx implements [store.Store]. The transaction holds the single write
// connection until fn returns; transactions that queue for it meanwhile
// commit with it (group commit, see group.go), and Tx returns when the
// COMMIT that holds its writes has returned.
func (s *Store) Tx(ctx context.Context, fn func(tx store.Tx) error) error {
	grp, err := s.group.acquire(ctx)
	if err != nil {
		return wrap("begin transaction", err)
	}
	if grp == nil {
		// The group's transaction outlives this call's context: a
		// cancelled context must not roll back the others' writes.
		tx, err := takeConnTx(context.WithoutCancel(ctx), s.writer)
		if err != nil {
			s.group.release(nil)
			return wrap("begin transaction", err)
		}
		grp = &group{tx: tx, done: make(chan struct{})}
	}
	// The turn passes on however fn ends, a panic included.
	released := false
	defer func() {
		if !released {
			s.group.release(grp)
		}
	}()
	if err := grp.run(ctx, s, fn); err != nil {
		return err
	}
	released = true
	s.group.release(grp)
	<-grp.done
	return grp.err
}

// Migrate implements [store.Store].
func (s *Store) Migrate(ctx context.Context) error {
	return s.MigrateTo(ctx, len(migrations))
}

// MigrateTo moves the schema to version (0 to [LatestVersion]), running up
// or down migrations, in one IMMEDIATE transaction, so that concurrent
// migrators in other processes wait for it and then find nothing to do.
func (s *Store) MigrateTo(ctx context.Context, version int) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return wrap("migrate", err)
	}
	defer tx.Rollback()
	q := querier{db: tx}
	if _, err := q.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+sqlcore.VersionTable+` (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return wrap("migrate", err)
	}
	if _, _, err := sqlcore.Apply(ctx, q, dialect{}, migrations, version, s.log); err != nil {
		return wrap("migrate", err)
	}
	return wrap("migrate: commit", tx.Commit())
}

// LatestVersion is the newest migration of this build.
func LatestVersion() int { return len(migrations) }

// SchemaVersion returns the newest migration applied to the database, 0
// for an empty database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = $1`,
		sqlcore.VersionTable).Scan(&n); err != nil {
		return 0, wrap("schema version", err)
	}
	if n == 0 {
		return 0, nil
	}
	v, err := sqlcore.CurrentVersion(ctx, querier{db: s.reader})
	return v, wrap("schema version", err)
}

// Ping implements [store.Store].
func (s *Store) Ping(ctx context.Context) error {
	if err := s.writer.PingContext(ctx); err != nil {
		return wrap("ping", err)
	}
	if s.reader != s.writer {
		if err := s.reader.PingContext(ctx); err != nil {
			return wrap("ping", err)
		}
	}
	return nil
}

// Close implements [store.Store].
func (s *Store) Close() error {
	var errs []error
	if s.reader != nil && s.reader != s.writer {
		errs = append(errs, s.reader.Close())
	}
	if s.writer != nil {
		errs = append(errs, s.writer.Close())
	}
	return errors.Join(errs...)
}

func wrap(op string, err error) error {
	return sqlcore.Wrap(dialect{}, op, err)
}

// txOps is a store.Tx.
type txOps struct {
	*engine
	tx *connTx
}

// storeExec runs each call of the Store in its own transaction: writes on
// the write connection, reads as single statements on the read pool.
type storeExec struct{ s *Store }

func (x storeExec) Run(ctx context.Context, _ sqlcore.Scope, write bool, fn func(sqlcore.Querier) error) error {
	if !write {
		return fn(querier{db: x.s.reader})
	}
	q := &lazyTx{s: x.s}
	defer q.rollback()
	if err := fn(q); err != nil {
		return err
	}
	return q.commit()
}

// lazyTx begins the write transaction of a call at its first statement,
// except when that statement is also its last (the engine says so with
// Last): a single statement runs on its own, in autocommit mode, which is
// as atomic and saves the BEGIN and COMMIT statements. An autocommit INSERT,
// UPDATE or DELETE takes the write lock as it starts, like BEGIN IMMEDIATE.
// Statements after the last one only read, on the read pool.
type lazyTx struct {
	s    *Store
	tx   *connTx
	last bool // the next statement is the last
	done bool // the last statement ran in autocommit mode
}

// Last marks the next statement as the last of the transaction.
func (q *lazyTx) Last() { q.last = true }

func (q *lazyTx) querier(ctx context.Context) (sqlcore.Querier, error) {
	switch {
	case q.tx != nil:
		return q.tx.querier(), nil
	case q.done:
		return querier{db: q.s.reader}, nil
	case q.last:
		q.done = true
		return querier{db: q.s.writer}, nil
	}
	tx, err := takeConnTx(ctx, q.s.writer)
	if err != nil {
		return nil, err
	}
	q.tx = tx
	return tx.querier(), nil
}

func (q *lazyTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	qq, err := q.querier(ctx)
	if err != nil {
		return 0, err
	}
	return qq.Exec(ctx, query, args...)
}

func (q *lazyTx) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	qq, err := q.querier(ctx)
	if err != nil {
		return errRow{err}
	}
	return qq.QueryRow(ctx, query, args...)
}

func (q *lazyTx) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	qq, err := q.querier(ctx)
	if err != nil {
		return nil, err
	}
	return qq.Query(ctx, query, args...)
}

func (q *lazyTx) commit() error {
	if q.tx == nil {
		return nil
	}
	tx := q.tx
	q.tx = nil
	return tx.commit()
}

func (q *lazyTx) rollback() {
	if q.tx != nil {
		_ = q.tx.rollback()
		q.tx = nil
	}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// txExec runs calls in the caller's transaction.
type txExec struct{ q sqlcore.Querier }

func (x txExec) Run(_ context.Context, _ sqlcore.Scope, _ bool, fn func(sqlcore.Querier) error) error {
	return fn(x.q)
}

// querier adapts database/sql. The connections keep a prepared statement
// per query text (see newConnector), so queries are not parsed again.
type querier struct {
	db interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	return q.db.QueryRowContext(ctx, query, args...)
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	rows, err := q.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// dialect is SQLite's SQL.
type dialect struct{}

func (dialect) Time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func (dialect) ForUpdate() string { return "" }

// LockRun does nothing: write transactions are serialised by BEGIN IMMEDIATE.
func (dialect) LockRun(context.Context, sqlcore.Querier, string, string) error { return nil }

func (dialect) Classify(err error) sqlcore.ErrClass {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return sqlcore.ClassOther
	}
	switch se.Code() {
	case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
		return sqlcore.ClassUnique
	case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
		return sqlcore.ClassForeignKey
	}
	if se.Code()&0xff == sqlite3.SQLITE_TOOBIG {
		return sqlcore.ClassInvalid
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return sqlcore.ClassDiskFull
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_READONLY:
		return sqlcore.ClassUnavailable
	}
	return sqlcore.ClassOther
}
