package sqlcore

import (
	"context"

	"github.com/batonhq/baton/store"
)

const pushConfigCols = `owner_id, run_id, id, thread_id, network, url, token, auth_scheme, auth_credentials, protocol, created_at`

func scanPushConfig(r Row) (*store.PushConfig, error) {
	var c store.PushConfig
	var created nullTime
	if err := r.Scan(&c.OwnerID, &c.RunID, &c.ID, &c.ThreadID, &c.Network, &c.URL, &c.Token, &c.AuthScheme, &c.AuthCredentials,
		&c.Protocol, &created); err != nil {
		return nil, err
	}
	c.CreatedAt = created.T
	return &c, nil
}

// PutPushConfig implements [store.Ops].
func (e *Engine) PutPushConfig(ctx context.Context, p *store.PutPushConfigParams) (*store.PushConfig, error) {
	const op = "put push config"
	if p == nil {
		return nil, e.wrap(op, invalid("params are required"))
	}
	c := &p.Config
	if err := need(c, "OwnerID", c.OwnerID, "RunID", c.RunID, "ID", c.ID, "ThreadID", c.ThreadID, "URL", c.URL, "Protocol", c.Protocol); err != nil {
		return nil, e.wrap(op, err)
	}
	return writeRow(ctx, e, c.OwnerID, op, scanPushConfig, `INSERT INTO push_configs (`+pushConfigCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (owner_id, run_id, id) DO UPDATE SET thread_id = excluded.thread_id, network = excluded.network, url = excluded.url,
			token = excluded.token, auth_scheme = excluded.auth_scheme, auth_credentials = excluded.auth_credentials,
			protocol = excluded.protocol, created_at = excluded.created_at
		RETURNING `+pushConfigCols,
		c.OwnerID, c.RunID, c.ID, c.ThreadID, c.Network, c.URL, c.Token, c.AuthScheme, c.AuthCredentials, c.Protocol, e.Dialect.Time(e.now()))
}

// GetPushConfig implements [store.Ops].
func (e *Engine) GetPushConfig(ctx context.Context, p *store.PushConfigKeyParams) (*store.PushConfig, error) {
	const op = "get push config"
	if err := need(p, "OwnerID", p.OwnerID, "RunID", p.RunID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	return readRow(ctx, e, p.OwnerID, op+" "+p.ID, scanPushConfig, `SELECT `+pushConfigCols+` FROM push_configs
		WHERE owner_id = $1 AND run_id = $2 AND id = $3`, p.OwnerID, p.RunID, p.ID)
}

// ListPushConfigs implements [store.Ops].
func (e *Engine) ListPushConfigs(ctx context.Context, p *store.PushConfigKeyParams) ([]*store.PushConfig, error) {
	const op = "list push configs"
	if err := need(p, "OwnerID", p.OwnerID, "RunID", p.RunID); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op, func(q Querier) ([]*store.PushConfig, error) {
		return queryAll(ctx, q, []*store.PushConfig{}, scanPushConfig, `SELECT `+pushConfigCols+` FROM push_configs
			WHERE owner_id = $1 AND run_id = $2 ORDER BY created_at, id`, p.OwnerID, p.RunID)
	})
}

// DeletePushConfig implements [store.Ops].
func (e *Engine) DeletePushConfig(ctx context.Context, p *store.PushConfigKeyParams) error {
	const op = "delete push config"
	if err := need(p, "OwnerID", p.OwnerID, "RunID", p.RunID, "ID", p.ID); err != nil {
		return e.wrap(op, err)
	}
	_, err := writeRow(ctx, e, p.OwnerID, op+" "+p.ID, func(r Row) (string, error) {
		var id string
		return id, r.Scan(&id)
	}, `DELETE FROM push_configs WHERE owner_id = $1 AND run_id = $2 AND id = $3 RETURNING id`, p.OwnerID, p.RunID, p.ID)
	return err
}
