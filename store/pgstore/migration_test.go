package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/storetest"
)

// Versions before migrations that tests look at.
const (
	beforeFewerIndexes    = 8  // before 009_fewer_indexes
	beforeJobRunsKeyOrder = 9  // before 010_job_runs_key_order
	beforeMessagesTrigger = 10 // before 011_messages_thread_trigger
	beforePushThread      = 20 // before 021_push_configs_thread
)

// describe describes the tables of schema: columns, constraints, indexes,
// policies, triggers and functions, as the catalogs define them, the
// schema's name left out.
func describe(t *testing.T, conn *pgx.Conn, schema string) string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END || ' identity ' || a.attidentity::text
       || ' default ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE c.relnamespace = $1::text::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
  AND c.relname <> 'baton_schema_migrations'
UNION ALL
SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || contype::text || ' ' || pg_get_constraintdef(oid)
FROM pg_constraint WHERE connamespace = $1::text::regnamespace
UNION ALL
SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1::text
UNION ALL
SELECT 'policy ' || tablename || ' ' || policyname || ' ' || cmd || ' ' || coalesce(qual, '') FROM pg_policies WHERE schemaname = $1::text
UNION ALL
SELECT 'trigger ' || pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE c.relnamespace = $1::text::regnamespace AND NOT t.tgisinternal
UNION ALL
SELECT 'function ' || pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.pronamespace = $1::text::regnamespace
ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// Functions name the schema in their search_path.
	return strings.ReplaceAll(strings.ReplaceAll(strings.Join(lines, "\n"), schema+".", ""), schema, "SCHEMA")
}

// migratesDownExactly checks that migrating a fresh store down to version
// makes the schema of a database migrated up to version, and that migrating
// up again makes the latest schema. It returns the latest schema.
func migratesDownExactly(t *testing.T, conn *pgx.Conn, version int) string {
	t.Helper()
	ctx := t.Context()
	schema := freshSchema(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: schema})
	latest := describe(t, conn, schema)
	if err := s.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	down := describe(t, conn, schema)
	if err := s.MigrateTo(ctx, pgstore.LatestVersion()); err != nil {
		t.Fatal(err)
	}
	if up := describe(t, conn, schema); up != latest {
		t.Fatalf("schema after migrating down and up again:\n%s\nfresh:\n%s", up, latest)
	}

	other := freshSchema(t)
	fresh := open(t, testdb.URL(t), &store.Options{Schema: other})
	if err := fresh.MigrateTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := fresh.MigrateTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	if want := describe(t, conn, other); down != want {
		t.Fatalf("schema after migrating down to %d:\n%s\nmigrated up to %d:\n%s", version, down, version, want)
	}
	return latest
}

// TestMigrateFewerIndexesDown checks that 009_fewer_indexes's down
// migration restores the schema of 008 exactly, and that migrating down
// and up again makes the schema of a fresh database.
func TestMigrateFewerIndexesDown(t *testing.T) {
	t.Parallel()
	latest := migratesDownExactly(t, admin(t), beforeFewerIndexes)

	// What 009 is for: no index on messages (id, owner_id), checkpoints
	// (seq) alone or run_leases (expires_at), drafts referencing messages (id).
	for _, gone := range []string{"messages_id_owner_id_key ", "(seq)", "FOREIGN KEY (message_id, owner_id)", "run_leases_expiry_idx"} {
		if strings.Contains(latest, gone) {
			t.Fatalf("the latest schema still has %s:\n%s", gone, latest)
		}
	}
	for _, want := range []string{"index checkpoints_pkey CREATE UNIQUE INDEX checkpoints_pkey ON checkpoints USING btree (id)",
		"message_drafts_message_id_fkey f FOREIGN KEY (message_id) REFERENCES messages(id) ON DELETE CASCADE"} {
		if !strings.Contains(latest, want) {
			t.Fatalf("the latest schema lacks %s:\n%s", want, latest)
		}
	}
}

