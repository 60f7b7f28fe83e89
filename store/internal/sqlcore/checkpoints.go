package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

const checkpointCols = `id, owner_id, thread_id, run_id, parent_id, step, status, fingerprint, network, created_at, state`

// checkpointRow is a checkpoint as read, before its state is decoded.
type checkpointRow struct {
	cp      store.Checkpoint
	network string
	state   []byte
}

func scanCheckpointRow(r Row) (*checkpointRow, error) {
	var c checkpointRow
	var thread, parent nullStr
	var status string
	var created nullTime
	if err := r.Scan(&c.cp.ID, &c.cp.OwnerID, &thread, &c.cp.RunID, &parent, &c.cp.Step, &status,
		&c.cp.Fingerprint, &c.network, &created, &c.state); err != nil {
		return nil, err
	}
	c.cp.ThreadID, c.cp.ParentID, c.cp.Status, c.cp.CreatedAt = thread.S, parent.S, runstate.Status(status), created.T
	return &c, nil
}

// decode decodes the stored state of the row, reading in q the rows of
// its thread that it refers to: a fingerprint other than fingerprint (when
// set) is a *runstate.IncompatibleError, bytes that do not decode, or
// decode to the state of another run or step, or name rows the thread
// does not have, a *store.CorruptError.
func (c *checkpointRow) decode(ctx context.Context, q Querier, fingerprint string) (*store.Checkpoint, error) {
	if fingerprint != "" && c.cp.Fingerprint != fingerprint {
		return nil, &runstate.IncompatibleError{Network: c.network, Checkpoint: c.cp.Fingerprint, Current: fingerprint}
	}
	cp := c.cp
	var err error
	cp.State, cp.Rows, err = decodeStored(ctx, q, &c.cp, c.network, c.state)
	if err != nil {
		return nil, err
	}
	return &cp, nil
}

// DecodeState decodes the state stored for checkpoint cp (whose State is
// ignored), a whole state (runstate.Encode's), and checks it is the state
// of cp's run and step. Its errors are *store.CorruptError.
func DecodeState(cp *store.Checkpoint, b []byte) (*runstate.State, error) {
	s, _, err := decodeStored(context.Background(), nil, cp, "", b)
	return s, err
}

// decodeStored decodes the state stored for checkpoint cp, whole or in
// the stored form (runstate.EncodeStored: its rows read in q), and checks
// it is the state of cp's run and step (network is the row's). Its errors
// are *store.CorruptError.
func decodeStored(ctx context.Context, q Querier, cp *store.Checkpoint, network string, b []byte) (*runstate.State, *runstate.Rows, error) {
	corrupt := func(err error) error {
		return &store.CorruptError{Table: "checkpoints", ID: cp.ID, Column: "state", Err: err}
	}
	sd, err := runstate.DecodeStored(b)
	if err != nil {
		return nil, nil, corrupt(err)
	}
	var tr []message.Message
	var bySeq func(int64) (*message.Message, bool)
	if n := sd.TranscriptRows(); n > 0 || sd.RefersToRows() {
		if q == nil || cp.ThreadID == "" {
			return nil, nil, corrupt(fmt.Errorf("%w: a state that refers to rows of no thread", runstate.ErrCorrupt))
		}
		if tr, bySeq, err = readStateRows(ctx, q, cp, sd); err != nil {
			return nil, nil, err
		}
	}
	key := runstate.Key{RunID: cp.RunID, ThreadID: cp.ThreadID, Network: network, Fingerprint: cp.Fingerprint, Step: cp.Step, Status: cp.Status}
	s, rows, err := sd.State(key, tr, bySeq)
	if err != nil {
		return nil, nil, corrupt(err)
	}
	if s.RunID != cp.RunID || s.Step != cp.Step || s.Fingerprint != cp.Fingerprint {
		return nil, nil, corrupt(fmt.Errorf("%w: state of run %s step %d (fingerprint %s) in the row of run %s step %d (fingerprint %s)",
			runstate.ErrCorrupt, s.RunID, s.Step, s.Fingerprint, cp.RunID, cp.Step, cp.Fingerprint))
	}
	return s, rows, nil
}

