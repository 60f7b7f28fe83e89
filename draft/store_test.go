package draft_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// backends returns the stores the tests run on: SQLite always, PostgreSQL
// when BATON_TEST_DATABASE_URL is set (required in CI).
func backends(t *testing.T) map[string]func(t *testing.T) store.Store {
	t.Helper()
	out := map[string]func(t *testing.T) store.Store{"SQLite": openSQLite}
	if u := os.Getenv("BATON_TEST_DATABASE_URL"); u != "" {
		out["Postgres"] = func(t *testing.T) store.Store { return openPG(t, u) }
	} else if os.Getenv("CI") == "true" {
		t.Fatal("BATON_TEST_DATABASE_URL is not set in CI: the PostgreSQL tests must run")
	}
	return out
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "baton.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var schemaSeq atomic.Int64

func openPG(t *testing.T, url string) store.Store {
	t.Helper()
	schema := fmt.Sprintf("draft_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
	s, err := pgstore.Open(t.Context(), url, &store.Options{Schema: schema, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.Pool().Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		s.Close()
	})
	return s
}
