package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/batonhq/baton/store"
)

const summaryCols = `id, owner_id, handoff_id, agent_id, thread_id, child_thread_id, summary, markdown, created_at, updated_at`

func scanSummary(r Row) (*store.ThreadSummary, error) {
	var s store.ThreadSummary
	var summary []byte
	var created, updated nullTime
	if err := r.Scan(&s.ID, &s.OwnerID, &s.HandoffID, &s.AgentID, &s.ThreadID, &s.ChildThreadID, &summary, &s.Markdown, &created, &updated); err != nil {
		return nil, err
	}
	if !json.Valid(summary) {
		return nil, &store.CorruptError{Table: "thread_summaries", ID: s.ID, Column: "summary", Err: errors.New("not valid JSON")}
	}
	s.Summary, s.CreatedAt, s.UpdatedAt = json.RawMessage(summary), created.T, updated.T
	return &s, nil
}

// UpsertThreadSummary implements [store.Ops].
func (e *Engine) UpsertThreadSummary(ctx context.Context, p *store.UpsertThreadSummaryParams) (*store.ThreadSummary, error) {
	const op = "upsert thread summary"
	if err := need(p, "OwnerID", p.OwnerID, "HandoffID", p.HandoffID); err != nil {
		return nil, e.wrap(op, err)
	}
	if !json.Valid(p.Summary) {
		return nil, e.wrap(op, invalid("Summary is not valid JSON"))
	}
	if err := CheckJSON("Summary", p.Summary); err != nil {
		return nil, e.wrap(op, err)
	}
	return writeRow(ctx, e, p.OwnerID, op+" of handoff "+p.HandoffID, scanSummary, `INSERT INTO thread_summaries
		(id, owner_id, handoff_id, agent_id, thread_id, child_thread_id, summary, markdown, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)
		ON CONFLICT (owner_id, handoff_id) DO UPDATE SET agent_id = excluded.agent_id, thread_id = excluded.thread_id,
			child_thread_id = excluded.child_thread_id, summary = excluded.summary, markdown = excluded.markdown,
			updated_at = excluded.updated_at
		RETURNING `+summaryCols,
		newID(), p.OwnerID, p.HandoffID, p.AgentID, p.ThreadID, p.ChildThreadID, string(p.Summary), p.Markdown, e.Dialect.Time(e.now()))
}

// GetThreadSummary implements [store.Ops].
func (e *Engine) GetThreadSummary(ctx context.Context, p *store.GetThreadSummaryParams) (*store.ThreadSummary, error) {
	return getByKey(ctx, e, p, "get thread summary", p.OwnerID, "HandoffID", p.HandoffID, " of handoff "+p.HandoffID, scanSummary,
		`SELECT `+summaryCols+` FROM thread_summaries WHERE owner_id = $1 AND handoff_id = $2`)
}

const memoryCols = `owner_id, agent_id, content, version, created_at, updated_at`

func scanMemory(r Row) (*store.MemoryDocument, error) {
	var m store.MemoryDocument
	var created, updated nullTime
	if err := r.Scan(&m.OwnerID, &m.AgentID, &m.Content, &m.Version, &created, &updated); err != nil {
		return nil, err
	}
	m.CreatedAt, m.UpdatedAt = created.T, updated.T
	return &m, nil
}

// GetMemoryDocument implements [store.Ops].
func (e *Engine) GetMemoryDocument(ctx context.Context, p *store.GetMemoryDocumentParams) (*store.MemoryDocument, error) {
	return getByKey(ctx, e, p, "get memory document", p.OwnerID, "AgentID", p.AgentID, " of agent "+p.AgentID, scanMemory,
		`SELECT `+memoryCols+` FROM memory_documents WHERE owner_id = $1 AND agent_id = $2`)
}

// PutMemoryDocument implements [store.Ops].
func (e *Engine) PutMemoryDocument(ctx context.Context, p *store.PutMemoryDocumentParams) (*store.MemoryDocument, error) {
	const op = "put memory document"
	if err := need(p, "OwnerID", p.OwnerID, "AgentID", p.AgentID); err != nil {
		return nil, e.wrap(op, err)
	}
	if p.ExpectedVersion < 0 {
		return nil, e.wrap(op, invalid("ExpectedVersion %d is negative", p.ExpectedVersion))
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" of agent "+p.AgentID, func(q Querier) (*store.MemoryDocument, error) {
		now := e.Dialect.Time(e.now())
		last(q)
		var m *store.MemoryDocument
		var err error
		if p.ExpectedVersion == 0 {
			m, err = scanMemory(q.QueryRow(ctx, `INSERT INTO memory_documents (owner_id, agent_id, content, version, created_at, updated_at)
				VALUES ($1, $2, $3, 1, $4, $4) ON CONFLICT (owner_id, agent_id) DO NOTHING RETURNING `+memoryCols,
				p.OwnerID, p.AgentID, p.Content, now))
		} else {
			// The version condition is re-checked after waiting for a
			// concurrent writer's lock, so of two writers of version n one
			// wins and the other updates nothing.
			m, err = scanMemory(q.QueryRow(ctx, `UPDATE memory_documents SET content = $3, version = version + 1, updated_at = $5
				WHERE owner_id = $1 AND agent_id = $2 AND version = $4 RETURNING `+memoryCols,
				p.OwnerID, p.AgentID, p.Content, p.ExpectedVersion, now))
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return m, err
		}
		conflict := &store.VersionConflictError{Kind: "memory document", ID: p.AgentID, Expected: p.ExpectedVersion}
		err = q.QueryRow(ctx, `SELECT version FROM memory_documents WHERE owner_id = $1 AND agent_id = $2`, p.OwnerID, p.AgentID).Scan(&conflict.Actual)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, conflict
	})
}
