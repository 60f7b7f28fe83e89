package dbospeer

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // DBOS's SQLite support
	"github.com/jackc/pgx/v5/pgxpool"

	bc "github.com/batonhq/baton/bench/continuationbench"
	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// The DBOS peer does the agent turn of baton's continuation benchmark —
// the model calls the slow tool `lookup`, the tool answers, the model
// answers — the way a DBOS user builds it, at its best:
//
//   - the request enqueues a durable workflow on a DBOS queue (the
//     workflow's input, the user's message, is durable in DBOS's
//     workflow_status from then on); the queue is polled every 5 ms (River's
//     FetchCooldown in baton's benchmark) by 16 workers per process;
//   - the workflow: a step per model call and per tool call (each step's
//     output checkpointed by DBOS), the thread's rows written in DBOS
//     transactions over the system database's own pool
//     (dbos.RunAsTransaction on a DataSource that shares the system
//     database: the application rows and DBOS's checkpoint in one commit):
//     model step → transaction (thread, user message, the model's call,
//     placeholder streaming) → tool step → model step → transaction (tool
//     message, answer, placeholder completed). The tool's result is durable
//     as its step's checkpoint, so its message waits for the final
//     transaction;
//   - the same scripted model as baton's (model/scripted) and the same tool.
//
// Baton's continuation makes more durable writes than this: it also writes
// the thread and the user's message before the first model call (inline,
// before the first byte of the answer), and the tool's result in its own
// checkpoint before the next model call.

// turnIn is a workflow's input.
type turnIn struct {
	ID    string `json:"id"`
	Input string `json:"input"`
}

// dbosPeer is the turn's workflow and what it reports.
type dbosPeer struct {
	ds     *dbos.DataSource
	prefix string // table name prefix: the schema on PostgreSQL
	model  model.Model
	tools  []model.Tool

	// scan reads one row of the application's tables.
	scan func(ctx context.Context, q string, args []any, dest ...any) error

	started, resumed, finished *bc.Stamps
	done                       atomic.Int64
	last                       atomic.Int64
}

func (p *dbosPeer) call(ctx context.Context, history []message.Message) (message.Message, error) {
	resp, err := model.Collect(p.model.Stream(ctx, &model.Request{Agent: "assistant", Messages: history, Tools: p.tools}))
	if err != nil {
		return message.Message{}, err
	}
	return resp.Message, nil
}

func lookup(context.Context, json.RawMessage) (string, error) { return `{"status":"shipped"}`, nil }

// turn is the workflow.
func (p *dbosPeer) turn(ctx dbos.Context, in turnIn) (string, error) {
	p.started.Mark(in.ID)
	user := message.User(in.Input)
	user.ID = in.ID + "-u"
	first, err := dbos.RunAsStep(ctx, func(ctx context.Context) (message.Message, error) {
		return p.call(ctx, []message.Message{user})
	}, dbos.WithStepName("model"))
	if err != nil {
		return "", err
	}
	first.ID, first.Agent = in.ID+"-a", "assistant"
	calls := first.ToolCalls()
	if len(calls) != 1 {
		return "", fmt.Errorf("model: %d calls", len(calls))
	}
	if _, err := dbos.RunAsTransaction(ctx, p.ds, func(ctx context.Context, tx dbos.Tx) (bool, error) {
		if _, err := tx.Exec(ctx, `INSERT INTO `+p.prefix+`app_threads (id, owner) VALUES ($1, $2)`, in.ID, bc.Owner); err != nil {
			return false, err
		}
		for _, m := range []struct {
			id, role, status string
			seq              int
			msg              *message.Message
		}{
			{user.ID, "user", "completed", 1, &user},
			{first.ID, "assistant", "completed", 2, &first},
			{in.ID + "-p", "assistant", "streaming", 3, nil},
		} {
			if err := p.insertMessage(ctx, tx, in.ID, m.id, m.role, m.status, m.seq, m.msg); err != nil {
				return false, err
			}
		}
		return true, nil
	}, dbos.WithStepName("messages")); err != nil {
		return "", err
	}
	result, err := dbos.RunAsStep(ctx, func(ctx context.Context) (string, error) {
		p.resumed.Mark(in.ID)
		return lookup(ctx, calls[0].Arguments)
	}, dbos.WithStepName("lookup"))
	if err != nil {
		return "", err
	}
	res := message.ToolResult("assistant", calls[0].ID, calls[0].Name, result, false)
	res.ID = in.ID + "-t"
	answer, err := dbos.RunAsStep(ctx, func(ctx context.Context) (message.Message, error) {
		return p.call(ctx, []message.Message{user, first, res})
	}, dbos.WithStepName("model"))
	if err != nil {
		return "", err
	}
	answer.ID, answer.Agent = in.ID+"-f", "assistant"
	if _, err := dbos.RunAsTransaction(ctx, p.ds, func(ctx context.Context, tx dbos.Tx) (bool, error) {
		if err := p.insertMessage(ctx, tx, in.ID, res.ID, "tool", "completed", 4, &res); err != nil {
			return false, err
		}
		if err := p.insertMessage(ctx, tx, in.ID, answer.ID, "assistant", "completed", 5, &answer); err != nil {
			return false, err
		}
		body, err := json.Marshal(answer)
		if err != nil {
			return false, err
		}
		_, err = tx.Exec(ctx, `UPDATE `+p.prefix+`app_messages SET status = 'completed', body = $2 WHERE id = $1`, in.ID+"-p", string(body))
		return err == nil, err
	}, dbos.WithStepName("final")); err != nil {
		return "", err
	}
	if p.finished.Mark(in.ID) {
		p.done.Add(1)
		p.last.Store(time.Now().UnixNano())
	}
	return answer.Text(), nil
}

