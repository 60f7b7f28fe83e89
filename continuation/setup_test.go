package continuation

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/message"
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
// is set, PostgreSQL (a fresh schema per store). In CI PostgreSQL is
// required.
func backends(t testing.TB) []backend {
	t.Helper()
	out := []backend{{"SQLite", openSQLite}}
	if u := os.Getenv("BATON_TEST_DATABASE_URL"); u != "" {
		out = append(out, backend{"Postgres", func(t testing.TB) store.Store { return openPG(t, u) }})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("BATON_TEST_DATABASE_URL is not set in CI: the PostgreSQL tests must run")
	}
	return out
}

func openSQLite(t testing.TB) store.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "baton.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var schemaSeq atomic.Int64

func newSchema() string {
	return fmt.Sprintf("continuation_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
}

func openPG(t testing.TB, url string) store.Store {
	t.Helper()
	schema := newSchema()
	s, err := pgstore.Open(context.Background(), url, &store.Options{Schema: schema, MaxConns: pgMaxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s.Pool().Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		s.Close()
	})
	return s
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
	a := &agent.Agent{Name: "assistant", Instructions: instructions, ModelName: "scripted",
		Model: scripted.New("assistant", steps, opts),
		Tools: []*agent.Tool{{Name: "lookup", Description: "Look an order up.", Slow: true, Func: tools.fn}}}
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "shop", Agents: []*agent.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	return n
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
		Logger: testLogger(),
	}
}

// backendOf returns River and a started draft broker on st (what package
// service chooses when it opens a database).
func backendOf(t testing.TB, st store.Store) (Driver, draft.Broker) {
	t.Helper()
	if s, ok := st.(*pgstore.Store); ok {
		br := pgbroker.New(s, &pgbroker.Options{Logger: testLogger()})
		if err := br.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { br.Close() })
		return driverOf(t, st), br
	}
	return driverOf(t, st), draft.NewHub(st)
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
	r, err := runner.New(runner.Config{Network: net, Logger: testLogger(), Extensions: exts})
	if err != nil {
		t.Fatal(err)
	}
	svc := threads.New(st, r, testLogger())
	cont.Work(svc)
	return cont, svc
}

func testLogger() *slog.Logger {
	if os.Getenv("BATON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
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

// start starts the workers until the test ends.
func (b *bundle) start(t testing.TB) {
	t.Helper()
	if err := b.cont.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.cont.Stop(ctx)
	})
}

// turn runs one inline turn on a new thread with the hand-over options.
func (b *bundle) turn(t testing.TB, input string) (threadID, runID string, end *runner.RunEndEvent) {
	t.Helper()
	for ev, err := range b.svc.Turn(context.Background(), owner, input, threads.TurnOptions{RunOptions: b.cont.RunOptions()}) {
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
		switch e := ev.(type) {
		case *runner.RunStartEvent:
			threadID, runID = e.ThreadID, e.RunID
		case *runner.RunEndEvent:
			end = e
		}
	}
	return threadID, runID, end
}

// waitMessage waits until the placeholder is final.
func (b *bundle) waitMessage(t testing.TB, id string, d time.Duration) *store.Message {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		m, err := b.st.GetMessage(context.Background(), &store.GetMessageParams{OwnerID: owner, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if m.Status == message.StatusCompleted || m.Status == message.StatusError {
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
	out := map[string]int{}
	const q = `SELECT state, count(*) FROM river_job WHERE kind = 'baton.continue' GROUP BY state`
	switch s := st.(type) {
	case *pgstore.Store:
		rows, err := s.Pool().Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				t.Fatal(err)
			}
			out[state] = n
		}
	case *sqlitestore.Store:
		rows, err := s.DB().QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var state string
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				t.Fatal(err)
			}
			out[state] = n
		}
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
// the workers, River's own connections and producers.
var pgMaxConns int32 = 8
