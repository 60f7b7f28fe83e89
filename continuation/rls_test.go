package continuation

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// TestRiverJobsUnderRowLevelSecurity: on PostgreSQL, River's job rows
// (whose args carry the owner, thread and run ids) are under the store's
// row-level security: as the application role, another owner sees none of
// them, cannot write one naming this owner, nor change this owner's; the
// owner sees its own; River's workers (the connecting role) still fetch and
// complete it, JobCompleteTx running in the owner's transaction.
func TestRiverJobsUnderRowLevelSecurity(t *testing.T) {
	t.Parallel()
	u := testdb.URL(t) // skips without PostgreSQL, fails so in CI
	tools := newToolLog()
	b := setup(t, backend{"Postgres", func(t testing.TB) store.Store {
		return testdb.PostgresWith(t, u, store.Options{MaxConns: pgMaxConns})
	}}, network(t, tools, "", scripted.Options{}), tools, nil)
	pg := b.st.(*pgstore.Store)
	_, _, h := b.handOver(t)
	ctx := t.Context()
	as := func(who string, fn func(tx pgx.Tx) error) error { return testdb.AsOwner(ctx, pg, who, fn) }
	count := func(who string) int {
		t.Helper()
		var n int
		if err := as(who, func(tx pgx.Tx) error {
			// No owner filter: row-level security alone decides.
			return tx.QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&n)
		}); err != nil {
			t.Fatalf("count as %s: %v", who, err)
		}
		return n
	}
	if n := count(owner); n != 1 {
		t.Fatalf("the owner sees %d of its River jobs, want 1", n)
	}
	if n := count("intruder"); n != 0 {
		t.Fatalf("another owner sees %d River jobs", n)
	}
	if n := count(""); n != 0 {
		t.Fatalf("a transaction without an owner sees %d River jobs", n)
	}
	err := as("intruder", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state)
			VALUES ('{"owner_id":"`+owner+`"}', 'baton.continue', 1, 'q', 'available')`)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("another owner inserted a job naming the owner: %v", err)
	}
	if err := as("intruder", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE river_job SET state = 'cancelled'`)
		if err == nil && tag.RowsAffected() != 0 {
			t.Errorf("another owner changed %d jobs", tag.RowsAffected())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The policy is there once, however often River's tables are migrated.
	if err := b.cont.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var policies int
	if err := pg.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_policy WHERE polrelid = to_regclass('river_job')`).Scan(&policies); err != nil || policies != 1 {
		t.Fatalf("policies on river_job: %d, %v", policies, err)
	}
	// River works the job and completes it in the owner's transaction.
	b.start(t)
	if m := b.waitMessage(t, h.MessageID, 20*time.Second); !strings.Contains(m.Text(), "shipped") {
		t.Fatalf("continuation: %s %q", m.Status, m.Text())
	}
	if jobs := waitRiver(t, b.st, 10*time.Second); jobs["completed"] != 1 {
		t.Fatalf("river jobs %v", jobs)
	}
}
