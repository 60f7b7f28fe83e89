package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

const jobRunCols = `id, owner_id, idempotency_key, kind, thread_id, status, attempt, error, metadata, created_at, updated_at, started_at, finished_at`

func scanJobRun(r Row) (*store.JobRun, error) {
	var j store.JobRun
	var thread nullStr
	var status string
	var md []byte
	var created, updated, started, finished nullTime
	if err := r.Scan(&j.ID, &j.OwnerID, &j.IdempotencyKey, &j.Kind, &thread, &status, &j.Attempt, &j.Error, &md,
		&created, &updated, &started, &finished); err != nil {
		return nil, err
	}
	j.ThreadID, j.Status = thread.S, store.JobStatus(status)
	j.CreatedAt, j.UpdatedAt, j.StartedAt, j.FinishedAt = created.T, updated.T, started.T, finished.T
	m, err := decodeNamespaces(md)
	if err != nil {
		return nil, &store.CorruptError{Table: "job_runs", ID: j.ID, Column: "metadata", Err: err}
	}
	j.Metadata = m
	return &j, nil
}

// CreateJobRun implements [store.Ops].
func (e *Engine) CreateJobRun(ctx context.Context, p *store.CreateJobRunParams) (*store.CreateJobRunResult, error) {
	const op = "create job run"
	if err := need(p, "OwnerID", p.OwnerID, "IdempotencyKey", p.IdempotencyKey, "Kind", p.Kind); err != nil {
		return nil, e.wrap(op, err)
	}
	md, err := encodeNamespaces("Metadata", p.Metadata)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	id := p.ID
	if id == "" {
		id = newID()
	}
	var nms []newMessage
	if p.Append != nil {
		if p.ThreadID == "" {
			return nil, e.wrap(op, invalid("Append needs a ThreadID"))
		}
		if nms, err = encodeNew([]store.NewMessage{*p.Append}); err != nil {
			return nil, e.wrap(op, err)
		}
	}
	var stored map[string]json.RawMessage // the metadata as read back, of a deferred creation
	if p.Deferred {
		if stored, err = decodeNamespaces([]byte(md)); err != nil {
			return nil, e.wrap(op, err)
		}
	}
	what := op + " " + strconv.Quote(p.IdempotencyKey)
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, what, func(q Querier) (*store.CreateJobRunResult, error) {
		// A thread that is missing or another owner's is refused by the
		// composite foreign key (thread_id, owner_id), as ErrNotFound: no
		// read of the thread first.
		at := e.now()
		now := e.Dialect.Time(at)
		// ON CONFLICT DO NOTHING waits for a concurrent inserter of the same
		// key and then yields to it, so one row wins without an error.
		insert := `INSERT INTO job_runs
			(id, owner_id, idempotency_key, kind, thread_id, status, attempt, error, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, 'queued', 0, '', $6, $7, $7)
			ON CONFLICT (owner_id, idempotency_key) DO NOTHING RETURNING ` + jobRunCols
		args := []any{id, p.OwnerID, p.IdempotencyKey, p.Kind, nullString(p.ThreadID), md, now}
		_, cte := e.Dialect.(WritingCTE)
		with := "" // the statement's WITH after j, the insert
		if len(nms) > 0 && cte {
			// The message in the same statement, only if the job run is
			// inserted: its thread's sequence number reserved as
			// AppendMessages reserves it.
			nm := &nms[0]
			args = append(args, nm.id, string(nm.msg.Role), nm.msg.Agent, nm.enc.parts, string(nm.status), nullString(nm.parent),
				nm.enc.usage, nm.enc.metadata)
			with = `, t AS (
				UPDATE threads SET next_seq = next_seq + 1, updated_at = $7
				WHERE ` + threadKey("$2", "$5") + ` AND EXISTS (SELECT 1 FROM j) RETURNING next_seq), m AS (
				INSERT INTO messages (id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata, created_at, updated_at)
				SELECT $8::text, $2, $5, t.next_seq, $9::text, $10::text, $11::json, $12::text, $13::text, $14::json, $15::json, $7, $7 FROM t)`
		}
		// Deferred: the same statement, refused (baton_refused) when the
		// insert yields to a job run of the same key.
		if p.Deferred && cte && deferAsserted(q, true, func(string) error { return e.wrap(what, errKeyTaken) },
			`WITH j AS (`+insert+`)`+with+` SELECT CASE WHEN EXISTS (SELECT 1 FROM j) THEN true ELSE baton_refused('') END`, args...) {
			return &store.CreateJobRunResult{Run: &store.JobRun{ID: id, OwnerID: p.OwnerID, IdempotencyKey: p.IdempotencyKey, Kind: p.Kind,
				ThreadID: p.ThreadID, Status: store.JobQueued, Metadata: stored, CreatedAt: at, UpdatedAt: at}}, nil
		}
		if with != "" {
			insert = `WITH j AS (` + insert + `)` + with + `
				SELECT ` + jobRunCols + ` FROM j`
		}
		if len(nms) == 0 || cte {
			last(q)
		}
		var res store.CreateJobRunResult
		var err error
		res.Run, err = scanJobRun(q.QueryRow(ctx, insert, args...))
		if err == nil && len(nms) > 0 && !cte {
			err = appendRows(ctx, q, p.OwnerID, p.ThreadID, nil, nms, now)
		}
		if errors.Is(err, sql.ErrNoRows) && p.Deferred {
			return nil, errKeyTaken
		}
		if errors.Is(err, sql.ErrNoRows) {
			res.Duplicate = true
			res.Run, err = scanJobRun(q.QueryRow(ctx, `SELECT `+jobRunCols+` FROM job_runs WHERE owner_id = $1 AND idempotency_key = $2`,
				p.OwnerID, p.IdempotencyKey))
		}
		return &res, err
	})
}

