// Package pgbroker is a [draft.Broker] that carries draft events across
// processes with PostgreSQL LISTEN/NOTIFY, so that a client connected to
// any `baton serve` sees the progress of a run worked by any `baton
// worker` sharing the database.
//
// Publish sends pg_notify on a channel named after the store's schema, with
// the event's ids as the payload (never text: subscribers read the data
// from the store, scoped to their owner, so row-level security applies).
// Each Broker holds one connection of the store's pool that LISTENs and
// hands what it receives to a [draft.Hub], which does the subscriber side.
// When that connection fails it reconnects with backoff and makes every
// subscription read its state again, so a notification lost meanwhile
// costs nothing.
//
// A draft event is notified only when some process subscribes to its
// thread or message: each subscription keeps a row in the schema's
// draft_watches table while it lasts (renewed by its broker; a crashed
// process's rows expire), and a publisher's NOTIFY is conditional on a row
// naming the event's thread or message. The subscriber commits its row
// before it reads the current state, and the publisher looks for rows in a
// statement run after its change committed, so nothing is missed: a
// publisher that found no row committed its change before the subscriber
// read. A run nobody watches sends no notification.
package pgbroker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/internal/jsonfast"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
)

// Options tune a [Broker]. A nil *Options means the defaults.
type Options struct {
	// Logger receives connection failures. Defaults to slog.Default().
	Logger *slog.Logger
}

// watchTTL is how long a subscription's row in draft_watches holds without
// renewal: a broker renews its rows every watchTTL/3 and deletes every row
// that has expired, a crashed process's.
const watchTTL = time.Minute

// Broker is a [draft.Broker] and [draft.TxPublisher] on PostgreSQL. It is
// safe for concurrent use. Publish works from New; subscribers hear other
// processes from Start until Close. Close does not close the store.
type Broker struct {
	st  *pgstore.Store
	hub *draft.Hub
	log *slog.Logger

	chMu    sync.Mutex
	channel string

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}

	// The subscriptions' rows in draft_watches (watch.go).
	holder   string
	ttl      time.Duration
	wmu      sync.Mutex
	watches  map[string]watch // by row id
	renewing chan struct{}    // closed to stop the renewal; nil when it is not running
	renewed  chan struct{}    // closed when the renewal has stopped
}

var (
	_ draft.Broker      = (*Broker)(nil)
	_ draft.TxPublisher = (*Broker)(nil)
	_ draft.Signaller   = (*Broker)(nil)
)

// New returns a Broker on st. Call Start to hear other processes.
func New(st *pgstore.Store, opts *Options) *Broker {
	if opts == nil {
		opts = &Options{}
	}
	b := &Broker{st: st, hub: draft.NewHub(st), log: opts.Logger,
		holder: newID(), ttl: watchTTL, watches: map[string]watch{}}
	if b.log == nil {
		b.log = slog.Default()
	}
	return b
}

// Start listens; when it returns, everything published afterwards reaches
// this process's subscribers. It listens until Close (not until ctx ends:
// ctx bounds the first connection). Starting twice does nothing.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		return nil
	}
	conn, err := b.listen(ctx)
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.started, b.cancel, b.done = true, cancel, make(chan struct{})
	go b.run(lctx, conn)
	return nil
}

// channelName returns the schema's NOTIFY channel, looked up once with q
// (the pool, or the caller's transaction: a caller holding a connection must
// not wait for another one, which a full pool would never give).
func (b *Broker) channelName(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (string, error) {
	b.chMu.Lock()
	channel := b.channel
	b.chMu.Unlock()
	if channel != "" {
		return channel, nil
	}
	// Not under the lock: the query may wait for a connection.
	var schema string
	if err := q.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", fmt.Errorf("pgbroker: %w: %w", store.ErrUnavailable, err)
	}
	b.chMu.Lock()
	b.channel = Channel(schema)
	b.chMu.Unlock()
	return Channel(schema), nil
}

