package open_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
		{"baton.db", open.SQLite, "baton.db"},
		{"/var/lib/baton.db", open.SQLite, "/var/lib/baton.db"},
		{"./postgres:/x", open.SQLite, "./postgres:/x"},
		{"C:\\baton\\b.db", open.SQLite, "C:\\baton\\b.db"},
		{"C:/baton/b.db", open.SQLite, "C:/baton/b.db"},
		{"SQLite:b.db", open.SQLite, "b.db"},
		{"sqlite:FILE:/tmp/b.db", open.SQLite, "file:/tmp/b.db"},
		{"postgres://u@h:5432/db?sslmode=disable", open.PostgreSQL, "postgres://u@h:5432/db?sslmode=disable"},
		{"postgresql://u@h/db", open.PostgreSQL, "postgresql://u@h/db"},
		{"PostgreSQL://u@h/db", open.PostgreSQL, "postgresql://u@h/db"},
	} {
		backend, target, err := open.Resolve(tc.url)
		if err != nil || backend != tc.backend || target != tc.target {
			t.Errorf("Resolve(%q) = %q, %q, %v; want %q, %q", tc.url, backend, target, err, tc.backend, tc.target)
		}
	}
	for _, tc := range []struct{ url, want string }{
		{"mysql://u@h/db", `unknown scheme "mysql"`},
		{"postgress://x", "did you mean postgres://…?"},
		{"postgres:/127.0.0.1/test", "postgres: needs // before the host"},
		{"postgresql:test", "postgresql: needs // before the host"},
		{"postgres:", "postgres: needs //"},
		{"pg://h/db", "did you mean postgres://…?"},
		{"sqlite3:baton.db", "did you mean sqlite:PATH?"},
		{"sqlite:", "no SQLite path"},
		{"sqlite://", "no SQLite path"},
		{"sqlite:?x=1", "no SQLite path"},
		{"sqlite:postgres://h/db", "the SQLite path starts with a scheme (postgres:)"},
		{"file:", "no SQLite path"},
		{"http://example.com/db", `unknown scheme "http"`},
		{"localhost:5432", `unknown scheme "localhost"`},
		{" postgres://h/db", "white space"},
		{"mysql://user:s3cret@h/db", "user:***@h"},
	} {
		_, _, err := open.Resolve(tc.url)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Resolve(%q): %v, want ErrInvalid saying %q", tc.url, err, tc.want)
		}
	}
}

// TestNoFolderNoStrayFile: a SQLite path whose folder does not exist is
// refused and creates no folder; a URL of another form is refused and
// creates no file in the working directory; the default database's data
// folder is the one folder created.
func TestNoFolderNoStrayFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	ctx := t.Context()
	missing := filepath.Join(dir, "no", "such", "dir", "x.db")
	for _, u := range []string{"sqlite:" + missing, missing, "file:" + missing + "?cache=private", "sqlite:no/such/x.db"} {
		s, err := open.Open(ctx, u, nil)
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "does not exist") || s != nil {
			t.Errorf("Open(%q) = %v, %v; want ErrInvalid naming the missing folder", u, s, err)
		}
	}
	for _, u := range []string{"postgres:/127.0.0.1/test", "postgresql:test", "mysql:x.db", "sqlite3:x.db"} {
		if _, err := open.Open(ctx, u, nil); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Open(%q): %v, want ErrInvalid", u, err)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("the working directory holds %v (%v), want nothing", ents, err)
	}
	// The default database: its data folder is created.
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	def, err := store.DefaultSQLitePath()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"", "sqlite:" + def} {
		s, err := open.Open(ctx, u, nil)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		s.Close()
	}
	if _, err := os.Stat(def); err != nil {
		t.Fatalf("default database: %v", err)
	}
}

func TestOpenSQLite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "baton.db")
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
