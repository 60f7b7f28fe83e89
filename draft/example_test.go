package draft_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
)

// A worker writes progress into a streaming message's draft; a client that
// subscribes later first gets the current draft, then the final message.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "draft-example")
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "baton.db"), nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: "acme"})
	th, _ := st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: "acme"})
	ms, _ := st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: "acme", ThreadID: th.ID, Messages: []store.NewMessage{{
		Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}})
	msg := ms[0].ID

	hub := draft.NewHub(st) // in-process; pgbroker.Broker across processes
	w := draft.NewWriter(ctx, st, hub, draft.Target{OwnerID: "acme", ThreadID: th.ID, MessageID: msg}, draft.Options{})
	w.WriteString("Looking up ")
	w.WriteString("order 1234…")
	w.Close() // flushes what the 200 ms / 1.5 KiB throttle held back

	sub, cancel := context.WithCancel(ctx)
	defer cancel()
	for u, err := range hub.Subscribe(sub, draft.Filter{OwnerID: "acme", MessageID: msg}) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s v%d final=%t: %s\n", u.Status, u.Version, u.Final, u.Text)
		if !u.Final {
			// The message is finalised: text, status, draft cleared.
			st.Tx(ctx, func(tx store.Tx) error {
				tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: "acme", ID: msg, Status: message.StatusCompleted,
					Parts: []message.Part{{Type: message.PartText, Text: "Order 1234 has shipped."}}})
				return tx.DeleteDraft(ctx, &store.DeleteDraftParams{OwnerID: "acme", MessageID: msg})
			})
			hub.Publish(ctx, draft.Event{OwnerID: "acme", ThreadID: th.ID, MessageID: msg})
		}
	}
	// Output:
	// streaming v1 final=false: Looking up order 1234…
	// completed v0 final=true: Order 1234 has shipped.
}
