package open_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/open"
	"github.com/batonhq/baton/store/sqlitestore"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	def, err := store.DefaultSQLitePath()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url, backend, target string
	}{
		{"", open.SQLite, def},
		{"sqlite:baton.db", open.SQLite, "baton.db"},
		{"sqlite:/var/lib/baton/baton.db", open.SQLite, "/var/lib/baton/baton.db"},
		{"sqlite:///var/lib/baton.db", open.SQLite, "/var/lib/baton.db"},
		{"sqlite://rel/baton.db", open.SQLite, "rel/baton.db"},
		{"sqlite::memory:", open.SQLite, ":memory:"},
		{"sqlite://:memory:", open.SQLite, ":memory:"},
		{"sqlite:/tmp/b.db?_pragma=cache_size(-2000)", open.SQLite, "file:/tmp/b.db?_pragma=cache_size(-2000)"},
		{"sqlite:file:/tmp/b.db?mode=rwc", open.SQLite, "file:/tmp/b.db?mode=rwc"},
		{"file:/tmp/b.db?cache=private", open.SQLite, "file:/tmp/b.db?cache=private"},
		{"file::memory:", open.SQLite, "file::memory:"},
		{"./baton.db", open.SQLite, "./baton.db"},
		{"postgres://u@h:5432/db?sslmode=disable", open.PostgreSQL, "postgres://u@h:5432/db?sslmode=disable"},
		{"postgresql://u@h/db", open.PostgreSQL, "postgresql://u@h/db"},
	} {
		backend, target, err := open.Resolve(tc.url)
		if err != nil || backend != tc.backend || target != tc.target {
			t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", tc.url, backend, target, err, tc.backend, tc.target)
		}
	}
	for _, bad := range []string{"mysql://u@h/db", "postgress://x", "sqlite:", "sqlite://", "sqlite:?x=1"} {
		if _, _, err := open.Resolve(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Resolve(%q): %v, want ErrInvalid", bad, err)
		}
	}
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "nested", "baton.db")
	for _, u := range []string{"sqlite:" + path, "sqlite::memory:", "file:" + path + "?_pragma=cache_size(-4000)"} {
		s, err := open.Open(ctx, u, nil)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		if _, ok := s.(*sqlitestore.Store); !ok {
			t.Fatalf("Open(%q) = %T", u, s)
		}
		if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
			t.Fatal(err)
		}
		th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "o", ThreadID: th.ID,
			Messages: []store.NewMessage{{Message: message.User("hi")}}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file: %v", err)
	}
}

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	u := testdb.URL(t)
	// NoMigrate: only connect, leaving the database's schemas alone.
	s, err := open.Open(t.Context(), u, &store.Options{NoMigrate: true, Schema: "baton_open_test_absent"})
	var sve *store.SchemaVersionError
	if !errors.As(err, &sve) {
		t.Fatalf("Open(%q): %v, want a SchemaVersionError from pgstore", u, err)
	}
	if s != nil {
		t.Fatalf("Open returned a store with an error: %T", s)
	}
}
