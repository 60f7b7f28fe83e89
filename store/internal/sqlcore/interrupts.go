package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/batonhq/baton/store"
)

const interruptCols = `id, owner_id, kind, thread_id, run_id, network, agent, status, payload, decision, outcome, created_at, decided_at`

func scanInterrupt(r Row) (*store.Interrupt, error) {
	var in store.Interrupt
	var thread, run nullStr
	var payload, decision, outcome []byte
	var created, decided nullTime
	if err := r.Scan(&in.ID, &in.OwnerID, &in.Kind, &thread, &run, &in.Network, &in.Agent, &in.Status, &payload, &decision, &outcome,
		&created, &decided); err != nil {
		return nil, err
	}
	in.ThreadID, in.RunID, in.CreatedAt, in.DecidedAt = thread.S, run.S, created.T, decided.T
	for _, c := range []struct {
		name string
		b    []byte
		dst  *json.RawMessage
	}{{"payload", payload, &in.Payload}, {"decision", decision, &in.Decision}, {"outcome", outcome, &in.Outcome}} {
		if c.b == nil {
			continue
		}
		if !json.Valid(c.b) {
			return nil, &store.CorruptError{Table: "interrupts", ID: in.ID, Column: c.name, Err: errors.New("not valid JSON")}
		}
		*c.dst = json.RawMessage(c.b)
	}
	return &in, nil
}

// nullJSON maps an empty value to NULL and checks the others.
func nullJSON(field string, v json.RawMessage) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if !json.Valid(v) {
		return nil, invalid("%s is not valid JSON", field)
	}
	if err := CheckJSON(field, v); err != nil {
		return nil, err
	}
	return string(v), nil
}

// CreateInterrupt implements [store.Ops].
func (e *Engine) CreateInterrupt(ctx context.Context, p *store.CreateInterruptParams) (*store.Interrupt, error) {
	const op = "create interrupt"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID, "Kind", p.Kind); err != nil {
		return nil, e.wrap(op, err)
	}
	switch {
	case p.Kind != store.InterruptRun && p.Kind != store.InterruptThreadHandoff:
		return nil, e.wrap(op, invalid("Kind %q is not %s or %s", p.Kind, store.InterruptRun, store.InterruptThreadHandoff))
	case p.Kind == store.InterruptRun && p.RunID == "":
		return nil, e.wrap(op, invalid("RunID is required for a run interrupt"))
	case p.Kind == store.InterruptThreadHandoff && p.ThreadID == "":
		return nil, e.wrap(op, invalid("ThreadID is required for a thread handoff interrupt"))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(p.Payload, &obj) != nil || obj == nil {
		return nil, e.wrap(op, invalid("Payload is not a JSON object"))
	}
	if err := CheckJSON("Payload", p.Payload); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+strconv.Quote(p.ID), func(q Querier) (*store.Interrupt, error) {
		// The thread is checked first, so that a missing one is not a
		// foreign key violation, which would abort a PostgreSQL
		// transaction.
		if p.ThreadID != "" {
			if err := exists(ctx, q, `SELECT 1 FROM threads WHERE `+threadKey("$1", "$2"), p.OwnerID, p.ThreadID); err != nil {
				return nil, err
			}
		}
		// ON CONFLICT DO NOTHING covers the id and the one pending thread
		// handoff of a thread, and waits for a concurrent inserter: one
		// row wins, without an error that would abort a transaction.
		last(q)
		in, err := scanInterrupt(q.QueryRow(ctx, `INSERT INTO interrupts
			(id, owner_id, kind, thread_id, run_id, network, agent, status, payload, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9)
			ON CONFLICT DO NOTHING RETURNING `+interruptCols,
			p.ID, p.OwnerID, p.Kind, nullString(p.ThreadID), nullString(p.RunID), p.Network, p.Agent, string(p.Payload), e.Dialect.Time(e.now())))
		if !errors.Is(err, sql.ErrNoRows) {
			return in, err
		}
		err = exists(ctx, q, `SELECT 1 FROM interrupts WHERE owner_id = $1 AND id = $2`, p.OwnerID, p.ID)
		switch {
		case err == nil:
			return nil, fmt.Errorf("%w: the id is taken", store.ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
		return nil, fmt.Errorf("%w: thread %s has a pending thread handoff", store.ErrConflict, p.ThreadID)
	})
}

// GetInterrupt implements [store.Ops].
func (e *Engine) GetInterrupt(ctx context.Context, p *store.GetInterruptParams) (*store.Interrupt, error) {
	return getByKey(ctx, e, p, "get interrupt", p.OwnerID, "ID", p.ID, " "+strconv.Quote(p.ID), scanInterrupt,
		`SELECT `+interruptCols+` FROM interrupts WHERE owner_id = $1 AND id = $2`)
}

// ListInterrupts implements [store.Ops].
func (e *Engine) ListInterrupts(ctx context.Context, p *store.ListInterruptsParams) ([]*store.Interrupt, error) {
	const op = "list interrupts"
	if err := need(p, "OwnerID", p.OwnerID, "ThreadID", p.ThreadID); err != nil {
		return nil, e.wrap(op, err)
	}
	limit := p.Limit
	switch {
	case limit < 0 || limit > 1000:
		return nil, e.wrap(op, invalid("Limit %d is not from 0 to 1000", limit))
	case limit == 0:
		limit = 100
	}
	query := `SELECT ` + interruptCols + ` FROM interrupts WHERE owner_id = $1 AND thread_id = $2`
	args := []any{p.OwnerID, p.ThreadID}
	if p.Kind != "" {
		args = append(args, p.Kind)
		query += ` AND kind = $` + strconv.Itoa(len(args))
	}
	if p.Status != "" {
		args = append(args, p.Status)
		query += ` AND status = $` + strconv.Itoa(len(args))
	}
	args = append(args, limit)
	query += ` ORDER BY created_at, id LIMIT $` + strconv.Itoa(len(args))
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op+" of thread "+strconv.Quote(p.ThreadID), func(q Querier) ([]*store.Interrupt, error) {
		return queryAll(ctx, q, make([]*store.Interrupt, 0), scanInterrupt, query, args...)
	})
}