func (p *dbosPeer) insertMessage(ctx context.Context, tx dbos.Tx, thread, id, role, status string, seq int, m *message.Message) error {
	body := "{}"
	if m != nil {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		body = string(b)
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+p.prefix+`app_messages (id, thread_id, seq, role, status, body) VALUES ($1, $2, $3, $4, $5, $6)`,
		id, thread, seq, role, status, body)
	return err
}

// appTables are the application's tables: threads and their messages.
func appTables(prefix, body string) []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + prefix + `app_threads (id text PRIMARY KEY, owner text NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS ` + prefix + `app_messages (id text PRIMARY KEY, thread_id text NOT NULL REFERENCES ` + prefix + `app_threads (id),
			seq bigint NOT NULL, role text NOT NULL, status text NOT NULL, body ` + body + ` NOT NULL, UNIQUE (thread_id, seq))`,
	}
}

// dbosRound makes each round's workflow ids its own.
var dbosRound atomic.Int64

// openDBOS opens DBOS on st's database, registers the workflow and the
// queue, and launches it until tb ends.
func openDBOS(tb testing.TB, st store.Store) (dbos.Context, *dbosPeer, dbos.Queue) {
	tb.Helper()
	ctx := context.Background()
	p := &dbosPeer{
		model: scripted.New("assistant", []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
			{Text: "Your order 1234 has shipped."},
		}, scripted.Options{}),
		tools:   []model.Tool{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}},
		started: bc.NewStamps(), resumed: bc.NewStamps(), finished: bc.NewStamps(),
	}
	cfg := dbos.Config{AppName: "baton-peer", Logger: backendtest.Logger()}
	var setup func(dctx dbos.Context) error
	switch st.(type) {
	case *pgstore.Store:
		url := os.Getenv(testdb.URLVar)
		schema := testdb.Schema(tb, url) // dropped after DBOS shuts down
		pc, err := pgxpool.ParseConfig(url)
		if err != nil {
			tb.Fatal(err)
		}
		pc.MaxConns = bc.PGMaxConns
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(pool.Close)
		cfg.SystemDBPool, cfg.DatabaseSchema = pool, schema
		p.prefix = `"` + schema + `".`
		p.scan = func(ctx context.Context, q string, args []any, dest ...any) error {
			return pool.QueryRow(ctx, q, args...).Scan(dest...)
		}
		setup = func(dctx dbos.Context) error {
			for _, q := range appTables(p.prefix, "jsonb") {
				if _, err := pool.Exec(ctx, q); err != nil {
					return err
				}
			}
			ds, err := dbos.NewDataSource(dctx, pool)
			p.ds = ds
			return err
		}
	case *sqlitestore.Store:
		path, ok := bc.SQLitePath(st)
		if !ok {
			tb.Fatalf("SQLite store %p not opened by continuationbench.Backends", st)
		}
		// DBOS's own SQLite settings (OpenSQLitePool: immediate
		// transactions, busy timeout, foreign keys, WAL, 8 connections),
		// at synchronous=FULL like baton's store instead of NORMAL.
		dsn := "file:" + path + "?_txlock=immediate&_pragma=busy_timeout(5000)&_pragma=foreign_keys(ON)" +
			"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			tb.Fatal(err)
		}
		db.SetMaxOpenConns(sqliteConns())
		db.SetMaxIdleConns(sqliteConns())
		tb.Cleanup(func() { db.Close() })
		cfg.SQLiteSystemDB = db
		p.scan = func(ctx context.Context, q string, args []any, dest ...any) error {
			return db.QueryRowContext(ctx, q, args...).Scan(dest...)
		}
		setup = func(dctx dbos.Context) error {
			for _, q := range appTables("", "text") {
				if _, err := db.ExecContext(ctx, q); err != nil {
					return err
				}
			}
			ds, err := dbos.NewDataSource(dctx, db)
			p.ds = ds
			return err
		}
	default:
		tb.Fatalf("store %T", st)
	}
	dctx, err := dbos.NewContext(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = dbos.Shutdown(dctx, 10*time.Second) })
	if err := setup(dctx); err != nil {
		tb.Fatal(err)
	}
	dbos.RegisterWorkflow(dctx, p.turn, dbos.WithWorkflowName("turn"))
	q, err := dbos.RegisterQueue(dctx, "bench_turns", dbos.WithWorkerConcurrency(bc.Workers),
		dbos.WithQueueBasePollingInterval(bc.FetchCooldown))
	if err != nil {
		tb.Fatal(err)
	}
	if err := dbos.Launch(dctx); err != nil {
		tb.Fatal(err)
	}
	return dctx, p, q
}

