package continuation

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"

	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// fakeListener is a River listener whose notifications a test sends.
type fakeListener struct {
	riverdriver.Listener
	notes chan *riverdriver.Notification
	waits chan struct{} // told each wait's start
}

func (l *fakeListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	l.waits <- struct{}{}
	select {
	case n := <-l.notes:
		return n, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestWakeListener: a wake before a wait, or during one, makes the wait
// return the insert notification of the queue; a notification the
// interrupted wait received is the next wait's; without a wake the
// listener's own notifications pass through.
func TestWakeListener(t *testing.T) {
	inner := &fakeListener{notes: make(chan *riverdriver.Notification, 1), waits: make(chan struct{}, 4)}
	w := newWaker("baton_shop")
	l := &wakeListener{Listener: inner, w: w}
	ctx := t.Context()
	if w.note.Topic != "river_insert" || w.note.Payload != `{"queue":"baton_shop"}` {
		t.Fatalf("wake notification %+v", w.note)
	}

	type result struct {
		n   *riverdriver.Notification
		err error
	}
	wait := func() <-chan result {
		c := make(chan result, 1)
		go func() {
			n, err := l.WaitForNotification(ctx)
			c <- result{n, err}
		}()
		return c
	}
	get := func(c <-chan result) *riverdriver.Notification {
		t.Helper()
		select {
		case r := <-c:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.n
		case <-time.After(10 * time.Second):
			t.Fatal("the wait did not return")
			return nil
		}
	}

	// Woken before the wait: the listener is not even asked.
	w.wake()
	w.wake()
	if n := get(wait()); n != w.note {
		t.Fatalf("woken before: %+v", n)
	}
	if len(inner.waits) != 0 {
		t.Fatal("the listener waited although a wake was pending")
	}

	// Woken during the wait.
	c := wait()
	<-inner.waits
	w.wake()
	if n := get(c); n != w.note {
		t.Fatalf("woken during: %+v", n)
	}

	// The listener's own notification passes through.
	own := &riverdriver.Notification{Topic: "river_leadership", Payload: "{}"}
	inner.notes <- own
	if n := get(wait()); n != own {
		t.Fatalf("own notification: %+v", n)
	}
	<-inner.waits

	// A wake racing a received notification: both are delivered.
	c = wait()
	<-inner.waits
	w.mu.Lock() // the wake lands as the listener returns its own
	inner.notes <- own
	w.woken = true
	w.mu.Unlock()
	first, second := get(c), get(wait())
	if first != w.note || second != own {
		t.Fatalf("racing: %+v then %+v", first, second)
	}

	// A cancelled wait without a wake is the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.WaitForNotification(cctx); err == nil {
		t.Fatal("a cancelled wait returned no error")
	}
}

// TestInProcessWake: on both backends, with River's own insert
// notifications dropped and its fetch poll an hour away, the workers of the
// process that handed a run over start it anyway — the hand-over, and the
// adoption of a dead process's run, wake them once committed.
func TestInProcessWake(t *testing.T) {
	eachBackend(t, testInProcessWake)
}

func testInProcessWake(t *testing.T, be backend) {
	st, n, cfg := stalled(t, be, 300*time.Millisecond, 100*time.Millisecond)
	cfg.FetchPollInterval = time.Hour
	tools := newToolLog()
	net := network(t, tools, "", scripted.Options{})
	b := setup(t, be, net, tools, func(c *Config) { c.FetchPollInterval = time.Hour })
	deafen(t, b.cont)
	b.start(t)
	for range 3 {
		_, _, h := b.handOver(t)
		if m := b.waitMessage(t, h.MessageID, 20*time.Second); m.Status != "completed" {
			t.Fatalf("placeholder %s", m.Status)
		}
	}

	// Adoption: a dead process's run, handed over by this one's adopter.
	a := running(t, st, n.Network, cfg)
	deafen(t, a.cont)
	victim := cfg
	victim.NoAdopt, victim.NoWorkers = true, true
	_, dying := wire(t, st, n.Network, victim)
	_, run := dyingTurn(t, dying, n)
	close(n.Release)
	deadline := time.Now().Add(20 * time.Second)
	for {
		h, err := a.cont.Lookup(t.Context(), owner, run)
		if err == nil {
			if m := a.waitMessage(t, h.MessageID, time.Until(deadline)); m.Status != "completed" {
				t.Fatalf("adopted run's placeholder %s", m.Status)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not adopted: %v", run, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deafen makes the workers of s ignore River's insert notifications
// (before Start), and on PostgreSQL takes every insert for one River did
// not notify, so that every hand-over wakes.
func deafen(t *testing.T, s *Service) {
	t.Helper()
	var w *waker
	switch q := s.q.(type) {
	case *riverQueue[*sql.Tx, *sqliteWakeDriver]:
		w = q.waker
	case *riverQueue[pgx.Tx, *pgWakeDriver]:
		w, q.testQuiet = q.waker, true
	}
	if w == nil {
		t.Fatalf("queue %T has no waker", s.q)
	}
	w.testDeaf = true
}

// TestInsertQuiet: insertTx reports an insert River sent no notification
// for — on SQLite every one (River's SQLite driver has no NOTIFY), on
// PostgreSQL those its insert notify limiter held back: of two inserts into
// a queue within its FetchCooldown (a minute here), the first is notified,
// the second is quiet. Only quiet hand-overs wake the workers.
func TestInsertQuiet(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		tools := newToolLog()
		b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, func(c *Config) { c.FetchCooldown, c.FetchPollInterval = time.Minute, time.Hour })
		// On PostgreSQL, River's NOTIFY (sent with the COMMIT, see
		// notifySpy) reaches a listener of the store's schema.
		var listen *pgx.Conn
		if ps, ok := b.st.(*pgstore.Store); ok {
			c, err := ps.Pool().Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Release)
			var schema string
			if err := c.QueryRow(t.Context(), `SELECT current_schema()`).Scan(&schema); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Exec(t.Context(), `LISTEN "`+schema+`.`+riverInsertTopic+`"`); err != nil {
				t.Fatal(err)
			}
			listen = c.Conn()
		}
		var quiet []bool
		for i := range 2 {
			if err := b.st.Tx(t.Context(), func(tx store.Tx) error {
				// A store call first: River's insert runs in its owner's scope.
				if _, err := tx.EnsureOwner(t.Context(), &store.EnsureOwnerParams{ID: owner}); err != nil {
					return err
				}
				args := Args{OwnerID: owner, ThreadID: fmt.Sprintf("t-%d", i), RunID: "r", EventID: fmt.Sprintf("e-%d", i), JobRunID: "j"}
				_, q, err := b.cont.q.insertTx(t.Context(), tx, args, &river.InsertOpts{Queue: b.cont.cfg.Queue})
				quiet = append(quiet, q)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		want := []bool{false, true}
		if be.name == "SQLite" {
			want = []bool{true, true}
		}
		if listen != nil {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			n, err := listen.WaitForNotification(ctx)
			if err != nil || !strings.Contains(n.Payload, b.cont.cfg.Queue) {
				t.Fatalf("River's insert notification: %v, %v", n, err)
			}
		}
		if !slices.Equal(quiet, want) {
			t.Fatalf("quiet %v, want %v", quiet, want)
		}
	})
}
