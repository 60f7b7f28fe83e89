package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// This file is the cancel of a run, and the stop of a run that another
// process executes (cancel, and double-texting's interrupt and rollback).

// StopSignal is the kind of the [draft.Signal] that asks the process
// executing run Key (of owner OwnerID) to stop it for reason Data (cancel,
// interrupt, rollback) at its next safe boundary.
const StopSignal = "baton.stop"

// DefaultStopWait is the default [Service].StopWait.
const DefaultStopWait = 3 * time.Second

// FinishedError is returned by [Service.Cancel] for a run that ended
// before it could be cancelled. It unwraps to store.ErrConflict.
type FinishedError struct {
	RunID  string
	Status runstate.Status
}

func (e *FinishedError) Error() string {
	return fmt.Sprintf("threads: run %s is already %s", e.RunID, e.Status)
}

// Unwrap returns store.ErrConflict.
func (e *FinishedError) Unwrap() error { return store.ErrConflict }

// Listen makes sg carry this service's stops to the process that
// executes a run, and this process hear the stops of others: [Service.Cancel]
// and [Service.Submit] signal a run executed elsewhere, and stop it here
// when this process executes it. Call it once, before serving; call cancel
// to stop listening.
func (s *Service) Listen(sg draft.Signaller) (cancel func()) {
	s.sig = sg
	return sg.OnSignal(StopSignal, func(sig draft.Signal) {
		if sig.Key == "" {
			return
		}
		if a := s.activeRun(sig.Key); a != nil && a.owner == sig.OwnerID {
			reason, by := parseStop(sig.Data)
			a.stop.StopBy(reason, by)
		}
	})
}

// Cancel cancels run runID of thread threadID: the run stops at its next
// safe boundary, keeping what it did, and ends cancelled
// ([runstate.StatusCancelled]). It returns the run's latest checkpoint once
// the run is cancelled.
//
//   - A run this process executes stops at its next safe boundary (see
//     [runner.Stopper]); Cancel waits for it.
//   - A run executed elsewhere — another replica, a worker — is asked to
//     stop through the service's signaller (see [Service.Listen]); if it has
//     not ended within StopWait (its process is gone, the signal was lost,
//     or its step is long), it is ended in the store, fenced on its latest
//     checkpoint: its executor, if any, loses its next checkpoint.
//   - A run executed nowhere — waiting for a decision (its interrupt is
//     superseded), or for a worker in the background queue (its
//     placeholder ends; the worker that claims it finds it ended) — ends at
//     once, in one transaction.
//   - A run waiting in the thread's queue leaves the queue and ends
//     cancelled there, without having started.
//
// Cancelling a cancelled run returns it again; a run that completed or
// failed is a *FinishedError. The runs queued behind a cancelled run start.
func (s *Service) Cancel(ctx context.Context, owner, threadID, runID string) (*store.Checkpoint, error) {
	ctx = store.ContextWithOwner(ctx, owner)
	signalled := false
	for {
		cp, err := s.cancelQueued(ctx, owner, threadID, runID)
		if err != nil {
			return nil, err
		}
		switch st := cp.State; {
		case st.Status == runstate.StatusCancelled:
			return cp, nil
		case st.Status.Terminal():
			return nil, &FinishedError{RunID: runID, Status: st.Status}
		}
		if a := s.activeRun(runID); a != nil {
			a.stop.Stop(runner.StopCancel)
			select {
			case <-a.done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if cp.State.Status == runstate.StatusRunning && !signalled {
			signalled = true
			if err := s.stopElsewhere(ctx, owner, runID, runner.StopCancel, ""); err != nil {
				return nil, err
			}
			continue
		}
		err = s.st.Tx(ctx, func(tx store.Tx) error {
			if err := s.settle(ctx, tx, owner, runID, runner.StopCancel, ""); err != nil {
				return err
			}
			return s.kickTx(ctx, tx, owner, threadID, runID)
		})
		var stale *store.StaleWriteError
		if errors.As(err, &stale) {
			continue // the run moved on meanwhile: look again
		}
		if err != nil {
			return nil, err
		}
		s.committed(ctx, owner, threadID, runID)
		s.bg.Go(func() { s.Kick(context.WithoutCancel(ctx), owner, threadID) })
	}
}

// cancelQueued returns the run's latest checkpoint; a run still in the
// thread's queue leaves it, ended cancelled by a checkpoint of its own.
func (s *Service) cancelQueued(ctx context.Context, owner, threadID, runID string) (*store.Checkpoint, error) {
	var cp *store.Checkpoint
	created := false
	err := s.st.Tx(ctx, func(tx store.Tx) error {
		return retryVersion(func() error {
			created = false
			var err error
			cp, err = tx.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
			if err == nil {
				if cp.ThreadID != threadID {
					return fmt.Errorf("threads: run %s of thread %s: %w", runID, threadID, store.ErrNotFound)
				}
				return nil
			}
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("threads: run %s: %w", runID, err)
			}
			th, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
			if err != nil {
				return fmt.Errorf("threads: thread %s: %w", threadID, err)
			}
			q := QueueOf(th)
			at := -1
			for i := range q {
				if q[i].RunID == runID {
					at = i
				}
			}
			if at < 0 {
				return fmt.Errorf("threads: run %s of thread %s: %w", runID, threadID, store.ErrNotFound)
			}
			item := q[at]
			if err := setQueue(ctx, tx, th, append(q[:at:at], q[at+1:]...)); err != nil {
				return err
			}
			net := s.r.Network()
			agent := item.Agent
			if agent == "" {
				agent = th.ActiveAgent
			}
			if agent == "" {
				agent = net.Entry()
			}
			stopped := json.RawMessage(`"` + runner.StopCancel + `"`)
			st := &runstate.State{RunID: runID, ThreadID: threadID, Network: net.Name(), Fingerprint: net.Fingerprint(),
				Agent: agent, Status: runstate.StatusCancelled, Values: map[string]json.RawMessage{runner.StoppedValue: stopped}}
			if cp, err = tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: st}); err != nil {
				return err
			}
			created = true
			return s.endTx(ctx, tx, owner, st, cp.ID)
		})
	})
	if err == nil && created {
		s.committed(ctx, owner, threadID, runID)
	}
	return cp, err
}

