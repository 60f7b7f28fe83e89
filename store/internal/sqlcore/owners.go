package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/batonhq/baton/store"
)

const ownerCols = `id, name, created_at`

func scanOwner(r Row) (*store.Owner, error) {
	var o store.Owner
	var created nullTime
	if err := r.Scan(&o.ID, &o.Name, &created); err != nil {
		return nil, err
	}
	o.CreatedAt = created.T
	return &o, nil
}

// EnsureOwner implements [store.Ops].
func (e *Engine) EnsureOwner(ctx context.Context, p *store.EnsureOwnerParams) (*store.Owner, error) {
	const op = "ensure owner"
	if err := need(p, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.ID}, true, op+" "+p.ID, func(q Querier) (*store.Owner, error) {
		if _, err := q.Exec(ctx, `INSERT INTO owners (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
			p.ID, p.Name, e.Dialect.Time(e.now())); err != nil {
			return nil, err
		}
		last(q)
		return scanOwner(q.QueryRow(ctx, `SELECT `+ownerCols+` FROM owners WHERE id = $1`, p.ID))
	})
}

// GetOwner implements [store.Ops].
func (e *Engine) GetOwner(ctx context.Context, p *store.GetOwnerParams) (*store.Owner, error) {
	const op = "get owner"
	if err := need(p, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	return readRow(ctx, e, p.ID, op+" "+p.ID, scanOwner, `SELECT `+ownerCols+` FROM owners WHERE id = $1`, p.ID)
}

const apiKeyCols = `id, owner_id, name, prefix, key_hash, created_at, revoked_at, scopes, networks, expires_at`

func scanAPIKey(r Row) (*store.APIKey, error) {
	var k store.APIKey
	var created, revoked, expires nullTime
	var scopes, networks string
	if err := r.Scan(&k.ID, &k.OwnerID, &k.Name, &k.Prefix, &k.Hash, &created, &revoked, &scopes, &networks, &expires); err != nil {
		return nil, err
	}
	k.CreatedAt, k.RevokedAt, k.ExpiresAt = created.T, revoked.T, expires.T
	k.Scopes, k.Networks = store.SplitScopes(scopes), strings.Fields(networks)
	return &k, nil
}

// CreateAPIKey implements [store.Ops].
func (e *Engine) CreateAPIKey(ctx context.Context, p *store.CreateAPIKeyParams) (*store.CreatedAPIKey, error) {
	const op = "create api key"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, e.wrap(op, err)
	}
	secret := p.Secret
	if secret == "" {
		secret = store.NewAPIKeySecret()
	}
	scopes := p.Scopes
	if len(scopes) == 0 {
		scopes = []store.Scope{store.ScopeAdmin}
	}
	for _, sc := range scopes {
		if !sc.Valid() {
			return nil, e.wrap(op, invalid("Scopes: unknown scope %q", sc))
		}
	}
	for _, n := range p.Networks {
		if err := checkText("Networks", n, true); err != nil {
			return nil, e.wrap(op, err)
		}
		if n == "" || strings.ContainsFunc(n, unicode.IsSpace) {
			return nil, e.wrap(op, invalid("Networks: network name %q is empty or has spaces", n))
		}
	}
	k, err := inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op, func(q Querier) (*store.APIKey, error) {
		// The owner must exist; its row is invisible to other owners.
		if err := exists(ctx, q, `SELECT 1 FROM owners WHERE id = $1`, p.OwnerID); err != nil {
			return nil, err
		}
		last(q)
		return scanAPIKey(q.QueryRow(ctx, `INSERT INTO api_keys (id, owner_id, name, prefix, key_hash, created_at, scopes, networks, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+apiKeyCols,
			newID(), p.OwnerID, p.Name, store.APIKeyPrefix(secret), store.HashAPIKey(secret), e.Dialect.Time(e.now()),
			store.JoinScopes(scopes), strings.Join(p.Networks, " "), e.Dialect.Time(p.ExpiresAt.UTC().Truncate(time.Microsecond))))
	})
	if err != nil {
		return nil, err
	}
	return &store.CreatedAPIKey{Key: k, Secret: secret}, nil
}

// LookupAPIKey implements [store.Ops].
func (e *Engine) LookupAPIKey(ctx context.Context, p *store.LookupAPIKeyParams) (*store.APIKey, error) {
	const op = "lookup api key"
	if err := need(p, "Hash", p.Hash); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{APIKeyHash: p.Hash}, false, op, func(q Querier) (*store.APIKey, error) {
		return scanAPIKey(q.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, p.Hash))
	})
}

// ListAPIKeys implements [store.Ops].
func (e *Engine) ListAPIKeys(ctx context.Context, p *store.ListAPIKeysParams) ([]*store.APIKey, error) {
	const op = "list api keys"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op, func(q Querier) ([]*store.APIKey, error) {
		return queryAll(ctx, q, nil, scanAPIKey, `SELECT `+apiKeyCols+` FROM api_keys WHERE owner_id = $1 ORDER BY created_at, id`, p.OwnerID)
	})
}

// RevokeAPIKey implements [store.Ops].
func (e *Engine) RevokeAPIKey(ctx context.Context, p *store.RevokeAPIKeyParams) (*store.APIKey, error) {
	const op = "revoke api key"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+p.ID, func(q Querier) (*store.APIKey, error) {
		last(q)
		k, err := scanAPIKey(q.QueryRow(ctx, `UPDATE api_keys SET revoked_at = $3
			WHERE owner_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING `+apiKeyCols,
			p.OwnerID, p.ID, e.Dialect.Time(e.now())))
		if errors.Is(err, sql.ErrNoRows) { // already revoked, or not there
			k, err = scanAPIKey(q.QueryRow(ctx, `SELECT `+apiKeyCols+` FROM api_keys WHERE owner_id = $1 AND id = $2`, p.OwnerID, p.ID))
		}
		return k, err
	})
}
