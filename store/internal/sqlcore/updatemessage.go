package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// UpdateMessage implements [store.Ops].
func (e *Engine) UpdateMessage(ctx context.Context, p *store.UpdateMessageParams) (*store.Message, error) {
	const op = "update message"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	if p.Status != "" && !validStatus(p.Status) {
		return nil, e.wrap(op, invalid("unknown status %q", p.Status))
	}
	if p.ExpectedStatus != "" && !validStatus(p.ExpectedStatus) {
		return nil, e.wrap(op, invalid("unknown expected status %q", p.ExpectedStatus))
	}
	if mm, ok := e.Dialect.(MetadataMerger); ok {
		return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+p.ID, func(q Querier) (*store.Message, error) {
			return e.updateMessage(ctx, q, mm, p)
		})
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+p.ID, func(q Querier) (*store.Message, error) {
		m, err := scanMessage(q.QueryRow(ctx, `SELECT `+messageCols+` FROM messages WHERE owner_id = $1 AND id = $2`+e.Dialect.ForUpdate(), p.OwnerID, p.ID))
		if err != nil {
			return nil, err
		}
		if p.ExpectedStatus != "" && m.Status != p.ExpectedStatus {
			to := p.Status
			if to == "" {
				to = m.Status
			}
			return nil, &store.TransitionError{Kind: "message", ID: p.ID, From: string(m.Status), To: string(to),
				Reason: "expected status " + string(p.ExpectedStatus)}
		}
		if p.Status != "" {
			m.Status = p.Status
		}
		if p.Parts != nil {
			m.Parts = p.Parts
		}
		if p.Usage != nil {
			u := *p.Usage
			m.Usage = &u
		}
		if p.Metadata != nil {
			md := maps.Clone(m.Metadata)
			if md == nil {
				md = map[string]any{}
			}
			for k, v := range p.Metadata {
				if v == nil {
					delete(md, k)
				} else {
					md[k] = v
				}
			}
			m.Metadata = md
		}
		enc, err := encodeMessage(&m.Message)
		if err != nil {
			return nil, err
		}
		last(q)
		return scanMessage(q.QueryRow(ctx, `UPDATE messages SET status = $3, parts = $4, usage = $5, metadata = $6, updated_at = $7
			WHERE owner_id = $1 AND id = $2 RETURNING `+messageCols,
			p.OwnerID, p.ID, string(m.Status), enc.parts, enc.usage, enc.metadata, e.Dialect.Time(e.now())))
	})
}

// MetadataMerger is a [Dialect] whose database merges a message's metadata
// in SQL (PostgreSQL: jsonb's || and -), so that [Engine.UpdateMessage] is
// one conditional UPDATE … RETURNING. Without it UpdateMessage reads the row
// (locked), merges in Go and writes it back.
type MetadataMerger interface {
	// MergeMetadata returns the SQL of the metadata column with the keys of
	// the JSON object parameter $patch set and the keys of the text array
	// parameter $del removed.
	MergeMetadata(patch, del int) string
}

// updateMessage is UpdateMessage in one statement: the status, parts and
// usage that p sets, the metadata merged by the database, the expected
// status a condition of the UPDATE. Only when it updates nothing does it
// read the row, to say why (not found, or the status it has).
func (e *Engine) updateMessage(ctx context.Context, q Querier, mm MetadataMerger, p *store.UpdateMessageParams) (*store.Message, error) {
	var status, parts, usage any // nil: kept
	if p.Status != "" {
		status = string(p.Status)
	}
	if p.Parts != nil {
		enc, err := encodeParts(p.Parts)
		if err != nil {
			return nil, err
		}
		parts = enc
	}
	if p.Usage != nil {
		enc, err := encodeUsage(p.Usage)
		if err != nil {
			return nil, err
		}
		usage = enc
	}
	args := []any{p.OwnerID, p.ID, status, parts, usage, e.Dialect.Time(e.now())}
	metadata := "metadata"
	if p.Metadata != nil {
		set, del := map[string]any{}, []string{}
		for k, v := range p.Metadata {
			if v == nil {
				del = append(del, k)
			} else {
				set[k] = v
			}
		}
		enc, err := encodeMetadata(set)
		if err != nil {
			return nil, err
		}
		args = append(args, enc, del)
		metadata = mm.MergeMetadata(len(args)-1, len(args))
	}
	// The expected status is compared with the row as it is once locked
	// (l), not with the UPDATE's own condition: that is evaluated on the
	// row as the statement's snapshot has it, and PostgreSQL re-checks a
	// row a concurrent transaction changed only if it passed there. A
	// writer still open that moves the message to the expected status (a
	// continuation's draft flush that claims its run, racing the final
	// update) would have the update refused even when it commits; locked
	// first, the update waits for it and is decided by its outcome, as on
	// SQLite (testMessagesUpdateAwaitsWriter).
	with, where, found := "", "", "(SELECT status FROM messages WHERE owner_id = $1 AND id = $2)"
	if p.ExpectedStatus != "" {
		args = append(args, string(p.ExpectedStatus))
		with = `l AS (SELECT status FROM messages WHERE owner_id = $1 AND id = $2 FOR UPDATE), `
		where = fmt.Sprintf(" AND (SELECT status FROM l) = $%d", len(args))
		found = "(SELECT status FROM l)"
	}
	update := `UPDATE messages SET status = COALESCE($3, status), parts = COALESCE($4, parts),
		usage = COALESCE($5, usage), metadata = ` + metadata + `, updated_at = $6
		WHERE owner_id = $1 AND id = $2` + where
	// Deferred: the statement fails, through baton_refused with the status
	// it found ('' for no message), when it updates nothing.
	refused := func(found string) error {
		if found == "" {
			return e.wrap("update message "+p.ID, store.ErrNotFound)
		}
		return e.wrap("update message "+p.ID, transitionError(p, found))
	}
	asserted := `WITH ` + with + `u AS (` + update + ` RETURNING 1)
		SELECT CASE WHEN EXISTS (SELECT 1 FROM u) THEN true ELSE baton_refused(` + found + `) END`
	if with != "" {
		update = `WITH ` + strings.TrimSuffix(with, ", ") + ` ` + update
	}
	if deferAsserted(q, p.Deferred, refused, asserted, args...) {
		return nil, nil
	}
	m, err := scanMessage(q.QueryRow(ctx, update+` RETURNING `+messageCols, args...))
	if !errors.Is(err, sql.ErrNoRows) || p.ExpectedStatus == "" {
		return m, err
	}
	// Nothing updated: the message is missing, or not in the expected status.
	var from string
	if err := q.QueryRow(ctx, `SELECT status FROM messages WHERE owner_id = $1 AND id = $2`, p.OwnerID, p.ID).Scan(&from); err != nil {
		return nil, err
	}
	return nil, transitionError(p, from)
}

// transitionError is the error of an update refused because the message,
// found in status from, is not in p.ExpectedStatus.
func transitionError(p *store.UpdateMessageParams, from string) error {
	to := p.Status
	if to == "" {
		to = message.Status(from)
	}
	return &store.TransitionError{Kind: "message", ID: p.ID, From: from, To: string(to),
		Reason: "expected status " + string(p.ExpectedStatus)}
}
