package sqlcore

import (
	"context"

	"github.com/batonhq/baton/store"
)

const draftCols = `message_id, owner_id, text, version, updated_at`

func scanDraft(r Row) (*store.Draft, error) {
	var d store.Draft
	var updated nullTime
	if err := r.Scan(&d.MessageID, &d.OwnerID, &d.Text, &d.Version, &updated); err != nil {
		return nil, err
	}
	d.UpdatedAt = updated.T
	return &d, nil
}

// UpsertDraft implements [store.Ops].
func (e *Engine) UpsertDraft(ctx context.Context, p *store.UpsertDraftParams) (*store.Draft, error) {
	const op = "upsert draft"
	if err := need(p, "OwnerID", p.OwnerID, "MessageID", p.MessageID); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" of message "+p.MessageID, func(q Querier) (*store.Draft, error) {
		// A draft is written with its message's owner once the message is
		// known to be the owner's (the foreign key is on the id alone): the
		// message's row is locked until the transaction ends, so that it
		// cannot go (and its id come back under another owner) in between.
		// The draft writer holds that lock already (it checked the status).
		if err := exists(ctx, q, `SELECT 1 FROM messages WHERE owner_id = $1 AND id = $2`+e.Dialect.ForUpdate(), p.OwnerID, p.MessageID); err != nil {
			return nil, err
		}
		last(q)
		return scanDraft(q.QueryRow(ctx, `INSERT INTO message_drafts (message_id, owner_id, text, version, updated_at)
			VALUES ($1, $2, $3, 1, $4)
			ON CONFLICT (message_id) DO UPDATE SET text = excluded.text, version = message_drafts.version + 1, updated_at = excluded.updated_at
			RETURNING `+draftCols,
			p.MessageID, p.OwnerID, p.Text, e.Dialect.Time(e.now())))
	})
}

// GetDraft implements [store.Ops].
func (e *Engine) GetDraft(ctx context.Context, p *store.GetDraftParams) (*store.Draft, error) {
	return getByKey(ctx, e, p, "get draft", p.OwnerID, "MessageID", p.MessageID, " of message "+p.MessageID, scanDraft,
		`SELECT `+draftCols+` FROM message_drafts WHERE owner_id = $1 AND message_id = $2`)
}

// DeleteDraft implements [store.Ops].
func (e *Engine) DeleteDraft(ctx context.Context, p *store.DeleteDraftParams) error {
	const op = "delete draft"
	if err := need(p, "OwnerID", p.OwnerID, "MessageID", p.MessageID); err != nil {
		return e.wrap(op, err)
	}
	err := e.write(ctx, p.OwnerID, func(q Querier) error {
		last(q)
		_, err := q.Exec(ctx, `DELETE FROM message_drafts WHERE owner_id = $1 AND message_id = $2`, p.OwnerID, p.MessageID)
		return err
	})
	return e.wrap(op+" of message "+p.MessageID, err)
}
