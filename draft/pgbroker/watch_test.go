package pgbroker_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/draft/drafttest"
	"github.com/batonhq/baton/draft/pgbroker"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// listener is a session LISTENing on a schema's channel, as another
// process's broker would: it records what is notified.
type listener struct {
	conn    *pgx.Conn
	channel string
}

func listen(t *testing.T, url, schema string) *listener {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	l := &listener{conn: conn, channel: pgbroker.Channel(schema)}
	if _, err := conn.Exec(t.Context(), `LISTEN `+pgx.Identifier{l.channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return l
}

// heard returns the payloads notified on the channel before a marker sent
// now: notifications arrive in commit order, so whatever was committed
// before the marker has arrived when the marker does.
func (l *listener) heard(t *testing.T, st *pgstore.Store) []string {
	t.Helper()
	// A signal nobody handles, to the brokers listening.
	marker := `{"k":"test.marker","key":"` + time.Now().Format(time.RFC3339Nano) + `"}`
	if _, err := st.Pool().Exec(t.Context(), `SELECT pg_notify($1, $2)`, l.channel, marker); err != nil {
		t.Fatal(err)
	}
	var got []string
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		n, err := l.conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("waiting for the marker: %v", err)
		}
		if n.Payload == marker {
			return got
		}
		got = append(got, n.Payload)
	}
}

func watchRows(t *testing.T, st *pgstore.Store) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM draft_watches`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPublishOnlyWhenWatched: a draft event is notified only while some
// process subscribes to its thread or its message; Publish and PublishTx
// alike; a subscription's row goes when it ends.
func TestPublishOnlyWhenWatched(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	schema := testdb.Schema(t, url)
	st := testdb.Postgres(t, url, schema)
	b := newBroker(t, st)
	l := listen(t, url, schema)
	tg := drafttest.Target(t, st, "o")
	ev := draft.Event(tg)
	publishBoth := func(t *testing.T) {
		t.Helper()
		if err := b.Publish(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
		err := st.Tx(t.Context(), func(tx store.Tx) error {
			if _, err := tx.GetMessage(t.Context(), &store.GetMessageParams{OwnerID: "o", ID: tg.MessageID}); err != nil {
				return err
			}
			return b.PublishTx(t.Context(), tx, ev)
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	publishBoth(t)
	if got := l.heard(t, st); len(got) != 0 {
		t.Fatalf("nobody subscribed, notified %q", got)
	}
	for _, f := range []draft.Filter{
		{OwnerID: "o", ThreadID: tg.ThreadID},
		{OwnerID: "o", MessageID: tg.MessageID},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		sub := startSub(t, ctx, b, f)
		publishBoth(t)
		if got := l.heard(t, st); len(got) != 2 {
			t.Fatalf("subscribed to %+v: notified %q, want the two events", f, got)
		}
		// Another owner's subscription to the same ids does not count.
		other := draft.Event{OwnerID: "p", ThreadID: tg.ThreadID, MessageID: tg.MessageID}
		if err := b.Publish(t.Context(), other); err != nil {
			t.Fatal(err)
		}
		if got := l.heard(t, st); len(got) != 0 {
			t.Fatalf("another owner's event notified %q", got)
		}
		cancel()
		<-sub
		waitRows(t, st, 0)
		publishBoth(t)
		if got := l.heard(t, st); len(got) != 0 {
			t.Fatalf("subscription ended, notified %q", got)
		}
	}
}

// startSub subscribes to f on b and returns once the subscription has its
// first update (its row is committed by then); the channel closes when the
// subscription has ended.
func startSub(t *testing.T, ctx context.Context, b *pgbroker.Broker, f draft.Filter) <-chan draft.Update {
	t.Helper()
	got := make(chan draft.Update, 64)
	first := make(chan struct{})
	go func() {
		defer close(got)
		once := false
		for u, err := range b.Subscribe(ctx, f) {
			if err != nil {
				return
			}
			got <- u
			if !once {
				once = true
				close(first)
			}
		}
	}()
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatalf("subscription to %+v: no first update", f)
	}
	return got
}

func waitRows(t *testing.T, st *pgstore.Store, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for watchRows(t, st) != want {
		if time.Now().After(deadline) {
			t.Fatalf("draft_watches has %d rows, want %d", watchRows(t, st), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSubscribeWhilePublishing: a subscription that starts, in one process,
// while another process finishes the message never misses the final
// update — the row is committed before the subscription reads, and the
// publisher looks for it after its change committed.
func TestSubscribeWhilePublishing(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	schema := testdb.Schema(t, url)
	worker, server := testdb.Postgres(t, url, schema), testdb.Postgres(t, url, schema)
	wb, sb := newBroker(t, worker), newBroker(t, server)
	for i := range 40 {
		tg := drafttest.Target(t, worker, "o")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		final := make(chan bool, 1)
		go func() {
			for u, err := range sb.Subscribe(ctx, draft.Filter{OwnerID: "o", MessageID: tg.MessageID}) {
				if err != nil || u.Final {
					final <- err == nil
					return
				}
			}
			final <- false
		}()
		if i%4 != 0 { // most finish while the subscription starts
			time.Sleep(time.Duration(i%7) * time.Millisecond)
		}
		finish(t, worker, wb, tg, "done")
		if !<-final {
			t.Fatalf("round %d: the subscription did not get the final message", i)
		}
		cancel()
	}
}

// TestWatchRenewal: a broker renews its subscriptions' rows; one found
// missing (deleted as expired while its process stalled) is written again
// and the subscriptions read again, so the event published meanwhile,
// which nobody was notified of, still arrives; rows that expired (a
// crashed process's) are deleted.
func TestWatchRenewal(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	schema := testdb.Schema(t, url)
	st := testdb.Postgres(t, url, schema)
	b := pgbroker.New(st, nil)
	pgbroker.SetWatchTTL(b, 600*time.Millisecond)
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ctx := t.Context()
	if _, err := st.Pool().Exec(ctx, `INSERT INTO draft_watches (id, key, owner_id, holder, expires_at)
VALUES ('crashed', 't:x', 'o', 'gone', now() - interval '1 second')`); err != nil {
		t.Fatal(err)
	}
	tg := drafttest.Target(t, st, "o")
	got := startSub(t, ctx, b, draft.Filter{OwnerID: "o", MessageID: tg.MessageID})
	var before time.Time
	if err := st.Pool().QueryRow(ctx, `SELECT expires_at FROM draft_watches WHERE key = $1`, "m:"+tg.MessageID).Scan(&before); err != nil {
		t.Fatal(err)
	}
	waitRows(t, st, 1) // the crashed process's row deleted
	var after time.Time
	for deadline := time.Now().Add(5 * time.Second); !after.After(before); time.Sleep(20 * time.Millisecond) {
		if err := st.Pool().QueryRow(ctx, `SELECT expires_at FROM draft_watches WHERE key = $1`, "m:"+tg.MessageID).Scan(&after); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the row was not renewed")
		}
	}
	// The row lost: the final message is not notified, yet arrives once the
	// renewal has written the row again.
	if _, err := st.Pool().Exec(ctx, `DELETE FROM draft_watches`); err != nil {
		t.Fatal(err)
	}
	finish(t, st, b, tg, "done")
	for deadline := time.After(5 * time.Second); ; {
		select {
		case u := <-got:
			if !u.Final {
				continue
			}
			if u.Text != "done" {
				t.Fatalf("final update = %+v", u)
			}
			return
		case <-deadline:
			t.Fatal("the final message did not arrive after the row was written again")
		}
	}
}