// errKeyTaken refuses a deferred job run's creation (CreateJobRunParams.Deferred)
// whose idempotency key is taken.
var errKeyTaken = fmt.Errorf("%w: the idempotency key is taken", store.ErrConflict)

// GetJobRun implements [store.Ops].
func (e *Engine) GetJobRun(ctx context.Context, p *store.GetJobRunParams) (*store.JobRun, error) {
	const op = "get job run"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, e.wrap(op, err)
	}
	var query, key string
	switch {
	case p.ID != "" && p.IdempotencyKey != "":
		return nil, e.wrap(op, invalid("ID and IdempotencyKey are exclusive"))
	case p.ID != "":
		query, key = `SELECT `+jobRunCols+` FROM job_runs WHERE owner_id = $1 AND id = $2`, p.ID
	case p.IdempotencyKey != "":
		query, key = `SELECT `+jobRunCols+` FROM job_runs WHERE owner_id = $1 AND idempotency_key = $2`, p.IdempotencyKey
	default:
		return nil, e.wrap(op, invalid("ID or IdempotencyKey is required"))
	}
	return readRow(ctx, e, p.OwnerID, op+" "+strconv.Quote(key), scanJobRun, query, p.OwnerID, key)
}

// TransitionJobRun implements [store.Ops].
func (e *Engine) TransitionJobRun(ctx context.Context, p *store.TransitionJobRunParams) (*store.JobRun, error) {
	const op = "transition job run"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	if !p.To.Valid() {
		return nil, e.wrap(op, invalid("unknown status %q", p.To))
	}
	if p.Hold && (p.To != store.JobProcessing || p.ViaProcessing) {
		return nil, e.wrap(op, invalid("Hold asserts processing, without ViaProcessing"))
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+p.ID, func(q Querier) (*store.JobRun, error) {
		// The draft goes in the transition's statement where the database
		// can (a refused move is an error, which rolls it back), else in
		// a statement before it.
		_, cte := e.Dialect.(WritingCTE)
		cte = cte && len(p.Metadata) == 0
		if p.ClearDraft != "" && !cte {
			if _, err := q.Exec(ctx, `DELETE FROM message_drafts WHERE owner_id = $1 AND message_id = $2`, p.OwnerID, p.ClearDraft); err != nil {
				return nil, err
			}
		}
		if len(p.Metadata) == 0 {
			if cte && e.transitionDeferred(q, p) {
				return nil, nil
			}
			// One statement when the move is allowed; a read tells why not.
			out, err := e.transitionIf(ctx, q, p, cte)
			if !errors.Is(err, sql.ErrNoRows) {
				return out, err
			}
		}
		j, err := scanJobRun(q.QueryRow(ctx, `SELECT `+jobRunCols+` FROM job_runs WHERE owner_id = $1 AND id = $2`+e.Dialect.ForUpdate(), p.OwnerID, p.ID))
		if err != nil {
			return nil, err
		}
		if err := refusedMove(p, j.Status, j.Attempt); err != nil {
			return nil, err
		}
		now := e.now()
		j.Status = p.To
		if p.ViaProcessing && p.To != store.JobProcessing {
			j.Attempt++
			j.StartedAt = now
		}
		switch {
		case p.Hold:
		case p.To == store.JobProcessing:
			j.Attempt++
			j.StartedAt, j.FinishedAt = now, time.Time{}
		case p.To == store.JobQueued:
		case p.To == store.JobCompleted:
			j.FinishedAt, j.Error = now, ""
		case p.To == store.JobError, p.To == store.JobCanceled:
			j.FinishedAt, j.Error = now, p.Error
		}
		md, err := encodeNamespaces("Metadata", mergeNamespaces(j.Metadata, p.Metadata))
		if err != nil {
			return nil, err
		}
		last(q)
		return scanJobRun(q.QueryRow(ctx, `UPDATE job_runs SET status = $3, attempt = $4, error = $5, metadata = $6,
			updated_at = $7, started_at = $8, finished_at = $9
			WHERE owner_id = $1 AND id = $2 RETURNING `+jobRunCols,
			p.OwnerID, p.ID, string(j.Status), j.Attempt, j.Error, md,
			e.Dialect.Time(now), e.Dialect.Time(j.StartedAt), e.Dialect.Time(j.FinishedAt)))
	})
}

