package continuationbench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// bareArgs is River's bare job.
type bareArgs struct {
	N int `json:"n"`
}

func (bareArgs) Kind() string { return "bench.bare" }

type bareWorker struct {
	river.WorkerDefaults[bareArgs]
	started func(n int)
}

func (w *bareWorker) Work(_ context.Context, job *river.Job[bareArgs]) error {
	w.started(job.Args.N)
	return nil
}

// bareClient is River on the store's database with a bare worker.
type bareClient interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

type bare[TTx any] struct{ c *river.Client[TTx] }

func (b bare[TTx]) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) error {
	_, err := b.c.Insert(ctx, args, opts)
	return err
}
func (b bare[TTx]) Start(ctx context.Context) error { return b.c.Start(ctx) }
func (b bare[TTx]) Stop(ctx context.Context) error  { return b.c.Stop(ctx) }

func newBare(b *testing.B, st store.Store, started func(n int)) bareClient {
	b.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, &bareWorker{started: started})
	cfg := &river.Config{Workers: workers, Queues: map[string]river.QueueConfig{"bench_bare": {MaxWorkers: Workers}},
		FetchCooldown: FetchCooldown, Logger: backendtest.Logger()}
	switch s := st.(type) {
	case *pgstore.Store:
		c, err := river.NewClient[pgx.Tx](riverpgxv5.New(s.Pool()), cfg)
		if err != nil {
			b.Fatal(err)
		}
		return bare[pgx.Tx]{c}
	case *sqlitestore.Store:
		c, err := river.NewClient(riversqlite.New(s.DB()), cfg)
		if err != nil {
			b.Fatal(err)
		}
		return bare[*sql.Tx]{c}
	}
	b.Fatalf("store %T", st)
	return nil
}

// River is River's bare round trip, a no-op job: latency from Insert
// returning (committed) to Work starting, one job at a time; then jobs/s
// from [Producers] producers, from the first insert to the last job worked.
func River(b *testing.B, st store.Store) {
	ctx := context.Background()
	marks := NewStamps()
	var done atomic.Int64
	var last atomic.Int64
	c := newBare(b, st, func(n int) {
		marks.Mark(fmt.Sprint(n))
		done.Add(1)
		last.Store(time.Now().UnixNano())
	})
	backendtest.StartUntilEnd(b, c.Start, c.Stop)
	opts := &river.InsertOpts{Queue: "bench_bare"}
	// Latency, one job at a time.
	var lat []time.Duration
	for i := range LatencySamples {
		key := fmt.Sprint(i)
		t0 := marks.Await(b, key, func() error { return c.Insert(ctx, bareArgs{N: i}, opts) })
		lat = append(lat, marks.Get(key).Sub(t0))
	}
	// Throughput, 16 producers.
	done.Store(0)
	start := time.Now()
	FanOut(b, RiverJobs, func(i int) error { return c.Insert(ctx, bareArgs{N: LatencySamples + i}, opts) })
	for done.Load() < RiverJobs {
		time.Sleep(time.Millisecond)
	}
	Report(b, lat, RiverJobs, time.Unix(0, last.Load()).Sub(start))
}

// The "RiverEquivalent" benchmark is River doing, with hand-written SQL on
// plain tables of the same database, the durable writes that package
// continuation must make for one continuation, and nothing else (no runner,
// no row-level security, no foreign keys, no fences, no JSON decoding of the
// state):
//
//   - producer, one transaction: the suspended run's checkpoint, the user
//     and assistant messages, the placeholder, the job run, River's insert;
//   - worker, the claim: job run to processing, placeholder to streaming,
//     the checkpoint read;
//   - the tool's result made durable: a checkpoint and the tool message;
//   - the final transaction: a checkpoint, the answer, placeholder and job
//     run completed, River's job completed (JobCompleteTx).
//
// Its jobs/s is the ceiling of a continuation on this machine; a bare
// River job ([River]) is a no-op. Its tables have the keys those writes
// need: the checkpoints' (run, step) serves the claim's read of a run's
// latest checkpoint (without it that read scanned every checkpoint, which
// a run of a few hundred jobs hid and [VersusPair]'s thousands did not).

