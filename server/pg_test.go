package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// pgStore opens the PostgreSQL store of BATON_TEST_DATABASE_URL in a fresh
// schema, dropped at the end, and returns it with the schema; the test skips
// without it (except in CI).
func pgStore(t *testing.T) (*pgstore.Store, string) {
	t.Helper()
	u := testdb.URL(t)
	schema := testdb.Schema(t, u)
	return testdb.PostgresWith(t, u, store.Options{Schema: schema}), schema
}

// On PostgreSQL, row-level security isolates owners in the database too:
// the server's rows, queried directly as another owner (the application
// role, with baton.owner set per transaction as the server does), are
// invisible and cannot be changed.
func TestRowLevelSecurityPostgres(t *testing.T) {
	t.Parallel()
	pg, schema := pgStore(t)
	b := servertest.SetupStore(t, pg)
	thread := b.Thread(t, b.KeyA, "support")
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I was charged twice for order 1234"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"completed"`) {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	if r := b.Do(t, b.KeyB, "GET", "/v1/threads/"+thread+"/messages", nil); r.Status != http.StatusNotFound {
		t.Fatalf("API as another owner: %d %s", r.Status, r.Body)
	}
	ctx := t.Context()
	// asOwner runs fn in a transaction scoped like the store's: the
	// application role and baton.owner.
	asOwner := func(owner string, fn func(tx pgx.Tx) error) error {
		tx, err := pg.Pool().Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT set_config('role', 'baton_app', true), set_config('baton.owner', $1, true)`, owner); err != nil {
			return err
		}
		return fn(tx)
	}
	count := func(owner, table string) int {
		t.Helper()
		var n int
		err := asOwner(owner, func(tx pgx.Tx) error {
			// No owner filter: row-level security alone decides.
			return tx.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n)
		})
		if err != nil {
			t.Fatalf("count %s as %s: %v", table, owner, err)
		}
		return n
	}
	for _, table := range []string{"threads", "messages", "checkpoints"} {
		if n := count("alice", table); n == 0 {
			t.Errorf("alice sees no %s", table)
		}
		if n := count("bob", table); n != 0 {
			t.Errorf("bob sees %d of alice's %s", n, table)
		}
	}
	if n := count("bob", "owners"); n != 1 {
		t.Errorf("bob sees %d owners, want only himself", n)
	}
	if n := count("bob", "api_keys"); n != 1 {
		t.Errorf("bob sees %d API keys, want only his own", n)
	}
	// Writes across owners change nothing or are refused.
	err := asOwner("bob", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE threads SET name = 'stolen' WHERE id = $1`, thread)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 0 {
			t.Errorf("bob updated %d of alice's threads", tag.RowsAffected())
		}
		tag, err = tx.Exec(ctx, `DELETE FROM messages`)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 0 {
			t.Errorf("bob deleted %d of alice's messages", tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = asOwner("bob", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO threads (id, owner_id, network) VALUES ('planted', 'alice', 'support')`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "row-level security") {
		t.Errorf("bob inserted a thread for alice: %v", err)
	}
	if r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil); r.Status != 200 || strings.Contains(string(r.Body), "stolen") {
		t.Fatalf("alice's thread: %d %s", r.Status, r.Body)
	}
}

// Durable continuation on PostgreSQL: River's worker in this process, the
// drafts through LISTEN/NOTIFY, the stream following the run to its end.
func TestDurableContinuationPostgres(t *testing.T) {
	t.Parallel()
	pg, _ := pgStore(t)
	b := servertest.SetupStore(t, pg, servertest.WithServer(func(c *server.Config) {
		c.FollowInterval = 100 * time.Millisecond
	}))
	thread := b.Thread(t, b.KeyA, "research")
	_, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "How did EV sales develop?", "stream": true})
	evs := servertest.Collect(t, ch, nil)
	checkIncreasing(t, evs)
	last := evs[len(evs)-1]
	if last.Type != "run_end" || last.Data["status"] != "completed" || !strings.Contains(last.Raw, "RPT-42") {
		t.Fatalf("durable stream on PostgreSQL: %v", servertest.Types(evs))
	}
	// Another owner sees none of it.
	if r := b.Do(t, b.KeyB, "GET", "/v1/threads/"+thread+"/messages", nil); r.Status != http.StatusNotFound {
		t.Fatalf("messages as another owner: %d", r.Status)
	}
}
