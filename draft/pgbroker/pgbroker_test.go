package pgbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/drafttest"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

func newBroker(t *testing.T, st *pgstore.Store) *pgbroker.Broker {
	t.Helper()
	b := pgbroker.New(st, nil)
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// finish completes tg's message with text and deletes its draft, notifying
// through b inside the transaction, as a continuation's final transaction
// does.
func finish(t *testing.T, st *pgstore.Store, b *pgbroker.Broker, tg draft.Target, text string) {
	t.Helper()
	ctx := t.Context()
	err := st.Tx(ctx, func(tx store.Tx) error {
		if _, err := tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: tg.OwnerID, ID: tg.MessageID, Status: message.StatusCompleted,
			Parts: []message.Part{{Type: message.PartText, Text: text}}}); err != nil {
			return err
		}
		if err := tx.DeleteDraft(ctx, &store.DeleteDraftParams{OwnerID: tg.OwnerID, MessageID: tg.MessageID}); err != nil {
			return err
		}
		return b.PublishTx(ctx, tx, draft.Event(tg))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	drafttest.Run(t, func(t *testing.T) (draft.Broker, store.Store) {
		st := testdb.Postgres(t, url, testdb.Schema(t, url))
		return newBroker(t, st), st
	})
}

// TestAcrossProcesses publishes through one store and broker (a worker
// process) and subscribes through another (a server process) on the same
// schema; a broker on another schema hears nothing.
func TestAcrossProcesses(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	schema := testdb.Schema(t, url)
	worker := testdb.Postgres(t, url, schema)
	server := testdb.Postgres(t, url, schema)
	wb, sb := newBroker(t, worker), newBroker(t, server)
	ob := newBroker(t, testdb.Postgres(t, url, testdb.Schema(t, url)))
	ctx := t.Context()
	tg := drafttest.Target(t, worker, "o")
	f := draft.Filter{OwnerID: "o", ThreadID: tg.ThreadID}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan draft.Update, 16)
	go func() {
		for u, err := range sb.Subscribe(sctx, f) {
			if err != nil {
				return
			}
			got <- u
		}
	}()
	other := make(chan draft.Update, 16)
	go func() {
		for u, err := range ob.Subscribe(sctx, f) {
			if err == nil {
				other <- u
			}
		}
	}()
	w := draft.NewWriter(ctx, worker, wb, tg, draft.Options{})
	w.WriteString("working on it")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// The subscription may start before the flush: its first update is then
	// the current state (the message, still without a draft), which is
	// correct; the flushed text must follow.
	for deadline := time.After(10 * time.Second); ; {
		select {
		case u := <-got:
			if u.MessageID != tg.MessageID || u.Final || (u.Text != "" && u.Text != "working on it") {
				t.Fatalf("update = %+v", u)
			}
			if u.Text == "" {
				continue
			}
		case <-deadline:
			t.Fatal("the other process's subscriber did not get the draft")
		}
		break
	}
	// The final message, notified inside the finalising transaction.
	finish(t, worker, wb, tg, "done")
	// A repeated draft update may come first (an event delivered twice is
	// harmless by contract); then the final message.
	for deadline := time.After(10 * time.Second); ; {
		select {
		case u := <-got:
			if !u.Final && u.Text == "working on it" {
				continue
			}
			if !u.Final || u.Text != "done" {
				t.Fatalf("final update = %+v", u)
			}
		case <-deadline:
			t.Fatal("no final update")
		}
		break
	}
	select {
	case u := <-other:
		t.Fatalf("a broker of another schema got %+v", u)
	default:
	}
}
