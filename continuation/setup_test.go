package continuation

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/internal/backendtest"
	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/threads"
)

const owner = "acme"

// backend opens a fresh store.
type backend struct {
	name string
	open func(t testing.TB) store.Store
}

// backends returns SQLite (a temp file) and, when BATON_TEST_DATABASE_URL
// is set, PostgreSQL (a fresh schema per store, a pool of pgMaxConns); in
// CI PostgreSQL is required (testdb.Backends).
func backends(t testing.TB) []backend {
	t.Helper()
	out := []backend{{"SQLite", func(t testing.TB) store.Store { return testdb.SQLite(t) }}}
	if u := pgURL(t); u != "" {
		out = append(out, backend{"Postgres", func(t testing.TB) store.Store {
			return testdb.PostgresWith(t, u, store.Options{MaxConns: pgMaxConns})
		}})
	}
	return out
}

// pgURL returns the PostgreSQL test database's URL, "" when none is set
// (which fails t in CI: see testdb.Backends).
func pgURL(t testing.TB) string {
	t.Helper()
	if _, ok := testdb.Backends(t)["Postgres"]; !ok {
		return ""
	}
	return os.Getenv(testdb.URLVar)
}

// eachBackend runs test on every backend, in parallel.
func eachBackend(t *testing.T, test func(t *testing.T, be backend)) {
	t.Helper()
	t.Parallel()
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			test(t, be)
		})
	}
}

// toolLog records the executions of the slow tool by idempotency key.
type toolLog struct {
	mu    sync.Mutex
	calls map[string]int
	// fail, if set, decides the outcome of an execution.
	fail func(key string, n int) error
	// gate, if set, is waited on before the tool returns.
	gate chan struct{}
	// started is told each execution's key.
	started chan string
}

func newToolLog() *toolLog { return &toolLog{calls: map[string]int{}} }

// newGatedToolLog is a toolLog whose executions are told on started (room
// for n keys) and wait on gate, which the test closes.
func newGatedToolLog(n int) *toolLog {
	l := newToolLog()
	l.started, l.gate = make(chan string, n), make(chan struct{})
	return l
}

