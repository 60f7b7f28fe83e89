package continuation

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/batonhq/baton/store/pgstore"
)

// River's SQLite driver has no LISTEN: an insert appends a row to River's
// notification table (river_notification) in the inserting transaction,
// and each process's listener polls that table every 50 ms. A worker in the
// process that handed the run over would therefore start it up to 50 ms
// after the hand-over committed. River itself wakes its producer in process
// only for inserts made outside a transaction, and for drivers without a
// listener, while the hand-over inserts its job in the checkpoint's
// transaction.
//
// The in-process wake closes that gap without changing what is durable:
// after the hand-over's transaction has committed, the service wakes its
// River listener, which hands River's notifier an insert notification of
// the service's queue — the notification River's own insert sends, in the
// format River sends it — so that the producer fetches at once (within its
// FetchCooldown). The job is fetched from the database as any other: the
// wake carries nothing but "look now". Other processes on the same file
// still learn of the job by polling the notification table.
//
// On PostgreSQL River's listener hears each insert's NOTIFY, but River sends
// at most one per queue per FetchCooldown (its insert notify limiter), so a
// job committed just after a notified one could miss the producer's fetch
// and wait for the next fetch poll (1 s by default): the p99 of the resume
// latency. The same wake closes that gap for this process's workers, after
// the inserts River did not notify only (see notifySpy); other processes
// hear River's notifications as before (see pgWakeDriver).

// waker wakes a River listener of this process.
type waker struct {
	// note is the insert notification of the service's queue.
	note *riverdriver.Notification

	mu     sync.Mutex
	woken  bool
	cancel context.CancelFunc // ends the listener's current wait

	// testDeaf, in tests, drops River's own insert notifications: jobs
	// start only when woken (or at a fetch poll).
	testDeaf bool
}

func newWaker(queue string) *waker {
	payload, _ := json.Marshal(struct {
		Queue string `json:"queue"`
	}{queue})
	return &waker{note: &riverdriver.Notification{Topic: riverInsertTopic, Payload: string(payload)}}
}

// riverInsertTopic is the topic of River's insert notifications
// (notifier.NotificationTopicInsert, internal to River); its producers
// fetch when they receive one naming their queue.
const riverInsertTopic = "river_insert"

// wake makes the listener deliver the insert notification: at once if it
// is waiting, else at its next wait. Wakes before that delivery are one:
// the fetch it triggers comes after all of them.
func (w *waker) wake() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.woken = true
	if w.cancel != nil {
		w.cancel()
	}
}

// arm starts a wait that a wake ends with cancel, unless a wake came
// already: then it reports it (and clears it), and no wait starts.
func (w *waker) arm(cancel context.CancelFunc) (woken bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.woken {
		w.woken = false
		return true
	}
	w.cancel = cancel
	return false
}

// disarm ends a wait and reports, and clears, a wake that came during it.
// A wake after it is delivered by the next wait.
func (w *waker) disarm() (woken bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	woken, w.woken, w.cancel = w.woken, false, nil
	return woken
}

// wakeListener is a River listener that a [waker] interrupts.
type wakeListener struct {
	riverdriver.Listener
	w *waker
	// held is a notification the listener received as a wake interrupted
	// it, delivered by the next wait. River's notifier waits from one
	// goroutine at a time.
	held *riverdriver.Notification
}

// WaitForNotification returns the next notification of the listener, or
// the waker's insert notification once woken.
func (l *wakeListener) WaitForNotification(ctx context.Context) (*riverdriver.Notification, error) {
	if n := l.held; n != nil {
		l.held = nil
		return n, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if l.w.arm(cancel) {
		return l.w.note, nil
	}
	n, err := l.Listener.WaitForNotification(wctx)
	for err == nil && l.w.testDeaf && n.Topic == riverInsertTopic && wctx.Err() == nil {
		n, err = l.Listener.WaitForNotification(wctx)
	}
	if l.w.disarm() {
		// Woken while waiting: River's notifier itself interrupts waits
		// the same way (to listen, unlisten or ping), so the listener
		// stops cleanly and loses nothing it has not returned.
		if err == nil {
			l.held = n
		}
		return l.w.note, nil
	}
	return n, err
}

// notifiedKey is the context key under which insertTx asks to be told
// whether River sent the insert's notification (notifySpy).
type notifiedKey struct{}

// notifySpy is River's executor on a transaction that reports River's
// insert notifications to the insertTx whose context asks (notifiedKey):
// River sends an insert NOTIFY for a queue at most once per FetchCooldown
// (its insert notify limiter), and only an insert it did not notify wakes
// this process's workers. Waking after a notified one would trigger a
// second fetch, which River's producer defers to the end of its cooldown,
// and the next job, committed meanwhile, would wait for it.
type notifySpy struct{ riverdriver.ExecutorTx }

// NotifyMany implements riverdriver.ExecutorTx.
func (e notifySpy) NotifyMany(ctx context.Context, params *riverdriver.NotifyManyParams) error {
	// A NOTIFY is delivered at the commit, wherever it runs in the
	// transaction: it goes with the COMMIT (or the next statement), not in
	// a round trip of its own.
	err := e.ExecutorTx.NotifyMany(pgstore.DeferringExec(ctx), params)
	if n, ok := ctx.Value(notifiedKey{}).(*bool); ok && err == nil && params.Topic == riverInsertTopic {
		*n = true
	}
	return err
}

// pgWakeDriver is River's PostgreSQL driver whose listener a waker
// interrupts (see the top of this file), and whose executor reports River's
// insert notifications (notifySpy).
type pgWakeDriver struct {
	*riverpgxv5.Driver
	w *waker
}

// UnwrapExecutor implements riverdriver.Driver: River's executor on tx,
// which reports its insert notifications (notifySpy).
func (d *pgWakeDriver) UnwrapExecutor(tx pgx.Tx) riverdriver.ExecutorTx {
	return notifySpy{d.Driver.UnwrapExecutor(tx)}
}

// GetListener implements riverdriver.Driver.
func (d *pgWakeDriver) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	return wakeful(d.Driver.GetListener(params), d.w)
}

// sqliteWakeDriver is River's SQLite driver whose listener a waker
// interrupts.
type sqliteWakeDriver struct {
	*riversqlite.Driver
	w *waker
}

// GetListener implements riverdriver.Driver.
func (d *sqliteWakeDriver) GetListener(params *riverdriver.GetListenenerParams) riverdriver.Listener {
	return wakeful(d.Driver.GetListener(params), d.w)
}

// wakeful returns l interrupted by w, l itself without a waker.
func wakeful(l riverdriver.Listener, w *waker) riverdriver.Listener {
	if w == nil {
		return l
	}
	return &wakeListener{Listener: l, w: w}
}
