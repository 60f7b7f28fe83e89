package sqlitestore_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/store/storetest"
)

// beforeFewerBtrees is the version before 008_fewer_btrees.
const beforeFewerBtrees = 7

// beforePushThread is the version before 015_push_configs_thread.
const beforePushThread = 14

// schema describes the database's schema: each table, index and trigger's
// SQL (comments and spacing dropped), each table's rowid and strictness,
// columns, foreign keys and indexes, as SQLite reports them.
func schema(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx := t.Context()
	var sb strings.Builder
	query := func(q string, args ...any) [][]string {
		t.Helper()
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = v.String
			}
			out = append(out, row)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	comment := regexp.MustCompile(`--[^\n]*`)
	space := regexp.MustCompile(`\s+`)
	for _, r := range query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema
		WHERE name NOT LIKE 'sqlite_stat%' AND name != 'baton_schema_migrations' ORDER BY type, name`) {
		text := strings.TrimSpace(space.ReplaceAllString(comment.ReplaceAllString(r[3], ""), " "))
		fmt.Fprintf(&sb, "%s %s on %s: %s\n", r[0], r[1], r[2], text)
		if r[0] != "table" {
			continue
		}
		for _, l := range query(`SELECT type, ncol, wr, strict FROM pragma_table_list WHERE name = $1 AND schema = 'main'`, r[1]) {
			fmt.Fprintf(&sb, "  list %v\n", l)
		}
		for _, c := range query(`SELECT * FROM pragma_table_xinfo($1)`, r[1]) {
			fmt.Fprintf(&sb, "  column %v\n", c)
		}
		for _, f := range query(`SELECT * FROM pragma_foreign_key_list($1) ORDER BY id, seq`, r[1]) {
			fmt.Fprintf(&sb, "  foreign key %v\n", f)
		}
		for _, ix := range query(`SELECT name, "unique", origin, partial FROM pragma_index_list($1) ORDER BY name`, r[1]) {
			fmt.Fprintf(&sb, "  index %v:", ix)
			for _, c := range query(`SELECT seqno, cid, name, "desc", key FROM pragma_index_xinfo($1) ORDER BY seqno`, ix[0]) {
				fmt.Fprintf(&sb, " %v", c)
			}
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// TestMigrateFewerBtreesDown checks that 008_fewer_btrees's down migration
// restores the schema of 007 exactly, and that its up migration makes the
// schema of a fresh database.
func TestMigrateFewerBtreesDown(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	latest := schema(t, s.DB())
	if err := s.MigrateTo(ctx, beforeFewerBtrees); err != nil {
		t.Fatal(err)
	}
	down := schema(t, s.DB())
	if err := s.MigrateTo(ctx, sqlitestore.LatestVersion()); err != nil {
		t.Fatal(err)
	}
	if up := schema(t, s.DB()); up != latest {
		t.Fatalf("schema after migrating down and up again:\n%s\nfresh:\n%s", up, latest)
	}

	fresh := openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	if err := fresh.MigrateTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := fresh.MigrateTo(ctx, beforeFewerBtrees); err != nil {
		t.Fatal(err)
	}
	if want := schema(t, fresh.DB()); down != want {
		t.Fatalf("schema after migrating down to %d:\n%s\nmigrated up to %d:\n%s", beforeFewerBtrees, down, beforeFewerBtrees, want)
	}

	// What 008 is for: run_leases keyed by its primary key alone, without
	// an index on expires_at, messages without one on (id, owner_id),
	// drafts referencing messages (id).
	var wr int
	if err := s.DB().QueryRowContext(ctx, `SELECT wr FROM pragma_table_list WHERE name = 'run_leases' AND schema = 'main'`).Scan(&wr); err != nil || wr != 1 {
		t.Fatalf("run_leases WITHOUT ROWID = %d, %v", wr, err)
	}
	var n int
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM pragma_index_list('messages')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("messages has %d indexes, %v; want 2 (the primary key, (thread_id, seq))", n, err)
	}
	if err := s.DB().QueryRowContext(ctx, `SELECT count(*) FROM pragma_index_list('run_leases')`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("run_leases has %d indexes, %v; want 1 (the primary key, which is the table)", n, err)
	}
	var from, to string
	if err := s.DB().QueryRowContext(ctx, `SELECT group_concat("from"), group_concat("to") FROM pragma_foreign_key_list('message_drafts')`).Scan(&from, &to); err != nil || from != "message_id" || to != "id" {
		t.Fatalf("message_drafts' foreign key (%s) references messages (%s), %v", from, to, err)
	}
}

// TestMigrateFewerBtreesRows migrates rows written under 007 through
// 008_fewer_btrees and back, and checks that every row, constraint and
// cascade survives.
func TestMigrateFewerBtreesRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	storetest.MigrateKeepsRows(t, s, beforeFewerBtrees, sqlitestore.LatestVersion())
	db := s.DB()
	check := func() {
		t.Helper()
		var fk int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
			t.Fatalf("foreign key check: %d violations, %v", fk, err)
		}
		var ok string
		if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("integrity check: %s, %v", ok, err)
		}
	}
	check()
	storetest.MigrateKeepsCascades(t, s, beforeFewerBtrees, sqlitestore.LatestVersion(), db, storetest.Cascades{Now: "0", Check: check})
	// The foreign keys refuse what they refused.
	for _, q := range []string{
		`INSERT INTO message_drafts (message_id, owner_id, text, updated_at) VALUES ('missing', 'o', '', 0)`,
		`INSERT INTO run_leases (owner_id, run_id, thread_id, holder, expires_at) VALUES ('o', 'r', 'missing', 'h', 0)`,
		`INSERT INTO job_runs (id, owner_id, idempotency_key, kind, thread_id, status, created_at, updated_at)
			VALUES ('j', 'o', 'k', 'k', 'missing', 'queued', 0, 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
			t.Fatalf("%s: %v, want a foreign key error", q, err)
		}
	}
}

