package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/storetest"
)

func randName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// admin connects as the test URL's user, for setup and for looking under
// the store.
func admin(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testdb.URL(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// freshSchema returns the name of a schema that does not exist yet and is
// dropped when the test ends, so that test runs never collide.
func freshSchema(t testing.TB) string {
	t.Helper()
	return testdb.Schema(t, testdb.URL(t))
}

func open(t testing.TB, u string, opts *store.Options) *pgstore.Store {
	t.Helper()
	return storetest.Opened(pgstore.Open(context.Background(), u, opts))(t)
}

// TestStore runs the suite connected as the test user (a superuser in CI),
// with every transaction in the application role.
func TestStore(t *testing.T) {
	t.Parallel()
	s := open(t, testdb.URL(t), &store.Options{Schema: freshSchema(t)})
	corrupt := func(ctx context.Context, _ store.Store, id string, b []byte) error {
		_, err := s.Pool().Exec(ctx, `UPDATE checkpoints SET state = $1 WHERE id = $2`, b, id)
		return err
	}
	behind := storetest.SQL{
		Exec: func(ctx context.Context, _ store.Store, query string, args ...any) error {
			_, err := s.Pool().Exec(ctx, query, args...)
			return err
		},
		Int: func(ctx context.Context, _ store.Store, query string, args ...any) (int64, error) {
			var n int64
			err := s.Pool().QueryRow(ctx, query, args...).Scan(&n)
			return n, err
		},
	}
	storetest.Run(t, func(*testing.T) store.Store { return s }, storetest.WithCorruptCheckpoint(corrupt), storetest.WithSQL(behind))
}

// TestStoreSmallPool runs the suite, whose subtests run in parallel and
// start goroutines, on a pool of two connections: no call may hold two.
func TestStoreSmallPool(t *testing.T) {
	t.Parallel()
	s := open(t, testdb.URL(t), &store.Options{Schema: freshSchema(t), MaxConns: 2})
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// withUser returns the test URL with another user.
func withUser(t testing.TB, user string) string {
	t.Helper()
	u, err := url.Parse(testdb.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(user)
	return u.String()
}

// loginRole creates a login role that is neither a superuser nor allowed to
// bypass RLS, dropped when the test ends.
func loginRole(t testing.TB) string {
	t.Helper()
	conn := admin(t)
	ctx := context.Background()
	role := randName("baton_login_")
	var db string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE ROLE ` + role + ` LOGIN NOSUPERUSER NOBYPASSRLS`,
		`GRANT CREATE ON DATABASE ` + pgx.Identifier{db}.Sanitize() + ` TO ` + role,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		for _, stmt := range []string{`DROP OWNED BY ` + role + ` CASCADE`, `DROP ROLE ` + role} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
	})
	return role
}

// TestStoreTableOwner runs the suite connected as a non-superuser that owns
// the tables, without the application role: FORCE ROW LEVEL SECURITY holds
// the owner to the policies too.
func TestStoreTableOwner(t *testing.T) {
	t.Parallel()
	role := loginRole(t)
	schema := freshSchema(t)
	s := open(t, withUser(t, role), &store.Options{Schema: schema, NoAppRole: true})
	storetest.Run(t, func(*testing.T) store.Store { return s })
	checkRLS(t, s, "")
}

// TestRowLevelSecurity writes rows of one owner through the store and reads
// them in SQL as another: zero rows.
func TestRowLevelSecurity(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	role := randName("baton_app_")
	conn := admin(t)
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
		_, _ = conn.Exec(ctx, `DROP OWNED BY `+role)
		if _, err := conn.Exec(ctx, `DROP ROLE IF EXISTS `+role); err != nil {
			t.Errorf("drop role: %v", err)
		}
	})
	s := open(t, testdb.URL(t), &store.Options{Schema: schema, AppRole: role})
	var login bool
	if err := conn.QueryRow(t.Context(), `SELECT rolcanlogin FROM pg_roles WHERE rolname = $1`, role).Scan(&login); err != nil || login {
		t.Fatalf("app role: login %v, %v", login, err)
	}
	checkRLS(t, s, role)
}

var ownerTables = []string{"owners", "api_keys", "threads", "messages", "message_drafts", "checkpoints", "job_runs", "thread_summaries", "memory_documents", "run_leases", "interrupts", "call_records"}

// checkRLS fills every table for one owner through s and queries them
// directly, on s's pool, as another owner: in role when set (as the store's
// transactions do), else in the connecting role.
func checkRLS(t *testing.T, s *pgstore.Store, role string) {
	t.Helper()
	ctx := t.Context()
	pool := s.Pool()
	owner, other := randName("owner-"), randName("other-")
	for _, o := range []string{owner, other} {
		if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: o}); err != nil {
			t.Fatal(err)
		}
	}
	key, err := s.CreateAPIKey(ctx, &store.CreateAPIKeyParams{OwnerID: owner})
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: th.ID, Messages: []store.NewMessage{{Message: message.User("secret")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertDraft(ctx, &store.UpsertDraftParams{OwnerID: owner, MessageID: msgs[0].ID, Text: "d"}); err != nil {
		t.Fatal(err)
	}
	st := &runstate.State{RunID: "r-" + th.ID, ThreadID: th.ID, Network: "n", Fingerprint: "f", Agent: "a", Status: runstate.StatusRunning, Step: 1}
	if _, err := s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: st}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: owner, IdempotencyKey: "k", Kind: "k", ThreadID: th.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertThreadSummary(ctx, &store.UpsertThreadSummaryParams{OwnerID: owner, HandoffID: "h", Summary: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutMemoryDocument(ctx, &store.PutMemoryDocumentParams{OwnerID: owner, AgentID: "a", Content: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: owner, RunID: st.RunID, ThreadID: th.ID, Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: owner, ID: "h", Kind: store.InterruptThreadHandoff, ThreadID: th.ID,
		Payload: []byte(`{"summary_md":"secret"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCalls(ctx, &store.RecordCallsParams{OwnerID: owner, Calls: []*store.CallRecord{{ThreadID: th.ID, RunID: st.RunID,
		Kind: "model", StartedAt: time.Now(), Detail: []byte(`{"request":{"system":"secret"}}`)}}}); err != nil {
		t.Fatal(err)
	}

	// as runs fn in a transaction scoped to owner o ("": none) and key hash h.
	as := func(o, h string, fn func(tx pgx.Tx) error) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if role != "" {
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
				return err
			}
		}
		if o != "" {
			if _, err := tx.Exec(ctx, `SELECT set_config('baton.owner', $1, true)`, o); err != nil {
				return err
			}
		}
		if h != "" {
			if _, err := tx.Exec(ctx, `SELECT set_config('baton.api_key_hash', $1, true)`, h); err != nil {
				return err
			}
		}
		return fn(tx)
	}
	count := func(o, table string) int {
		t.Helper()
		var n int
		query := `SELECT count(*) FROM ` + table
		if table == "owners" { // every owner sees its own row
			query += ` WHERE id = '` + owner + `'`
		}
		if err := as(o, "", func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, query).Scan(&n)
		}); err != nil {
			t.Fatalf("count %s as %q: %v", table, o, err)
		}
		return n
	}
	for _, table := range ownerTables {
		if n := count(owner, table); n != 1 {
			t.Errorf("%s as its owner: %d rows, want 1", table, n)
		}
		if n := count(other, table); n != 0 {
			t.Errorf("%s as another owner: %d rows, want 0", table, n)
		}
		if n := count("", table); n != 0 {
			t.Errorf("%s with no owner set: %d rows, want 0", table, n)
		}
	}
	// Writes across owners: an unfiltered update touches nothing, an insert
	// of the other owner's row is refused.
	if err := as(other, "", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE threads SET name = 'hijacked'`)
		if err == nil && tag.RowsAffected() != 0 {
			t.Errorf("cross-owner UPDATE changed %d rows", tag.RowsAffected())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err = as(other, "", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO threads (id, owner_id, created_at, updated_at) VALUES ('x', $1, now(), now())`, owner)
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("cross-owner INSERT: %v, want a row-level security violation (42501)", err)
	}
	// The sweeper of call records (baton.sweep on, no owner) reads and
	// deletes every owner's records and changes none.
	sweep := func(fn func(tx pgx.Tx) error) error {
		return as("", "", func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT set_config('baton.sweep', 'on', true)`); err != nil {
				return err
			}
			return fn(tx)
		})
	}
	if err := sweep(func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM call_records WHERE owner_id = $1`, owner).Scan(&n); err != nil || n != 1 {
			t.Errorf("call_records read by the sweeper: %d rows, %v; want 1", n, err)
		}
		tag, err := tx.Exec(ctx, `UPDATE call_records SET error = 'hijacked'`)
		if err == nil && tag.RowsAffected() != 0 {
			t.Errorf("UPDATE of call_records by the sweeper changed %d rows", tag.RowsAffected())
		}
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM threads`).Scan(&n); err != nil || n != 0 {
			t.Errorf("threads read by the call records' sweeper: %d rows, %v; want 0", n, err)
		}
		tag, err = tx.Exec(ctx, `DELETE FROM call_records WHERE owner_id = $1`, owner)
		if err == nil && tag.RowsAffected() != 1 {
			t.Errorf("DELETE of call_records by the sweeper deleted %d rows, want 1", tag.RowsAffected())
		}
		return err // rolled back: the record stays
	}); err != nil {
		t.Fatal(err)
	}
	if err := as(other, "", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM call_records`)
		if err == nil && tag.RowsAffected() != 0 {
			t.Errorf("cross-owner DELETE of call_records deleted %d rows", tag.RowsAffected())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := count(owner, "call_records"); n != 1 {
		t.Errorf("call_records after the rolled-back sweep: %d rows, want 1", n)
	}
	// Without an owner, an API key is visible only by its hash, and only
	// for reading.
	var n int
	if err := as("", key.Key.Hash, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM api_keys`).Scan(&n)
	}); err != nil || n != 1 {
		t.Errorf("api key by hash: %d rows, %v", n, err)
	}
	if err := as("", key.Key.Hash, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = now()`)
		if err == nil && tag.RowsAffected() != 0 {
			t.Errorf("UPDATE by key hash changed %d rows", tag.RowsAffected())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateConcurrent opens one fresh schema from three stores at once
// (as three processes would) and migrates it from all again: each
// migration is recorded once.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	stores := storetest.MigrateConcurrent(t, 3, pgstore.LatestVersion(), func() (*pgstore.Store, error) {
		return pgstore.Open(t.Context(), testdb.URL(t), &store.Options{Schema: schema})
	})
	var applied int
	if err := stores[0].Pool().QueryRow(t.Context(), `SELECT count(*) FROM baton_schema_migrations`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != pgstore.LatestVersion() {
		t.Fatalf("%d migrations recorded, want %d", applied, pgstore.LatestVersion())
	}
}

func TestMigrateDownUp(t *testing.T) {
	t.Parallel()
	s := open(t, testdb.URL(t), &store.Options{Schema: freshSchema(t)})
	storetest.MigrateDownUp(t, s, pgstore.LatestVersion())
}

func TestNoMigrate(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	u := testdb.URL(t)
	storetest.NoMigrate(t, 1, pgstore.LatestVersion(), func(noMigrate bool) (*pgstore.Store, error) {
		return pgstore.Open(t.Context(), u, &store.Options{Schema: schema, NoMigrate: noMigrate})
	})
}

func TestOpenUnavailable(t *testing.T) {
	t.Parallel()
	testdb.URL(t)
	start := time.Now()
	_, err := pgstore.Open(t.Context(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5", nil)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open of a closed port: %v, want ErrUnavailable", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("Open took %v", time.Since(start))
	}
	_, err = pgstore.Open(t.Context(), "postgres://%zz", nil)
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Open of a bad URL: %v, want ErrInvalid", err)
	}
}

// TestConnectionLost kills the store's connections under it: the next call
// fails with ErrUnavailable or succeeds on a new connection, and the store
// recovers.
func TestConnectionLost(t *testing.T) {
	t.Parallel()
	app := randName("baton_lost_")
	u := testdb.URL(t)
	if strings.Contains(u, "?") {
		u += "&application_name=" + app
	} else {
		u += "?application_name=" + app
	}
	s := open(t, u, &store.Options{Schema: freshSchema(t), MaxConns: 1})
	ctx := t.Context()
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	conn := admin(t)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetOwner(ctx, &store.GetOwnerParams{ID: "o"})
	if err != nil && !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("after losing the connection: %v, want ErrUnavailable", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.GetOwner(ctx, &store.GetOwnerParams{ID: "o"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store did not recover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestPgxTx writes a row of another table through the pgx.Tx of a store
// transaction, as River's InsertTx does: it commits and rolls back with the
// store's rows.
func TestPgxTx(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	conn := admin(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: schema})
	ctx := t.Context()
	// A table created after Migrate by the same user, like River's.
	if _, err := conn.Exec(ctx, `CREATE TABLE `+schema+`.jobs (thread_id text)`); err != nil {
		t.Fatal(err)
	}
	if _, ok := pgstore.PgxTx(nil); ok {
		t.Fatal("PgxTx(nil) reported ok")
	}
	storetest.DriverTx(t, s, func(ctx context.Context, tx store.Tx, thread string) error {
		pgTx, ok := pgstore.PgxTx(tx)
		if !ok {
			t.Fatal("PgxTx: not ok")
		}
		var user string
		if err := pgTx.QueryRow(ctx, `SELECT current_user`).Scan(&user); err != nil || user != pgstore.DefaultAppRole {
			t.Errorf("statements on the pgx.Tx run as %q, %v; want %s", user, err, pgstore.DefaultAppRole)
		}
		_, err := pgTx.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ($1)`, thread)
		return err
	}, func(ctx context.Context, thread string) (n int, err error) {
		err = conn.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.jobs WHERE thread_id = $1`, thread).Scan(&n)
		return n, err
	})
}

// TestLZ4Compression checks that checkpoint states written through the
// store are compressed with lz4 where the server has it (migration 005),
// and that a server without it still migrates (the migration keeps pglz).
func TestLZ4Compression(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := admin(t)
	s := open(t, testdb.URL(t), &store.Options{Schema: freshSchema(t)})
	var lz4 bool
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE lz4_probe (b bytea COMPRESSION lz4)`); err == nil {
		lz4 = true
	}
	if !lz4 {
		t.Log("this server has no lz4: checking only that the schema migrated")
		return
	}
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "o"}); err != nil {
		t.Fatal(err)
	}
	th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "o"})
	if err != nil {
		t.Fatal(err)
	}
	// A state large enough to be compressed (over ~2 KB).
	st := &runstate.State{RunID: "r", ThreadID: th.ID, Network: "n", Fingerprint: "fp", Agent: "a", Step: 1,
		Status: runstate.StatusRunning, Messages: []message.Message{message.User(strings.Repeat("compress me ", 400))}}
	cp, err := s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: "o", State: st})
	if err != nil {
		t.Fatal(err)
	}
	var method string
	if err := s.Pool().QueryRow(ctx, `SELECT pg_column_compression(state) FROM checkpoints WHERE id = $1`, cp.ID).Scan(&method); err != nil {
		t.Fatal(err)
	}
	if method != "lz4" {
		t.Fatalf("checkpoint state compressed with %q, want lz4", method)
	}
	got, err := s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: "o", RunID: "r"})
	if err != nil || got.State.Messages[0].Text() != st.Messages[0].Text() {
		t.Fatalf("read back: %v", err)
	}
}

// TestRetention checks the checkpoint sweep, across owners, in the
// application role (row-level security: the sweep's own policy).
func TestRetention(t *testing.T) {
	t.Parallel()
	storetest.Retention(t, open(t, testdb.URL(t), &store.Options{Schema: freshSchema(t)}))
}
