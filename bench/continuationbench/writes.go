package continuationbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// The "BatonWrites" benchmark (PostgreSQL; a reference, not a target) is
// River making, with hand-written SQL, the writes baton makes for one
// continuation (bench/continuation-writes.sh lists them), write for write,
// and nothing else: no runner, no store code, no foreign keys, no fenced
// checkpoint insert, no JSON columns. Like baton's: the tables' keys and
// indexes, row-level security under the application role, the scope and
// run lock at the start of each transaction, the turn's start (thread, user
// message, first checkpoint, lease) in a transaction of its own, the
// hand-over (checkpoint, the thread's message sequence, the assistant
// message, the lease released, job run, placeholder, River's unique job),
// the worker's read of the checkpoint, the final transaction (checkpoint,
// two messages, placeholder and job run completed, River's job completed
// by its row), and after each of the two commits the draft notification's
// statement, which notifies a listening connection only when a watch row
// names the thread (as draft_watches; none does, as nobody subscribes in
// baton's benchmarks). [RiverEquivalent] against BatonWrites is what
// baton's writes cost beyond the yardstick's; BatonWrites against Baton,
// what baton's code and statement shapes cost beyond its writes. Its River
// polls every [writesPoll]: it has no in-process wake, and River notifies
// at most one insert per FetchCooldown.
const writesTables = `
CREATE TABLE IF NOT EXISTS writes_thread (id text PRIMARY KEY, owner text NOT NULL, next_seq bigint NOT NULL, created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, UNIQUE (id, owner));
CREATE INDEX IF NOT EXISTS writes_thread_owner ON writes_thread (owner, created_at, id);
CREATE TABLE IF NOT EXISTS writes_msg (id text PRIMARY KEY, owner text NOT NULL, thread text NOT NULL, seq bigint NOT NULL, status text NOT NULL, body bytea NOT NULL, UNIQUE (thread, seq));
CREATE TABLE IF NOT EXISTS writes_cp (seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, owner text NOT NULL, thread text NOT NULL, run text NOT NULL, step bigint NOT NULL, state bytea NOT NULL, UNIQUE (owner, run, step));
CREATE INDEX IF NOT EXISTS writes_cp_thread ON writes_cp (thread, seq);
CREATE TABLE IF NOT EXISTS writes_jr (id text PRIMARY KEY, owner text NOT NULL, key text NOT NULL, thread text NOT NULL, status text NOT NULL, attempt bigint NOT NULL, created_at timestamptz NOT NULL, UNIQUE (owner, key));
CREATE INDEX IF NOT EXISTS writes_jr_thread ON writes_jr (thread, created_at);
CREATE TABLE IF NOT EXISTS writes_lease (owner text NOT NULL, run text NOT NULL, holder text NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY (owner, run));
CREATE TABLE IF NOT EXISTS writes_watch (id text PRIMARY KEY, key text NOT NULL, owner text NOT NULL, holder text NOT NULL, expires_at timestamptz NOT NULL);
CREATE INDEX IF NOT EXISTS writes_watch_key ON writes_watch (key, owner);
DO $$ DECLARE t text; BEGIN
  FOREACH t IN ARRAY ARRAY['writes_thread','writes_msg','writes_cp','writes_jr','writes_lease'] LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
    EXECUTE format('DROP POLICY IF EXISTS owner_only ON %I', t);
    EXECUTE format('CREATE POLICY owner_only ON %I USING (owner = current_setting(''baton.owner'', true))', t);
    EXECUTE format('GRANT ALL ON %I TO ` + pgstore.DefaultAppRole + `', t);
  END LOOP;
END $$`

// writesArgs are as large as a continuation's.
type writesArgs struct {
	ID       string `json:"id"`
	Owner    string `json:"owner_id"`
	Thread   string `json:"thread_id" river:"unique"`
	JobRun   string `json:"job_run_id"`
	FP       string `json:"fingerprint"`
	Continue string `json:"continuation_id"`
}

func (writesArgs) Kind() string { return "bench.writes" }

// writesPoll is BatonWrites' River fetch poll.
const writesPoll = 20 * time.Millisecond

