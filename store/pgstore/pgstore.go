package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/internal/sqlcore"
)

//go:embed migration/*.sql
var migrationFS embed.FS

var migrations = sqlcore.MustLoadMigrations(migrationFS, "migration", "pgstore")

type engine = sqlcore.Engine

// Defaults of [store.Options] for PostgreSQL.
const (
	DefaultAppRole        = "baton_app"
	DefaultMaxConns       = 10
	DefaultConnectTimeout = 10 * time.Second
)

// Advisory lock keys. The migration lock is one 64-bit key; run locks use
// the two-key form, a separate key space.
const (
	migrateLockKey int64 = 0x6261746f6e6d6967 // "batonmig"
	runLockClass   int32 = 0x62746e72         // "btnr"
)

// Store is a [store.Store] on PostgreSQL. It is safe for concurrent use.
// Close it when done.
type Store struct {
	*engine
	pool  *pgxpool.Pool
	role  string // "" when transactions keep the connecting role
	log   *slog.Logger
	clock func() time.Time
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (a postgres:// URL or a key=value
// DSN, as pgx accepts) and, unless opts.NoMigrate, migrates it.
//
// The pool has opts.MaxConns connections at most (default: the URL's
// pool_max_conns, else 10), keeps none open when idle, recycles connections
// after an hour and checks idle ones every minute; connecting times out
// after the URL's connect_timeout, else 10 seconds. An unreachable database
// fails with [store.ErrUnavailable].
func Open(ctx context.Context, url string, opts *store.Options) (*Store, error) {
	if opts == nil {
		opts = &store.Options{}
	}
	cfg, err := parseConfig(url, opts)
	if err != nil {
		return nil, err
	}
	return openConfig(ctx, cfg, opts)
}

// OpenWith is Open, after configure has changed the pool's configuration:
// for what a URL cannot carry — a tracer (OpenTelemetry's, say), TLS
// settings, a BeforeConnect hook. The pool's sizes and timeouts are set
// as Open sets them before configure is called.
func OpenWith(ctx context.Context, url string, opts *store.Options, configure func(*pgxpool.Config)) (*Store, error) {
	if opts == nil {
		opts = &store.Options{}
	}
	cfg, err := parseConfig(url, opts)
	if err != nil {
		return nil, err
	}
	if configure != nil {
		configure(cfg)
	}
	return openConfig(ctx, cfg, opts)
}

// parseConfig is the pool configuration of Open.
func parseConfig(url string, opts *store.Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w: %v", store.ErrInvalid, err)
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxConnLifetime == 0 || cfg.MaxConnLifetime > time.Hour {
		cfg.MaxConnLifetime = time.Hour
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.Schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opts.Schema}.Sanitize()
	}
	return cfg, nil
}

// openConfig opens the store on a pool of cfg (tests set a tracer on it).
func openConfig(ctx context.Context, cfg *pgxpool.Config, opts *store.Options) (*Store, error) {
	var err error
	s := &Store{log: opts.Logger, clock: opts.Now}
	if !opts.NoAppRole {
		s.role = opts.AppRole
		if s.role == "" {
			s.role = DefaultAppRole
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	s.engine = &sqlcore.Engine{Dialect: dialect{}, Exec: storeExec{s}, Clock: s.clock}
	if err := sqlcore.Ready(ctx, s, opts.NoMigrate, len(migrations)); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("pgstore: open: %w", err)
	}
	return s, nil
}

// Pool returns the connection pool, for riverpgxv5.New and LISTEN/NOTIFY.
// Connections from it are in the connecting role, outside row-level
// security. Do not close it; Close does.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// PgxTx returns the pgx transaction under tx, a transaction of a PostgreSQL
// store, so that other rows (River's InsertTx) commit with it. It reports
// false for a tx of another backend. Statements run on it are in the
// store's application role (see [store.Options.AppRole]), scoped to the
// owner of the store call before them (none before the first); Migrate
// grants that role the tables of the schema, River's included when River's
// migrations run as the same user before or after.
//
// They are pipelined like the store's own: the first statement of the
// transaction carries its BEGIN and scope, and the next one carries the
// store's deferred statements. The store owns the transaction: Commit and
// Rollback of the returned pgx.Tx fail, and Begin makes a savepoint. See
// pgxTx for what else is supported.
func PgxTx(tx store.Tx) (pgx.Tx, bool) {
	t, ok := tx.(*txOps)
	if !ok {
		return nil, false
	}
	return t.tx, true
}

// DeferTx queues sql, a statement whose result is not needed (a
// pg_notify, say), in tx, a transaction of a PostgreSQL store, and reports
// false for a tx of another backend. It is sent with the transaction's next
// statement, or at the latest with its COMMIT, in the same batch: no round
// trip of its own. An error it raises fails that statement, or the commit
// (the transaction then rolls back). Its parameters are numbered from $1;
// it runs in the scope of the store call before it, as PgxTx's statements.
func DeferTx(tx store.Tx, sql string, args ...any) bool {
	return queueIn(tx, (*lazyQuerier).deferExec, sql, args)
}

// deferredExecKey marks a context whose Execs on a PgxTx are deferred
// (DeferringExec).
type deferredExecKey struct{}

// DeferringExec returns ctx marked so that an Exec of PgxTx's pgx.Tx under
// it is queued as [DeferTx] queues a statement instead of sent at once, and
// returns an empty command tag: for a statement whose result the caller
// does not need, run through code that takes a pgx.Tx (River's insert
// NOTIFY, say). Query, QueryRow and the other methods are not affected.
func DeferringExec(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferredExecKey{}, true)
}

// AfterCommitTx queues sql, a statement whose result is not needed, to run
// right after the COMMIT of tx, a transaction of a PostgreSQL store, and
// reports false for a tx of another backend. It is sent in the COMMIT's
// batch, no round trip of its own, and runs only if the COMMIT is reached
// and succeeds, in an implicit transaction of its own (so a pg_notify there
// does not hold PostgreSQL's notify lock through the transaction's commit,
// as one inside it would, serialising the commits of every transaction
// that notifies). Its error, if any, is dropped: tx has committed by then.
// It runs once the transaction's settings have ended (set_config(…, true)
// lasts the transaction): in the connecting role, with no owner. A COMMIT
// of a transaction that failed unseen (PostgreSQL answers ROLLBACK) still
// runs it: use it for what is harmless then, a notification that something
// may have changed.
func AfterCommitTx(tx store.Tx, sql string, args ...any) bool {
	return queueIn(tx, (*lazyQuerier).deferAfter, sql, args)
}

// queueIn queues sql with add on tx's querier, false for a tx of another
// backend.
func queueIn(tx store.Tx, add func(*lazyQuerier, string, []any), sql string, args []any) bool {
	t, ok := tx.(*txOps)
	if ok {
		add(t.tx.q, sql, args)
	}
	return ok
}

// Tx implements [store.Store]. The transaction begins with its first
// statement, which carries BEGIN and the scope of the call that runs it in
// one batch, and it commits after fn returns nil; a Tx whose fn runs no
// statement takes no connection and sends nothing.
func (s *Store) Tx(ctx context.Context, fn func(tx store.Tx) error) error {
	q := &lazyQuerier{pool: s.pool, role: s.role, write: true, held: true}
	t := &txOps{tx: &pgxTx{q: q}}
	t.engine = &sqlcore.Engine{Dialect: dialect{}, Exec: txExec{q}, Clock: s.clock}
	return sqlcore.RunTx(func() error { return fn(t) },
		func() error { return wrap("commit", q.commit(ctx)) },
		func() { q.abort(ctx) })
}

func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx)
}

