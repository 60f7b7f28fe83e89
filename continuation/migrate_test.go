package continuation

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

// TestMigrateConcurrently runs River's migrations from three "processes"
// (stores) on one database at once, then again: every call succeeds.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	opens := map[string]func(t *testing.T) func() store.Store{
		"SQLite": func(t *testing.T) func() store.Store {
			path := filepath.Join(t.TempDir(), "baton.db")
			return func() store.Store {
				s, err := sqlitestore.Open(context.Background(), path, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		},
	}
	if u := pgURL(t); u != "" {
		opens["Postgres"] = func(t *testing.T) func() store.Store {
			schema := testdb.Schema(t, u)
			return func() store.Store { return testdb.Postgres(t, u, schema) }
		}
	}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			next := open(t)
			var svcs []*Service
			for range 3 {
				st := next()
				s, _ := wire(t, st, network(t, newToolLog(), "", scripted.Options{}), testConfig(t, st))
				svcs = append(svcs, s)
			}
			for round := range 2 {
				var wg sync.WaitGroup
				errs := make([]error, len(svcs))
				for i, s := range svcs {
					wg.Go(func() { errs[i] = s.Migrate(t.Context()) })
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d, migrator %d: %v", round, i, err)
					}
				}
			}
		})
	}
}