const (
	writesScope     = `SELECT set_config('role', '` + pgstore.DefaultAppRole + `', true), set_config('baton.owner', 'acme', true), pg_advisory_xact_lock(1, hashtext($1))`
	writesReadScope = `SELECT set_config('role', '` + pgstore.DefaultAppRole + `', true), set_config('baton.owner', 'acme', true)`
	writesNotify    = `SELECT set_config('synchronous_commit', 'off', true), pg_notify('writes_drafts', $1) FROM writes_watch WHERE key IN ('t:' || $1, 'm:' || $1) AND owner = 'acme' LIMIT 1`
)

type writesStmt struct {
	sql  string
	args []any
}

// writesTx runs stmts in one transaction, then the draft notification
// after the commit (when notify).
func writesTx(ctx context.Context, pool *pgxpool.Pool, notify string, stmts []writesStmt, last func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, s := range stmts {
			tag, err := tx.Exec(ctx, s.sql, s.args...)
			if err != nil {
				return fmt.Errorf("%s: %w", s.sql, err)
			}
			if tag.Update() || tag.Delete() {
				if tag.RowsAffected() != 1 {
					return fmt.Errorf("%s: %d rows", s.sql, tag.RowsAffected())
				}
			}
		}
		if last != nil {
			return last(tx)
		}
		return nil
	})
	if err != nil || notify == "" {
		return err
	}
	_, err = pool.Exec(ctx, writesNotify, notify)
	return err
}

type writesWorker struct {
	river.WorkerDefaults[writesArgs]
	pool  *pgxpool.Pool
	state []byte
	done  func()
}