const equivTables = `
CREATE TABLE IF NOT EXISTS equiv_cp (id text PRIMARY KEY, run text NOT NULL, step bigint NOT NULL, state bytea NOT NULL, UNIQUE (run, step));
CREATE TABLE IF NOT EXISTS equiv_msg (id text PRIMARY KEY, thread text NOT NULL, seq bigint NOT NULL, status text NOT NULL, body bytea NOT NULL);
CREATE TABLE IF NOT EXISTS equiv_jr (id text PRIMARY KEY, key text NOT NULL UNIQUE, status text NOT NULL, attempt bigint NOT NULL)`

type equivArgs struct {
	ID string `json:"id"`
}

// equivRound makes each round's row ids its own: -count runs a
// sub-benchmark several times on the same store.
var equivRound atomic.Int64

func (equivArgs) Kind() string { return "bench.equivalent" }

// equivDB is what the benchmark needs of a backend, in its transaction type.
type equivDB[TTx any] struct {
	begin    func(ctx context.Context) (TTx, error)
	exec     func(ctx context.Context, tx TTx, q string, args ...any) error
	read     func(ctx context.Context, tx TTx, q string, args ...any) ([]byte, error)
	commit   func(ctx context.Context, tx TTx) error
	rollback func(ctx context.Context, tx TTx)
	complete func(ctx context.Context, tx TTx, job *river.Job[equivArgs]) error
}

func (d equivDB[TTx]) tx(ctx context.Context, fn func(tx TTx) error) error {
	tx, err := d.begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		d.rollback(ctx, tx)
		return err
	}
	return d.commit(ctx, tx)
}

type equivWorker[TTx any] struct {
	river.WorkerDefaults[equivArgs]
	db    equivDB[TTx]
	state []byte
	done  func()
}

