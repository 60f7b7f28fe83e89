package pgstore

import (
	"context"
	"errors"
	"strconv"
	"strings"
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
	// refused, if set, maps the statement's refusal — the error
	// baton_refused raises, whose detail it is given — to the write's own
	// error (DeferAsserted).
	refused func(found string) error
}

// lazyQuerier runs one call of the Store, or all the calls of a Store.Tx,
// in as few round trips as it can, pipelining statements whose results are
// not needed with the next one:
//
//   - a write sends BEGIN, the scope (role and owner), deferred statements
//     (locks) and its first statement in one batch, continues on that
//     connection, and sends COMMIT with its last statement when the engine
//     marks it (Last); a write of one statement is sent like a read, in an
//     implicit transaction, with no BEGIN or COMMIT;
//   - a read sends the scope with every statement: each batch runs in an
//     implicit transaction of its own, which set_config(…, true) covers,
//     with no BEGIN or COMMIT;
//   - a Store.Tx (held) is a write that Last does not end: BEGIN and the
//     scope go with its first statement, whether the engine or PgxTx runs
//     it, and a later change of scope (setScope) is deferred to the next
//     statement; Store.Tx commits or aborts it after its function returns.
//     It holds no connection until its first statement, then exactly one.
//
// Deferred statements that no statement follows are never sent, but those
// of deferExec (DeferTx), which go with COMMIT. A
// lazyQuerier is not safe for concurrent use.
type lazyQuerier struct {
	pool    *pgxpool.Pool
	role    string        // the application role, "" for the connecting one
	sc      sqlcore.Scope // scopes every transaction
	write   bool          // statements run in one transaction (BEGIN … COMMIT)
	held    bool          // a Store.Tx: ended only by commit or abort
	prelude []queued      // deferred statements for the next batch
	must    bool          // the prelude holds a statement to send at the latest with COMMIT (deferExec)
	after   []queued      // statements to send right after COMMIT, in its batch (deferAfter)
	last    bool          // commit with the next statement

	conn *pgxpool.Conn // the write transaction's connection, once begun
	done bool          // the write transaction was committed in a batch, or ended

	locked map[string]bool // the runs locked in the transaction (Dialect.LockRun)

	broken error // a deferred statement was refused: the transaction cannot commit
}

var errRolledBack = errors.New("pgstore: transaction rolled back at commit")

// Defer queues a statement whose result is not needed to be sent with the
// next one. Dialect.LockRun uses it. sql is "SELECT " and a list of
// expressions, its parameters numbered from $1: the deferred statements
// and the scope go as one such SELECT (see lead).
func (q *lazyQuerier) Defer(sql string, args ...any) {
	q.prelude = append(q.prelude, queued{sql: sql, args: args})
}

// deferExec is Defer for a statement that must run in the transaction
// even if no statement follows it: it goes with the next statement, or at
// the latest with COMMIT, in the same batch (commit). An error it raises
// fails that statement, or the commit. [DeferTx] uses it.
func (q *lazyQuerier) deferExec(sql string, args []any) {
	q.Defer(sql, args...)
	q.must = true
}

// deferAfter queues a statement to be sent right after the Store.Tx's
// COMMIT, in the same batch (commitWith): PostgreSQL runs it once the
// COMMIT has run, in an implicit transaction of its own, and skips it if
// the COMMIT failed. Its result and error are discarded: the transaction
// has committed by then. [AfterCommitTx] uses it.
func (q *lazyQuerier) deferAfter(sql string, args []any) {
	q.after = append(q.after, queued{sql: sql, args: args})
}

// DeferWrite is deferExec for a write of the engine whose result is not
// needed (store.ReleaseLeaseParams.Deferred), in a Store.Tx: the statement
// runs in the transaction's scope of the moment (a change of scope after
// it is deferred after it; before the transaction's first statement, it
// goes with BEGIN — see setScope). It reports false, deferring nothing, in
// any other case.
func (q *lazyQuerier) DeferWrite(sql string, args ...any) bool {
	if !q.held || q.done {
		return false
	}
	q.deferExec(sql, args)
	return true
}