// Ping implements [store.Store].
func (s *Store) Ping(ctx context.Context) error {
	return wrap("ping", s.pool.Ping(ctx))
}

// Close implements [store.Store].
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

func wrap(op string, err error) error {
	return sqlcore.Wrap(dialect{}, op, err)
}

// txOps is a store.Tx: the engine on the transaction's lazyQuerier, and
// the pgx.Tx of PgxTx on the same.
type txOps struct {
	*engine
	tx *pgxTx
}

// scopeStmt is the statement that configures row-level security for the
// rest of a transaction.
//
// A fresh transaction (reset false) leaves baton.api_key_hash and
// baton.leases alone when the scope has none: they start unset, as settings
// made with set_config(…, true) end with their transaction. A transaction
// that changes scope (reset true) always sets them.
func scopeStmt(role string, sc sqlcore.Scope, reset bool) queued {
	args := make([]any, 0, 4)
	var which int
	if role != "" {
		args = append(args, role)
		which |= 1
	}
	args = append(args, sc.Owner)
	if sc.APIKeyHash != "" || reset {
		args = append(args, sc.APIKeyHash)
		which |= 2
	}
	if sc.Leases || reset {
		leases := ""
		if sc.Leases {
			leases = "on"
		}
		args = append(args, leases)
		which |= 4
	}
	if sc.Sweep {
		// Only the sweep sets it: no other transaction reads it, and a
		// reset needs not clear it (the sweep's transaction is its own).
		args = append(args, "on")
		which |= 8
	}
	return queued{sql: scopeTexts[which], args: args}
}

