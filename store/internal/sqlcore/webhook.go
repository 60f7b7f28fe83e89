package sqlcore

import (
	"context"
	"time"

	"github.com/batonhq/baton/store"
)

const deliveryCols = `id, owner_id, webhook_id, event_type, url, target, thread_id, run_id, network, attempt, status_code, error, duration_us, final, created_at`

func scanDelivery(r Row) (*store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	var created nullTime
	var us int64
	if err := r.Scan(&d.ID, &d.OwnerID, &d.WebhookID, &d.EventType, &d.URL, &d.Target, &d.ThreadID, &d.RunID, &d.Network, &d.Attempt, &d.StatusCode,
		&d.Error, &us, &d.Final, &created); err != nil {
		return nil, err
	}
	d.Duration, d.CreatedAt = time.Duration(us)*time.Microsecond, created.T
	return &d, nil
}

// AppendWebhookDelivery implements [store.Ops].
func (e *Engine) AppendWebhookDelivery(ctx context.Context, p *store.AppendWebhookDeliveryParams) (*store.WebhookDelivery, error) {
	const op = "append webhook delivery"
	if err := need(p, "OwnerID", p.OwnerID, "WebhookID", p.WebhookID, "EventType", p.EventType, "URL", p.URL); err != nil {
		return nil, e.wrap(op, err)
	}
	for _, f := range []struct{ name, v string }{{"Target", p.Target}, {"ThreadID", p.ThreadID}, {"RunID", p.RunID}, {"Network", p.Network}, {"Error", p.Error}} {
		if err := checkText(f.name, f.v, true); err != nil {
			return nil, e.wrap(op, err)
		}
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op, func(q Querier) (*store.WebhookDelivery, error) {
		last(q)
		return scanDelivery(q.QueryRow(ctx, `INSERT INTO webhook_deliveries (`+deliveryCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING `+deliveryCols,
			newID(), p.OwnerID, p.WebhookID, p.EventType, p.URL, p.Target, p.ThreadID, p.RunID, p.Network, p.Attempt, p.StatusCode, p.Error,
			p.Duration.Microseconds(), p.Final, e.Dialect.Time(e.now())))
	})
}

// ListWebhookDeliveries implements [store.Ops].
func (e *Engine) ListWebhookDeliveries(ctx context.Context, p *store.ListWebhookDeliveriesParams) (*store.WebhookDeliveryPage, error) {
	q := listQuery{params: p, owner: p.OwnerID, networks: p.Networks, limit: p.Limit, cursor: p.Cursor}
	ds, next, err := listOwned(ctx, e, "list webhook deliveries", deliveryCols, "webhook_deliveries", q, func(k *keyset) {
		k.eq("webhook_id", p.WebhookID)
		k.eq("run_id", p.RunID)
	}, scanDelivery, func(d *store.WebhookDelivery) string { return d.ID })
	if err != nil {
		return nil, err
	}
	return &store.WebhookDeliveryPage{Deliveries: ds, NextCursor: next}, nil
}