// movableFrom returns the statuses, as SQL literals, from which p's move
// may be made.
func movableFrom(p *store.TransitionJobRunParams) []string {
	var from []string
	for _, s := range []store.JobStatus{store.JobQueued, store.JobProcessing, store.JobCompleted, store.JobError, store.JobCanceled} {
		if canMove(s, p) {
			from = append(from, "'"+string(s)+"'")
		}
	}
	return from
}

// transitionSet returns the SET list of p's move and its parameters:
// owner, id, the new status and now ($1 to $4), the error ($5) if any.
func transitionSet(p *store.TransitionJobRunParams, now any) (string, []any) {
	set := `status = $3, updated_at = $4`
	args := []any{p.OwnerID, p.ID, string(p.To), now}
	if p.Hold {
		return set, args
	}
	if p.ViaProcessing && p.To != store.JobProcessing {
		set += `, attempt = attempt + 1, started_at = $4`
	}
	switch p.To {
	case store.JobProcessing:
		set += `, attempt = attempt + 1, started_at = $4, finished_at = NULL`
	case store.JobCompleted:
		set += `, finished_at = $4, error = ''`
	case store.JobError, store.JobCanceled:
		args = append(args, p.Error)
		set += `, finished_at = $4, error = $5`
	}
	return set, args
}

// refusedMove returns the error of p's move refused for a job run in
// status at attempt, nil if the move is allowed.
func refusedMove(p *store.TransitionJobRunParams, status store.JobStatus, attempt int) error {
	terr := &store.TransitionError{Kind: "job run", ID: p.ID, From: string(status), To: string(p.To)}
	if !canMove(status, p) {
		return terr
	}
	if fenced(p) && p.ExpectedAttempt != attempt {
		terr.Reason = "attempt " + strconv.Itoa(p.ExpectedAttempt) + " is not the current attempt " + strconv.Itoa(attempt)
		return terr
	}
	return nil
}

// canMove reports whether a job run in status from may make p's move: to
// p.To, or through processing with p.ViaProcessing.
func canMove(from store.JobStatus, p *store.TransitionJobRunParams) bool {
	if p.Hold {
		return from == store.JobProcessing
	}
	if p.ViaProcessing {
		return from.CanMoveTo(store.JobProcessing) && store.JobProcessing.CanMoveTo(p.To)
	}
	return from.CanMoveTo(p.To)
}

