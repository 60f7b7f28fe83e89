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

// pruneWebhookDeliveries deletes, of the batch of $2 delivery log rows
// after id $1 in id order, those of a delivery (owner, webhook id, URL,
// target) whose final attempt was logged before $3: a pending delivery has
// none, whatever other deliveries of its event and URL (another target's)
// have.
const pruneWebhookDeliveries = `DELETE FROM webhook_deliveries WHERE id IN (
	SELECT b.id FROM (SELECT id, owner_id, webhook_id, url, target FROM webhook_deliveries WHERE id > $1 ORDER BY id LIMIT $2) AS b
	WHERE EXISTS (
		SELECT 1 FROM webhook_deliveries AS f WHERE f.owner_id = b.owner_id AND f.webhook_id = b.webhook_id AND f.url = b.url
			AND f.target = b.target AND f.final AND f.created_at < $3))`

// PruneCheckpoints implements [store.Store].
func (e *Engine) PruneCheckpoints(ctx context.Context, p *store.PruneCheckpointsParams) (*store.PruneCheckpointsResult, error) {
	if p == nil {
		return nil, e.wrap("prune checkpoints", invalid("Before is required"))
	}
	return e.prune(ctx, "prune checkpoints", "checkpoints", pruneCheckpoints, p.Before, p.After, p.Limit)
}

// PruneWebhookDeliveries implements [store.Store].
func (e *Engine) PruneWebhookDeliveries(ctx context.Context, p *store.PruneWebhookDeliveriesParams) (*store.PruneCheckpointsResult, error) {
	if p == nil {
		return nil, e.wrap("prune webhook deliveries", invalid("Before is required"))
	}
	return e.prune(ctx, "prune webhook deliveries", "webhook_deliveries", pruneWebhookDeliveries, p.Before, p.After, p.Limit)
}

// prune runs del ($1 after, $2 limit, $3 before) on one batch of the rows
// of table, across owners: the rows whose id sorts after after, at most
// limit (0: store.DefaultPruneLimit), in id order. The walk goes on while
// the batch was full and older than before.
func (e *Engine) prune(ctx context.Context, op, table, del string, before time.Time, after string, limit int) (*store.PruneCheckpointsResult, error) {
	if before.IsZero() {
		return nil, e.wrap(op, invalid("Before is required"))
	}
	if limit < 0 {
		return nil, e.wrap(op, invalid("Limit %d is negative", limit))
	}
	if limit == 0 {
		limit = store.DefaultPruneLimit
	}
	horizon := e.Dialect.Time(before.UTC().Truncate(time.Microsecond))
	return inTx(ctx, e, Scope{Sweep: true}, true, op, func(q Querier) (*store.PruneCheckpointsResult, error) {
		type seen struct {
			id      string
			created nullTime
		}
		batch, err := queryAll(ctx, q, nil, func(r Row) (seen, error) {
			var s seen
			return s, r.Scan(&s.id, &s.created)
		}, `SELECT id, created_at FROM `+table+` WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
		if err != nil {
			return nil, err
		}
		res := &store.PruneCheckpointsResult{}
		if len(batch) == 0 {
			return res, nil
		}
		last(q)
		n, err := q.Exec(ctx, del, after, limit, horizon)
		if err != nil {
			return nil, err
		}
		res.Deleted = int(n)
		// The walk goes on while the batch was full and older than the
		// horizon: ids are UUIDv7s, in the order they were written, so the
		// rows after one written since before are too.
		if end := batch[len(batch)-1]; len(batch) == limit && end.created.T.Before(before) {
			res.Next = end.id
		}
		return res, nil
	})
}
