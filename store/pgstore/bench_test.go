package pgstore_test

import (
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// BenchmarkTxCheckpoint is one checkpoint transaction of a run, as
// threads' checkpointer writes it: SaveCheckpoint (fenced on the previous
// one) then AppendMessages; with "river", also a statement on PgxTx(tx), as
// River's InsertTx or JobCompleteTx adds.
//
//	go test -run '^$' -bench TxCheckpoint -benchtime 2000x -count 6 ./store/pgstore/
func BenchmarkTxCheckpoint(b *testing.B) {
	benchOffOn(b, "store", "river", func(b *testing.B, river bool) {
		ctx := b.Context()
		schema := freshSchema(b)
		s := open(b, testdb.URL(b), &store.Options{Schema: schema})
		if _, err := admin(b).Exec(ctx, `CREATE TABLE `+schema+`.jobs (id bigserial PRIMARY KEY, thread_id text)`); err != nil {
			b.Fatal(err)
		}
		owner := randName("bench-")
		if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}); err != nil {
			b.Fatal(err)
		}
		th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner})
		if err != nil {
			b.Fatal(err)
		}
		run := randName("run-")
		states := make([]*runstate.State, b.N)
		for i := range states {
			states[i] = &runstate.State{RunID: run, ThreadID: th.ID, Network: "n", Fingerprint: "f", Agent: "a",
				Status: runstate.StatusRunning, Step: i + 1, Messages: []message.Message{message.User("hello")}}
		}
		parent := ""
		b.ResetTimer()
		for i := range b.N {
			err := s.Tx(ctx, func(tx store.Tx) error {
				cp, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: states[i], ParentID: parent})
				if err != nil {
					return err
				}
				parent = cp.ID
				if _, err := tx.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: owner, ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.Assistant("a", "hi")}}}); err != nil {
					return err
				}
				if river {
					ptx, _ := pgstore.PgxTx(tx)
					if _, err := ptx.Exec(ctx, `INSERT INTO jobs (thread_id) VALUES ($1)`, th.ID); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStepCheckpoint is a step's checkpoint transaction as threads'
// checkpointer writes it, the step's new message with the checkpoint:
// "immediate" reads the checkpoint and the thread back (before session 33;
// still a run's end), "deferred" sends the write with the COMMIT
// (SaveCheckpointParams.Deferred: one round trip). Runs of their own
// threads write from 16 goroutines at once (a server's load); ns/op is the
// time per checkpoint, all writers together.
//
//	go test -run '^$' -bench StepCheckpoint -benchtime 4000x -count 6 ./store/pgstore/
func BenchmarkStepCheckpoint(b *testing.B) {
	benchOffOn(b, "immediate", "deferred", func(b *testing.B, deferred bool) {
		ctx := b.Context()
		s := open(b, testdb.URL(b), &store.Options{Schema: freshSchema(b), MaxConns: 16})
		owner := randName("bench-")
		if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: owner}); err != nil {
			b.Fatal(err)
		}
		b.SetParallelism(8) // 16 writers on 2 CPUs
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: owner})
			if err != nil {
				b.Error(err)
				return
			}
			st := &runstate.State{RunID: randName("run-"), ThreadID: th.ID, Network: "n", Fingerprint: "f", Agent: "a",
				Status: runstate.StatusRunning, Messages: []message.Message{message.User("hello")}}
			parent := ""
			for pb.Next() {
				st.Step++
				err := s.Tx(ctx, func(tx store.Tx) error {
					p := &store.SaveCheckpointParams{OwnerID: owner, State: st, ParentID: parent, Deferred: deferred,
						Messages: []store.NewMessage{{Message: message.Assistant("a", "hi")}}}
					if !deferred {
						p.Thread = new(store.Thread)
					}
					cp, err := tx.SaveCheckpoint(ctx, p)
					if err == nil {
						parent = cp.ID
					}
					return err
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// benchOffOn runs bench as two sub-benchmarks: named off with false, then
// named on with true.
func benchOffOn(b *testing.B, off, on string, bench func(b *testing.B, on bool)) {
	for _, v := range []bool{false, true} {
		name := off
		if v {
			name = on
		}
		b.Run(name, func(b *testing.B) { bench(b, v) })
	}
}
