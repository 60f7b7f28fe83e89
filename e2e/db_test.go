package e2e_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

// backend is a kind of database the tests run on.
type backend struct {
	name string
	// open makes a new, empty database, removed when the test ends.
	open func(t *testing.T) *database
}

// backends returns SQLite and, when BATON_TEST_DATABASE_URL is set,
// PostgreSQL; with CI=true and no URL it fails t. only, if not empty,
// picks one: "sqlite", or a postgres:// URL to use instead of
// BATON_TEST_DATABASE_URL.
func backends(t *testing.T, only string) []backend {
	t.Helper()
	sqlite := backend{"SQLite", openSQLite}
	pg := func(url string) backend {
		return backend{"Postgres", func(t *testing.T) *database { return openPostgres(t, url) }}
	}
	switch {
	case only == "sqlite":
		return []backend{sqlite}
	case strings.HasPrefix(only, "postgres://"), strings.HasPrefix(only, "postgresql://"):
		return []backend{pg(only)}
	case only != "":
		t.Fatalf("database %q: want sqlite or a postgres:// URL", only)
	}
	out := []backend{sqlite}
	if u := os.Getenv(testdb.URLVar); u != "" {
		out = append(out, pg(u))
	} else if os.Getenv("CI") == "true" {
		t.Fatal(testdb.URLVar + " is not set in CI: the PostgreSQL tests must run")
	}
	return out
}

// eachBackend runs f on each backend (backends(t, "")), as parallel
// subtests named after them; t runs in parallel too.
func eachBackend(t *testing.T, f func(t *testing.T, be backend)) {
	t.Helper()
	t.Parallel()
	for _, be := range backends(t, "") {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			f(t, be)
		})
	}
}

// onPostgres runs f on PostgreSQL, as subtest "Postgres": replicas share
// a database (SQLite is one process's). Without a PostgreSQL URL it skips
// (with CI=true, backends fails instead).
func onPostgres(t *testing.T, f func(t *testing.T, be backend)) {
	t.Helper()
	for _, be := range backends(t, "") {
		if be.name == "Postgres" {
			t.Run(be.name, func(t *testing.T) { f(t, be) })
			return
		}
	}
	t.Skip("PostgreSQL only (replicas share a database), and no PostgreSQL URL is set")
}

// database is one database: the URL the processes get, and the test's own
// store on it, opened (and migrated) before any process starts.
type database struct {
	url string
	st  store.Store
	// sql is the store's database for the test's own queries, run as the
	// connecting user (the superuser on PostgreSQL), past row-level
	// security.
	sql *sql.DB
}

func openSQLite(t *testing.T) *database {
	path := filepath.Join(t.TempDir(), "baton.db")
	st, err := sqlitestore.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &database{url: "sqlite:" + path, st: st, sql: st.DB()}
}

// openPostgres makes a fresh schema in the database at url (dropped at the
// end, after the processes, which are stopped by cleanups registered
// later); the processes find it through search_path.
func openPostgres(t *testing.T, url string) *database {
	schema := testdb.Schema(t, url)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	st := testdb.Postgres(t, url, schema)
	db := stdlib.OpenDBFromPool(st.Pool())
	t.Cleanup(func() { db.Close() })
	return &database{url: url + sep + "search_path=" + schema, st: st, sql: db}
}

// count runs a counting query (plain SQL both backends take) as the
// database's superuser, past row-level security.
func (d *database) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	if err := d.sql.QueryRowContext(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// column runs a query of one text column.
func (d *database) column(t *testing.T, query string) []string {
	t.Helper()
	rows, err := d.sql.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// messages returns a thread's stored messages, the placeholders of
// background hand-overs apart.
func (d *database) messages(t *testing.T, thread string) (msgs []message.Message, placeholders []*store.Message) {
	t.Helper()
	ms, err := d.st.ListMessages(context.Background(), &store.ListMessagesParams{OwnerID: owner, ThreadID: thread})
	if err != nil {
		t.Fatalf("messages of thread %s: %v", thread, err)
	}
	for _, m := range ms {
		if continuation.IsPlaceholder(m) {
			placeholders = append(placeholders, m)
			continue
		}
		msgs = append(msgs, m.Message)
	}
	return msgs, placeholders
}

// threads returns the ids of the owner's threads.
func (d *database) threads(t *testing.T) []string {
	t.Helper()
	var ids []string
	p := &store.ListThreadsParams{OwnerID: owner, Limit: 1000}
	for {
		page, err := d.st.ListThreads(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range page.Threads {
			ids = append(ids, th.ID)
		}
		if page.NextCursor == "" {
			return ids
		}
		p.Cursor = page.NextCursor
	}
}
