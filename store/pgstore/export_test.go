package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store"
)

// OpenWith opens a store like Open, after configure has changed its pool's
// configuration (to set a tracer).
func OpenWith(ctx context.Context, url string, opts *store.Options, configure func(*pgxpool.Config)) (*Store, error) {
	if opts == nil {
		opts = &store.Options{}
	}
	cfg, err := parseConfig(url, opts)
	if err != nil {
		return nil, err
	}
	configure(cfg)
	return openConfig(ctx, cfg, opts)
}
