// Package open opens a [store.Store] by URL, choosing the backend from the
// scheme. It lives apart from package store so that store does not import
// its backends.
package open

import (
	"context"
	"fmt"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// Backends, as returned by [Backend].
const (
	SQLite     = "sqlite"
	PostgreSQL = "postgres"
)

// Open opens the store at url and, unless opts.NoMigrate, migrates it.
// The forms of url:
//
//	""                              SQLite at store.DefaultSQLitePath()
//	sqlite:PATH, sqlite://PATH      SQLite file (sqlite:///abs/path is /abs/path)
//	sqlite::memory:                 private in-memory SQLite (tests, demos)
//	file:PATH?query                 SQLite URI; query parameters go to the driver
//	PATH                            SQLite file, when url has no scheme
//	postgres://…, postgresql://…    PostgreSQL, as pgx parses it
//
// The caller closes the store. An invalid url is [store.ErrInvalid]; an
// unreachable database [store.ErrUnavailable].
func Open(ctx context.Context, url string, opts *store.Options) (store.Store, error) {
	backend, target, err := Resolve(url)
	if err != nil {
		return nil, err
	}
	// Return a nil interface, not a nil *Store, on error.
	if backend == PostgreSQL {
		s, err := pgstore.Open(ctx, target, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := sqlitestore.Open(ctx, target, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Backend returns which backend url names: [SQLite] or [PostgreSQL].
func Backend(url string) (string, error) {
	b, _, err := Resolve(url)
	return b, err
}

// Resolve returns the backend url names and what its Open takes: a
// PostgreSQL URL, or a SQLite path, ":memory:" or file: URI.
func Resolve(url string) (backend, target string, err error) {
	switch {
	case url == "":
		p, err := store.DefaultSQLitePath()
		if err != nil {
			return "", "", fmt.Errorf("open: %w: no default SQLite path: %v", store.ErrInvalid, err)
		}
		return SQLite, p, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return PostgreSQL, url, nil
	case strings.HasPrefix(url, "file:"):
		return SQLite, url, nil
	case strings.HasPrefix(url, "sqlite:"):
		rest := strings.TrimPrefix(url, "sqlite:")
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			rest = r
		}
		switch {
		case rest == "" || rest == "?" || strings.HasPrefix(rest, "?"):
			return "", "", fmt.Errorf("open %q: %w: no SQLite path", url, store.ErrInvalid)
		case rest == ":memory:" || strings.HasPrefix(rest, "file:"):
			return SQLite, rest, nil
		case strings.Contains(rest, "?"):
			return SQLite, "file:" + rest, nil
		}
		return SQLite, rest, nil
	case strings.Contains(url, "://"):
		scheme, _, _ := strings.Cut(url, "://")
		return "", "", fmt.Errorf("open: %w: unknown database scheme %q (want sqlite:, file:, postgres:// or postgresql://)", store.ErrInvalid, scheme)
	}
	return SQLite, url, nil
}
