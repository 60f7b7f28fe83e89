package pgstore_test

import (
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/storetest"
)

// TestForkDeleteAsApp: the application role, under row-level security,
// deletes a thread that a fork reads; the trigger copies the shared rows
// into the fork in that role, and the fork reads whole.
func TestForkDeleteAsApp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, testdb.URL(t), &store.Options{Schema: freshSchema(t)})
	storetest.Must(s.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "app"}))(t)
	src := storetest.Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "app",
		Messages: []store.NewMessage{{Message: message.User("one")}, {Message: message.User("two")}, {Message: message.User("three")}}}))(t)
	fork := storetest.Must(s.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "app", ParentID: src.ID, ForkOf: src.ID, ForkSeq: 2,
		Messages: []store.NewMessage{{Message: message.User("three, edited")}}}))(t)
	deleteThreadAsApp(t, s, src.ID)
	msgs := storetest.Must(s.ListMessages(ctx, &store.ListMessagesParams{OwnerID: "app", ThreadID: fork.ID}))(t)
	var got []string
	for _, m := range msgs {
		got = append(got, m.Text())
	}
	if len(got) != 3 || got[0] != "one" || got[1] != "two" || got[2] != "three, edited" {
		t.Fatalf("the fork after its source's delete by the application role: %q", got)
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM messages WHERE thread_id = $1`, fork.ID).Scan(&n); err != nil || n != 3 {
		t.Fatalf("the fork holds %d rows of its own, %v; want 3", n, err)
	}
}