// DeferWithRead queues sql, a write whose result is not needed, to go
// with the next statement of a read (a call of the Store that does not
// write): the batch runs in an implicit transaction of its own, which the
// write joins, and whose commit does not wait for its WAL to reach disk
// (synchronous_commit off for it: the write may be lost with a crash of
// the server, as a lease that only speeds recovery may). An error of the
// write fails the read. It reports false, deferring nothing, in a write or
// a Store.Tx.
func (q *lazyQuerier) DeferWithRead(sql string, args ...any) bool {
	if q.write || q.held {
		return false
	}
	q.Defer(`SELECT set_config('synchronous_commit', 'off', true)`)
	q.Defer(sql, args...)
	return true
}

// DeferAsserted is DeferWrite for a write with a condition: sql fails
// when the condition does not hold, calling baton_refused (migration 013)
// with what it found, and refused maps that to the write's own error, which
// fails the statement the write went with, or the commit. The refusal is
// the database's, so the write may go with COMMIT: a refused one rolls the
// transaction back. Once a write was refused, the transaction can only
// roll back.
func (q *lazyQuerier) DeferAsserted(refused func(found string) error, sql string, args ...any) bool {
	if !q.held || q.done {
		return false
	}
	q.prelude = append(q.prelude, queued{sql: sql, args: args, refused: refused})
	q.must = true
	return true
}

// refusal is the code of the error baton_refused raises.
const refusal = "BT409"

// Last marks the next statement as the transaction's last. It does nothing
// in a Store.Tx, which commits after its function returns.
func (q *lazyQuerier) Last() { q.last = q.write && !q.held }

// setScope makes sc the scope of the statements that follow. Before the
// transaction begins, the scope is sent with its BEGIN; after, a change is
// deferred to the next statement.
func (q *lazyQuerier) setScope(sc sqlcore.Scope) {
	if sc == q.sc {
		return
	}
	if q.conn == nil && q.must {
		// Writes deferred before BEGIN (DeferWrite, DeferAsserted, DeferTx)
		// run in the scope they were deferred in: it goes before them,
		// after the one lead sends with BEGIN, and the new one after them.
		q.prelude = append([]queued{scopeStmt(q.role, q.sc, true)}, q.prelude...)
		q.sc = sc
		q.deferScope()
		return
	}
	q.sc = sc
	if q.conn != nil {
		q.deferScope()
	}
}

// deferScope queues the statement that sets the scope anew, replacing
// whatever the transaction had.
func (q *lazyQuerier) deferScope() {
	st := scopeStmt(q.role, q.sc, true)
	q.Defer(st.sql, st.args...)
}

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

// lead returns a batch of what must precede the next statement: BEGIN and
// the scope when it begins the write transaction (inTx; the connection is
// acquired here), the scope alone when it runs in an implicit transaction
// of its own, nothing more when it continues the write transaction; then
// the deferred statements. The scope and the deferred statements are one
// statement (selectList): a transaction's scope and its run's lock cost one.
func (q *lazyQuerier) lead(ctx context.Context, inTx bool) (*pgx.Batch, []queued, error) {
	if q.held && q.done {
		return nil, nil, pgx.ErrTxClosed
	}
	if q.broken != nil {
		return nil, nil, q.broken
	}
	// Sized once: a batch is built for every statement a transaction
	// sends, and its slices' growth was a good part of its allocations.
	var stmts []queued
	pre := make([]queued, 0, 1+len(q.prelude))
	switch {
	case inTx && q.conn == nil:
		conn, err := q.pool.Acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		q.conn = conn
		stmts = make([]queued, 1, 2+len(q.prelude))
		stmts[0] = queued{sql: "begin"}
		fallthrough
	case !inTx:
		pre = append(pre, scopeStmt(q.role, q.sc, false))
	}
	pre = append(pre, q.prelude...)
	q.prelude, q.must = nil, false
	if stmts == nil {
		stmts = selectList(pre)
	} else {
		stmts = append(stmts, selectList(pre)...)
	}
	// Room for the statement the batch leads and a COMMIT after it.
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(stmts)+2)}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	return b, stmts, nil
}

