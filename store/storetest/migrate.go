package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/batonhq/baton/store"
)

// Migrator is a store whose schema can be moved to any version, as both
// backends' stores are.
type Migrator interface {
	store.Store
	// MigrateTo migrates the schema up or down to version.
	MigrateTo(ctx context.Context, version int) error
	// SchemaVersion returns the version the schema is at.
	SchemaVersion(ctx context.Context) (int, error)
}

// MigrateConcurrent opens n stores on one fresh database at once, as n
// processes would, migrates from all of them at once, twice, and checks
// that they all see the latest schema and the same rows. open opens the
// database with migrations on; the stores are closed when the test ends.
// It returns the stores for any further check.
func MigrateConcurrent[S Migrator](t *testing.T, n, latest int, open func() (S, error)) []S {
	t.Helper()
	stores := make([]S, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = open() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	for range 2 {
		for i := range stores {
			wg.Go(func() { errs[i] = stores[i].Migrate(t.Context()) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Migrate %d: %v", i, err)
			}
		}
	}
	for _, s := range stores {
		v, err := s.SchemaVersion(t.Context())
		if err != nil || v != latest {
			t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, latest)
		}
	}
	// All work on the same database.
	if _, err := stores[0].EnsureOwner(t.Context(), &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[n-1].GetOwner(t.Context(), &store.GetOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	return stores
}

// MigrateDownUp migrates s down to nothing, up to latest, down to 1, to
// nothing and up again, checking the version after each move, and that the
// store then works.
func MigrateDownUp(t *testing.T, s Migrator, latest int) {
	t.Helper()
	ctx := t.Context()
	for _, v := range []int{0, latest, 1, 0, latest} {
		if err := s.MigrateTo(ctx, v); err != nil {
			t.Fatalf("MigrateTo(%d): %v", v, err)
		}
		if got, err := s.SchemaVersion(ctx); err != nil || got != v {
			t.Fatalf("after MigrateTo(%d): version %d, %v", v, got, err)
		}
	}
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatalf("after migrating down and up: %v", err)
	}
	if err := s.MigrateTo(ctx, latest+1); err == nil {
		t.Fatal("MigrateTo past the latest version succeeded")
	}
}

// NoMigrate checks [store.Options.NoMigrate] on one fresh database: a store
// opened with it refuses the empty schema and the schema migrated to old
// with a *[store.SchemaVersionError], and opens once the schema is the
// latest. open opens the database, with NoMigrate as given; the stores it
// opens are closed when the test ends.
func NoMigrate[S Migrator](t *testing.T, old, latest int, open func(noMigrate bool) (S, error)) {
	t.Helper()
	ctx := t.Context()
	opened := func(noMigrate bool) (S, error) {
		s, err := open(noMigrate)
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	_, err := opened(true)
	var sve *store.SchemaVersionError
	if !errors.As(err, &sve) || !errors.Is(err, store.ErrSchemaVersion) || sve.Current != 0 || sve.Required != latest {
		t.Fatalf("Open(NoMigrate) of an empty database: %v", err)
	}
	s, err := opened(false)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MigrateTo(ctx, old); err != nil {
		t.Fatal(err)
	}
	_, err = opened(true)
	if !errors.As(err, &sve) || sve.Current != old || sve.Required != latest {
		t.Fatalf("Open(NoMigrate) of an old schema: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := opened(true); err != nil {
		t.Fatalf("Open(NoMigrate) of the latest schema: %v", err)
	}
}

// Opened returns the store s, to be closed when the test ends, failing the
// test if err is not nil. It is called as Opened(pgstore.Open(…))(t).
func Opened[S interface{ Close() error }](s S, err error) func(t testing.TB) S {
	return func(t testing.TB) S {
		t.Helper()
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
