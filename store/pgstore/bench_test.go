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
	for _, river := range []bool{false, true} {
		name := "store"
		if river {
			name = "river"
		}
		b.Run(name, func(b *testing.B) {
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
}
