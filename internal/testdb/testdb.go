// Package testdb opens the stores tests run on: SQLite in a temporary
// directory, and PostgreSQL in a fresh schema of the database that
// BATON_TEST_DATABASE_URL names (e.g.
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). Everything it
// opens is closed, and every schema it makes dropped, when the test ends.
package testdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// URLVar is the environment variable that names the PostgreSQL test
// database.
const URLVar = "BATON_TEST_DATABASE_URL"

// Backends returns the stores to run a test on, by name: "SQLite" always,
// and "Postgres" (a fresh schema per store) when URLVar is set. With CI=true
// and URLVar unset, it fails t: the PostgreSQL tests must run in CI.
func Backends(t testing.TB) map[string]func(t testing.TB) store.Store {
	t.Helper()
	out := map[string]func(t testing.TB) store.Store{"SQLite": func(t testing.TB) store.Store { return SQLite(t) }}
	if u := os.Getenv(URLVar); u != "" {
		out["Postgres"] = func(t testing.TB) store.Store { return Postgres(t, u, Schema(t, u)) }
	} else if os.Getenv("CI") == "true" {
		t.Fatal(URLVar + " is not set in CI: the PostgreSQL tests must run")
	}
	return out
}

// Each runs f as a parallel subtest of t on each of [Backends], with the
// opener of its stores.
func Each(t *testing.T, f func(t *testing.T, open func(t testing.TB) store.Store)) {
	t.Helper()
	for name, open := range Backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, open)
		})
	}
}

// URL returns the PostgreSQL test database's URL. Without one it skips the
// test, or fails it when CI=true.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(URLVar)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(URLVar + " is not set in CI: the PostgreSQL tests must run")
		}
		t.Skip(URLVar + " is not set: skipping the PostgreSQL tests")
	}
	return u
}

// SQLite opens a store in a new temporary directory.
func SQLite(t testing.TB) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "baton.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var schemaSeq atomic.Int64

// Schema returns the name of a new schema for the database at url, dropped
// when the test ends, after the stores opened in it are closed.
func Schema(t testing.TB, url string) string {
	t.Helper()
	schema := fmt.Sprintf("baton_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// Postgres opens a store in schema of the database at url, with a pool of 4
// connections.
func Postgres(t testing.TB, url, schema string) *pgstore.Store {
	t.Helper()
	return PostgresWith(t, url, store.Options{Schema: schema, MaxConns: 4})
}

// PostgresWith opens a store of the database at url with opts, in a new
// [Schema] when opts.Schema is empty.
func PostgresWith(t testing.TB, url string, opts store.Options) *pgstore.Store {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = Schema(t, url)
	}
	s, err := pgstore.Open(context.Background(), url, &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// PostgresTraced is PostgresWith, the round trips of the store's pool
// recorded by the returned tracer.
func PostgresTraced(t testing.TB, url string, opts store.Options) (*pgstore.Store, *Trips) {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = Schema(t, url)
	}
	tr := &Trips{}
	s, err := pgstore.OpenWith(context.Background(), url, &opts, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tr })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, tr
}

// AsOwner runs fn in a transaction on st's pool scoped as st scopes its
// own: the application role (pgstore.DefaultAppRole) and baton.owner set to
// owner, so that row-level security alone decides what fn sees and may
// write. The transaction is rolled back.
func AsOwner(ctx context.Context, st *pgstore.Store, owner string, fn func(tx pgx.Tx) error) error {
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT set_config('role', $1, true), set_config('baton.owner', $2, true)`, pgstore.DefaultAppRole, owner); err != nil {
		return err
	}
	return fn(tx)
}