// TestMigrateFewerIndexesRows migrates rows written under 008 through
// 009_fewer_indexes and back, and checks that every row, constraint and
// cascade survives.
func TestMigrateFewerIndexesRows(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	schema := freshSchema(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: schema})
	storetest.MigrateKeepsRows(t, s, beforeFewerIndexes, pgstore.LatestVersion())

	// Under the store, as the superuser (no row-level security).
	cfg, err := pgx.ParseConfig(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = schema
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	storetest.MigrateKeepsCascades(t, s, beforeFewerIndexes, pgstore.LatestVersion(), db, storetest.Cascades{Now: "now()",
		Migrated: func() {
			// The checkpoint written after the migrations has a greater seq.
			var steps string
			if err := db.QueryRowContext(ctx, `SELECT string_agg(step::text, ' ' ORDER BY seq) FROM checkpoints`).Scan(&steps); err != nil || steps != "0 1" {
				t.Fatalf("checkpoint steps in seq order %q, %v", steps, err)
			}
		},
	})
	if _, err := db.ExecContext(ctx, `INSERT INTO message_drafts (message_id, owner_id, text, updated_at) VALUES ('missing', 'o', '', now())`); err == nil ||
		!strings.Contains(err.Error(), "23503") {
		t.Fatalf("a draft of a missing message: %v, want a foreign key violation", err)
	}
}

// TestMigrateJobRunsKeyOrder checks 010_job_runs_key_order: its down
// migration restores the schema of 009 exactly, and with the idempotency
// key leading job_runs' unique index a job run found by owner and id is
// found through the primary key. Under 009, on a new database, the planner
// found it through the unique index on owner_id alone, reading every job
// run of the owner.
func TestMigrateJobRunsKeyOrder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	conn := admin(t)
	latest := migratesDownExactly(t, conn, beforeJobRunsKeyOrder)
	if want := "job_runs_owner_id_idempotency_key_key u UNIQUE (idempotency_key, owner_id)"; !strings.Contains(latest, want) {
		t.Fatalf("the latest schema lacks %s:\n%s", want, latest)
	}

	// The statement shape of a job run's transitions, planned on a new
	// database holding a few job runs of one owner, at each version.
	schema := freshSchema(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: schema})
	// Index scans only: the few rows here fit a page, which a sequential
	// scan reads as cheaply; the question is which index.
	if _, err := conn.Exec(ctx, `SET search_path = `+pgx.Identifier{schema}.Sanitize()+`; SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	plan := func(version int) string {
		t.Helper()
		if err := s.MigrateTo(ctx, version); err != nil {
			t.Fatal(err)
		}
		var lines []string
		rows, err := conn.Query(ctx, `EXPLAIN UPDATE job_runs SET attempt = attempt + 1 WHERE owner_id = 'o' AND id = 'j1' AND attempt = 0`)
		if err == nil {
			lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	if err := s.MigrateTo(ctx, beforeJobRunsKeyOrder); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO owners (id, created_at) VALUES ('o', now());
INSERT INTO threads (id, owner_id, name, network, active_agent, metadata, version, next_seq, created_at, updated_at)
  SELECT 't' || i, 'o', '', 'n', 'a', '{}', 1, 1, now(), now() FROM generate_series(1, 3) i;
INSERT INTO job_runs (id, owner_id, idempotency_key, kind, thread_id, status, created_at, updated_at)
  SELECT 'j' || i, 'o', 'k' || i, 'x', 't' || i, 'queued', now(), now() FROM generate_series(1, 3) i`); err != nil {
		t.Fatal(err)
	}
	t.Logf("under %d:\n%s", beforeJobRunsKeyOrder, plan(beforeJobRunsKeyOrder))
	if got := plan(pgstore.LatestVersion()); !strings.Contains(got, "Index Scan using job_runs_pkey") || !strings.Contains(got, "Index Cond: (id = 'j1'::text)") {
		t.Fatalf("a job run by owner and id, planned:\n%s\nwant an index scan of the primary key", got)
	}
	// The key's lookups and ON CONFLICT still find the unique index.
	if _, err := conn.Exec(ctx, `INSERT INTO job_runs (id, owner_id, idempotency_key, kind, status, created_at, updated_at)
  VALUES ('j4', 'o', 'k1', 'x', 'queued', now(), now()) ON CONFLICT (owner_id, idempotency_key) DO NOTHING`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE owner_id = 'o' AND idempotency_key = 'k1'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("job runs of key k1: %d, %v", n, err)
	}
}