// fenced reports whether p's transition is fenced on p.ExpectedAttempt:
// when it is not 0, or when p.Fence is set (attempt 0 included).
func fenced(p *store.TransitionJobRunParams) bool {
	return p.Fence || p.Hold || p.ExpectedAttempt != 0
}

// transitionIf moves a job run to p.To in one conditional statement, when
// its status may move there and its attempt is p.ExpectedAttempt (if
// fenced).
// It returns sql.ErrNoRows when the row is missing or the move is refused;
// the caller then reads the row to say why.
//
// With clear, p.ClearDraft's draft is deleted in the same statement (a
// data-modifying WITH: the dialect is a WritingCTE), whether or not the
// move is made: a refused move is an error, which rolls it back.
func (e *Engine) transitionIf(ctx context.Context, q Querier, p *store.TransitionJobRunParams, clear bool) (*store.JobRun, error) {
	from := movableFrom(p)
	if len(from) == 0 {
		return nil, sql.ErrNoRows
	}
	set, args := transitionSet(p, e.Dialect.Time(e.now()))
	where := `owner_id = $1 AND id = $2 AND status IN (` + strings.Join(from, ", ") + `)`
	if fenced(p) {
		args = append(args, p.ExpectedAttempt)
		where += ` AND attempt = $` + strconv.Itoa(len(args))
	}
	with := ""
	if clear && p.ClearDraft != "" {
		args = append(args, p.ClearDraft)
		with = `WITH d AS (DELETE FROM message_drafts WHERE owner_id = $1 AND message_id = $` + strconv.Itoa(len(args)) + `) `
	}
	// Not the last statement for sure (a refused move reads next): no
	// commit rides on it.
	return scanJobRun(q.QueryRow(ctx, with+`UPDATE job_runs SET `+set+` WHERE `+where+` RETURNING `+jobRunCols, args...))
}

// transitionDeferred queues p's move, when p.Deferred and q can, as one
// statement that calls baton_refused with the status and attempt it found
// when it moves nothing (see deferAsserted), and reports whether it did.
// The run is locked first (l) and the move decided on it as it is then, as
// UpdateMessage's expected status is: a transaction still open that
// counted the attempt expected is waited for.
func (e *Engine) transitionDeferred(q Querier, p *store.TransitionJobRunParams) bool {
	if !p.Deferred {
		return false
	}
	from := movableFrom(p)
	set, args := transitionSet(p, e.Dialect.Time(e.now()))
	cond := `FALSE`
	if len(from) > 0 {
		cond = `(SELECT status FROM l) IN (` + strings.Join(from, ", ") + `)`
	}
	if fenced(p) {
		args = append(args, p.ExpectedAttempt)
		cond += ` AND (SELECT attempt FROM l) = $` + strconv.Itoa(len(args))
	}
	with := `WITH l AS (SELECT status, attempt FROM job_runs WHERE owner_id = $1 AND id = $2 FOR UPDATE), `
	if p.ClearDraft != "" {
		args = append(args, p.ClearDraft)
		with += `d AS (DELETE FROM message_drafts WHERE owner_id = $1 AND message_id = $` + strconv.Itoa(len(args)) + `), `
	}
	query := with + `u AS (UPDATE job_runs SET ` + set + ` WHERE owner_id = $1 AND id = $2 AND ` + cond + ` RETURNING 1)
		SELECT CASE WHEN EXISTS (SELECT 1 FROM u) THEN true ELSE baton_refused((SELECT status || ' ' || attempt FROM l)) END`
	refused := func(found string) error {
		const op = "transition job run"
		status, attempt, ok := strings.Cut(found, " ")
		n, err := strconv.Atoi(attempt)
		if !ok || err != nil {
			return e.wrap(op+" "+p.ID, store.ErrNotFound)
		}
		if err := refusedMove(p, store.JobStatus(status), n); err != nil {
			return e.wrap(op+" "+p.ID, err)
		}
		// Allowed by the rules, refused by the statement: cannot be.
		return e.wrap(op+" "+p.ID, &store.TransitionError{Kind: "job run", ID: p.ID, From: status, To: string(p.To), Reason: "refused at attempt " + attempt})
	}
	return deferAsserted(q, true, refused, query, args...)
}
