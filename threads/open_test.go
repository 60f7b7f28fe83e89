package threads_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/jackc/pgx/v5"
)

func openSQLite(ctx context.Context, path string) (store.Store, error) {
	return sqlitestore.Open(ctx, path, nil)
}

// pgURL returns the PostgreSQL test database, skipping the test when none is
// configured outside CI, failing it in CI.
func pgURL(t interface {
	Helper()
	Skip(...any)
	Fatal(...any)
}) string {
	t.Helper()
	u := os.Getenv("BATON_TEST_DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("BATON_TEST_DATABASE_URL is not set in CI: the PostgreSQL tests must run")
		}
		t.Skip("BATON_TEST_DATABASE_URL is not set: skipping the PostgreSQL tests (scripts/test.sh sets it)")
	}
	return u
}

var schemaSeq atomic.Int64

// openPG opens a store in a fresh schema, dropped when the test ends.
func openPG(t *testing.T, url string) store.Store {
	t.Helper()
	schema := fmt.Sprintf("threads_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
	s, err := pgstore.Open(t.Context(), url, &store.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := s.Pool().Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		s.Close()
	})
	return s
}