// readLead reads the results of the statements lead queued (stmts), in
// order. A refused write (DeferAsserted) breaks the transaction with its
// own error.
func (q *lazyQuerier) readLead(br pgx.BatchResults, stmts []queued) error {
	for _, st := range stmts {
		_, err := br.Exec()
		if err == nil {
			continue
		}
		// Declared here, not before the check: errors.As takes its
		// address, which put it on the heap for every statement read.
		var pe *pgconn.PgError
		if st.refused != nil && errors.As(err, &pe) && pe.Code == refusal {
			err = st.refused(pe.Detail)
			q.broken = err
		}
		return err
	}
	return nil
}

// selectList joins consecutive statements that are each "SELECT " and a
// list of expressions (parameters from $1) into one SELECT of all their
// expressions, in order, parameters renumbered. Other statements are left
// as they are.
func selectList(stmts []queued) []queued {
	if len(stmts) < 2 {
		return stmts
	}
	out := make([]queued, 0, len(stmts))
	for _, st := range stmts {
		list, ok := strings.CutPrefix(st.sql, "SELECT ")
		n := len(out)
		if !ok || st.refused != nil || n == 0 || !strings.HasPrefix(out[n-1].sql, "SELECT ") || out[n-1].refused != nil {
			out = append(out, st)
			continue
		}
		prev := &out[n-1]
		k := len(prev.args)
		prev.sql += ", " + renumber(list, k)
		prev.args = append(prev.args[:k:k], st.args...)
	}
	return out
}

// renumber returns sql with each parameter ($ and digits) numbered k more.
func renumber(sql string, k int) string {
	var b strings.Builder
	b.Grow(len(sql) + 8)
	for i := 0; i < len(sql); i++ {
		j := i + 1
		for sql[i] == '$' && j < len(sql) && '0' <= sql[j] && sql[j] <= '9' {
			j++
		}
		if j == i+1 {
			b.WriteByte(sql[i])
			continue
		}
		p, _ := strconv.Atoi(sql[i+1 : j])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(p + k))
		i = j - 1
	}
	return b.String()
}

// send runs sql, with what must precede it (lead), and returns the batch
// positioned at its result, or nil to run sql directly on q.conn.
func (q *lazyQuerier) send(ctx context.Context, sql string, args []any) (*batch, error) {
	inTx := q.write && !q.done
	commit := inTx && q.last
	q.last = false
	if inTx && commit && q.conn == nil {
		// A write of one statement: the batch's implicit transaction,
		// committed at its end (or rolled back on error), is the
		// transaction; no BEGIN or COMMIT needed.
		inTx, commit, q.done = false, false, true
	}
	b, lead, err := q.lead(ctx, inTx)
	if err != nil {
		return nil, err
	}
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
	if err := q.readLead(br, lead); err != nil {
		return nil, (&batch{q: q, br: br, commit: commit}).finish(err)
	}
	return &batch{q: q, br: br, commit: commit}, nil
}

// flush sends what a Store.Tx has pending before its next statement (lead)
// in a batch of its own and reads its results, so that the caller may then
// use q.conn directly.
func (q *lazyQuerier) flush(ctx context.Context) error {
	b, lead, err := q.lead(ctx, true)
	if err != nil || len(b.QueuedQueries) == 0 {
		return err
	}
	br := q.conn.SendBatch(ctx, b)
	err = q.readLead(br, lead)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// Exec runs sql, pipelined with what must precede it (send), and returns
// the rows it affected.
func (q *lazyQuerier) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.exec(ctx, sql, args)
	return tag.RowsAffected(), err
}

