package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// The benchmarks compare one durable step of a run (runnerStep: the fenced
// SaveCheckpoint of the next step, as a run writes it; BenchmarkCheckpointStep
// adds the LatestCheckpoint a resuming worker reads) with the bare cost of
// one committed single-row INSERT of the same bytes on the same database:
//
//	go test -run '^$' -bench 'CheckpointStep|BareInsert' -benchtime 2s -count 5 ./store/
//
// PostgreSQL runs when BATON_TEST_DATABASE_URL is set, in a fresh schema.

// benchBackend is a store and a bare insert on the same database.
type benchBackend struct {
	name  string
	store store.Store
	bare  func(ctx context.Context, id string, payload []byte) error
}

func benchBackends(b *testing.B) []benchBackend {
	b.Helper()
	ctx := context.Background()
	var out []benchBackend

	sq, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sq.Close() })
	if _, err := sq.DB().ExecContext(ctx, `CREATE TABLE bench_bare (id TEXT PRIMARY KEY, payload BLOB NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	out = append(out, benchBackend{"sqlite", sq, func(ctx context.Context, id string, p []byte) error {
		_, err := sq.DB().ExecContext(ctx, `INSERT INTO bench_bare (id, payload) VALUES ($1, $2)`, id, p)
		return err
	}})

	if u := os.Getenv("BATON_TEST_DATABASE_URL"); u != "" {
		schema := "baton_bench_" + randHex()
		pg, err := pgstore.Open(ctx, u, &store.Options{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_, _ = pg.Pool().Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
			pg.Close()
		})
		if _, err := pg.Pool().Exec(ctx, `CREATE TABLE bench_bare (id text PRIMARY KEY, payload bytea NOT NULL)`); err != nil {
			b.Fatal(err)
		}
		out = append(out, benchBackend{"postgres", pg, func(ctx context.Context, id string, p []byte) error {
			_, err := pg.Pool().Exec(ctx, `INSERT INTO bench_bare (id, payload) VALUES ($1, $2)`, id, p)
			return err
		}})
	} else if os.Getenv("CI") == "true" {
		b.Fatal("BATON_TEST_DATABASE_URL is not set and CI=true")
	}
	return out
}

func randHex() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// benchState is a run of a few turns: 12 messages with a tool call, a
// pending call after one transfer, about 2.5 KB encoded.
func benchState(run, thread string, step int) *runstate.State {
	var msgs []message.Message
	msgs = append(msgs, message.System("You are the billing agent. Be brief and precise."))
	for i := range 5 {
		msgs = append(msgs, message.User(fmt.Sprintf("Question %d about invoice INV-2026-%04d: why was I charged twice?", i, i)))
		msgs = append(msgs, message.Assistant("billing", fmt.Sprintf("Answer %d: the second charge is a pre-authorisation that will be released within 3 days.", i)))
	}
	call := message.Message{Role: message.RoleAssistant, Agent: "billing", Parts: []message.Part{{
		Type: message.PartToolCall, CallID: "call_1", Name: "lookup_invoice", Arguments: []byte(`{"invoice":"INV-2026-0004"}`)}}}
	msgs = append(msgs, call)
	return &runstate.State{
		RunID: run, ThreadID: thread, Network: "support", Fingerprint: "sha256:0123456789abcdef", Agent: "billing",
		Messages: msgs, Transcript: msgs,
		Pending: []runstate.PendingCall{{Call: message.ToolCall{ID: "call_1", Name: "lookup_invoice", Arguments: []byte(`{"invoice":"INV-2026-0004"}`)}, Kind: runstate.CallTool}},
		Trail:   []string{"triage", "billing"}, Turns: step, Transfers: 1, Step: step,
		Usage:  message.Usage{InputTokens: 1200, OutputTokens: 300},
		Status: runstate.StatusSuspended,
	}
}

// benchRun makes an owner and a thread of its own on s and returns the
// owner and b.N states of run in the thread, at steps 1 to b.N.
func benchRun(b *testing.B, s store.Store, run string) (owner string, states []*runstate.State) {
	b.Helper()
	ctx := context.Background()
	owner = "bench-" + randHex()
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}); err != nil {
		b.Fatal(err)
	}
	th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner})
	if err != nil {
		b.Fatal(err)
	}
	states = make([]*runstate.State, 0, b.N)
	for i := range b.N {
		states = append(states, benchState(run, th.ID, i+1))
	}
	return owner, states
}

// benchRunData is a run of a benchmark's own on one backend: its owner
// and run, b.N states of the run at steps 1 to b.N (benchRun), the first
// state encoded (a bare insert's payload) and a prefix for bare rows' ids.
type benchRunData struct {
	owner, run, prefix string
	states             []*runstate.State
	payload            []byte
}

// benchEachRun runs bench as a sub-benchmark of each backend, with a run
// of its own on the backend's store.
func benchEachRun(b *testing.B, bench func(b *testing.B, ctx context.Context, be benchBackend, r benchRunData)) {
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			r := benchRunData{run: "run-" + randHex(), prefix: randHex()}
			r.owner, r.states = benchRun(b, be.store, r.run)
			r.payload, _ = runstate.Encode(r.states[0])
			bench(b, context.Background(), be, r)
		})
	}
}

func BenchmarkCheckpointStep(b *testing.B) {
	benchEachRun(b, func(b *testing.B, ctx context.Context, be benchBackend, r benchRunData) {
		s := be.store
		b.SetBytes(int64(len(r.payload)))
		parent := ""
		b.ResetTimer()
		for i := range b.N {
			cp, err := s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: r.owner, State: r.states[i], ParentID: parent})
			if err != nil {
				b.Fatal(err)
			}
			got, err := s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: r.owner, RunID: r.run, Fingerprint: "sha256:0123456789abcdef"})
			if err != nil || got.ID != cp.ID {
				b.Fatalf("latest = %v, %v", got, err)
			}
			parent = cp.ID
		}
	})
}

func BenchmarkBareInsert(b *testing.B) {
	for _, be := range benchBackends(b) {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			payload, _ := runstate.Encode(benchState("run", "thread", 1))
			b.SetBytes(int64(len(payload)))
			prefix := randHex()
			b.ResetTimer()
			for i := range b.N {
				if err := be.bare(ctx, fmt.Sprintf("%s-%d", prefix, i), payload); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// runnerStep writes one step's checkpoint as a run writes it between two
// of its steps (threads' checkpointer, a step with no new message and no
// change of agent): in a Store.Tx, fenced on the previous checkpoint,
// Deferred (on PostgreSQL BEGIN, the scope, the fenced insert and COMMIT
// go in one round trip). A run keeps the id of the checkpoint it wrote as
// the next step's fence and reads nothing back; only a resume reads the
// latest checkpoint.
func runnerStep(ctx context.Context, s store.Store, owner string, st *runstate.State, parent string) (*store.Checkpoint, error) {
	var cp *store.Checkpoint
	err := s.Tx(ctx, func(tx store.Tx) error {
		var err error
		cp, err = tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: st, ParentID: parent, Deferred: true})
		return err
	})
	return cp, err
}

// BenchmarkCheckpointStepVsBare interleaves checkpoint steps (runnerStep:
// what a run writes per step) and bare inserts on the same database (in
// alternating order) and reports the median of each and their ratio, so
// that disk and CPU noise from other processes weighs on both alike. ns/op
// is one step plus one insert.
func BenchmarkCheckpointStepVsBare(b *testing.B) {
	benchEachRun(b, func(b *testing.B, ctx context.Context, be benchBackend, r benchRunData) {
		s := be.store
		steps := make([]time.Duration, 0, b.N)
		bares := make([]time.Duration, 0, b.N)
		parent := ""
		b.ResetTimer()
		step := func(i int) {
			cp, err := runnerStep(ctx, s, r.owner, r.states[i], parent)
			if err != nil {
				b.Fatal(err)
			}
			parent = cp.ID
		}
		bare := func(i int) {
			if err := be.bare(ctx, fmt.Sprintf("%s-%d", r.prefix, i), r.payload); err != nil {
				b.Fatal(err)
			}
		}
		for i := range b.N {
			// Alternate the order, so that neither always follows the other.
			t0 := time.Now()
			if i%2 == 0 {
				step(i)
			} else {
				bare(i)
			}
			t1 := time.Now()
			if i%2 == 0 {
				bare(i)
			} else {
				step(i)
			}
			t2 := time.Now()
			if i%2 == 0 {
				steps, bares = append(steps, t1.Sub(t0)), append(bares, t2.Sub(t1))
			} else {
				bares, steps = append(bares, t1.Sub(t0)), append(steps, t2.Sub(t1))
			}
		}
		b.StopTimer()
		ms, mb := median(steps), median(bares)
		b.ReportMetric(float64(ms.Nanoseconds()), "step-ns")
		b.ReportMetric(float64(mb.Nanoseconds()), "bare-ns")
		b.ReportMetric(float64(ms)/float64(mb), "step/bare")
	})
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkCheckpointStepParts times, one after the other in each round on
// the same database: BenchmarkCheckpointStepVsBare's step (runnerStep,
// save-ns), a resume's LatestCheckpoint of the run (read-ns: not part of
// a step, which reads nothing back), the bare insert (bare-ns) and, on
// PostgreSQL, a plain INSERT
// of a checkpoint row into a copy of the checkpoints table with its
// indexes and foreign key (row-ns: what the save costs the server without
// its fence, lock and scope). Medians; read÷bare is what a resume's read
// costs against a whole commit.
func BenchmarkCheckpointStepParts(b *testing.B) {
	benchEachRun(b, func(b *testing.B, ctx context.Context, be benchBackend, r benchRunData) {
		s := be.store
		var row func(i int) error
		if pg, ok := s.(*pgstore.Store); ok {
			pool := pg.Pool()
			if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_cp (LIKE checkpoints INCLUDING ALL,
				FOREIGN KEY (thread_id, owner_id) REFERENCES threads (id, owner_id))`); err != nil {
				b.Fatal(err)
			}
			thread := r.states[0].ThreadID
			row = func(i int) error {
				_, err := pool.Exec(ctx, `INSERT INTO bench_cp (id, owner_id, thread_id, run_id, step, status, fingerprint, network, created_at, state)
					VALUES ($1, $2, $3, $4, $5, 'running', 'fp', 'n', now(), $6)`, fmt.Sprintf("%s-%d", r.prefix, i), r.owner, thread, r.run, i, r.payload)
				return err
			}
		}
		var saves, reads, bares, rows []time.Duration
		parent := ""
		b.ResetTimer()
		for i := range b.N {
			t0 := time.Now()
			cp, err := runnerStep(ctx, s, r.owner, r.states[i], parent)
			if err != nil {
				b.Fatal(err)
			}
			parent = cp.ID
			t1 := time.Now()
			if _, err := s.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: r.owner, RunID: r.run}); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if err := be.bare(ctx, fmt.Sprintf("%s-%d", r.prefix, i), r.payload); err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			saves, reads, bares = append(saves, t1.Sub(t0)), append(reads, t2.Sub(t1)), append(bares, t3.Sub(t2))
			if row != nil {
				if err := row(i); err != nil {
					b.Fatal(err)
				}
				rows = append(rows, time.Since(t3))
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(median(saves).Nanoseconds()), "save-ns")
		b.ReportMetric(float64(median(reads).Nanoseconds()), "read-ns")
		b.ReportMetric(float64(median(bares).Nanoseconds()), "bare-ns")
		b.ReportMetric(float64(median(reads))/float64(median(bares)), "read/bare")
		if row != nil {
			b.ReportMetric(float64(median(rows).Nanoseconds()), "row-ns")
		}
	})
}