// readStateRows reads, in one statement, the rows of cp's thread that its
// stored state sd refers to: the run's first transcript rows, in order (a
// row missing leaves the list short, which sd.State refuses), and the rows
// in sd.SeqRange by position. The run's rows are those between its first
// and its n-th message (placeholders and other runs' rows may lie
// between); both are ranges of the thread's (thread_id, seq) index.
func readStateRows(ctx context.Context, q Querier, cp *store.Checkpoint, sd *runstate.Stored) ([]message.Message, func(int64) (*message.Message, bool), error) {
	n := sd.TranscriptRows()
	first, last := "", "" // no transcript rows: the subqueries find none
	if n > 0 {
		first, last = runstate.MessageID(cp.RunID, 1), runstate.MessageID(cp.RunID, n)
	}
	from, to, ok := sd.SeqRange()
	if !ok {
		from, to = 1, 0 // no history rows: an empty range
	}
	rows, err := queryAll(ctx, q, nil, scanMessage, readStateRowsQuery, cp.OwnerID, cp.ThreadID, from, to, first, last)
	if err != nil {
		return nil, nil, err
	}
	tr := make([]message.Message, 0, n)
	byseq := make(map[int64]*message.Message, len(rows))
	for _, m := range rows {
		if len(tr) < n && m.ID == runstate.MessageID(cp.RunID, len(tr)+1) {
			tr = append(tr, m.Message)
		}
		if m.Seq >= from && m.Seq <= to {
			byseq[m.Seq] = &m.Message
		}
	}
	if int64(len(byseq)) < to-from+1 {
		// Rows missing: a fork's, which its sources hold.
		shared, err := forkRows(ctx, q, cp.OwnerID, cp.ThreadID, from, to)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range shared {
			byseq[m.Seq] = &m.Message
		}
	}
	return tr, func(seq int64) (*message.Message, bool) { m, ok := byseq[seq]; return m, ok }, nil
}

// readStateRowsQuery is readStateRows' statement: $1 the owner, $2 the
// thread, $3 and $4 the history's positions, $5 and $6 the ids of the
// run's first and last transcript rows. A UNION ALL of the two ranges,
// each searched on the (thread_id, seq) index (SQLite searches an OR of
// them on thread_id alone, the whole thread; PostgreSQL's UNION cannot
// compare json): a row in both comes twice, and counts once.
const readStateRowsQuery = `SELECT ` + messageCols + ` FROM messages WHERE owner_id = $1 AND thread_id = $2 AND seq BETWEEN $3 AND $4
	UNION ALL SELECT ` + messageCols + ` FROM messages WHERE owner_id = $1 AND thread_id = $2 AND seq BETWEEN
		(SELECT seq FROM messages WHERE id = $5 AND owner_id = $1) AND (SELECT seq FROM messages WHERE id = $6 AND owner_id = $1)
	ORDER BY seq`

// readCheckpoint reads the checkpoint of query's row as owner and its
// state, with the rows of its thread the state refers to, in one
// transaction (noState: neither); its errors are wrapped with what.
func (e *Engine) readCheckpoint(ctx context.Context, owner, what, fingerprint string, noState bool, query string, args ...any) (*store.Checkpoint, error) {
	return e.readCheckpointLeased(ctx, owner, what, fingerprint, noState, nil, query, args...)
}

// readCheckpointLeased is readCheckpoint that first takes lease, if not
// nil (see store.LatestCheckpointParams.Lease): in the read's round trip
// where q can, else as AcquireLease.
func (e *Engine) readCheckpointLeased(ctx context.Context, owner, what, fingerprint string, noState bool, lease *store.AcquireLeaseParams,
	query string, args ...any) (*store.Checkpoint, error) {
	return inTx(ctx, e, Scope{Owner: owner}, false, what, func(q Querier) (*store.Checkpoint, error) {
		if lease != nil {
			upsert, largs, _ := e.leaseUpsert(lease)
			if !deferWithRead(q, upsert, largs...) {
				if _, err := e.AcquireLease(ctx, lease); err != nil && !errors.Is(err, store.ErrConflict) {
					return nil, err
				}
			}
		}
		row, err := scanCheckpointRow(q.QueryRow(ctx, query, args...))
		if err != nil {
			return nil, err
		}
		if noState {
			if fingerprint != "" && row.cp.Fingerprint != fingerprint {
				return nil, &runstate.IncompatibleError{Network: row.network, Checkpoint: row.cp.Fingerprint, Current: fingerprint}
			}
			return &row.cp, nil
		}
		return row.decode(ctx, q, fingerprint)
	})
}