// TestMigrateMessagesThreadTrigger checks 011_messages_thread_trigger: its
// down migration restores the schema of 010 exactly; messages no longer
// reference threads by a foreign key, and deleting threads still deletes
// their messages and drafts — in the application role under row-level
// security, as the superuser from a session whose search_path is another
// schema's, through an owner's deletion, and when the DELETE waits for a
// transaction appending to the thread.
func TestMigrateMessagesThreadTrigger(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	latest := migratesDownExactly(t, admin(t), beforeMessagesTrigger)
	if strings.Contains(latest, "messages_thread_id_owner_id_fkey") || !strings.Contains(latest, "trigger CREATE TRIGGER threads_delete_messages AFTER DELETE ON threads") {
		t.Fatalf("the latest schema keeps the messages' foreign key to threads or lacks the trigger:\n%s", latest)
	}

	schema := freshSchema(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: schema})
	thread := func(owner string) string {
		t.Helper()
		storetest.Must(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}))(t)
		th := storetest.Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner, Network: "n",
			Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleUser, Parts: []message.Part{{Type: message.PartText, Text: "hi"}}}}}}))(t)
		ms := storetest.Must(s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: th.ID,
			Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}}))(t)
		storetest.Must(s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: owner, MessageID: ms[0].ID, Text: "part"}))(t)
		return th.ID
	}
	// Another session's search_path: the public schema's.
	conn := admin(t)
	q := pgx.Identifier{schema}.Sanitize()
	count := func(thread string) string {
		t.Helper()
		var c string
		if err := conn.QueryRow(ctx, `SELECT format('%s %s', (SELECT count(*) FROM `+q+`.messages WHERE thread_id = $1),
			(SELECT count(*) FROM `+q+`.message_drafts d JOIN `+q+`.messages m ON m.id = d.message_id WHERE m.thread_id = $1))`, thread).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	kept, byApp, bySuper, byOwner := thread("keep"), thread("app"), thread("super"), thread("gone")
	for _, th := range []string{kept, byApp, bySuper, byOwner} {
		if got := count(th); got != "2 1" {
			t.Fatalf("thread %s: messages and drafts %s, want 2 1", th, got)
		}
	}

	// In the application role, under row-level security.
	deleteThreadAsApp(t, s, byApp)
	// As the superuser, from another search_path; and an owner's deletion.
	if _, err := conn.Exec(ctx, `DELETE FROM `+q+`.threads WHERE id = $1`, bySuper); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM `+q+`.owners WHERE id = 'gone'`); err != nil {
		t.Fatal(err)
	}
	for _, th := range []string{byApp, bySuper, byOwner} {
		if got := count(th); got != "0 0" {
			t.Fatalf("deleted thread %s: messages and drafts %s, want none", th, got)
		}
	}
	if got := count(kept); got != "2 1" {
		t.Fatalf("another owner's thread: messages and drafts %s, want 2 1", got)
	}

	// A DELETE of the thread while a transaction appends to it waits for
	// that transaction (its sequence reservation locks the thread's row) and
	// then deletes the message it appended.
	appender, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer appender.Rollback(context.WithoutCancel(ctx))
	if _, err := appender.Exec(ctx, `UPDATE threads SET next_seq = next_seq + 1 WHERE id = $1 AND owner_id = 'keep'`, kept); err != nil {
		t.Fatal(err)
	}
	if _, err := appender.Exec(ctx, `INSERT INTO messages (id, owner_id, thread_id, seq, role, created_at, updated_at)
		SELECT 'late', 'keep', id, next_seq, 'user', now(), now() FROM threads WHERE id = $1`, kept); err != nil {
		t.Fatal(err)
	}
	deleter := admin(t)
	var pid uint32
	if err := deleter.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() {
		_, err := deleter.Exec(ctx, `DELETE FROM `+q+`.threads WHERE id = $1`, kept)
		deleted <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for waiting := false; !waiting; {
		if err := conn.QueryRow(ctx, `SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the DELETE neither waited for the appending transaction nor ended")
		}
		select {
		case err := <-deleted:
			t.Fatalf("the DELETE did not wait for the appending transaction: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := appender.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	if got := count(kept); got != "0 0" {
		t.Fatalf("a thread deleted while a message was appended: messages and drafts %s, want none", got)
	}
}

