package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/internal/sqlcore"
)

// Group commit. SQLite has one writer, and at synchronous=FULL every
// COMMIT syncs the WAL: under concurrent writers the syncs, not the
// statements, bound the write rate. So the transactions of [Store.Tx] that
// queue for the write connection share one SQLite transaction: each runs
// in a savepoint of its own (its failure rolls back to it, as a ROLLBACK
// would), then hands the open transaction to the next one waiting, and the
// last one commits, once, for all. No Tx returns before the COMMIT that
// holds its writes has returned, with that COMMIT's result: what a Tx
// reports committed is durable, as before, and what it reports failed left
// nothing. A Tx that finds nobody waiting commits at once: alone, it is an
// ordinary transaction and waits for no one.
//
// The transactions of a group run one after another, each seeing the
// writes of those before it, as consecutive transactions would; readers
// see none of them before the group commits. If the SQLite transaction
// itself is lost (an I/O error, a full disk), every Tx of the group fails.
// A Tx's context cancels it before or between its statements, never in one:
// the write connection is not interrupted (see cachingConn), since an
// interrupted write rolls back the whole transaction.

// maxGroup bounds the transactions of a group: the write connection is
// held for at most that many before it commits, and River's own
// transactions, which take the connection directly, wait no longer.
const maxGroup = 16

// savepoint is the name of each Tx's savepoint.
const savepoint = "baton_tx"

// groupCommit hands the write turn from a Tx to the next.
type groupCommit struct {
	mu    sync.Mutex
	busy  bool          // a Tx holds the turn, or a group is committing
	queue []chan *group // Tx calls waiting for the turn, first first
	stats groupStats    // for tests and benchmarks
}

type groupStats struct{ commits, members int64 }

// group is one SQLite transaction and the Txs that ran in it.
type group struct {
	tx      *connTx
	members int
	// broken is set when the SQLite transaction was lost: the group can
	// take no more Txs and commits nothing.
	broken error
	done   chan struct{} // closed when the group committed or was rolled back
	err    error         // the COMMIT's error, or broken
}

// acquire waits for the write turn. It returns the open group handed to it,
// or nil: the caller begins a group.
func (g *groupCommit) acquire(ctx context.Context) (*group, error) {
	g.mu.Lock()
	if !g.busy {
		g.busy = true
		g.mu.Unlock()
		return nil, nil
	}
	ch := make(chan *group, 1)
	g.queue = append(g.queue, ch)
	g.mu.Unlock()
	select {
	case grp := <-ch:
		return grp, nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if i := slices.Index(g.queue, ch); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		g.mu.Unlock()
		return nil, ctx.Err()
	}
	g.mu.Unlock()
	// The turn came as the context ended: pass it on.
	g.release(<-ch)
	return nil, ctx.Err()
}

// release passes the turn on with grp, the open group (nil: none): to the
// next Tx waiting while grp can take it, else after committing grp.
func (g *groupCommit) release(grp *group) {
	g.mu.Lock()
	for grp != nil && grp.broken == nil && grp.tx.holding() && grp.members < maxGroup && len(g.queue) > 0 {
		// The group's first Tx made one deferred write and nothing else,
		// which is held (connTx.HoldWrite): it goes before the next Tx
		// joins, and fails the first Tx alone (the group breaks, and
		// commits nothing; the next Tx begins a group of its own).
		g.mu.Unlock()
		if err := grp.tx.ready(context.Background()); err != nil {
			grp.broken = err
		}
		g.mu.Lock()
	}
	if grp != nil && grp.broken == nil && grp.members < maxGroup && len(g.queue) > 0 {
		next := g.queue[0]
		g.queue = g.queue[1:]
		g.mu.Unlock()
		next <- grp
		return
	}
	g.mu.Unlock()
	if grp != nil {
		grp.finish()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if grp != nil {
		g.stats.commits++
		g.stats.members += int64(grp.members)
	}
	if len(g.queue) > 0 {
		next := g.queue[0]
		g.queue = g.queue[1:]
		next <- nil
		return
	}
	g.busy = false
}

// finish commits the group, or rolls it back if it is broken, and tells
// its Txs. A group whose one Tx made one deferred write and nothing else
// runs that write on its own (connTx.commit).
func (grp *group) finish() {
	if grp.broken != nil {
		_ = grp.tx.rollback()
		grp.err = grp.broken
	} else if err := grp.tx.commit(); err != nil {
		grp.err = wrap("commit", err)
	}
	close(grp.done)
}

// errGroupLost is the error of the Txs of a group whose SQLite transaction
// was lost.
var errGroupLost = errors.New("sqlitestore: the transaction was lost with the write group it shared")

// errFirstFailed breaks a group whose first Tx failed: it ran without a
// savepoint, and the SQLite transaction, which holds only its writes, is
// rolled back.
var errFirstFailed = errors.New("sqlitestore: the transaction failed")

// run runs fn in grp: the group's first Tx in the SQLite transaction
// itself, whose rollback undoes its writes and no one else's (its error,
// or a panic, breaks the group, which then takes no more Txs); the others
// each in a savepoint of its own. Their error, or a panic, rolls back to
// the savepoint; a savepoint statement that fails means the SQLite
// transaction is gone, and breaks the group.
func (grp *group) run(ctx context.Context, s *Store, fn func(tx store.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return wrap("begin transaction", err)
	}
	bg := context.WithoutCancel(ctx)
	first := grp.members == 0
	if !first {
		if _, err := grp.tx.ExecContext(bg, "SAVEPOINT "+savepoint); err != nil {
			grp.broken = fmt.Errorf("%w: savepoint: %w", errGroupLost, err)
			return wrap("begin transaction", grp.broken)
		}
	}
	grp.members++
	t := &txOps{tx: grp.tx}
	t.engine = &sqlcore.Engine{Dialect: dialect{}, Exec: txExec{grp.tx.querier()}, Clock: s.clock}
	released := false
	defer func() {
		switch {
		case released:
		case first:
			// An error or a panic of the group's first Tx: the SQLite
			// transaction holds its writes alone, and is rolled back.
			grp.broken = errFirstFailed
		default:
			// An error or a panic of fn: undo its writes, keep the group's.
			if _, rerr := grp.tx.ExecContext(bg, "ROLLBACK TO "+savepoint); rerr != nil {
				grp.broken = fmt.Errorf("%w: rollback to savepoint: %w", errGroupLost, rerr)
			} else if _, rerr := grp.tx.ExecContext(bg, "RELEASE "+savepoint); rerr != nil {
				grp.broken = fmt.Errorf("%w: release savepoint: %w", errGroupLost, rerr)
			}
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if !first {
		if _, err := grp.tx.ExecContext(bg, "RELEASE "+savepoint); err != nil {
			// RELEASE fails only when the transaction is gone (a statement
			// of fn's ended it): nothing of fn's, nor of the group's, stays.
			grp.broken = fmt.Errorf("%w: release savepoint: %w", errGroupLost, err)
			released = true
			return wrap("commit", grp.broken)
		}
	}
	released = true
	return nil
}