// Channel returns the NOTIFY channel of the baton schema named schema:
// "baton_drafts_" and a hash of the name, so that it is a valid identifier
// of any schema name and schemas of one database do not hear each other.
func Channel(schema string) string {
	h := sha256.Sum256([]byte(schema))
	return "baton_drafts_" + hex.EncodeToString(h[:8])
}

// listen acquires a connection and LISTENs on it.
func (b *Broker) listen(ctx context.Context) (*pgx.Conn, error) {
	channel, err := b.channelName(ctx, b.st.Pool())
	if err != nil {
		return nil, err
	}
	pc, err := b.st.Pool().Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgbroker: listen: %w: %w", store.ErrUnavailable, err)
	}
	// The connection leaves the pool for good: a LISTENing session must not
	// serve other queries.
	conn := pc.Hijack()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{channel}.Sanitize()); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("pgbroker: listen: %w: %w", store.ErrUnavailable, err)
	}
	return conn, nil
}

// run delivers notifications to the hub and reconnects after failures.
func (b *Broker) run(ctx context.Context, conn *pgx.Conn) {
	defer close(b.done)
	delay := 100 * time.Millisecond
	for {
		if conn != nil {
			err := b.receive(ctx, conn)
			conn.Close(context.WithoutCancel(ctx))
			conn = nil
			if ctx.Err() != nil {
				return
			}
			b.log.WarnContext(ctx, "draft broker lost its LISTEN connection; reconnecting", "error", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		c, err := b.listen(ctx)
		if err != nil {
			delay = min(2*delay, 10*time.Second)
			continue
		}
		conn, delay = c, 100*time.Millisecond
		// Anything published while disconnected was not heard: re-read.
		b.hub.Resync()
	}
}

func (b *Broker) receive(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		ev, err := decodeNotice(n.Payload)
		if err != nil {
			b.log.WarnContext(ctx, "draft broker: malformed notification", "error", err)
			continue
		}
		if ev.Kind != "" {
			b.hub.DeliverSignal(draft.Signal{Kind: ev.Kind, OwnerID: ev.OwnerID, Key: ev.Key, Data: ev.Data})
			continue
		}
		b.hub.Deliver(draft.Event{OwnerID: ev.OwnerID, ThreadID: ev.ThreadID, MessageID: ev.MessageID})
	}
}

// notice is a notification's payload: a draft event (draft.Event's JSON),
// or a signal (draft.Signal's JSON, which has a kind).
type notice struct {
	OwnerID   string `json:"o"`
	ThreadID  string `json:"t"`
	MessageID string `json:"m"`
	Kind      string `json:"k"`
	Key       string `json:"key"`
	Data      string `json:"d"`
}

// decodeNotice decodes a notification's payload as encoding/json does
// (jsonfast: one pass of the v2 decoder for every payload this package
// sends; FuzzDecodeNotice).
func decodeNotice(payload string) (notice, error) {
	var ev notice
	err := jsonfast.Unmarshal([]byte(payload), &ev)
	return ev, err
}

// Signal implements [draft.Signaller]: it sends a NOTIFY, which reaches the
// signal handlers of every process listening on the schema, this one
// included.
func (b *Broker) Signal(ctx context.Context, s draft.Signal) error {
	if s.Kind == "" {
		return errors.New("pgbroker: signal without a kind")
	}
	return b.notify(ctx, "signal", notifyStmt, s)
}

// OnSignal implements [draft.Signaller]: handlers hear the signals of
// other processes from Start until Close.
func (b *Broker) OnSignal(kind string, f func(draft.Signal)) (cancel func()) {
	return b.hub.OnSignal(kind, f)
}

// Publish implements [draft.Broker]: it sends a NOTIFY, which reaches the
// subscribers of every process listening on the schema, this one included,
// if some process subscribes to ev's thread or message (draft_watches).
func (b *Broker) Publish(ctx context.Context, ev draft.Event) error {
	return b.notify(ctx, "publish", publishStmt, ev, watchArgs(ev)...)
}

// notify runs stmt (notifyStmt, or publishStmt with extra, the watch's
// arguments) from the pool to send v on the schema's channel; what names
// the operation in errors.
func (b *Broker) notify(ctx context.Context, what, stmt string, v any, extra ...any) error {
	args, err := b.noticeArgs(ctx, b.st.Pool(), what, v, extra...)
	if err != nil {
		return err
	}
	if _, err := b.st.Pool().Exec(ctx, stmt, args...); err != nil {
		return fmt.Errorf("pgbroker: %s: %w: %w", what, store.ErrUnavailable, err)
	}
	return nil
}

// noticeArgs are the arguments of notifyStmt for v (the channel, v's JSON),
// then extra; q looks the channel up (see channelName).
func (b *Broker) noticeArgs(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, what string, v any, extra ...any) ([]any, error) {
	channel, err := b.channelName(ctx, q)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("pgbroker: %s: %w", what, err)
	}
	return append([]any{channel, string(payload)}, extra...), nil
}