// DecideInterrupt implements [store.Ops].
func (e *Engine) DecideInterrupt(ctx context.Context, p *store.DecideInterruptParams) (*store.Interrupt, error) {
	const op = "decide interrupt"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	if p.Status != store.InterruptDecided && p.Status != store.InterruptSuperseded {
		return nil, e.wrap(op, invalid("Status %q is not %s or %s", p.Status, store.InterruptDecided, store.InterruptSuperseded))
	}
	decision, err := nullJSON("Decision", p.Decision)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	if len(p.Outcome) == 0 {
		return nil, e.wrap(op, invalid("Outcome is required"))
	}
	audit := p.DecidedBy != nil && p.Status == store.InterruptDecided
	if audit {
		if err := checkTexts("DecidedBy.", "KeyID", p.DecidedBy.KeyID, "RequestID", p.DecidedBy.RequestID, "AuditKind", p.AuditKind); err != nil {
			return nil, e.wrap(op, err)
		}
		if p.AuditKind == "" {
			return nil, e.wrap(op, invalid("AuditKind is required with DecidedBy"))
		}
		o, err := decidedBy(p.Outcome, p.DecidedBy)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		p2 := *p
		p2.Outcome = o
		p = &p2
	}
	outcome, err := nullJSON("Outcome", p.Outcome)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+strconv.Quote(p.ID), func(q Querier) (*store.Interrupt, error) {
		// The status condition is checked again after waiting for a
		// concurrent decider's lock: of two deciders one updates the row
		// and the other nothing.
		if !audit {
			last(q)
		}
		in, err := scanInterrupt(q.QueryRow(ctx, `UPDATE interrupts SET status = $3, decision = $4, outcome = $5, decided_at = $6
			WHERE owner_id = $1 AND id = $2 AND status = 'pending' RETURNING `+interruptCols,
			p.OwnerID, p.ID, p.Status, decision, outcome, e.Dialect.Time(e.now())))
		if err == nil && audit {
			// The decision's record, in its transaction.
			last(q)
			_, err = e.appendAudit(ctx, q, &store.AppendAuditParams{OwnerID: p.OwnerID, Kind: p.AuditKind, KeyID: p.DecidedBy.KeyID,
				Actor: store.ActorAPIKey, RequestID: p.DecidedBy.RequestID, ThreadID: in.ThreadID, RunID: in.RunID, InterruptID: in.ID,
				Network: in.Network}, decision)
			return in, err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return in, err
		}
		cur, err := scanInterrupt(q.QueryRow(ctx, `SELECT `+interruptCols+` FROM interrupts WHERE owner_id = $1 AND id = $2`, p.OwnerID, p.ID))
		if err != nil {
			return nil, err
		}
		return nil, &store.NotPendingError{Interrupt: cur}
	})
}
