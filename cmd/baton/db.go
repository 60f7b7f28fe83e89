package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/open"
)

// databaseHelp documents the --database flag.
const databaseHelp = "database: sqlite:PATH (its folder must exist), file:PATH?QUERY, postgres://USER@HOST/DB or a plain path (default $BATON_DATABASE_URL, else an SQLite file under the user's data directory)"

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

// openStore opens the database named by url (see store/open: sqlite:PATH,
// a bare path, postgres://…). An invalid url is a usage error.
func openStore(ctx context.Context, url string, noMigrate bool) (store.Store, error) {
	st, err := open.Open(ctx, url, &store.Options{NoMigrate: noMigrate})
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return nil, usageError{err}
		}
		return nil, err
	}
	return st, nil
}

// openDatabase opens the database of a --database flag's value (or the
// default: resolveDatabase) for a command that reads or writes the store
// itself, without running a network (keys, inspect).
func openDatabase(ctx context.Context, flagValue string, noMigrate bool) (store.Store, error) {
	url, err := resolveDatabase(flagValue)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, url, noMigrate)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", redactURL(url), err)
	}
	return st, nil
}

// redactURL hides the password of a database URL for messages.
func redactURL(u string) string { return open.Redact(u) }