// committed tells Committed (streams of the thread in every process) that
// a cancel wrote run runID's checkpoint outside the runner.
func (s *Service) committed(ctx context.Context, owner, threadID, runID string) {
	if s.Committed == nil {
		return
	}
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
	if err == nil && cp.State != nil {
		s.Committed(ctx, owner, threadID, cp.State)
	}
}

// stopElsewhere asks the process that executes run runID, if another one
// does, to stop it for reason, because run by starts ("" for a cancel; see
// [Service.Listen]), and waits until the run is no longer running or
// StopWait has passed. Without a signaller it returns at once.
func (s *Service) stopElsewhere(ctx context.Context, owner, runID, reason, by string) error {
	if s.sig == nil {
		return nil
	}
	if err := s.sig.Signal(ctx, draft.Signal{Kind: StopSignal, OwnerID: owner, Key: runID, Data: stopData(reason, by)}); err != nil {
		s.log.WarnContext(ctx, "stop a run: signal its process", "run_id", runID, "error", err)
		return nil
	}
	wait := s.StopWait
	if wait <= 0 {
		wait = DefaultStopWait
	}
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
		cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
		if err != nil || cp.State == nil || cp.State.Status != runstate.StatusRunning {
			return nil
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kickTx records a durable kick of the thread's queue (see
// [Service].KickTx) in tx, a transaction that ended run runID, when runs
// wait in the queue.
func (s *Service) kickTx(ctx context.Context, tx store.Tx, owner, threadID, runID string) error {
	if s.KickTx == nil || threadID == "" {
		return nil
	}
	th, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
	if err != nil {
		return fmt.Errorf("threads: thread %s: %w", threadID, err)
	}
	if len(QueueOf(th)) == 0 {
		return nil
	}
	return s.KickTx(ctx, tx, owner, threadID, runID)
}

// endTx calls EndTx, if set, in tx, a transaction that ended a run outside
// the runner with checkpoint checkpointID of state st.
func (s *Service) endTx(ctx context.Context, tx store.Tx, owner string, st *runstate.State, checkpointID string) error {
	if s.EndTx == nil {
		return nil
	}
	return s.EndTx(ctx, tx, owner, st, checkpointID)
}

// stopData is a stop signal's data: the reason, then the stopping run's id
// after a space when there is one.
func stopData(reason, by string) string {
	if by == "" {
		return reason
	}
	return reason + " " + by
}

// parseStop reads a stop signal's data (stopData); a process of a version
// that sends the reason alone is read as such.
func parseStop(data string) (reason, by string) {
	reason, by, _ = strings.Cut(data, " ")
	return reason, by
}