// TestMigratePushConfigsThread checks 015_push_configs_thread: a push
// config whose thread is gone is not kept by the migration, the others
// are; since, deleting a thread deletes its configs; down and up again
// keep the rows.
func TestMigratePushConfigsThread(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openFile(t, filepath.Join(t.TempDir(), "baton.db"), nil)
	if err := s.MigrateTo(ctx, beforePushThread); err != nil {
		t.Fatal(err)
	}
	db := s.DB()
	count := func() string {
		t.Helper()
		var c string
		if err := db.QueryRowContext(ctx, `SELECT coalesce(group_concat(id, ' '), '') FROM (SELECT id FROM push_configs ORDER BY id)`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Under 014 a config could name any thread: one of a thread deleted
	// since, one of a thread that never was.
	kept, deleted, gone := storetest.OwnerThread(t, s, "o"), storetest.OwnerThread(t, s, "o"), storetest.OwnerThread(t, s, "o")
	storetest.PutPushConfig(t, s, "o", kept, "kept")
	storetest.PutPushConfig(t, s, "o", deleted, "deleted")
	storetest.PutPushConfig(t, s, "o", gone, "gone")
	storetest.PutPushConfig(t, s, "o", "never", "never")
	if _, err := db.ExecContext(ctx, `DELETE FROM threads WHERE id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "deleted gone kept never" {
		t.Fatalf("configs under 014: %q", got)
	}
	for _, v := range []int{sqlitestore.LatestVersion(), beforePushThread, sqlitestore.LatestVersion()} {
		if err := s.MigrateTo(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(); got != "deleted kept" {
		t.Fatalf("configs after the migration: %q, want those of existing threads", got)
	}
	var fk int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fk); err != nil || fk != 0 {
		t.Fatalf("foreign key check: %d violations, %v", fk, err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM threads WHERE id = $1`, deleted); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "kept" {
		t.Fatalf("configs after deleting a thread: %q, want kept", got)
	}
}
