package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

func Example() {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, ":memory:", nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()

	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "acme"}); err != nil {
		panic(err)
	}
	th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "acme", Network: "support"})
	if err != nil {
		panic(err)
	}
	if _, err := s.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "acme", ThreadID: th.ID, Messages: []store.NewMessage{
		{Message: message.User("Where is my refund?")},
		{Message: message.Assistant("billing", "It was sent yesterday.")},
	}}); err != nil {
		panic(err)
	}
	msgs, err := s.ListMessages(ctx, &store.ListMessagesParams{OwnerID: "acme", ThreadID: th.ID})
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		fmt.Println(m.Seq, m.Role, m.Text())
	}
	// Another owner cannot see the thread.
	_, err = s.GetThread(ctx, &store.GetThreadParams{OwnerID: "globex", ID: th.ID})
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// 1 user Where is my refund?
	// 2 assistant It was sent yesterday.
	// true
}

// At a tool boundary a request writes the checkpoint, the placeholder of the
// answer and the job run in one transaction; SQLTx gives the same
// transaction to River's InsertTx.
func ExampleStore_Tx() {
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, ":memory:", nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	if _, err := s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "acme"}); err != nil {
		panic(err)
	}
	th, err := s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "acme"})
	if err != nil {
		panic(err)
	}
	state := &runstate.State{RunID: "run-1", ThreadID: th.ID, Network: "support", Fingerprint: "v1",
		Agent: "billing", Status: runstate.StatusSuspended, Step: 1}

	err = s.Tx(ctx, func(tx store.Tx) error {
		if _, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: "acme", State: state}); err != nil {
			return err
		}
		if _, err := tx.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "acme", ThreadID: th.ID, Messages: []store.NewMessage{
			{Message: message.Message{Role: message.RoleAssistant, Agent: "billing", Status: message.StatusQueued}},
		}}); err != nil {
			return err
		}
		res, err := tx.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: "acme", IdempotencyKey: "continue:run-1:1", Kind: "continuation", ThreadID: th.ID})
		if err != nil {
			return err
		}
		sqlTx, _ := sqlitestore.SQLTx(tx)
		_ = sqlTx // riverClient.InsertTx(ctx, sqlTx, args, nil)
		fmt.Println("job", res.Run.Status, "duplicate:", res.Duplicate)
		return nil
	})
	if err != nil {
		panic(err)
	}

	// A second writer of step 1 is stale.
	_, err = s.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: "acme", State: state})
	var stale *store.StaleWriteError
	fmt.Println(errors.As(err, &stale), stale.LatestStep)
	// Output:
	// job queued duplicate: false
	// true 1
}