func (w *equivWorker[TTx]) Work(ctx context.Context, job *river.Job[equivArgs]) error {
	id := job.Args.ID
	d := w.db
	err := d.tx(ctx, func(tx TTx) error { // the claim
		if err := d.exec(ctx, tx, `UPDATE equiv_jr SET status = 'processing', attempt = attempt + 1 WHERE id = $1`, id); err != nil {
			return err
		}
		if err := d.exec(ctx, tx, `UPDATE equiv_msg SET status = 'streaming' WHERE id = $1`, id+"-p"); err != nil {
			return err
		}
		_, err := d.read(ctx, tx, `SELECT state FROM equiv_cp WHERE run = $1 ORDER BY step DESC LIMIT 1`, id)
		return err
	})
	if err != nil {
		return err
	}
	err = d.tx(ctx, func(tx TTx) error { // the tool's result
		if err := d.exec(ctx, tx, `INSERT INTO equiv_cp (id, run, step, state) VALUES ($1, $2, 2, $3)`, id+"-2", id, w.state); err != nil {
			return err
		}
		return d.exec(ctx, tx, `INSERT INTO equiv_msg (id, thread, seq, status, body) VALUES ($1, $2, 4, 'completed', $3)`, id+"-t", id, w.state[:200])
	})
	if err != nil {
		return err
	}
	err = d.tx(ctx, func(tx TTx) error { // the final transaction
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO equiv_cp (id, run, step, state) VALUES ($1, $2, 3, $3)`, []any{id + "-3", id, w.state}},
			{`INSERT INTO equiv_msg (id, thread, seq, status, body) VALUES ($1, $2, 5, 'completed', $3)`, []any{id + "-a", id, w.state[:200]}},
			{`UPDATE equiv_msg SET status = 'completed', body = $2 WHERE id = $1`, []any{id + "-p", w.state[:200]}},
			{`UPDATE equiv_jr SET status = 'completed' WHERE id = $1`, []any{id}},
		} {
			if err := d.exec(ctx, tx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return d.complete(ctx, tx, job)
	})
	if err == nil {
		w.done()
	}
	return err
}

// RiverEquivalent runs the equivalent writes from [Producers] producers
// and reports jobs/s, first insert to last completion.
func RiverEquivalent(b *testing.B, st store.Store) {
	measureJobs(b, st, equivalent)
}

// equivalent sets RiverEquivalent up on st: its tables, and a River client
// (start, stop) working its jobs, which jobs counts; produce writes job n's
// hand-over.
func equivalent(b *testing.B, st store.Store, jobs *finished) (produce func(n int) error, start, stop func(ctx context.Context) error) {
	ctx := context.Background()
	state := equivState(b)
	round := fmt.Sprintf("r%d-", equivRound.Add(1))
	cfg := func(workers *river.Workers) *river.Config {
		return &river.Config{Workers: workers, Queues: map[string]river.QueueConfig{"bench_equiv": {MaxWorkers: Workers}},
			FetchCooldown: FetchCooldown, Logger: backendtest.Logger()}
	}
	switch s := st.(type) {
	case *pgstore.Store:
		pool := s.Pool()
		if _, err := pool.Exec(ctx, equivTables); err != nil {
			b.Fatal(err)
		}
		d := equivDB[pgx.Tx]{
			begin: func(ctx context.Context) (pgx.Tx, error) { return pool.Begin(ctx) },
			exec: func(ctx context.Context, tx pgx.Tx, q string, args ...any) error {
				_, err := tx.Exec(ctx, q, args...)
				return err
			},
			read: func(ctx context.Context, tx pgx.Tx, q string, args ...any) (out []byte, err error) {
				err = tx.QueryRow(ctx, q, args...).Scan(&out)
				return out, err
			},
			commit:   func(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) },
			rollback: func(ctx context.Context, tx pgx.Tx) { _ = tx.Rollback(ctx) },
			complete: func(ctx context.Context, tx pgx.Tx, job *river.Job[equivArgs]) error {
				_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
				return err
			},
		}
		workers := river.NewWorkers()
		river.AddWorker(workers, &equivWorker[pgx.Tx]{db: d, state: state, done: jobs.finish})
		c, err := river.NewClient(riverpgxv5.New(pool), cfg(workers))
		if err != nil {
			b.Fatal(err)
		}
		produce = func(n int) error { return equivProduce(ctx, d, round+fmt.Sprint(n), state, c.InsertTx) }
		start, stop = c.Start, c.Stop
	case *sqlitestore.Store:
		db := s.DB()
		if _, err := db.ExecContext(ctx, equivTables); err != nil {
			b.Fatal(err)
		}
		d := equivDB[*sql.Tx]{
			begin: func(ctx context.Context) (*sql.Tx, error) { return db.BeginTx(ctx, nil) },
			exec: func(ctx context.Context, tx *sql.Tx, q string, args ...any) error {
				_, err := tx.ExecContext(ctx, q, args...)
				return err
			},
			read: func(ctx context.Context, tx *sql.Tx, q string, args ...any) (out []byte, err error) {
				err = tx.QueryRowContext(ctx, q, args...).Scan(&out)
				return out, err
			},
			commit:   func(_ context.Context, tx *sql.Tx) error { return tx.Commit() },
			rollback: func(_ context.Context, tx *sql.Tx) { _ = tx.Rollback() },
			complete: func(ctx context.Context, tx *sql.Tx, job *river.Job[equivArgs]) error {
				_, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, job)
				return err
			},
		}
		workers := river.NewWorkers()
		river.AddWorker(workers, &equivWorker[*sql.Tx]{db: d, state: state, done: jobs.finish})
		c, err := river.NewClient(riversqlite.New(db), cfg(workers))
		if err != nil {
			b.Fatal(err)
		}
		produce = func(n int) error { return equivProduce(ctx, d, round+fmt.Sprint(n), state, c.InsertTx) }
		start, stop = c.Start, c.Stop
	default:
		b.Fatalf("store %T", st)
	}
	return produce, start, stop
}

// finished counts a scenario's jobs worked and when the last one was, and
// which runs finished, for those that report it ([finished.finishRun]).
type finished struct {
	done, last atomic.Int64
	runs       sync.Map // run id → struct{}
}

// finishRun counts run as worked.
func (f *finished) finishRun(run string) {
	f.runs.Store(run, struct{}{})
	f.finish()
}

// missing returns those of runs that have not finished.
func (f *finished) missing(runs []string) []string {
	var out []string
	for _, r := range runs {
		if _, ok := f.runs.Load(r); !ok {
			out = append(out, r)
		}
	}
	return out
}

func (f *finished) finish() {
	f.done.Add(1)
	f.last.Store(time.Now().UnixNano())
}

// count returns the jobs worked and when the last one was (Unix ns).
func (f *finished) count() (n, last int64) { return f.done.Load(), f.last.Load() }

// jobsScenario sets a River scenario up on st: its producer (produce
// starts unit n), River's start and stop, and jobs counting its units
// worked.
type jobsScenario func(b *testing.B, st store.Store, jobs *finished) (produce func(n int) error, start, stop func(ctx context.Context) error)

// measureJobs sets scenario up on st and measures it ([finished.measure]).
func measureJobs(b *testing.B, st store.Store, scenario jobsScenario) {
	var jobs finished
	produce, start, stop := scenario(b, st, &jobs)
	jobs.measure(b, start, stop, produce)
}

// measure starts River (start, stop), runs produce for [BatonJobs] jobs
// from [Producers] producers, waits for them to be worked and reports
// jobs/s, first insert to last job worked.
func (f *finished) measure(b *testing.B, start, stop func(context.Context) error, produce func(n int) error) {
	backendtest.StartUntilEnd(b, start, stop)
	t0 := time.Now()
	FanOut(b, BatonJobs, produce)
	if b.Failed() {
		b.FailNow()
	}
	deadline := time.Now().Add(5 * time.Minute)
	for f.done.Load() < BatonJobs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if f.done.Load() < BatonJobs {
		b.Fatalf("%d of %d jobs worked", f.done.Load(), BatonJobs)
	}
	b.ReportMetric(float64(BatonJobs)/time.Unix(0, f.last.Load()).Sub(t0).Seconds(), "per-s")
	b.ReportMetric(0, "ns/op")
}

// equivProduce writes a hand-over: checkpoint, messages, placeholder, job
// run and River's job in one transaction.
func equivProduce[TTx any](ctx context.Context, d equivDB[TTx], id string, state []byte,
	insert func(context.Context, TTx, river.JobArgs, *river.InsertOpts) (*rivertype.JobInsertResult, error)) error {
	return d.tx(ctx, func(tx TTx) error {
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO equiv_cp (id, run, step, state) VALUES ($1, $2, 1, $3)`, []any{id + "-1", id, state}},
			{`INSERT INTO equiv_msg (id, thread, seq, status, body) VALUES ($1, $2, 1, 'completed', $3)`, []any{id + "-u", id, state[:200]}},
			{`INSERT INTO equiv_msg (id, thread, seq, status, body) VALUES ($1, $2, 2, 'completed', $3)`, []any{id + "-c", id, state[:200]}},
			{`INSERT INTO equiv_msg (id, thread, seq, status, body) VALUES ($1, $2, 3, 'queued', $3)`, []any{id + "-p", id, state[:0]}},
			{`INSERT INTO equiv_jr (id, key, status, attempt) VALUES ($1, $2, 'queued', 0)`, []any{id, id + "-key"}},
		} {
			if err := d.exec(ctx, tx, q.sql, q.args...); err != nil {
				return err
			}
		}
		_, err := insert(ctx, tx, equivArgs{ID: id}, &river.InsertOpts{Queue: "bench_equiv"})
		return err
	})
}

