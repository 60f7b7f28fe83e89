package sqlcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/store"
)

// callCols are the columns of call_records but detail, in the order of
// scanCallRecord.
const callCols = `id, owner_id, thread_id, run_id, checkpoint_id, step, kind, agent, sub, model, name, call_id, error, finish_reason,
	request_id, started_at, first_token_us, latency_us, input_tokens, output_tokens, cached_tokens, reasoning_tokens, truncated, created_at`

// callInsertCols is callCols and detail: 25 columns.
const callInsertCols = callCols + `, detail`

const callInsertN = 25

func scanCallRecord(r Row, detail bool) (*store.CallRecord, error) {
	var c store.CallRecord
	var thread nullStr
	var started, created nullTime
	var sub, truncated int64
	var ft, lat int64
	dest := []any{&c.ID, &c.OwnerID, &thread, &c.RunID, &c.CheckpointID, &c.Step, &c.Kind, &c.Agent, &sub, &c.Model, &c.Name, &c.CallID,
		&c.Error, &c.FinishReason, &c.RequestID, &started, &ft, &lat, &c.Usage.InputTokens, &c.Usage.OutputTokens, &c.Usage.CachedTokens,
		&c.Usage.ReasoningTokens, &truncated, &created}
	var d nullStr
	if detail {
		dest = append(dest, &d)
	}
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	c.ThreadID, c.StartedAt, c.CreatedAt = thread.S, started.T, created.T
	c.Sub, c.Truncated = sub != 0, truncated != 0
	c.FirstToken, c.Latency = time.Duration(ft)*time.Microsecond, time.Duration(lat)*time.Microsecond
	if detail {
		if !json.Valid([]byte(d.S)) {
			return nil, &store.CorruptError{Table: "call_records", ID: c.ID, Column: "detail", Err: errNotJSON}
		}
		c.Detail = json.RawMessage(d.S)
	}
	return &c, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// RecordCalls implements [store.Ops].
func (e *Engine) RecordCalls(ctx context.Context, p *store.RecordCallsParams) error {
	const op = "record calls"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return e.wrap(op, err)
	}
	if len(p.Calls) == 0 {
		return nil
	}
	now := e.Dialect.Time(e.now())
	args := make([]any, 0, len(p.Calls)*callInsertN)
	var b strings.Builder
	b.WriteString(`INSERT INTO call_records (` + callInsertCols + `) VALUES `)
	for i, c := range p.Calls {
		if err := need(c, "RunID", c.RunID, "Kind", c.Kind); err != nil {
			return e.wrap(op, err)
		}
		detail := c.Detail
		if len(detail) == 0 {
			detail = json.RawMessage(`{}`)
		}
		// Detail goes to a text column: JSON its writer encoded, checked
		// only for what text cannot hold (not parsed again on the path of
		// every step).
		if !utf8.Valid(detail) || bytes.IndexByte(detail, 0) >= 0 {
			return e.wrap(op, invalid("Detail of call %d is not valid UTF-8 text", i))
		}
		id := c.ID
		if id == "" {
			id = newID()
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range callInsertN {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("$" + strconv.Itoa(len(args)+j+1))
		}
		b.WriteByte(')')
		args = append(args, id, p.OwnerID, nullString(c.ThreadID), c.RunID, c.CheckpointID, c.Step, c.Kind, c.Agent, boolInt(c.Sub), c.Model,
			c.Name, c.CallID, c.Error, c.FinishReason, c.RequestID, e.Dialect.Time(c.StartedAt), c.FirstToken.Microseconds(),
			c.Latency.Microseconds(), c.Usage.InputTokens, c.Usage.OutputTokens, c.Usage.CachedTokens, c.Usage.ReasoningTokens,
			boolInt(c.Truncated), now, string(detail))
	}
	query := b.String()
	return e.wrap(op, e.Exec.Run(ctx, Scope{Owner: p.OwnerID}, true, func(q Querier) error {
		if deferWrite(q, p.Deferred, query, args...) {
			return nil
		}
		last(q)
		_, err := q.Exec(ctx, query, args...)
		return err
	}))
}

// ListCallRecords implements [store.Ops].
func (e *Engine) ListCallRecords(ctx context.Context, p *store.ListCallRecordsParams) ([]*store.CallRecord, error) {
	const op = "list call records"
	if err := need(p, "OwnerID", p.OwnerID, "RunID", p.RunID); err != nil {
		return nil, e.wrap(op, err)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op+" of run "+strconv.Quote(p.RunID), func(q Querier) ([]*store.CallRecord, error) {
		return queryAll(ctx, q, []*store.CallRecord{}, func(r Row) (*store.CallRecord, error) { return scanCallRecord(r, false) },
			`SELECT `+callCols+` FROM call_records WHERE owner_id = $1 AND run_id = $2 ORDER BY started_at, step, id LIMIT $3`,
			p.OwnerID, p.RunID, limit)
	})
}

// GetCallRecord implements [store.Ops].
func (e *Engine) GetCallRecord(ctx context.Context, p *store.GetCallRecordParams) (*store.CallRecord, error) {
	return getByKey(ctx, e, p, "get call record", p.OwnerID, "ID", p.ID, " "+strconv.Quote(p.ID),
		func(r Row) (*store.CallRecord, error) { return scanCallRecord(r, true) },
		`SELECT `+callInsertCols+` FROM call_records WHERE owner_id = $1 AND id = $2`)
}

// sweepCallRecords deletes one batch: the $2 oldest call records created
// before $1, found on the created_at index.
const sweepCallRecords = `DELETE FROM call_records WHERE (owner_id, id) IN (
	SELECT owner_id, id FROM call_records WHERE created_at < $1 ORDER BY created_at LIMIT $2)`

// SweepCallRecords implements [store.Store]; it spans owners. It deletes
// in batches of p.Limit rows, each in a transaction of its own, until a
// batch is not full: a long backlog never holds one long transaction (on
// SQLite, the write lock) and other writers go between batches.
func (e *Engine) SweepCallRecords(ctx context.Context, p *store.SweepCallRecordsParams) (int, error) {
	const op = "sweep call records"
	if p == nil || p.Before.IsZero() {
		return 0, e.wrap(op, invalid("Before is required"))
	}
	if p.Limit < 0 {
		return 0, e.wrap(op, invalid("Limit %d is negative", p.Limit))
	}
	limit := p.Limit
	if limit == 0 {
		limit = store.DefaultPruneLimit
	}
	before := e.Dialect.Time(p.Before)
	total := 0
	for {
		n, err := inTx(ctx, e, Scope{Sweep: true}, true, op, func(q Querier) (int64, error) {
			last(q)
			return q.Exec(ctx, sweepCallRecords, before, limit)
		})
		total += int(n)
		if err != nil || n < int64(limit) {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, e.wrap(op, err)
		}
	}
}

var errNotJSON = errors.New("not valid JSON")