func (w *writesWorker) Work(ctx context.Context, job *river.Job[writesArgs]) error {
	id := job.Args.ID
	var state []byte
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error { // the lazy claim's read
		if _, err := tx.Exec(ctx, writesReadScope); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT state FROM writes_cp WHERE owner = 'acme' AND run = $1 ORDER BY step DESC LIMIT 1`, id).Scan(&state)
	})
	if err != nil {
		return err
	}
	body := w.state[:200]
	err = writesTx(ctx, w.pool, id, []writesStmt{ // the final transaction
		{writesScope, []any{id}},
		{`INSERT INTO writes_cp (id, owner, thread, run, step, state) VALUES ($1, 'acme', $2, $2, 3, $3)`, []any{id + "-3", id, w.state}},
		{`UPDATE writes_thread SET next_seq = next_seq + 2, updated_at = now() WHERE owner = 'acme' AND id = $1`, []any{id}},
		{`INSERT INTO writes_msg (id, owner, thread, seq, status, body) VALUES ($1, 'acme', $2, 4, 'completed', $3), ($4, 'acme', $2, 5, 'completed', $3)`, []any{id + "-t", id, body, id + "-a"}},
		{`UPDATE writes_msg SET status = 'completed', body = $2 WHERE owner = 'acme' AND id = $1 AND status = 'queued'`, []any{id + "-p", body}},
		{`UPDATE writes_jr SET status = 'completed', attempt = 1 WHERE owner = 'acme' AND id = $1 AND attempt = 0`, []any{id}},
		{`UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1 AND state = 'running'`, []any{job.ID}},
	}, nil)
	if err == nil {
		w.done()
	}
	return err
}

// BatonWrites runs baton's writes by hand from [Producers] producers and
// reports jobs/s, first insert to last completion (PostgreSQL only).
func BatonWrites(b *testing.B, st store.Store) {
	measureJobs(b, st, batonWrites)
}

// VersusWrites measures baton against [BatonWrites] — its own writes made
// by hand — paired, with [Versus] (PostgreSQL only): what baton's code and
// statement shapes cost beyond its writes.
func VersusWrites(b *testing.B, st store.Store) {
	versusOn(b, st, "BatonWrites", batonWrites)
}

// batonWrites sets BatonWrites up on st (PostgreSQL; it skips b on
// another backend): its tables, a listener of its drafts' channel until b
// ends, and a River client (start, stop) working its jobs, which jobs
// counts; produce writes job n's turn and hand-over.
func batonWrites(b *testing.B, st store.Store, jobs *finished) (produce func(n int) error, start, stop func(ctx context.Context) error) {
	s, ok := st.(*pgstore.Store)
	if !ok {
		b.Skip("PostgreSQL only")
	}
	ctx := context.Background()
	pool := s.Pool()
	if _, err := pool.Exec(ctx, writesTables); err != nil {
		b.Fatal(err)
	}
	// A listener of the drafts' channel, as the draft broker is.
	lc, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := lc.Exec(ctx, "LISTEN writes_drafts"); err != nil {
		b.Fatal(err)
	}
	lctx, stopListen := context.WithCancel(ctx)
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		for {
			if _, err := lc.Conn().WaitForNotification(lctx); err != nil {
				return
			}
		}
	}()
	b.Cleanup(func() {
		stopListen()
		<-listened
		lc.Release()
	})
	state := equivState(b)
	round := fmt.Sprintf("f%d-", equivRound.Add(1))
	workers := river.NewWorkers()
	river.AddWorker(workers, &writesWorker{pool: pool, state: state, done: jobs.finish})
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Workers: workers,
		Queues: map[string]river.QueueConfig{"bench_writes": {MaxWorkers: Workers}}, FetchCooldown: FetchCooldown, FetchPollInterval: writesPoll, Logger: backendtest.Logger()})
	if err != nil {
		b.Fatal(err)
	}
	body := state[:200]
	produce = func(n int) error {
		id := round + fmt.Sprint(n)
		err := writesTx(ctx, pool, "", []writesStmt{ // the turn's start
			{writesScope, []any{id}},
			{`INSERT INTO writes_thread (id, owner, next_seq, created_at, updated_at) VALUES ($1, 'acme', 2, now(), now())`, []any{id}},
			{`INSERT INTO writes_msg (id, owner, thread, seq, status, body) VALUES ($1, 'acme', $2, 1, 'completed', $3)`, []any{id + "-u", id, body}},
			{`INSERT INTO writes_cp (id, owner, thread, run, step, state) VALUES ($1, 'acme', $2, $2, 1, $3)`, []any{id + "-1", id, state}},
			{`INSERT INTO writes_lease (owner, run, holder, expires_at) VALUES ('acme', $1, 'me', now() + interval '30 seconds')`, []any{id}},
		}, nil)
		if err != nil {
			return err
		}
		return writesTx(ctx, pool, id, []writesStmt{ // the hand-over
			{writesScope, []any{id}},
			{`INSERT INTO writes_cp (id, owner, thread, run, step, state) VALUES ($1, 'acme', $2, $2, 2, $3)`, []any{id + "-2", id, state}},
			{`UPDATE writes_thread SET next_seq = next_seq + 1, updated_at = now() WHERE owner = 'acme' AND id = $1`, []any{id}},
			{`INSERT INTO writes_msg (id, owner, thread, seq, status, body) VALUES ($1, 'acme', $2, 2, 'completed', $3)`, []any{id + "-c", id, body}},
			{`DELETE FROM writes_lease WHERE owner = 'acme' AND run = $1 AND holder = 'me'`, []any{id}},
			{`INSERT INTO writes_jr (id, owner, key, thread, status, attempt, created_at) VALUES ($1, 'acme', $2, $1, 'queued', 0, now())`, []any{id, id + "-key"}},
			{`UPDATE writes_thread SET next_seq = next_seq + 1, updated_at = now() WHERE owner = 'acme' AND id = $1`, []any{id}},
			{`INSERT INTO writes_msg (id, owner, thread, seq, status, body) VALUES ($1, 'acme', $2, 3, 'queued', '')`, []any{id + "-p", id}},
		}, func(tx pgx.Tx) error {
			_, err := c.InsertTx(ctx, tx, writesArgs{ID: id, Owner: "acme", Thread: "01a218f6-1d96-7199-8b85-" + id, JobRun: "01a218f6-1d97-7ddc-be94-" + id,
				FP: "eaddbbc5788cf2a8358053ae", Continue: "run_g4da2zqrkvpfbgzx4vbhanto3m-c2-" + id}, &river.InsertOpts{Queue: "bench_writes",
				UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
					rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled}}})
			return err
		})
	}
	return produce, c.Start, c.Stop
}