// equivState is the state a benchmark continuation checkpoints at its
// hand-over: the question, the call of the slow tool, the pending call.
func equivState(tb testing.TB) []byte {
	call := message.Message{ID: "m2", Role: message.RoleAssistant, Agent: "assistant", Parts: []message.Part{{
		Type: message.PartToolCall, CallID: "call_1", Name: "lookup", Arguments: []byte(`{"order":"1234"}`)}}}
	user := message.User("Where is order 1234?")
	user.ID = "m1"
	msgs := []message.Message{user, call}
	st := &runstate.State{RunID: "run_0123456789", ThreadID: "01a20ac9-0d35-7589-af4f-d5b2dd5337a6", Network: "bench",
		Fingerprint: "sha256:0123456789abcdef0123456789abcdef", Agent: "assistant", Messages: msgs, Transcript: msgs,
		Pending: []runstate.PendingCall{{Call: message.ToolCall{ID: "call_1", Name: "lookup", Arguments: []byte(`{"order":"1234"}`)}, Kind: runstate.CallTool}},
		Trail:   []string{"assistant"}, Turns: 1, Step: 1, Status: runstate.StatusSuspended,
		Values: map[string]json.RawMessage{"owner": json.RawMessage(`"acme"`)}}
	out, err := runstate.Encode(st)
	if err != nil || len(out) < 200 {
		tb.Fatalf("state: %d bytes, %v", len(out), err)
	}
	return out
}
