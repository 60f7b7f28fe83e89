package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// This file is double-texting: what a new turn does when its thread is
// busy ([Strategy]), the thread's durable queue of runs waiting for their
// turn ([Queued], in the thread's metadata), the graceful stop of the busy
// run (interrupt) or its removal (rollback), and the start of the next
// queued run when a run ends ([Service.Kick]).

// Strategy is what a new turn does when its thread is busy: a run is in
// progress, waits for a decision or a worker, or runs wait in the queue.
type Strategy string

// Strategies.
const (
	// Reject refuses the turn with a *BusyError; nothing changes.
	Reject Strategy = "reject"
	// Enqueue puts the turn in the thread's queue: it starts after the
	// busy run, and after the runs queued before it, in order.
	Enqueue Strategy = "enqueue"
	// Interrupt stops the busy run at its next safe boundary, keeping what
	// it did (an answer being streamed is kept, marked partial), then
	// starts the turn.
	Interrupt Strategy = "interrupt"
	// Rollback stops the busy run and removes its messages from the thread
	// (its input included), then starts the turn.
	Rollback Strategy = "rollback"
)

// ParseStrategy returns the strategy named s; "" is [Reject]. An unknown
// name is store.ErrInvalid.
func ParseStrategy(s string) (Strategy, error) {
	switch Strategy(s) {
	case "":
		return Reject, nil
	case Reject, Enqueue, Interrupt, Rollback:
		return Strategy(s), nil
	}
	return "", fmt.Errorf("threads: unknown multitask strategy %q (want reject, enqueue, interrupt or rollback): %w", s, store.ErrInvalid)
}

// MetadataQueue is the namespace of a thread's metadata that holds its
// queue: {"runs": [Queued…]}, the next run first. It is absent when the
// queue is empty.
const MetadataQueue = "queue"

// MaxQueued is how many runs a thread's queue holds; a turn beyond is
// refused with a *BusyError.
const MaxQueued = 16

// Queued is a run waiting in a thread's queue: what starts it later, in
// whichever process ends the run before it.
type Queued struct {
	RunID    string   `json:"run_id"`
	Input    string   `json:"input"`
	Agent    string   `json:"agent,omitempty"`
	Strategy Strategy `json:"strategy"`
	// Stops is the run that an interrupt or a rollback stops: the first
	// checkpoint of this run settles it, in the same transaction.
	Stops    string    `json:"stops,omitempty"`
	QueuedAt time.Time `json:"queued_at"`
}

// RolledBackMetadata is the key of the metadata of a message removed from
// its thread by a rollback: the id of the run whose turn removed it. Such
// messages are kept in the store with status error, left out of every
// turn's history and of the thread's message list.
const RolledBackMetadata = "rolled_back"

// IsRolledBack reports whether m was removed from its thread by a rollback.
func IsRolledBack(m *message.Message) bool {
	_, ok := m.Metadata[RolledBackMetadata]
	return ok
}

