package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// databaseHelp documents the --database flag.
const databaseHelp = "database: sqlite:PATH, postgres://… (default $BATON_DATABASE_URL, else an SQLite file under the user's data directory)"

// resolveDatabase returns the database URL to use.
func resolveDatabase(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v := os.Getenv("BATON_DATABASE_URL"); v != "" {
		return v, nil
	}
	p, err := store.DefaultSQLitePath()
	if err != nil {
		return "", fmt.Errorf("default database: %w (set --database or BATON_DATABASE_URL)", err)
	}
	return "sqlite:" + p, nil
}

// openStore opens the database named by url: postgres:// or postgresql://
// URLs on PostgreSQL, sqlite:PATH (or a bare path) on embedded SQLite.
func openStore(ctx context.Context, url string, noMigrate bool) (store.Store, error) {
	opts := &store.Options{NoMigrate: noMigrate}
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return pgstore.Open(ctx, url, opts)
	case strings.HasPrefix(url, "sqlite://"):
		return sqlitestore.Open(ctx, strings.TrimPrefix(url, "sqlite://"), opts)
	case strings.HasPrefix(url, "sqlite:"):
		return sqlitestore.Open(ctx, strings.TrimPrefix(url, "sqlite:"), opts)
	case strings.Contains(url, "://"):
		return nil, usagef("database %q: want sqlite:PATH or postgres://…", url)
	}
	return sqlitestore.Open(ctx, url, opts)
}

// redactURL hides the password of a database URL for messages.
func redactURL(u string) string {
	at := strings.Index(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	cred := u[scheme+3 : at]
	if user, _, ok := strings.Cut(cred, ":"); ok {
		return u[:scheme+3] + user + ":***" + u[at:]
	}
	return u
}