// watchArgs are publishStmt's arguments after notifyStmt's: ev's owner,
// thread and message as draft_watches names them.
func watchArgs(ev draft.Event) []any {
	return []any{ev.OwnerID, threadKey(ev.ThreadID), messageKey(ev.MessageID)}
}

// PublishTx implements [draft.TxPublisher]: the NOTIFY goes out only if
// tx, a transaction of the same store, commits, and some process
// subscribes to ev's thread or message (as Publish). It is sent in the
// batch of tx's COMMIT, right after it, in a transaction of its own that
// does not wait for its WAL flush (pgstore.AfterCommitTx, publishStmt): a NOTIFY
// inside tx would hold PostgreSQL's database-wide notify lock from tx's
// commit until its WAL flush, one notifying commit at a time. It goes in
// the same batch as the COMMIT: no round trip of the process separates
// them. A COMMIT that PostgreSQL answers with ROLLBACK (a transaction
// that failed unseen) still sends it, which costs its subscribers a read.
func (b *Broker) PublishTx(ctx context.Context, tx store.Tx, ev draft.Event) error {
	ptx, ok := pgstore.PgxTx(tx)
	if !ok {
		return errors.New("pgbroker: publish: not a PostgreSQL store transaction")
	}
	args, err := b.noticeArgs(ctx, ptx, "publish", ev, watchArgs(ev)...)
	if err != nil {
		return err
	}
	pgstore.AfterCommitTx(tx, publishStmt, args...)
	return nil
}

// notifyStmt sends a notification in a transaction of its own without
// waiting for its commit record to reach the disk (a notification is not
// data: PostgreSQL holds its notify lock until that commit returns, and a
// crash loses the listeners' connections anyway, which re-read on
// reconnecting).
const notifyStmt = `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`

// publishStmt is notifyStmt for a draft event, sent only if a subscription
// watches the event's thread ($4) or message ($5) of its owner ($3). Run
// after the event's change committed, it sees every subscription that
// began reading before that. Nobody watching, it is one index probe in a
// read-only transaction: no commit record, no notify lock.
const publishStmt = notifyStmt + `
FROM draft_watches WHERE key IN ($4, $5) AND owner_id = $3 LIMIT 1`

// Subscribe implements [draft.Broker]. The subscription's row in
// draft_watches is committed before it reads the current state, and
// deleted when it ends; a subscription whose row cannot be written ends
// with store.ErrUnavailable.
func (b *Broker) Subscribe(ctx context.Context, f draft.Filter) iter.Seq2[draft.Update, error] {
	return func(yield func(draft.Update, error) bool) {
		if f.Valid() {
			id, err := b.watch(ctx, f)
			if err != nil {
				yield(draft.Update{}, err)
				return
			}
			defer b.unwatchLater(id)
		}
		for u, err := range b.hub.Subscribe(ctx, f) {
			if !yield(u, err) {
				return
			}
		}
	}
}

// Close stops listening and releases the connection, and stops renewing the
// subscriptions' rows. Subscriptions stop receiving updates; end them with
// their context.
func (b *Broker) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started {
		b.cancel()
		<-b.done
		b.started = false
	}
	b.stopRenewal()
	return nil
}
