package pgbroker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/store"
)

// watch is a subscription's row in draft_watches.
type watch struct{ owner, key string }

// threadKey and messageKey are draft_watches keys.
func threadKey(id string) string  { return "t:" + id }
func messageKey(id string) string { return "m:" + id }

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Statements on draft_watches. A row is not data: its writes do not wait
// for their WAL flush (what a crash loses, the renewal writes again, and
// the listeners reconnect and read again anyway).
const (
	insertWatch = `INSERT INTO draft_watches (id, key, owner_id, holder, expires_at)
SELECT $1, $2, $3, $4, now() + make_interval(secs => $5) FROM (SELECT set_config('synchronous_commit', 'off', true)) s`
	deleteWatch = `DELETE FROM draft_watches USING (SELECT set_config('synchronous_commit', 'off', true)) s WHERE id = $1 AND holder = $2`
	// renewWatches writes this broker's rows again, expiring a TTL from now;
	// inserted reports a row that was not there (it had expired and been
	// deleted, or a crash lost it).
	renewWatches = `INSERT INTO draft_watches (id, key, owner_id, holder, expires_at)
SELECT unnest($1::text[]), unnest($2::text[]), unnest($3::text[]), $4, now() + make_interval(secs => $5)
FROM (SELECT set_config('synchronous_commit', 'off', true)) s
ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at
RETURNING xmax = 0 AS inserted`
	expireWatches = `DELETE FROM draft_watches WHERE expires_at < now()`
)

// watch writes the row of a subscription to f and returns its id; the row
// is committed when it returns, and renewed until unwatchLater.
func (b *Broker) watch(ctx context.Context, f draft.Filter) (string, error) {
	w := watch{owner: f.OwnerID, key: threadKey(f.ThreadID)}
	if f.MessageID != "" {
		w.key = messageKey(f.MessageID)
	}
	id := newID()
	if _, err := b.st.Pool().Exec(ctx, insertWatch, id, w.key, w.owner, b.holder, b.ttl.Seconds()); err != nil {
		return "", fmt.Errorf("pgbroker: subscribe: %w: %w", store.ErrUnavailable, err)
	}
	b.wmu.Lock()
	b.watches[id] = w
	if b.renewing == nil {
		b.renewing, b.renewed = make(chan struct{}), make(chan struct{})
		go b.renew(b.renewing, b.renewed)
	}
	b.wmu.Unlock()
	return id, nil
}

// unwatchLater deletes a subscription's row, in the background: the
// subscription has ended, and a row left behind (the database unreachable)
// only costs notifications until it expires.
func (b *Broker) unwatchLater(id string) {
	b.wmu.Lock()
	delete(b.watches, id)
	b.wmu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := b.st.Pool().Exec(ctx, deleteWatch, id, b.holder); err != nil {
			b.log.Debug("draft broker: delete a subscription's row", "error", err)
		}
	}()
}

// renew renews the broker's rows every ttl/3 until stop is closed, and
// deletes the rows that expired (other processes', which crashed). Rows
// of its own found missing are written again and every subscription reads
// its state again: events published while they were missing were not
// notified.
func (b *Broker) renew(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(b.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.ttl/3)
		lost, err := b.renewOnce(ctx)
		cancel()
		switch {
		case err != nil:
			b.log.Warn("draft broker: renew subscriptions' rows", "error", err)
		case lost:
			b.hub.Resync()
		}
	}
}

// renewOnce renews the rows and reports whether one was missing.
func (b *Broker) renewOnce(ctx context.Context) (lost bool, err error) {
	b.wmu.Lock()
	ids, keys, owners := make([]string, 0, len(b.watches)), make([]string, 0, len(b.watches)), make([]string, 0, len(b.watches))
	for id, w := range b.watches {
		ids, keys, owners = append(ids, id), append(keys, w.key), append(owners, w.owner)
	}
	b.wmu.Unlock()
	if len(ids) > 0 {
		rows, err := b.st.Pool().Query(ctx, renewWatches, ids, keys, owners, b.holder, b.ttl.Seconds())
		if err != nil {
			return false, err
		}
		for rows.Next() {
			var inserted bool
			if err := rows.Scan(&inserted); err != nil {
				rows.Close()
				return false, err
			}
			lost = lost || inserted
		}
		if err := rows.Err(); err != nil {
			return false, err
		}
	}
	_, err = b.st.Pool().Exec(ctx, expireWatches)
	return lost, err
}

// stopRenewal stops renewing the rows (Close).
func (b *Broker) stopRenewal() {
	b.wmu.Lock()
	stop, done := b.renewing, b.renewed
	b.renewing, b.renewed = nil, nil
	b.wmu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
