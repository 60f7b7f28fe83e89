package service

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/open"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// backend is one database as the service uses it: the store, the draft
// broker that fans drafts out (PostgreSQL LISTEN/NOTIFY across processes,
// in-process on SQLite) and River's driver, chosen together, once, from the
// store's type.
type backend struct {
	store  store.Store
	broker draft.Broker
	driver continuation.Driver
	// pg is the PostgreSQL broker, which listens between start and close.
	pg *pgbroker.Broker
	// owned: the service opened the store and closes it.
	owned bool
}

// openBackend opens the database at url (see store/open) with opts.
func openBackend(ctx context.Context, url string, opts *store.Options, log *slog.Logger) (*backend, error) {
	st, err := open.Open(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	b, err := backendOf(st, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	b.owned = true
	return b, nil
}

// backendOf returns the backend of an open store.
func backendOf(st store.Store, log *slog.Logger) (*backend, error) {
	switch s := st.(type) {
	case *pgstore.Store:
		pg := pgbroker.New(s, &pgbroker.Options{Logger: log})
		return &backend{store: st, broker: pg, pg: pg, driver: continuation.PostgresDriver(s)}, nil
	case *sqlitestore.Store:
		return &backend{store: st, broker: draft.NewHub(s), driver: continuation.SQLiteDriver(s)}, nil
	}
	return nil, fmt.Errorf("service: store %T is not supported (want one of store/open: SQLite or PostgreSQL)", st)
}

// start starts what listens: the PostgreSQL broker.
func (b *backend) start(ctx context.Context) error {
	if b.pg == nil {
		return nil
	}
	if err := b.pg.Start(ctx); err != nil {
		return fmt.Errorf("service: draft broker: %w", err)
	}
	return nil
}

// close closes the broker and, when the service opened it, the store.
func (b *backend) close() error {
	var err error
	if b.pg != nil {
		err = b.pg.Close()
	}
	if b.owned {
		if cerr := b.store.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Migrate creates or updates the schema of the database at url: baton's
// tables and River's (what `baton migrate` runs). It is safe to run from
// several processes at once: they take turns. log may be nil.
func Migrate(ctx context.Context, url string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	be, err := openBackend(ctx, url, &store.Options{Logger: log}, log)
	if err != nil {
		return err
	}
	defer be.close()
	return be.driver.Migrate(ctx, log)
}