// QueueOf returns the runs waiting in th's queue, the next first.
func QueueOf(th *store.Thread) []Queued {
	raw, ok := th.Metadata[MetadataQueue]
	if !ok {
		return nil
	}
	var v struct {
		Runs []Queued `json:"runs"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v.Runs
}

// setQueue writes th's queue (compare-and-swap on the version read). It
// also takes the thread's row lock: transactions that change who runs on a
// thread take turns on it.
func setQueue(ctx context.Context, tx store.Tx, th *store.Thread, q []Queued) error {
	patch := json.RawMessage("null")
	if len(q) > 0 {
		b, err := json.Marshal(map[string][]Queued{"runs": q})
		if err != nil {
			return err
		}
		patch = b
	}
	_, err := tx.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: th.OwnerID, ThreadID: th.ID,
		Namespace: MetadataQueue, Patch: patch, ExpectedVersion: th.Version})
	return err
}

// busyRun returns the thread's latest checkpoint when its run is not
// finished, else nil.
func busyRun(ctx context.Context, ops store.Ops, owner, threadID string) (*store.Checkpoint, error) {
	// The latest checkpoint's status first: its state (and the rows it
	// refers to) only when the run is still going.
	head, err := ops.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: threadID, NoState: true})
	if err == nil && head.Status.Terminal() {
		return nil, nil
	}
	var cp *store.Checkpoint
	if err == nil {
		cp, err = ops.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: head.ID})
	}
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrIncompatible):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("threads: thread %s: %w", threadID, err)
	case cp.State == nil || cp.State.Status.Terminal():
		return nil, nil
	}
	return cp, nil
}

// Submission is what [Service.Submit] did with a turn.
type Submission struct {
	// RunID is the turn's run.
	RunID string
	// Queued is set when the turn waits in the thread's queue (the thread
	// was busy); Position is its place there (1: next). When not set, the
	// thread was free: run the turn with [Service.Turn].
	Queued   bool
	Position int
	// Busy is the run the turn found in progress, if any: stopped by
	// interrupt and rollback.
	Busy string
}

// Submit applies o.Strategy to a turn of owner on thread o.ThreadID (run
// o.RunID, required). On a free thread it changes nothing and returns a
// Submission without Queued: run the turn with [Service.Turn], and submit
// it again if Turn finds the thread busy after all (*BusyError). On a busy
// thread — a run unfinished, or runs in its queue:
//
//   - Reject returns a *BusyError;
//   - Enqueue appends the turn to the thread's queue;
//   - Interrupt and Rollback put the turn first in the queue (after the
//     interrupts and rollbacks waiting already) and stop the busy run: when
//     this process executes it, at its next safe boundary, keeping what it
//     did, and Submit waits for it. The first checkpoint of the turn's run
//     settles the busy run in its own transaction: a run executed nowhere
//     (waiting for a decision or a worker) or elsewhere is completed there
//     (its pending interrupt superseded, its unfinished messages in error,
//     its lease released: an executor elsewhere loses its next
//     checkpoint), and a rollback removes the busy run's messages.
//
// The turn is in the queue, durably, before anything is stopped. It starts
// when the thread is free, through [Service.Start], in whichever process
// ends the run before it, or at the next [Service.Kick].
func (s *Service) Submit(ctx context.Context, owner, input string, o TurnOptions) (*Submission, error) {
	ctx = store.ContextWithOwner(ctx, owner)
	if o.ThreadID == "" || o.RunID == "" {
		return nil, fmt.Errorf("threads: submit needs a thread and a run id: %w", store.ErrInvalid)
	}
	strat, err := ParseStrategy(string(o.Strategy))
	if err != nil {
		return nil, err
	}
	sub := &Submission{RunID: o.RunID}
	var busy *store.Checkpoint
	err = s.st.Tx(ctx, func(tx store.Tx) error {
		return retryVersion(func() error { return s.enqueue(ctx, tx, owner, input, strat, o, sub, &busy) })
	})
	if err != nil {
		return nil, err
	}
	if !sub.Queued {
		return sub, nil
	}
	if busy != nil && (strat == Interrupt || strat == Rollback) {
		if err := s.stopRun(ctx, owner, busy, string(strat), o.RunID); err != nil {
			return sub, err
		}
	}
	s.Kick(context.WithoutCancel(ctx), owner, o.ThreadID)
	return sub, nil
}

// retryVersion calls fn again, up to 5 times, while it fails with a
// *store.VersionConflictError: the thread changed between its read and its
// compare-and-swap. The failed write took the thread's row lock, and a
// store's version check aborts no transaction: read again, it succeeds.
func retryVersion(fn func() error) error {
	var err error
	for range 5 {
		var vc *store.VersionConflictError
		if err = fn(); !errors.As(err, &vc) {
			return err
		}
	}
	return err
}

// enqueue is Submit's transaction: the thread's state, and the turn in its
// queue when it is busy.
func (s *Service) enqueue(ctx context.Context, tx store.Tx, owner, input string, strat Strategy, o TurnOptions, sub *Submission, busyOut **store.Checkpoint) error {
	var busy *store.Checkpoint
	*sub = Submission{RunID: o.RunID}
	th, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: o.ThreadID})
	if err != nil {
		return fmt.Errorf("threads: thread %s: %w", o.ThreadID, err)
	}
	if th.Network != "" && th.Network != s.r.Network().Name() {
		return fmt.Errorf("threads: thread %s belongs to network %q, not %q: %w", th.ID, th.Network, s.r.Network().Name(), store.ErrInvalid)
	}
	q := QueueOf(th)
	if busy, err = busyRun(ctx, tx, owner, th.ID); err != nil {
		return err
	}
	*busyOut = busy
	if busy == nil && len(q) == 0 {
		return nil
	}
	if busy != nil {
		sub.Busy = busy.RunID
	}
	if strat == Reject || len(q) >= MaxQueued {
		e := &BusyError{ThreadID: th.ID, Queued: len(q)}
		if busy != nil {
			e.RunID, e.Status = busy.RunID, busy.Status
		} else {
			e.RunID, e.Status = q[0].RunID, StatusQueued
		}
		return e
	}
	at := len(q)
	if strat != Enqueue {
		at = 0
		for at < len(q) && q[at].Strategy != Enqueue && q[at].Strategy != "" {
			at++
		}
	}
	item := Queued{RunID: o.RunID, Input: input, Agent: o.Agent, Strategy: strat, QueuedAt: time.Now().UTC()}
	if busy != nil && strat != Enqueue {
		item.Stops = busy.RunID
	}
	q = append(q[:at], append([]Queued{item}, q[at:]...)...)
	sub.Queued, sub.Position = true, at+1
	return setQueue(ctx, tx, th, q)
}

// RolledBack is the failure kind of a run rolled back by a new turn.
const RolledBack = "rolled_back"

// StatusQueued is the status of a run waiting in its thread's queue.
const StatusQueued runstate.Status = "queued"

// Stop asks run runID, if this process executes it, to stop at its next
// safe boundary for reason (such as "interrupt"), keeping what it did (see
// runner.Stopper): the run completes, an answer being streamed kept and
// marked partial. It reports whether the run executes here; it does not
// wait.
func (s *Service) Stop(runID, reason string) bool {
	a := s.activeRun(runID)
	if a == nil {
		return false
	}
	a.stop.Stop(reason)
	return true
}

// stopRun asks run runID to stop for reason (interrupt or rollback), because
// run by starts, and waits until it has: it stops at its next safe
// boundary, keeping what it did. A run executed elsewhere is asked through the service's signaller
// (see [Service.Listen]) and waited for up to StopWait. A run executed
// nowhere, or one that did not stop in time, is settled by the first
// checkpoint of the run that stops it (see gate).
func (s *Service) stopRun(ctx context.Context, owner string, busy *store.Checkpoint, reason, by string) error {
	runID := busy.RunID
	if a := s.activeRun(runID); a != nil {
		a.stop.StopBy(reason, by)
		select {
		case <-a.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if busy.State == nil || busy.State.Status != runstate.StatusRunning {
		return nil
	}
	return s.stopElsewhere(ctx, owner, runID, reason, by)
}

// settle ends run runID in the store in one transaction, fenced on its
// latest checkpoint, for reason (interrupt, rollback or cancel): an
// unfinished run ends cancelled — what it did is kept, its unfinished
// messages (a background worker's placeholder) end in error, its pending
// interrupt is superseded; a rollback also removes every message of the run
// from its thread (and records the rolled_back failure). by is the run that stops it, if any. The run's lease is
// released: whoever still executes it loses its next checkpoint.
func (s *Service) settle(ctx context.Context, tx store.Tx, owner, runID, reason, by string) error {
	cp, err := tx.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
	if err != nil {
		return fmt.Errorf("threads: stop run %s: %w", runID, err)
	}
	st := cp.State
	rollback := reason == string(Rollback)
	if st.Status.Terminal() && !rollback {
		return nil
	}
	if st.Failure != nil && st.Failure.Kind == RolledBack {
		return nil // rolled back already
	}
	wasInterrupt := st.Status == runstate.StatusInterrupted && st.Interrupt != nil
	interruptID := ""
	if wasInterrupt {
		interruptID = st.Interrupt.ID
	}
	runner.MarkStopped(st, reason, by)
	st.Interrupt = nil
	st.Pending = nil
	st.Step++
	if rollback {
		st.Failure = &runstate.Failure{Kind: RolledBack, Message: "rolled back by run " + by + " (double-texting)"}
	}
	if rollback || !st.Status.Terminal() {
		st.Status = runstate.StatusCancelled
	}
	saved, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: st, ParentID: cp.ID, Rows: cp.Rows})
	if err != nil {
		return err
	}
	if err := s.endTx(ctx, tx, owner, st, saved.ID); err != nil {
		return err
	}
	if interruptID != "" {
		outcome, _ := json.Marshal(map[string]string{"stopped_by": by, "reason": reason})
		_, err := tx.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: owner, ID: interruptID, Status: store.InterruptSuperseded, Outcome: outcome})
		if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("threads: supersede interrupt %s: %w", interruptID, err)
		}
	}
	if _, err := tx.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: owner, RunID: runID}); err != nil {
		return fmt.Errorf("threads: release lease of %s: %w", runID, err)
	}
	return settleMessages(ctx, tx, owner, st.ThreadID, runID, reason, by)
}

// settleMessages ends the messages of a run that settle stopped: on a
// rollback every one of them leaves the thread (status error, marked rolled
// back by by); otherwise those not final (a worker's placeholder) end in
// error, marked with what stopped them.
func settleMessages(ctx context.Context, tx store.Tx, owner, threadID, runID, reason, by string) error {
	if threadID == "" {
		return nil
	}
	rollback := reason == string(Rollback)
	stoppedBy := map[string]any{"stopped_by": by}
	if by == "" {
		stoppedBy = map[string]any{"stopped_by": reason}
	}
	msgs, err := tx.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: threadID, Limit: HistoryLimit, Last: true})
	if err != nil {
		return fmt.Errorf("threads: messages of %s: %w", threadID, err)
	}
	prefix := runID + "-"
	for _, m := range msgs {
		if !strings.HasPrefix(m.ID, prefix) {
			continue
		}
		final := m.Status == "" || m.Status == message.StatusCompleted || m.Status == message.StatusError
		switch {
		case rollback:
			_, err = tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: owner, ID: m.ID, Status: message.StatusError,
				Metadata: map[string]any{RolledBackMetadata: by}})
		case !final:
			_, err = tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: owner, ID: m.ID, Status: message.StatusError,
				Metadata: stoppedBy})
		}
		if err != nil {
			return fmt.Errorf("threads: message %s: %w", m.ID, err)
		}
	}
	return nil
}

// Kick starts the next run of a thread's queue if the thread is free,
// through [Service.Start]. Runs ending in this process kick their thread,
// unless their final checkpoint saw its queue empty (a run enqueued after
// that is kicked by its Submit); call it to recover a queue whose kick was
// lost (its process died between a run's end and the next run's start).
// Errors are logged.
func (s *Service) Kick(ctx context.Context, owner, threadID string) {
	_, _, _ = s.kick(ctx, owner, threadID)
}

// kick is Kick; it returns the run it started, if it started one.
func (s *Service) kick(ctx context.Context, owner, threadID string) (q Queued, started bool, err error) {
	ctx = store.ContextWithOwner(ctx, owner)
	th, err := s.st.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
	if err != nil {
		s.log.WarnContext(ctx, "queued runs: read thread", "thread_id", threadID, "error", err)
		return Queued{}, false, err
	}
	runs := QueueOf(th)
	if len(runs) == 0 {
		return Queued{}, false, nil
	}
	if busy, err := busyRun(ctx, s.st, owner, threadID); err != nil ||
		busy != nil && (busy.RunID != runs[0].Stops || s.activeRun(busy.RunID) != nil) {
		// The busy run's end kicks again; a run this process is
		// stopping ends soon.
		return Queued{}, false, err
	}
	start := s.Start
	if start == nil {
		start = s.startQueued
	}
	start(ctx, owner, threadID, runs[0])
	return runs[0], true, nil
}

// KickWait is Kick for a durable kick (see [Service.KickTx]): when it
// starts the next run of the thread's queue, it waits until that run's
// first checkpoint is committed (the run then holds a lease: if this
// process dies, it is adopted) or the run left the queue's head another way
// (another process started it, or it was dropped). It returns an error if
// the thread could not be read or ctx ended first, so that the kick is
// tried again.
func (s *Service) KickWait(ctx context.Context, owner, threadID string) error {
	q, started, err := s.kick(ctx, owner, threadID)
	if err != nil || !started {
		return err
	}
	ctx = store.ContextWithOwner(ctx, owner)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: q.RunID, NoState: true}); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("threads: queued run %s: %w", q.RunID, err)
		}
		th, err := s.st.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
		if err != nil {
			return fmt.Errorf("threads: thread %s: %w", threadID, err)
		}
		if runs := QueueOf(th); len(runs) == 0 || runs[0].RunID != q.RunID {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("threads: queued run %s of thread %s did not start: %w", q.RunID, threadID, ctx.Err())
		case <-t.C:
		}
	}
}

// unstartable drops a queued run (o.dequeue) from its thread's queue when
// it cannot start for a reason of its own (an agent the network no longer
// has, a thread of another network), so that the runs behind it are not
// blocked; then the queue is kicked. A run that found the thread busy, lost
// a race or could not reach the database stays in the queue.
func (s *Service) unstartable(ctx context.Context, owner string, o TurnOptions, cause error) {
	if !o.dequeue || errors.Is(cause, store.ErrConflict) || errors.Is(cause, store.ErrUnavailable) || ctx.Err() != nil {
		return
	}
	err := s.st.Tx(ctx, func(tx store.Tx) error {
		return retryVersion(func() error {
			th, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: o.ThreadID})
			if err != nil {
				return err
			}
			q := QueueOf(th)
			if len(q) == 0 || q[0].RunID != o.RunID {
				return nil
			}
			return setQueue(ctx, tx, th, q[1:])
		})
	})
	if err != nil {
		s.log.WarnContext(ctx, "queued runs: drop a run that cannot start", "run_id", o.RunID, "thread_id", o.ThreadID, "error", err)
		return
	}
	s.log.WarnContext(ctx, "queued run dropped: it cannot start", "run_id", o.RunID, "thread_id", o.ThreadID, "error", cause)
	s.bg.Go(func() { s.Kick(context.WithoutCancel(ctx), owner, o.ThreadID) })
}

// TurnOptions of a queued run: it dequeues itself in its first checkpoint.
func (q Queued) TurnOptions(threadID string) TurnOptions {
	return TurnOptions{ThreadID: threadID, RunID: q.RunID, Agent: q.Agent, Strategy: q.Strategy, dequeue: true, stops: q.Stops}
}

// startQueued is the default [Service.Start]: it runs the turn in a
// goroutine of its own, with QueuedRunOptions.
func (s *Service) startQueued(ctx context.Context, owner, threadID string, q Queued) {
	o := q.TurnOptions(threadID)
	o.RunOptions = s.QueuedRunOptions
	s.bg.Go(func() {
		for _, err := range s.Turn(context.WithoutCancel(ctx), owner, q.Input, o) {
			if err != nil {
				QueuedStartError(ctx, s.log, q.RunID, threadID, err)
				return
			}
		}
	})
}

// Wait waits for what the service does in the background: the kicks of
// threads' queues and the queued runs of the default Start. Call it before
// closing the store.
func (s *Service) Wait() { s.bg.Wait() }

// active is a run this process executes through the service.
type active struct {
	owner string
	stop  *runner.Stopper
	done  chan struct{}
}

func (s *Service) activeRun(runID string) *active {
	v, ok := s.running.Load(runID)
	if !ok {
		return nil
	}
	return v.(*active)
}

// gate is the first write of a new run on an existing thread, in its first
// checkpoint's transaction: it takes the thread's row lock (the queue's
// compare-and-swap) and refuses the run if another run is unfinished or, for
// a run not from the queue, if runs wait in the queue; a run from the queue
// (dequeue) must be its next, and leaves it.
func (s *Service) gate(ctx context.Context, tx store.Tx, owner, threadID, runID string, dequeue bool) error {
	return retryVersion(func() error { return s.gateOnce(ctx, tx, owner, threadID, runID, dequeue) })
}

func (s *Service) gateOnce(ctx context.Context, tx store.Tx, owner, threadID, runID string, dequeue bool) error {
	th, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
	if err != nil {
		return fmt.Errorf("threads: thread %s: %w", threadID, err)
	}
	q := QueueOf(th)
	var head Queued
	switch {
	case dequeue && (len(q) == 0 || q[0].RunID != runID):
		return fmt.Errorf("threads: run %s is not next in the queue of thread %s: %w", runID, threadID, store.ErrConflict)
	case dequeue:
		head, q = q[0], q[1:]
	case len(q) > 0:
		return &BusyError{ThreadID: threadID, RunID: q[0].RunID, Status: StatusQueued, Queued: len(q)}
	}
	if head.Stops != "" {
		// The run this one interrupts or rolls back ends here, in the
		// transaction that starts this one. Its run lock comes before the
		// thread's, as in its own checkpoints.
		if err := s.settle(ctx, tx, owner, head.Stops, string(head.Strategy), runID); err != nil {
			return err
		}
	}
	if err := setQueue(ctx, tx, th, q); err != nil {
		return err
	}
	busy, err := busyRun(ctx, tx, owner, threadID)
	if err != nil {
		return err
	}
	if busy != nil && busy.RunID != runID {
		return &BusyError{ThreadID: threadID, RunID: busy.RunID, Status: busy.Status, Queued: len(q)}
	}
	return nil
}