// LockRun implements [store.Ops].
func (e *Engine) LockRun(ctx context.Context, p *store.LockRunParams) error {
	const op = "lock run"
	if err := need(p, "OwnerID", p.OwnerID, "RunID", p.RunID); err != nil {
		return e.wrap(op, err)
	}
	return e.wrap(op, e.write(ctx, p.OwnerID, func(q Querier) error {
		return e.Dialect.LockRun(ctx, q, p.OwnerID, p.RunID)
	}))
}

// SaveCheckpoint implements [store.Ops].
func (e *Engine) SaveCheckpoint(ctx context.Context, p *store.SaveCheckpointParams) (*store.Checkpoint, error) {
	const op = saveCheckpointOp
	w, err := newCheckpointWrite(p)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	if err := e.write(ctx, p.OwnerID, func(q Querier) error { return w.insert(ctx, e, q) }); err != nil {
		return nil, e.wrap(op+" of run "+w.s.RunID, err)
	}
	return w.cp, nil
}

// saveCheckpointOp names SaveCheckpoint in its errors.
const saveCheckpointOp = "save checkpoint"

// checkpointWrite is a SaveCheckpoint checked and encoded, before its
// statements.
type checkpointWrite struct {
	p   *store.SaveCheckpointParams
	s   *runstate.State // p.State, of the current version
	b   []byte          // its stored form
	nms []newMessage    // p.Messages
	nt  *newThread      // p.NewThread
	cp  *store.Checkpoint
}

// newCheckpointWrite checks p and encodes its state (in the stored form
// when p.Rows names rows of its thread), its messages and its new thread.
// Its errors are ErrInvalid, never a state that cannot be read back.
func newCheckpointWrite(p *store.SaveCheckpointParams) (*checkpointWrite, error) {
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, err
	}
	if p.State == nil {
		return nil, invalid("State is required")
	}
	if p.State.Step < 0 {
		return nil, invalid("State.Step %d is negative", p.State.Step)
	}
	if err := checkTexts("State.", "RunID", p.State.RunID, "ThreadID", p.State.ThreadID, "Fingerprint", p.State.Fingerprint); err != nil {
		return nil, err
	}
	if err := p.State.Validate(); err != nil {
		return nil, invalid("state: %v", err)
	}
	w := &checkpointWrite{p: p, s: new(runstate.State)}
	s := w.s
	*s = *p.State
	s.SchemaVersion = runstate.SchemaVersion
	rows := p.Rows
	if s.ThreadID == "" {
		rows = nil // no thread, no rows
	}
	var err error
	if w.b, err = runstate.EncodeStored(s, rows); err != nil { // of the current version: not copied again
		return nil, invalid("%v", err)
	}
	if len(p.Messages) > 0 {
		if s.ThreadID == "" {
			return nil, invalid("Messages need State.ThreadID")
		}
		if w.nms, err = encodeNew(p.Messages); err != nil {
			return nil, err
		}
	}
	if w.nt, err = newThreadOf(p, s.ThreadID); err != nil {
		return nil, err
	}
	w.cp = &store.Checkpoint{
		ID: p.ID, OwnerID: p.OwnerID, ThreadID: s.ThreadID, RunID: s.RunID, Step: s.Step,
		Fingerprint: s.Fingerprint, Status: s.Status, State: s, Rows: rows,
	}
	if w.cp.ID == "" {
		w.cp.ID = newID()
	}
	return w, nil
}