// TestMigratePushConfigsThread checks 021_push_configs_thread: a push
// config whose thread is gone is deleted by the migration, the others
// kept; since, deleting a thread deletes its configs, in the application
// role under row-level security and as the superuser; the down migration
// restores the schema of 020.
func TestMigratePushConfigsThread(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	latest := migratesDownExactly(t, admin(t), beforePushThread)
	if !strings.Contains(latest, "FOREIGN KEY (thread_id, owner_id) REFERENCES threads(id, owner_id) ON DELETE CASCADE") {
		t.Fatalf("the latest schema lacks push_configs' foreign key to threads:\n%s", latest)
	}

	schema := freshSchema(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: schema})
	if err := s.MigrateTo(ctx, beforePushThread); err != nil {
		t.Fatal(err)
	}
	conn := admin(t)
	q := pgx.Identifier{schema}.Sanitize()
	count := func() string {
		t.Helper()
		var c string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(id, ' ' ORDER BY id), '') FROM `+q+`.push_configs`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Under 020 a config could name any thread: one of a thread deleted
	// since, one of a thread that never was.
	kept, byApp, bySuper, gone := storetest.OwnerThread(t, s, "app"), storetest.OwnerThread(t, s, "app"), storetest.OwnerThread(t, s, "super"), storetest.OwnerThread(t, s, "gone")
	storetest.PutPushConfig(t, s, "app", kept, "kept")
	storetest.PutPushConfig(t, s, "app", byApp, "app")
	storetest.PutPushConfig(t, s, "super", bySuper, "super")
	storetest.PutPushConfig(t, s, "gone", gone, "gone")
	storetest.PutPushConfig(t, s, "app", "never", "never")
	if _, err := conn.Exec(ctx, `DELETE FROM `+q+`.threads WHERE id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "app gone kept never super" {
		t.Fatalf("configs under 020: %q", got)
	}
	if err := s.MigrateTo(ctx, pgstore.LatestVersion()); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "app kept super" {
		t.Fatalf("configs after the migration: %q, want those of existing threads", got)
	}

	deleteThreadAsApp(t, s, byApp)
	if _, err := conn.Exec(ctx, `DELETE FROM `+q+`.threads WHERE id = $1`, bySuper); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "kept" {
		t.Fatalf("configs after deleting their threads: %q, want kept", got)
	}
}

// deleteThreadAsApp deletes owner "app"'s thread in the application role,
// under row-level security, and commits (AsOwner rolls back, so the same
// statements in a transaction of that role).
func deleteThreadAsApp(t *testing.T, s *pgstore.Store, thread string) {
	t.Helper()
	ctx := t.Context()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT set_config('role', $1, true), set_config('baton.owner', 'app', true)`, pgstore.DefaultAppRole); err != nil {
		t.Fatal(err)
	}
	if tag, err := tx.Exec(ctx, `DELETE FROM threads WHERE id = $1`, thread); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("the application role deleting its thread: %v, %v", tag, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
