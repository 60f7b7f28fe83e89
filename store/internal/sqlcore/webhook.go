package sqlcore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

const deliveryCols = `id, owner_id, webhook_id, event_type, url, thread_id, run_id, network, attempt, status_code, error, duration_us, created_at`

func scanDelivery(r Row) (*store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	var created nullTime
	var us int64
	if err := r.Scan(&d.ID, &d.OwnerID, &d.WebhookID, &d.EventType, &d.URL, &d.ThreadID, &d.RunID, &d.Network, &d.Attempt, &d.StatusCode,
		&d.Error, &us, &created); err != nil {
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
	for _, f := range []struct{ name, v string }{{"ThreadID", p.ThreadID}, {"RunID", p.RunID}, {"Network", p.Network}, {"Error", p.Error}} {
		if err := checkText(f.name, f.v, true); err != nil {
			return nil, e.wrap(op, err)
		}
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op, func(q Querier) (*store.WebhookDelivery, error) {
		last(q)
		return scanDelivery(q.QueryRow(ctx, `INSERT INTO webhook_deliveries (id, owner_id, webhook_id, event_type, url, thread_id, run_id, network, attempt, status_code, error, duration_us, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING `+deliveryCols,
			newID(), p.OwnerID, p.WebhookID, p.EventType, p.URL, p.ThreadID, p.RunID, p.Network, p.Attempt, p.StatusCode, p.Error,
			p.Duration.Microseconds(), e.Dialect.Time(e.now())))
	})
}

// ListWebhookDeliveries implements [store.Ops].
func (e *Engine) ListWebhookDeliveries(ctx context.Context, p *store.ListWebhookDeliveriesParams) (*store.WebhookDeliveryPage, error) {
	const op = "list webhook deliveries"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, e.wrap(op, err)
	}
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	var sb strings.Builder
	args := []any{p.OwnerID}
	arg := func(v any) string {
		args = append(args, v)
		return `$` + strconv.Itoa(len(args))
	}
	sb.WriteString(`SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE owner_id = $1`)
	if p.WebhookID != "" {
		sb.WriteString(` AND webhook_id = ` + arg(p.WebhookID))
	}
	if p.RunID != "" {
		sb.WriteString(` AND run_id = ` + arg(p.RunID))
	}
	if len(p.Networks) > 0 {
		sb.WriteString(` AND network IN (`)
		for i, n := range p.Networks {
			if err := checkText("Networks", n, true); err != nil {
				return nil, e.wrap(op, err)
			}
			if i > 0 {
				sb.WriteString(`, `)
			}
			sb.WriteString(arg(n))
		}
		sb.WriteString(`)`)
	}
	if p.Cursor != "" {
		if len(p.Cursor) > 200 || checkText("Cursor", p.Cursor, true) != nil {
			return nil, e.wrap(op, invalid("malformed cursor"))
		}
		sb.WriteString(` AND id < ` + arg(p.Cursor))
	}
	sb.WriteString(` ORDER BY id DESC LIMIT ` + arg(limit+1))
	ds, err := inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op, func(q Querier) ([]*store.WebhookDelivery, error) {
		return queryAll(ctx, q, nil, scanDelivery, sb.String(), args...)
	})
	if err != nil {
		return nil, err
	}
	page := &store.WebhookDeliveryPage{Deliveries: ds}
	if len(ds) > limit {
		page.Deliveries = ds[:limit]
		page.NextCursor = ds[limit-1].ID
	}
	return page, nil
}