// scopeTexts are the texts of scopeStmt, by which settings it makes
// besides baton.owner: 1 role, 2 baton.api_key_hash, 4 baton.leases, 8
// baton.sweep.
var scopeTexts = func() (texts [16]string) {
	for which := range texts {
		var b strings.Builder
		n := 0
		set := func(name string) {
			n++
			if n == 1 {
				b.WriteString("SELECT ")
			} else {
				b.WriteString(", ")
			}
			b.WriteString("set_config('" + name + "', $" + strconv.Itoa(n) + ", true)")
		}
		if which&1 != 0 {
			set("role")
		}
		set("baton.owner")
		if which&2 != 0 {
			set("baton.api_key_hash")
		}
		if which&4 != 0 {
			set("baton.leases")
		}
		if which&8 != 0 {
			set("baton.sweep")
		}
		texts[which] = b.String()
	}
	return texts
}()

// storeExec runs each call of the Store in a transaction of its own,
// pipelined by lazyQuerier.
type storeExec struct{ s *Store }

func (x storeExec) Run(ctx context.Context, sc sqlcore.Scope, write bool, fn func(sqlcore.Querier) error) error {
	q := &lazyQuerier{pool: x.s.pool, role: x.s.role, sc: sc, write: write}
	defer q.abort(ctx)
	if err := fn(q); err != nil {
		return err
	}
	return q.commit(ctx)
}

// txExec runs the calls of a Store.Tx on its lazyQuerier, rescoping the
// transaction when the scope changes: the first scope goes with BEGIN,
// a change with the call's first statement.
type txExec struct{ q *lazyQuerier }

func (x txExec) Run(_ context.Context, sc sqlcore.Scope, _ bool, fn func(sqlcore.Querier) error) error {
	x.q.setScope(sc)
	return fn(x.q)
}

// querier adapts pgx.
type querier struct {
	db interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.db.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlcore.Row {
	return q.db.QueryRow(ctx, query, args...)
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlcore.Rows, error) {
	rows, err := q.db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// dialect is PostgreSQL's SQL.
type dialect struct{}

func (dialect) Time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func (dialect) ForUpdate() string { return " FOR UPDATE" }

// WritingCTE: AppendMessages reserves the thread's sequence numbers and
// inserts the messages in one statement (sqlcore.WritingCTE).
func (dialect) WritingCTE() {}

// MergeMetadata merges a message's metadata in the UPDATE (jsonb's || sets
// the keys, - removes them): UpdateMessage is one statement
// (sqlcore.MetadataMerger).
func (dialect) MergeMetadata(patch, del int) string {
	return fmt.Sprintf("((metadata::jsonb || $%d::jsonb) - $%d::text[])::json", patch, del)
}

// LockRun takes a transaction-scoped advisory lock on the run. Through a
// lazyQuerier (a call of the Store, or of a Store.Tx) it is pipelined with
// the next statement, which runs after the lock is granted, on a fresh
// snapshot (READ COMMITTED).
func (dialect) LockRun(ctx context.Context, q sqlcore.Querier, ownerID, runID string) error {
	const lock = `SELECT pg_advisory_xact_lock($1, hashtext($2))`
	key := ownerID + "\x1f" + runID
	if d, ok := q.(*lazyQuerier); ok {
		// Once per transaction (Store.LockRun, then SaveCheckpoint).
		if d.locked == nil {
			d.locked = map[string]bool{}
		}
		if !d.locked[key] {
			d.locked[key] = true
			d.Defer(lock, runLockClass, key)
		}
		return nil
	}
	_, err := q.Exec(ctx, lock, runLockClass, key)
	return err
}

func (dialect) Classify(err error) sqlcore.ErrClass {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505":
			return sqlcore.ClassUnique
		case pe.Code == "53100": // disk full
			return sqlcore.ClassDiskFull
		case pe.Code == "23503":
			return sqlcore.ClassForeignKey
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "53300",                                         // too many connections
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // shutdown, cannot connect now
			return sqlcore.ClassUnavailable
		case strings.HasPrefix(pe.Code, "22"), // data exception: NUL, a lone surrogate, a number out of range
			strings.HasPrefix(pe.Code, "54"): // program limit exceeded: an index entry too large
			return sqlcore.ClassInvalid
		}
		return sqlcore.ClassOther
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.As(err, &oe),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return sqlcore.ClassUnavailable
	}
	return sqlcore.ClassOther
}