// insert writes the checkpoint in q, with the run's lock, fenced: with its
// new thread or its messages in one statement where the dialect can
// (WritingCTE), deferred when p asks and q can (checkpointDeferred), else
// one statement after another. It sets w.cp's time and parent.
func (w *checkpointWrite) insert(ctx context.Context, e *Engine, q Querier) error {
	p, s, cp, nt, nms := w.p, w.s, w.cp, w.nt, w.nms
	if err := e.Dialect.LockRun(ctx, q, p.OwnerID, s.RunID); err != nil {
		return err
	}
	// One statement reads the run's newest checkpoint and inserts only
	// if the fence holds; the run's writers are serialised (LockRun, or
	// SQLite's single writer), so nothing can slip in between. The
	// newest checkpoint is one probe of the (owner_id, run_id, step)
	// index, joined to a one-row relation so that a run without
	// checkpoints still yields a row (latest.step NULL); on PostgreSQL
	// this costs about 40 µs less than two scalar subqueries. The
	// composite foreign key (thread_id, owner_id) rejects a thread that
	// is missing or another owner's, as ErrNotFound.
	at := e.now()
	now := e.Dialect.Time(at)
	args := []any{cp.ID, p.OwnerID, nullString(s.ThreadID), s.RunID, s.Step, string(s.Status),
		s.Fingerprint, s.Network, now, w.b, p.ParentID}
	var created nullTime
	var parent nullStr
	_, cte := e.Dialect.(WritingCTE)
	var th *store.Thread // the new thread
	var err error
	if nt != nil && !cte {
		// The thread first, then the checkpoint (below, with no
		// messages: NewThread has them).
		if th, err = createThread(ctx, q, nt.p, s.ThreadID, nt.md, nt.nms, now, false); err != nil {
			return err
		}
	}
	if p.Deferred && p.Thread == nil && cte && checkpointDeferred(q, args, nt, nms, s) {
		cp.CreatedAt, cp.ParentID = at, p.ParentID
		return nil
	}
	switch {
	case nt != nil && cte:
		last(q)
		th, err = checkpointCreateInOne(ctx, q, args, nt, &created, &parent)
	case len(nms) > 0 && cte:
		last(q)
		err = checkpointAppendInOne(ctx, q, args, nms, p.Thread, &created, &parent)
	case w.pinned(cte):
		return w.insertPinned(ctx, e, q, args, now)
	default:
		if len(nms) == 0 {
			last(q)
		}
		err = q.QueryRow(ctx, insertCheckpoint, args...).Scan(&created, &parent)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return w.refused(ctx, q)
	}
	if err != nil {
		return err
	}
	if th != nil && p.Thread != nil {
		*p.Thread = *th
	}
	cp.CreatedAt, cp.ParentID = created.T, parent.S
	if len(nms) > 0 && !cte {
		return appendRows(ctx, q, p.OwnerID, s.ThreadID, p.Thread, nms, now)
	}
	return nil
}

// refused says why the fenced insert wrote nothing: a *StaleWriteError
// naming the run's newest checkpoint, or sql.ErrNoRows when the checkpoint
// was written but its messages' thread was not found.
func (w *checkpointWrite) refused(ctx context.Context, q Querier) error {
	p, s := w.p, w.s
	stale := &store.StaleWriteError{RunID: s.RunID, Step: s.Step, ParentID: p.ParentID}
	err := q.QueryRow(ctx, `SELECT id, step FROM checkpoints WHERE owner_id = $1 AND run_id = $2 ORDER BY step DESC LIMIT 1`,
		p.OwnerID, s.RunID).Scan(&stale.LatestID, &stale.LatestStep)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if stale.LatestID == w.cp.ID {
		return sql.ErrNoRows
	}
	return stale
}

// GetCheckpoint implements [store.Ops].
func (e *Engine) GetCheckpoint(ctx context.Context, p *store.GetCheckpointParams) (*store.Checkpoint, error) {
	const op = "get checkpoint"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	return e.readCheckpoint(ctx, p.OwnerID, op+" "+p.ID, p.Fingerprint, false,
		`SELECT `+checkpointCols+` FROM checkpoints WHERE owner_id = $1 AND id = $2`, p.OwnerID, p.ID)
}

// LatestCheckpoint implements [store.Ops].
func (e *Engine) LatestCheckpoint(ctx context.Context, p *store.LatestCheckpointParams) (*store.Checkpoint, error) {
	const op = "latest checkpoint"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, e.wrap(op, err)
	}
	var query, key, what string
	switch {
	case p.RunID != "" && p.ThreadID != "":
		return nil, e.wrap(op, invalid("RunID and ThreadID are exclusive"))
	case p.RunID != "":
		query = `SELECT ` + checkpointCols + ` FROM checkpoints WHERE owner_id = $1 AND run_id = $2 ORDER BY step DESC LIMIT 1`
		key, what = p.RunID, "run "
		if p.Lease != nil {
			l := *p.Lease
			l.OwnerID, l.RunID, l.Free, l.Deferred = p.OwnerID, p.RunID, true, false
			if err := need(&l, "OwnerID", l.OwnerID, "RunID", l.RunID, "Holder", l.Holder); err != nil {
				return nil, e.wrap(op, fmt.Errorf("lease: %w", err))
			}
			if l.TTL <= 0 {
				return nil, e.wrap(op, invalid("Lease needs a positive TTL"))
			}
			return e.readCheckpointLeased(ctx, p.OwnerID, op+" of "+what+key, p.Fingerprint, p.NoState, &l, query, p.OwnerID, key)
		}
	case p.Lease != nil:
		return nil, e.wrap(op, invalid("Lease needs RunID"))
	case p.ThreadID != "":
		query = `SELECT ` + checkpointCols + ` FROM checkpoints WHERE owner_id = $1 AND thread_id = $2 ORDER BY seq DESC LIMIT 1`
		key, what = p.ThreadID, "thread "
	default:
		return nil, e.wrap(op, invalid("RunID or ThreadID is required"))
	}
	return e.readCheckpoint(ctx, p.OwnerID, op+" of "+what+key, p.Fingerprint, p.NoState, query, p.OwnerID, key)
}