func (l *toolLog) fn(ctx context.Context, args json.RawMessage) (string, error) {
	ci, ok := agent.CallFromContext(ctx)
	if !ok || ci.IdempotencyKey == "" {
		return "", fmt.Errorf("no idempotency key")
	}
	l.mu.Lock()
	l.calls[ci.IdempotencyKey]++
	n := l.calls[ci.IdempotencyKey]
	fail := l.fail
	l.mu.Unlock()
	if l.started != nil {
		l.started <- ci.IdempotencyKey
	}
	if l.gate != nil {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if fail != nil {
		if err := fail(ci.IdempotencyKey, n); err != nil {
			return "", err
		}
	}
	return `{"order":"1234","status":"shipped"}`, nil
}

func (l *toolLog) total() (keys, calls int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.calls {
		keys++
		calls += n
	}
	return keys, calls
}

// network is the test network: the assistant says something, calls the
// slow lookup tool, then answers (next, by default that the order has
// shipped).
func network(t testing.TB, tools *toolLog, instructions string, opts scripted.Options, next ...scripted.Step) *agent.Network {
	t.Helper()
	steps := []scripted.Step{
		{Text: "Let me look that up.", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
	}
	if len(next) == 0 {
		next = []scripted.Step{{Text: "Your order 1234 has shipped."}}
	}
	steps = append(steps, next...)
	return networkOf(t, tools, instructions, scripted.New("assistant", steps, opts))
}

// networkOf is the test network with the assistant's model m.
func networkOf(t testing.TB, tools *toolLog, instructions string, m model.Model) *agent.Network {
	t.Helper()
	a := &agent.Agent{Name: "assistant", Instructions: instructions, ModelName: "scripted", Model: m,
		Tools: []*agent.Tool{{Name: "lookup", Description: "Look an order up.", Slow: true, Func: tools.fn}}}
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "shop", Agents: []*agent.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// newStallNet is the network of a run stuck mid-step, the way a process
// dies with it: its tool blocks its first call until released (or its
// context ends).
func newStallNet(t testing.TB) *runtest.Stall {
	t.Helper()
	return runtest.NewStall(t, "Done thinking.", "You're welcome.")
}

// bundle is a store with a threads service and a continuation service.
type bundle struct {
	st    store.Store
	svc   *threads.Service
	cont  *Service
	tools *toolLog
}

// testConfig returns a config with short timings, on st's River and draft
// broker.
func testConfig(t testing.TB, st store.Store) Config {
	t.Helper()
	d, br := backendOf(t, st)
	return Config{
		Store: st, Driver: d, Broker: br, Workers: 4,
		JobTimeout: 2 * time.Second, RescueStuckJobsAfter: 3 * time.Second,
		RetryBaseDelay: 50 * time.Millisecond, RetryMaxDelay: 500 * time.Millisecond,
		FetchCooldown: 20 * time.Millisecond, FetchPollInterval: 200 * time.Millisecond,
		Logger: backendtest.Logger(),
	}
}

// backendOf returns River and a started draft broker on st (what package
// service chooses when it opens a database).
func backendOf(t testing.TB, st store.Store) (Driver, draft.Broker) {
	t.Helper()
	return driverOf(t, st), backendtest.Broker(t, st)
}

// driverOf returns River on st.
func driverOf(t testing.TB, st store.Store) Driver {
	t.Helper()
	switch s := st.(type) {
	case *pgstore.Store:
		return PostgresDriver(s)
	case *sqlitestore.Store:
		return SQLiteDriver(s)
	}
	t.Fatalf("store %T", st)
	return nil
}

// wire builds a continuation service from cfg and the threads service of
// net whose runner carries its extension, then extra.
func wire(t testing.TB, st store.Store, net *agent.Network, cfg Config, extra ...runner.Extension) (*Service, *threads.Service) {
	t.Helper()
	cont, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exts := append([]runner.Extension{cont.Extension()}, extra...)
	r, err := runner.New(runner.Config{Network: net, Logger: backendtest.Logger(), Extensions: exts})
	if err != nil {
		t.Fatal(err)
	}
	svc := threads.New(st, r, backendtest.Logger())
	cont.Work(svc)
	return cont, svc
}

// setup builds a bundle; change adjusts the config before New; the runner
// carries extra after the continuation's extension.
func setup(t testing.TB, b backend, net *agent.Network, tools *toolLog, change func(*Config), extra ...runner.Extension) *bundle {
	t.Helper()
	st := b.open(t)
	cfg := testConfig(t, st)
	if change != nil {
		change(&cfg)
	}
	cont, svc := wire(t, st, net, cfg, extra...)
	if err := cont.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &bundle{st: st, svc: svc, cont: cont, tools: tools}
}

// running is a service wired on st as wire does, its workers started until
// the test ends.
func running(t testing.TB, st store.Store, net *agent.Network, cfg Config) *bundle {
	t.Helper()
	cont, svc := wire(t, st, net, cfg)
	b := &bundle{st: st, svc: svc, cont: cont}
	b.start(t)
	return b
}

// start starts the workers until the test ends.
func (b *bundle) start(t testing.TB) {
	t.Helper()
	backendtest.StartUntilEnd(t, b.cont.Start, b.cont.Stop)
}

// turn runs one inline turn on a new thread with the hand-over options.
func (b *bundle) turn(t testing.TB, input string) (threadID, runID string, end *runner.RunEndEvent) {
	t.Helper()
	r := runtest.Collect(t, b.svc.Turn(context.Background(), owner, input, threads.TurnOptions{RunOptions: b.cont.RunOptions()}), nil)
	return r.ThreadID(), r.RunID(), r.End
}

// handOver runs an inline turn on a new thread that asks about an order,
// which the run hands over at the slow tool, and returns its thread, run and
// hand-over.
func (b *bundle) handOver(t testing.TB) (threadID, runID string, h *Handover) {
	t.Helper()
	threadID, runID, _ = b.turn(t, "Where is my order 1234?")
	h, err := b.cont.Lookup(t.Context(), owner, runID)
	if err != nil {
		t.Fatal(err)
	}
	return threadID, runID, h
}

// waitMessage waits until the placeholder is final.
func (b *bundle) waitMessage(t testing.TB, id string, d time.Duration) *store.Message {
	t.Helper()
	return b.waitStatus(t, id, d, message.StatusCompleted, message.StatusError)
}

// waitStatus waits up to d until the placeholder id has one of statuses,
// failing t when it has not.
func (b *bundle) waitStatus(t testing.TB, id string, d time.Duration, statuses ...message.Status) *store.Message {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		m, err := b.st.GetMessage(context.Background(), &store.GetMessageParams{OwnerID: owner, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(statuses, m.Status) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("placeholder %s still %s after %s", id, m.Status, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// riverJobs counts the continuation jobs by River state.
func riverJobs(t testing.TB, st store.Store) map[string]int {
	t.Helper()
	var db *sql.DB
	switch s := st.(type) {
	case *pgstore.Store:
		db = stdlib.OpenDBFromPool(s.Pool())
		defer db.Close()
	case *sqlitestore.Store:
		db = s.DB()
	}
	rows, err := db.QueryContext(context.Background(), `SELECT state, count(*) FROM river_job WHERE kind = 'baton.continue' GROUP BY state`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			t.Fatal(err)
		}
		out[state] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRiver waits until no continuation job is waiting or running.
func waitRiver(t testing.TB, st store.Store, d time.Duration) map[string]int {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		jobs := riverJobs(t, st)
		if jobs["available"]+jobs["running"]+jobs["retryable"]+jobs["scheduled"]+jobs["pending"] == 0 {
			return jobs
		}
		if time.Now().After(deadline) {
			t.Fatalf("river jobs still open after %s: %v", d, jobs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shape renders messages without ids, for comparing transcripts.
func shape(msgs []message.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role) + "/" + m.Agent + "/" + string(m.Status) + ": " + m.Text())
		for _, p := range m.Parts {
			if p.Type == message.PartToolCall || p.Type == message.PartToolResult {
				b.WriteString(" [" + p.Name + " " + string(p.Arguments) + p.Text + "]")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// stored returns a thread's messages, placeholders excluded.
func stored(t testing.TB, st store.Store, thread string) (msgs []message.Message, placeholders []*store.Message) {
	t.Helper()
	ms, err := st.ListMessages(context.Background(), &store.ListMessagesParams{OwnerID: owner, ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if IsPlaceholder(m) {
			placeholders = append(placeholders, m)
			continue
		}
		msgs = append(msgs, m.Message)
	}
	return msgs, placeholders
}

// statuses returns the statuses of a run's checkpoints, oldest first.
func statuses(t testing.TB, st store.Store, runID string) []runstate.Status {
	t.Helper()
	cp, err := st.LatestCheckpoint(context.Background(), &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	var out []runstate.Status
	for {
		out = append([]runstate.Status{cp.Status}, out...)
		if cp.ParentID == "" {
			return out
		}
		if cp, err = st.GetCheckpoint(context.Background(), &store.GetCheckpointParams{OwnerID: owner, ID: cp.ParentID}); err != nil {
			t.Fatal(err)
		}
	}
}

// pgMaxConns is the pool size of the tests' PostgreSQL stores: room for
// the workers, River's own connections and producers. (The benchmarks'
// stores have continuationbench.PGMaxConns.)
const pgMaxConns int32 = 8