// exec is Exec, with pgx's command tag (for PgxTx).
func (q *lazyQuerier) exec(ctx context.Context, sql string, args []any) (pgconn.CommandTag, error) {
	b, err := q.send(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if b == nil {
		return q.conn.Exec(ctx, sql, args...)
	}
	tag, err := b.br.Exec()
	return tag, b.finish(err)
}

// QueryRow runs sql, pipelined with what must precede it (send), and with
// COMMIT after it when it is the transaction's last (Last).
func (q *lazyQuerier) QueryRow(ctx context.Context, sql string, args ...any) sqlcore.Row {
	return q.queryRow(ctx, sql, args)
}

// queryRow is QueryRow, as a pgx.Row (for PgxTx).
func (q *lazyQuerier) queryRow(ctx context.Context, sql string, args []any) pgx.Row {
	b, err := q.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	if b == nil {
		return q.conn.QueryRow(ctx, sql, args...)
	}
	return batchRow{b.br.QueryRow(), b}
}

// Query runs sql, pipelined with what must precede it (send) but never
// with COMMIT: the caller reads the rows first.
func (q *lazyQuerier) Query(ctx context.Context, sql string, args ...any) (sqlcore.Rows, error) {
	return q.query(ctx, sql, args)
}

// query is Query, as pgx.Rows (for PgxTx).
func (q *lazyQuerier) query(ctx context.Context, sql string, args []any) (pgx.Rows, error) {
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
// connection. A Store.Tx sends its COMMIT here, alone, or with the deferred
// statements that must run (deferExec) and those that follow the COMMIT
// (deferAfter) in one batch (commitWith); other deferred statements still
// pending (locks) are dropped.
func (q *lazyQuerier) commit(ctx context.Context) error {
	if q.broken != nil {
		q.abort(ctx)
		return q.broken
	}
	if (q.must || len(q.after) > 0) && !q.done {
		return q.commitWith(ctx)
	}
	conn, done := q.end()
	if conn == nil {
		return nil
	}
	defer conn.Release() // a connection left in a transaction is closed, not reused
	if done {
		return nil
	}
	tag, err := conn.Exec(ctx, "commit")
	if err == nil && tag.String() == "ROLLBACK" {
		err = errRolledBack
	}
	return err
}

// commitWith sends the deferred statements, COMMIT and the statements that
// follow it (deferAfter) in one batch, with BEGIN and the scope first if no
// statement began the transaction, and releases the connection. When a
// statement or the COMMIT fails, the transaction is rolled back (and the
// statements after the COMMIT are not run). Once the COMMIT has
// succeeded, what the statements after it do is not the transaction's
// outcome: their errors are dropped.
func (q *lazyQuerier) commitWith(ctx context.Context) error {
	b, lead, err := q.lead(ctx, true)
	if err != nil {
		q.abort(ctx)
		return err
	}
	b.Queue("commit")
	for _, st := range selectList(q.after) {
		b.Queue(st.sql, st.args...)
	}
	br := q.conn.SendBatch(ctx, b)
	err = q.readLead(br, lead)
	committed := false
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = br.Exec()
		if err == nil && tag.String() == "ROLLBACK" {
			err = errRolledBack
		}
		committed = err == nil
	}
	if cerr := br.Close(); err == nil && !committed {
		err = cerr
	}
	if err != nil {
		q.abort(ctx) // the batch stopped at the error: the transaction is still open
		return err
	}
	conn, _ := q.end()
	conn.Release()
	return nil
}

// end marks the write transaction ended, dropping what was deferred, and
// returns its connection (nil if none was taken) and whether it had ended
// already, for the caller to finish and release.
func (q *lazyQuerier) end() (conn *pgxpool.Conn, done bool) {
	conn, done = q.conn, q.done
	q.conn, q.done, q.prelude, q.must, q.after = nil, true, nil, false, nil
	return conn, done
}

// abort rolls the write transaction back, if one is open, and releases its
// connection.
func (q *lazyQuerier) abort(ctx context.Context) {
	conn, done := q.end()
	if conn == nil {
		return
	}
	if !done {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_, _ = conn.Exec(ctx, "rollback")
		cancel()
	}
	conn.Release()
}

// errRow is the row of a statement that could not be sent.
type errRow struct{ err error }

// Scan returns the error.
func (r errRow) Scan(...any) error { return r.err }

// batchRow finishes its batch once scanned.
type batchRow struct {
	row pgx.Row
	b   *batch
}

// Scan scans the row, then reads the rest of the batch (a COMMIT).
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

// Close closes the rows, then the batch.
func (r *batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}