// sqliteConns is the size of DBOS's SQLite pool: DBOS's default, 8, or
// BENCH_DBOS_SQLITE_CONNS.
func sqliteConns() int {
	n := 8
	if v := os.Getenv("BENCH_DBOS_SQLITE_CONNS"); v != "" {
		fmt.Sscan(v, &n)
	}
	return n
}

// enqueuer returns what enqueues turn i of p's on q, as the workflow
// round+i.
func enqueuer(dctx dbos.Context, p *dbosPeer, q dbos.Queue, round string) func(i int) (string, error) {
	return func(i int) (string, error) {
		id := fmt.Sprintf("%s%d", round, i)
		_, err := dbos.RunWorkflow(dctx, p.turn, turnIn{ID: id, Input: fmt.Sprintf("Where is order %d?", i)},
			dbos.WithQueue(q), dbos.WithWorkflowID(id))
		return id, err
	}
}

// benchDBOS: latency from the enqueue's return (committed) to the
// workflow starting (p50-ms, p99-ms) and to the tool starting
// (tool-p50-ms), and to the workflow's end (finish-p50-ms), one at a time,
// 200 samples; then workflows/s from 16 producers, 480 workflows, first
// enqueue to last end.
func benchDBOS(b *testing.B, st store.Store) {
	dctx, p, q := openDBOS(b, st)
	round := fmt.Sprintf("r%d-", dbosRound.Add(1))
	enqueue := enqueuer(dctx, p, q, round)
	var lat, tool, full []time.Duration
	for i := range bc.LatencySamples {
		id := fmt.Sprintf("%s%d", round, i)
		t0 := p.finished.Await(b, id, func() error {
			_, err := enqueue(i)
			return err
		})
		lat = append(lat, p.started.Get(id).Sub(t0))
		tool = append(tool, p.resumed.Get(id).Sub(t0))
		full = append(full, p.finished.Get(id).Sub(t0))
	}
	b.ReportMetric(float64(bc.Percentile(tool, 0.5).Microseconds())/1000, "tool-p50-ms")
	b.ReportMetric(float64(bc.Percentile(full, 0.5).Microseconds())/1000, "finish-p50-ms")
	p.done.Store(0)
	start := time.Now()
	bc.FanOut(b, bc.BatonJobs, func(i int) error {
		_, err := enqueue(bc.LatencySamples + i)
		return err
	})
	deadline := time.Now().Add(5 * time.Minute)
	for p.done.Load() < bc.BatonJobs && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if p.done.Load() < bc.BatonJobs {
		b.Fatalf("%d of %d workflows done", p.done.Load(), bc.BatonJobs)
	}
	bc.Report(b, lat, bc.BatonJobs, time.Unix(0, p.last.Load()).Sub(start))
}
