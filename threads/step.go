package threads

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// write writes one checkpoint's transaction (see step). th is the thread
// as the transaction left it, when it read the thread's row back (a run's
// end, a change of active agent; nil otherwise).
func (c *checkpointer) write(ctx context.Context, st *runstate.State, at func(tx any, checkpointID string) error) (cp *store.Checkpoint, th *store.Thread, err error) {
	var w *step
	err = c.s.st.Tx(ctx, func(tx store.Tx) error {
		w = &step{c: c, st: st, at: at, end: st.Status.Terminal(), news: c.newMessages(st)}
		return w.run(ctx, tx)
	})
	if err != nil && w != nil && w.deferredNew && !errors.Is(err, errNoOwner) && errors.Is(err, store.ErrNotFound) {
		// The new thread's write was deferred (on SQLite it ran at once,
		// and succeeded): a missing owner (or parent) fails a later
		// statement, or the commit, so.
		err = fmt.Errorf("%w: %w", errNoOwner, err)
	}
	if w == nil {
		return nil, nil, err
	}
	return w.cp, w.th, err
}

// step is one checkpoint's transaction: the new thread (a run's first
// step on a new thread), the thread's gate (a new run's first step on an
// existing thread), the fenced checkpoint with the step's new messages, the
// active agent, the extensions' writes, and the durable kick of the
// thread's queue at the run's end.
type step struct {
	c    *checkpointer
	st   *runstate.State
	at   func(tx any, checkpointID string) error
	end  bool               // the run's end: a terminal status
	news []store.NewMessage // the messages still to append
	save *store.SaveCheckpointParams

	cp *store.Checkpoint
	th *store.Thread
	// deferredNew: the new thread's write was deferred, and returned.
	deferredNew bool
}

// run writes the step in tx, in this order: the run's lock (or the new
// thread's), the gate, the checkpoint and its messages, the rest.
func (w *step) run(ctx context.Context, tx store.Tx) error {
	c, st := w.c, w.st
	// A checkpoint other than the run's end (whose thread row is read)
	// is not read back: on PostgreSQL it goes with the transaction's
	// next statement or its COMMIT (a turn's start, a step, a hand-over
	// with its job run: one round trip fewer), and its errors come
	// from there — a stale write's *store.StaleWriteError, mapped by
	// the store whatever statement reports it.
	w.save = &store.SaveCheckpointParams{OwnerID: c.owner, State: st, ParentID: c.parent, Deferred: !w.end, Rows: c.stored(st)}
	if c.create != nil {
		if err := w.newThread(ctx, tx); err != nil {
			return err
		}
	}
	// The fenced checkpoint is the first write of a run's existing
	// thread: a stale writer fails here, with a *store.StaleWriteError,
	// before it touches the thread, and the run's lock comes first in
	// every transaction that takes several (see continuation). The one
	// exception is a new run's gate, which locks the thread first: it
	// takes no other run's lock.
	if c.gate && c.create == nil && c.threadID != "" {
		if err := c.s.gate(ctx, tx, c.owner, c.threadID, st.RunID, c.dequeue); err != nil {
			return err
		}
	}
	if err := w.checkpoint(ctx, tx); err != nil {
		return err
	}
	if len(w.news) > 0 {
		if _, err := tx.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: c.owner, ThreadID: c.threadID, Messages: w.news, Thread: w.th}); err != nil {
			return fmt.Errorf("append messages: %w", err)
		}
	}
	if c.threadID != "" && st.Agent != c.agent && c.create == nil {
		var err error
		if w.th, err = tx.SetActiveAgent(ctx, &store.SetActiveAgentParams{OwnerID: c.owner, ThreadID: c.threadID, Agent: st.Agent}); err != nil {
			return fmt.Errorf("set active agent: %w", err)
		}
	}
	if w.at != nil {
		if err := w.at(tx, w.cp.ID); err != nil {
			return err
		}
	}
	return w.kick(ctx, tx)
}

// newThread creates the run's new thread, with the agent that runs first
// and the run's messages so far: by the checkpoint's write (one statement
// on PostgreSQL, which takes the run's lock first) when the state names
// it, else on its own, after the lock.
func (w *step) newThread(ctx context.Context, tx store.Tx) error {
	c, st := w.c, w.st
	create := *c.create
	create.ActiveAgent, create.Messages, w.news = st.Agent, w.news, nil
	if st.ThreadID == create.ID {
		w.save.NewThread = &create
		if w.end {
			w.th = new(store.Thread) // for the queue's check (kick)
			w.save.Thread = w.th
		}
		return nil
	}
	// The run's lock first, as in every transaction that takes several
	// (SaveCheckpoint does not take it again): on PostgreSQL it goes with
	// the transaction's scope.
	if err := tx.LockRun(ctx, &store.LockRunParams{OwnerID: c.owner, RunID: st.RunID}); err != nil {
		return fmt.Errorf("lock run: %w", err)
	}
	var err error
	if w.th, err = tx.CreateThread(ctx, &create); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %w", errNoOwner, err)
		}
		return fmt.Errorf("create thread: %w", err)
	}
	return nil
}

// checkpoint writes the fenced checkpoint, with the step's new messages
// (one statement on PostgreSQL) unless the state names another thread,
// whose messages are appended after it.
func (w *step) checkpoint(ctx context.Context, tx store.Tx) error {
	c, st, save := w.c, w.st, w.save
	if len(w.news) > 0 {
		if w.end {
			w.th = new(store.Thread) // for the queue's check (kick)
		}
		if st.ThreadID == c.threadID {
			save.Messages, save.Thread, w.news = w.news, w.th, nil
		}
	}
	var err error
	w.cp, err = tx.SaveCheckpoint(ctx, save)
	w.deferredNew = save.Deferred && save.NewThread != nil && err == nil
	switch {
	case err != nil && save.NewThread != nil && errors.Is(err, store.ErrNotFound):
		// The new thread's owner (or parent) is missing.
		return fmt.Errorf("%w: %w", errNoOwner, err)
	case err != nil && save.NewThread != nil:
		return fmt.Errorf("create thread and save checkpoint: %w", err)
	case err != nil:
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// kick, at the run's end, records a durable kick of the thread's queue
// when runs wait in it, committed with the end.
func (w *step) kick(ctx context.Context, tx store.Tx) error {
	c := w.c
	if c.s.KickTx == nil || c.threadID == "" || !w.end {
		return nil
	}
	q := w.th
	if q == nil {
		var err error
		if q, err = tx.GetThread(ctx, &store.GetThreadParams{OwnerID: c.owner, ID: c.threadID}); err != nil {
			return fmt.Errorf("read thread: %w", err)
		}
	}
	if len(QueueOf(q)) > 0 {
		if err := c.s.KickTx(ctx, tx, c.owner, c.threadID, w.st.RunID); err != nil {
			return fmt.Errorf("kick the thread's queue: %w", err)
		}
	}
	return nil
}
