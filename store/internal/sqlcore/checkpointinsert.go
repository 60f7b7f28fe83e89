package sqlcore

import "context"

// insertCheckpoint inserts a checkpoint, fenced (see SaveCheckpoint):
// $1 id, $2 owner, $3 thread, $4 run, $5 step, $6 status, $7 fingerprint,
// $8 network, $9 time, $10 state, $11 the expected parent (empty: any). It
// returns the row's created_at and parent_id, or no row when the fence
// does not hold.
const insertCheckpoint = insertCheckpointFenced + `
			RETURNING created_at, parent_id`

// insertCheckpointFenced is insertCheckpoint without its RETURNING: it
// inserts one row, or none when the fence does not hold.
const insertCheckpointFenced = `INSERT INTO checkpoints
			(id, owner_id, thread_id, run_id, parent_id, step, status, fingerprint, network, created_at, state)
			SELECT $1, $2, $3, $4, latest.id, $5, $6, $7, $8, $9, $10
			FROM (SELECT 1 AS one) AS one
			LEFT JOIN (SELECT id, step FROM checkpoints WHERE owner_id = $2 AND run_id = $4 ORDER BY step DESC LIMIT 1) AS latest ON true
			WHERE (latest.step IS NULL OR latest.step < $5) AND ($11 = '' OR latest.id = $11)`

// pinned reports whether w's insert can be insertPinned: a checkpoint
// without messages or new thread, whose parent is given, on a dialect
// without WritingCTE (cte false: SQLite).
func (w *checkpointWrite) pinned(cte bool) bool {
	return !cte && w.nt == nil && len(w.nms) == 0 && w.p.ParentID != ""
}

// insertPinned is insert's fenced insert when w is pinned: the fence pins
// the parent, and created_at reads back as the value written (now, as
// the dialect stores it), so nothing is returned; on SQLite a RETURNING
// costs the step about 0.05 of a bare insert (bench/RESULTS.md). It sets
// w.cp's time and parent as insert does. Deferred, where q can hold it
// ([WriteHolder]), the insert waits for the transaction's next statement
// or its end, and its refusal fails that statement or the commit, wrapped
// as SaveCheckpoint wraps it.
func (w *checkpointWrite) insertPinned(ctx context.Context, e *Engine, q Querier, args []any, now any) error {
	var created nullTime
	if err := created.Scan(now); err != nil {
		return err
	}
	if h, ok := q.(WriteHolder); ok && w.p.Deferred {
		bg := context.WithoutCancel(ctx) // the refusal's read may come at the commit
		if h.HoldWrite(insertCheckpointFenced, args, func(q Querier, n int64, err error) error {
			if err == nil && n == 0 {
				err = w.refused(bg, q)
			}
			return e.wrap(saveCheckpointOp+" of run "+w.s.RunID, err)
		}) {
			w.cp.CreatedAt, w.cp.ParentID = created.T, w.p.ParentID
			return nil
		}
	}
	last(q)
	n, err := q.Exec(ctx, insertCheckpointFenced, args...)
	if err != nil {
		return err
	}
	if n == 0 {
		return w.refused(ctx, q)
	}
	w.cp.CreatedAt, w.cp.ParentID = created.T, w.p.ParentID
	return nil
}

// WriteHolder is a Querier that can hold a write back: SQLite's
// transaction of a Store.Tx (sqlitestore), which has not begun while its
// only statement is a held write, so that a transaction of that one write
// runs it on its own (autocommit), without BEGIN and COMMIT.
type WriteHolder interface {
	// HoldWrite holds the statement query with args, if it can (it holds
	// at most one, before any other statement), and reports whether it
	// did. done gets the statement's result when it runs — with the
	// transaction's next statement, before it, or at the commit — and a
	// Querier to read with; its error fails that statement or the commit.
	HoldWrite(query string, args []any, done func(q Querier, n int64, err error) error) bool
}