// The texts of checkpointAppendInOne (without and with the thread's
// columns), of checkpointCreateInOne, and of their deferred forms
// (checkpointDeferred).
var cpAppendTexts, cpAppendThreadTexts, cpAppendDeferredTexts, cpCreateTexts, cpCreateDeferredTexts textCache

// newThread is a SaveCheckpointParams.NewThread checked and encoded.
type newThread struct {
	p   *store.CreateThreadParams
	md  any
	nms []newMessage
}

// newThreadOf checks and encodes p.NewThread, the thread threadID names
// (nil if none).
func newThreadOf(p *store.SaveCheckpointParams, threadID string) (*newThread, error) {
	c := p.NewThread
	switch {
	case c == nil:
		return nil, nil
	case threadID == "":
		return nil, invalid("NewThread needs State.ThreadID")
	case c.ID != "" && c.ID != threadID:
		return nil, invalid("NewThread.ID %q is not State.ThreadID %q", c.ID, threadID)
	case c.OwnerID != "" && c.OwnerID != p.OwnerID:
		return nil, invalid("NewThread.OwnerID %q is not OwnerID %q", c.OwnerID, p.OwnerID)
	case len(p.Messages) > 0:
		return nil, invalid("Messages with NewThread: give the new thread's messages in NewThread.Messages")
	}
	md, err := encodeNamespaces("NewThread.Metadata", c.Metadata)
	if err != nil {
		return nil, err
	}
	nms, err := encodeNew(c.Messages)
	if err != nil {
		return nil, err
	}
	cc := *c
	cc.OwnerID, cc.ID = p.OwnerID, threadID
	return &newThread{p: &cc, md: md, nms: nms}, nil
}

// checkpointCreateInOne is SaveCheckpoint of a run's first checkpoint with
// its new thread in one statement (a WritingCTE dialect): the fenced insert
// of the checkpoint (args, as insertCheckpoint's) in a WITH; the thread
// inserted only if the checkpoint was ($3 its id, $2 its owner, $9 its
// time, then its own args after insertCheckpoint's); its messages after
// it, numbered from 1. The checkpoint's foreign key to the thread is
// checked at the end of the statement, which sees the thread's row. It
// scans the checkpoint's created_at and parent_id and returns the thread.
// No row (sql.ErrNoRows): the fence did not hold, and nothing was written.
func checkpointCreateInOne(ctx context.Context, q Querier, args []any, nt *newThread, created *nullTime, parent *nullStr) (*store.Thread, error) {
	args, query := checkpointCreate(&cpCreateTexts, args, nt, threadCols, `
		SELECT c.created_at, c.parent_id, `+threadColsOfT+` FROM c, t`)
	r := q.QueryRow(ctx, query, args...)
	return scanThread(nestRow(func(td ...any) error {
		return r.Scan(append([]any{created, parent}, td...)...)
	}))
}

// checkpointCreate returns the args and the text (kept in texts) of a
// checkpoint created with its new thread in one statement, the thread's
// columns returning (for t) and the statement's outer SELECT as given.
func checkpointCreate(texts *textCache, args []any, nt *newThread, returning, outer string) ([]any, string) {
	c := nt.p
	args = append(args, nullString(c.ParentID), c.Name, c.Network, c.ActiveAgent, nt.md, len(nt.nms))
	args, values := messageValues(args, nt.nms)
	return args, texts.get(len(nt.nms), func() string {
		m := ""
		if len(nt.nms) > 0 {
			m = `, m AS (` + insertValues("t.owner_id", "t.id", "v.ord", "$9", values()) + `)`
		}
		return `WITH c AS (` + insertCheckpoint + `), t AS (INSERT INTO threads
			(id, owner_id, parent_id, name, network, active_agent, metadata, version, next_seq, created_at, updated_at)
			SELECT $3, $2, $12, $13, $14, $15, $16, 1, $17, $9, $9 WHERE EXISTS (SELECT 1 FROM c)
			RETURNING ` + returning + `)` + m + outer
	})
}

