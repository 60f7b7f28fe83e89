package sqlcore

import (
	"context"
	"time"

	"github.com/batonhq/baton/store"
)

// pruneCheckpoints deletes, of the batch of $2 checkpoints after id $1 in
// id order, those written before $3 that a later step of their run
// supersedes: a run's latest checkpoint is never deleted. The batch is a
// walk of the id index, the superseding step a probe of (owner_id, run_id,
// step).
const pruneCheckpoints = `DELETE FROM checkpoints WHERE id IN (
	SELECT b.id FROM (SELECT id, owner_id, run_id, step, created_at FROM checkpoints WHERE id > $1 ORDER BY id LIMIT $2) AS b
	WHERE b.created_at < $3 AND EXISTS (
		SELECT 1 FROM checkpoints AS n WHERE n.owner_id = b.owner_id AND n.run_id = b.run_id AND n.step > b.step))`

// PruneCheckpoints implements [store.Store].
func (e *Engine) PruneCheckpoints(ctx context.Context, p *store.PruneCheckpointsParams) (*store.PruneCheckpointsResult, error) {
	const op = "prune checkpoints"
	if p == nil || p.Before.IsZero() {
		return nil, e.wrap(op, invalid("Before is required"))
	}
	if p.Limit < 0 {
		return nil, e.wrap(op, invalid("Limit %d is negative", p.Limit))
	}
	limit := p.Limit
	if limit == 0 {
		limit = store.DefaultPruneLimit
	}
	before := e.Dialect.Time(p.Before.UTC().Truncate(time.Microsecond))
	return inTx(ctx, e, Scope{Sweep: true}, true, op, func(q Querier) (*store.PruneCheckpointsResult, error) {
		type seen struct {
			id      string
			created nullTime
		}
		batch, err := queryAll(ctx, q, nil, func(r Row) (seen, error) {
			var s seen
			return s, r.Scan(&s.id, &s.created)
		}, `SELECT id, created_at FROM checkpoints WHERE id > $1 ORDER BY id LIMIT $2`, p.After, limit)
		if err != nil {
			return nil, err
		}
		res := &store.PruneCheckpointsResult{}
		if len(batch) == 0 {
			return res, nil
		}
		last(q)
		n, err := q.Exec(ctx, pruneCheckpoints, p.After, limit, before)
		if err != nil {
			return nil, err
		}
		res.Deleted = int(n)
		// The walk goes on while the batch was full and older than the
		// horizon: ids are UUIDv7s, in the order they were written, so the
		// checkpoints after one written since Before are too.
		if end := batch[len(batch)-1]; len(batch) == limit && end.created.T.Before(p.Before) {
			res.Next = end.id
		}
		return res, nil
	})
}