// checkpointRefused is the outer SELECT of a deferred checkpoint's
// statement, whose fenced insert is c (args as insertCheckpoint's): it
// calls baton_refused with the run's newest checkpoint (id and step) when
// the fence does not hold.
const checkpointRefused = `
		SELECT CASE WHEN EXISTS (SELECT 1 FROM c) THEN true ELSE baton_refused(
			(SELECT id || ' ' || step FROM checkpoints WHERE owner_id = $2 AND run_id = $4 ORDER BY step DESC LIMIT 1)) END`

// checkpointDeferred queues SaveCheckpoint's statement — with its new
// thread nt (checkpointCreateInOne's), with its messages nms
// (checkpointAppendInOne's), or the checkpoint alone — when q can (see
// deferAsserted), to go with the transaction's next statement or its
// COMMIT, the run's checkpoint lock before it (it was deferred first), and
// reports whether it did. A fence that does not hold is refused as a
// *store.StaleWriteError naming the run's newest checkpoint; a taken
// thread id, a missing owner, thread or parent fail the statement by their
// constraints.
func checkpointDeferred(q Querier, args []any, nt *newThread, nms []newMessage, s *runstate.State) bool {
	parent := args[10].(string)
	var query string
	switch {
	case nt != nil:
		args, query = checkpointCreate(&cpCreateDeferredTexts, args, nt, "owner_id, id", checkpointRefused)
	case len(nms) > 0:
		args, query = checkpointAppend(&cpAppendDeferredTexts, args, nms, false, checkpointRefused)
	default:
		query = `WITH c AS (` + insertCheckpoint + `)` + checkpointRefused
	}
	refused := func(found string) error {
		stale := &store.StaleWriteError{RunID: s.RunID, Step: s.Step, ParentID: parent}
		id, step, ok := strings.Cut(found, " ")
		if n, err := strconv.Atoi(step); ok && err == nil {
			stale.LatestID, stale.LatestStep = id, n
		}
		return stale
	}
	return deferAsserted(q, true, refused, query, args...)
}

// checkpointAppendInOne is SaveCheckpoint with messages in one statement
// (a WritingCTE dialect): the fenced insert of the checkpoint (args, as
// insertCheckpoint's) in a WITH; the thread's sequence numbers reserved,
// only if the checkpoint was inserted, as appendInOne reserves them; the
// messages inserted with them, not read back. It scans the checkpoint's
// created_at and parent_id, and the thread into th when th is not nil. No
// row (sql.ErrNoRows): the fence did not hold, or the thread is not the
// owner's, which the foreign key (thread_id, owner_id) of the checkpoint
// refuses first (SaveCheckpoint tells them apart).
func checkpointAppendInOne(ctx context.Context, q Querier, args []any, nms []newMessage, th *store.Thread, created *nullTime, parent *nullStr) error {
	texts, cols := &cpAppendTexts, "c.created_at, c.parent_id, t.next_seq"
	if th != nil {
		texts, cols = &cpAppendThreadTexts, cols+", "+threadColsOfT
	}
	args, query := checkpointAppend(texts, args, nms, th != nil, `
		SELECT `+cols+` FROM c, t`)
	r := q.QueryRow(ctx, query, args...)
	if th == nil {
		var next int64
		return r.Scan(created, parent, &next)
	}
	t, err := scanThread(nestRow(func(td ...any) error {
		var next int64
		return r.Scan(append([]any{created, parent, &next}, td...)...)
	}))
	if err == nil {
		*th = *t
	}
	return err
}

// checkpointAppend returns the args and the text (kept in texts) of a
// checkpoint written with its messages in one statement: the fenced insert
// c, the thread's sequence numbers reserved (t, returning next_seq and,
// with thread, the thread's columns) only if c inserted, the messages m
// numbered from them; then the statement's outer SELECT as given.
func checkpointAppend(texts *textCache, args []any, nms []newMessage, thread bool, outer string) ([]any, string) {
	args, values := messageValues(append(args, len(nms)), nms)
	return args, texts.get(len(nms), func() string {
		reserve := `UPDATE threads SET next_seq = next_seq + $12, updated_at = $9
		WHERE ` + threadKey("$2", "$3") + ` AND EXISTS (SELECT 1 FROM c) RETURNING next_seq`
		if thread {
			reserve += ", " + threadCols
		}
		return `WITH c AS (` + insertCheckpoint + `), t AS (` + reserve + `), m AS (` +
			insertValues("$2", "$3", "t.next_seq - $12 + v.ord", "$9", values()) + `)` + outer
	})
}
