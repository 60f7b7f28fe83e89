package continuation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// worker is the River worker of continuations.
type worker struct {
	river.WorkerDefaults[Args]
	s *Service
}

// Work implements river.Worker.
func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	return w.s.work(ctx, job)
}

// claim is what a delivery found when it claimed its run.
type claim struct {
	// cp is the checkpoint to resume from: written to claim the run, or,
	// for a lazy claim, the run's latest (with status running).
	cp      *store.Checkpoint
	attempt int
	// lazy: the claim is not written yet; it goes with the run's first
	// write (see Service.lazyClaim), and attempt is the one read.
	lazy bool
	// done: the continuation is finished (or finished now, by the claim:
	// finalised, its lease released in the claim's transaction).
	done, finalised bool
	// failure: the run failed for good before this delivery.
	failure *runstate.Failure
	// lease: another delivery is working the run; come back after it.
	lease time.Duration
}

// errNoRun marks a delivery whose job run does not exist.
var errNoRun = errors.New("continuation: job run not found")

func (s *Service) work(ctx context.Context, job *river.Job[Args]) error {
	a := job.Args
	if s.cfg.Link != nil {
		var end func()
		ctx, end = s.cfg.Link(ctx, a.Trace)
		defer end()
	}
	log := &deliveryLog{base: s.log, job: job}
	if job.Attempt > s.cfg.MaxAttempts {
		// A delivery of the reserve (see finalAttempts): the last attempt
		// never reported, its worker died or was stopped. Give up here,
		// where the placeholder can still be finalised.
		cause := fmt.Errorf("continuation: run %s: %d attempts spent", a.RunID, s.cfg.MaxAttempts)
		log.ErrorContext(ctx, "continuation gave up: its attempts are spent", "error", cause)
		if err := s.fail(ctx, a, fence{}, runner.KindSystem, s.cfg.ErrorText, cause); err != nil {
			return err
		}
		return river.JobCancel(cause)
	}
	// The run's lease, before the claim: from the claim on, a death of
	// this process leaves a lease that expires (see Service.orphanedJob).
	// A delivery that returns nil finished the run: its final transaction
	// released the lease.
	var leased bool
	c, err := s.claim(ctx, job, &leased, log)
	release := func(bool) {}
	if leased {
		release = s.holdJob(ctx, a, log)
	}
	err = s.deliver(ctx, job, c, err, log)
	// Gone: a transaction of the delivery released the lease (the run
	// finished, or the claim finalised it).
	release(err == nil && (!c.done || c.finalised))
	return err
}

// deliver resumes the run of job as claimed (c, or the claim's error
// err), or finalises it.
func (s *Service) deliver(ctx context.Context, job *river.Job[Args], c *claim, err error, log *deliveryLog) error {
	a := job.Args
	var ie *runstate.IncompatibleError
	switch {
	case errors.As(err, &ie):
		log.ErrorContext(ctx, "continuation refused: the run was suspended under another network version", "error", err)
		if ferr := s.fail(ctx, a, fence{}, runner.KindSystem, DefaultIncompatibleText, err); ferr != nil {
			return ferr
		}
		return river.JobCancel(err)
	case errors.Is(err, errNoRun):
		log.WarnContext(ctx, "continuation dropped: its job run is gone (thread deleted?)", "error", err)
		return river.JobCancel(err)
	case isLost(err):
		// Another delivery claimed the run at the same moment.
		log.InfoContext(ctx, "continuation claimed by another delivery; checking back later", "error", err)
		return river.JobSnooze(s.cfg.JobTimeout)
	case err != nil:
		return err
	case c.done:
		log.DebugContext(ctx, "continuation already finished")
		return nil
	case c.lease > 0:
		log.InfoContext(ctx, "continuation being worked by another delivery; checking back later", "in", c.lease)
		return river.JobSnooze(c.lease)
	case c.failure != nil:
		cause := fmt.Errorf("run %s failed: %s: %s", a.RunID, c.failure.Kind, c.failure.Message)
		// Fenced on the attempt the claim read: a delivery that claimed
		// since carries the run.
		if ferr := s.fail(ctx, a, fence{attempt: c.attempt, on: true}, runner.Kind(c.failure.Kind), s.cfg.ErrorText, cause); ferr != nil {
			if isLost(ferr) {
				log.InfoContext(ctx, "continuation claimed by another delivery; checking back later", "error", ferr)
				return river.JobSnooze(s.cfg.JobTimeout)
			}
			return ferr
		}
		return river.JobCancel(cause)
	}
	return s.resume(ctx, job, c, log)
}

// resume runs the claimed run to its end, streaming progress into the
// placeholder's draft.
func (s *Service) resume(ctx context.Context, job *river.Job[Args], c *claim, log *deliveryLog) error {
	a := job.Args
	// The claim is not announced: subscribers see the placeholder streaming
	// with the first draft flush. (On PostgreSQL a NOTIFY in the claim would
	// hold the global notify lock through its commit, serialising claims.)
	jc := &jobCtx{args: a, job: job, attempt: c.attempt, lazy: c.lazy}
	jc.saved.Store(int64(c.cp.State.Seq))
	dopts := s.cfg.Draft
	if c.lazy {
		// Unclaimed, the placeholder is queued: the first flush claims.
		dopts.Gate = func(ctx context.Context, tx store.Tx) (func(error), error) {
			after, err := s.claimIn(ctx, tx, jc)
			if err == nil && after != nil {
				err = s.inject("flush claimed")
			}
			return after, err
		}
	}
	w := draft.NewWriter(ctx, s.st, s.broker, draft.Target{OwnerID: a.OwnerID, ThreadID: a.ThreadID, MessageID: a.EventID}, dopts)
	jc.writer = w
	defer w.Abandon()
	p := progress{w: w}
	for _, pc := range c.cp.State.Pending {
		if pc.Result == nil && pc.Kind != runstate.CallTransfer {
			p.tool(pc.Call.Name)
		}
	}
	ds := s.deltas(a, jc)
	defer ds.end()
	var runErr error
	var end runstate.Status
	// The results of idempotent tools are written with the next checkpoint
	// (a crash before it runs them again with the same keys): the worker's
	// events reach streams through its checkpoints, not live. Not while
	// another process streams the thread: its replica places the run's
	// deltas after the checkpoint they follow (deltaStream), which must
	// then hold every event before them.
	var opts []runner.RunOption
	if !ds.wanted() {
		opts = append(opts, runner.WithDeferredResults())
	}
	for ev, err := range s.threads.ResumeCheckpoint(withJob(ctx, jc), a.OwnerID, c.cp, opts...) {
		if err != nil {
			runErr = err
			break
		}
		ds.event(ctx, ev)
		switch e := ev.(type) {
		case *runner.TextDeltaEvent:
			p.delta(e.Delta)
		case *runner.MessageEvent:
			p.message(e.Text)
		case *runner.ToolCallEvent:
			p.tool(e.Name)
		case *runner.RunEndEvent:
			end = e.Status
		}
	}
	if runErr == nil && jc.finished {
		if _, ok := s.broker.(draft.TxPublisher); !ok {
			s.publish(ctx, a.OwnerID, a.ThreadID, a.EventID)
		}
		log.DebugContext(ctx, "continuation finished", "status", jc.final)
		if err := s.inject("finished"); err != nil {
			return err
		}
		return nil
	}
	if runErr == nil {
		runErr = fmt.Errorf("continuation: run %s stopped with status %s", a.RunID, end)
	}
	attempt, unclaimed := jc.claimState()
	return s.failed(ctx, job, attempt, unclaimed, runErr, log)
}

// claim takes the run of job for this delivery, in one transaction: the job
// run moves to processing (its attempt counts deliveries), a checkpoint
// fenced on the run's latest one is written (so that a concurrent claimer,
// or the previous worker if it still runs, fails), and the placeholder
// moves to streaming. A run that already ended is finalised instead.
//
// The run's lease (see holdJob) is taken first: with the lazy claim's read,
// or before the transaction; leased says whether it was.
func (s *Service) claim(ctx context.Context, job *river.Job[Args], leased *bool, log *deliveryLog) (*claim, error) {
	if c, err := s.lazyClaim(ctx, job, leased); c != nil || err != nil {
		return c, err
	}
	a := job.Args
	if !*leased {
		*leased = s.takeJobLease(ctx, a, log)
	}
	c := &claim{}
	err := s.st.Tx(ctx, func(tx store.Tx) error {
		// The run's checkpoint lock first, which the claim's checkpoint
		// takes anyway (every transaction that takes several locks takes
		// it first): its reads then see the run as the writers before it
		// left it, a claimer that lost the race finds the job run taken
		// rather than failing at its checkpoint, and on PostgreSQL the lock
		// goes with the transaction's scope, no statement of its own.
		if err := tx.LockRun(ctx, &store.LockRunParams{OwnerID: a.OwnerID, RunID: a.RunID}); err != nil {
			return err
		}
		jr, err := tx.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID})
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s", errNoRun, a.JobRunID)
		}
		if err != nil {
			return err
		}
		if s.taken(c, jr) {
			return nil
		}
		if err := s.inject("claim read"); err != nil {
			return err
		}
		cp, err := tx.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: a.OwnerID, RunID: a.RunID, Fingerprint: s.fp})
		if err != nil {
			return err
		}
		st := cp.State
		if st.Status == runstate.StatusFailed && !resumable(st) {
			c.failure = st.Failure
			if c.failure == nil {
				c.failure = &runstate.Failure{Kind: string(runner.KindSystem), Message: "failed"}
			}
			c.attempt = jr.Attempt
			return nil
		}
		// Locks are taken in one order by every transaction that takes
		// several (claim, final checkpoint, failure): the run's checkpoint
		// lock (SaveCheckpoint), the placeholder, the job run.
		start := func() error {
			if _, err := tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: a.OwnerID, ID: a.EventID, Status: message.StatusStreaming,
				Metadata: map[string]any{MetaContinuation: map[string]any{"run_id": a.RunID, "job_run_id": a.JobRunID, "status": "streaming"}}}); err != nil {
				return err
			}
			// Fenced on the attempt read, 0 (never claimed) included: a
			// claim that committed after the read fails this one with a
			// *store.TransitionError.
			jr, err = tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID, To: store.JobProcessing,
				ExpectedAttempt: jr.Attempt, Fence: true})
			if err != nil {
				return err
			}
			c.attempt = jr.Attempt
			return nil
		}
		switch st.Status {
		case runstate.StatusCompleted, runstate.StatusInterrupted, runstate.StatusCancelled:
			// The run ended (resumed elsewhere, cancelled, or finalising
			// failed): finalise now.
			if err := start(); err != nil {
				return err
			}
			c.done, c.finalised = true, true
			return s.finishTx(ctx, tx, &jobCtx{args: a, job: job, attempt: c.attempt}, st)
		}
		// The claim: a checkpoint fenced on the latest one. Of concurrent
		// claimers (or a previous worker still writing), one wins; the
		// others get a *store.StaleWriteError.
		st.Status, st.Failure = runstate.StatusRunning, nil
		st.Step++
		if c.cp, err = tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: a.OwnerID, State: st, ParentID: cp.ID, Rows: cp.Rows}); err != nil {
			return err
		}
		// A claim that committed after the first read of the job run (its
		// checkpoint is then the parent of ours) moved the job run's
		// attempt on: start's transition, fenced on the attempt read (0
		// for a first claim), fails with a *store.TransitionError and
		// rolls this claim back.
		return start()
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// lazyClaim returns the claim of a delivery that claims its run with the
// run's first write rather than in a transaction of its own, or nil when
// the run must be claimed first: the job run was never claimed (queued),
// the run is suspended, and what it does before its first write may be
// done again (runner.Replayable: calls of idempotent tools, model calls).
//
// Nothing is written: the run resumes from its latest checkpoint, and its
// first write — a checkpoint, whose transaction moves the placeholder to
// streaming and the job run to processing (or, for the final one, both to
// completed), or the placeholder's first draft flush — claims it, fenced
// like a claim: the checkpoint on the latest one, the job run on the
// attempt read. Of two deliveries of the run at once (a rescued job),
// both may call the tools, with the same idempotency keys, and one writes.
//
// River's first delivery of a job does not read the job run: it was
// written queued with the job, in the hand-over's transaction, and only a
// delivery of that job claims it, so it is queued at attempt 0 — unless it
// was finished meanwhile by another path, which the fenced first write
// refuses (the delivery then snoozes, and the next one reads it).
//
// Its read of the run's checkpoint takes the run's lease (leased).
func (s *Service) lazyClaim(ctx context.Context, job *river.Job[Args], leased *bool) (*claim, error) {
	a := job.Args
	attempt := 0 // River's first delivery: the job run is queued at attempt 0
	if job.Attempt > 1 {
		jr, err := s.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID})
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", errNoRun, a.JobRunID)
		}
		if err != nil || jr.Status != store.JobQueued {
			return nil, err
		}
		attempt = jr.Attempt
	}
	// Held whatever the read returns: a failed delivery releases it.
	*leased = true
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: a.OwnerID, RunID: a.RunID, Fingerprint: s.fp, Lease: s.jobLease(a)})
	if err != nil {
		return nil, err
	}
	if cp.State.Status != runstate.StatusSuspended || !s.threads.Runner().Replayable(cp.State) {
		return nil, nil
	}
	cp.State.Status, cp.State.Failure = runstate.StatusRunning, nil
	return &claim{cp: cp, attempt: attempt, lazy: true}, nil
}

// taken reports (in c) whether the job run is finished or being worked by
// another delivery within its lease.
func (s *Service) taken(c *claim, jr *store.JobRun) bool {
	switch jr.Status {
	case store.JobCompleted, store.JobCanceled:
		c.done = true
		return true
	case store.JobProcessing:
		if held := time.Since(jr.StartedAt); held < s.cfg.JobTimeout {
			c.lease = s.cfg.JobTimeout - held + time.Second
			return true
		}
	}
	return false
}

// resumable reports whether a failed run failed transiently, so that
// resuming it retries from where it stopped (as runner.Resume does).
func resumable(st *runstate.State) bool {
	if st.Failure == nil {
		return false
	}
	switch runner.Kind(st.Failure.Kind) {
	case runner.KindModelTransient, runner.KindToolTransient:
		return true
	}
	return false
}

// errLost: the delivery's claim no longer stands (see fence).
var errLost = errors.New("continuation: the run was taken over by another delivery")

// isLost reports whether err says another writer got to the run first.
func isLost(err error) bool {
	var sw *store.StaleWriteError
	var te *store.TransitionError
	return errors.As(err, &sw) || errors.As(err, &te) || errors.Is(err, errLost)
}

// transient reports whether a run error is worth another attempt.
func transient(err error) bool {
	if errors.Is(err, store.ErrUnavailable) {
		return true
	}
	switch runner.KindOf(err) {
	case runner.KindModelTransient, runner.KindToolTransient:
		return true
	}
	return false
}

// failed handles a run that stopped with err; unclaimed: its delivery
// never claimed it (a lazy claim whose first write did not come), so that
// attempt is the one it read.
func (s *Service) failed(ctx context.Context, job *river.Job[Args], attempt int, unclaimed bool, err error, log *deliveryLog) error {
	a := job.Args
	switch {
	case isLost(err):
		// Another worker claimed the run after this one's lease (or an
		// adopter took it, or it was finalised): its writes were refused
		// (every write of a delivery is fenced on its claim, see
		// claimCheckpoint), and it writes nothing more; the other carries
		// on. Check back after its lease.
		return s.lost(ctx, err, log)
	case ctx.Err() != nil:
		// Job timeout or shutdown: the run resumes from its last checkpoint.
		log.WarnContext(ctx, "continuation interrupted; it will resume from its last checkpoint", "error", err)
		s.retryLater(context.WithoutCancel(ctx), a, attempt, unclaimed, err, log)
		return err
	case transient(err) && job.Attempt < s.cfg.MaxAttempts:
		log.WarnContext(ctx, "continuation failed transiently; retrying", "error", err, "kind", runner.KindOf(err))
		s.retryLater(ctx, a, attempt, unclaimed, err, log)
		return err
	}
	if ferr := s.fail(ctx, a, fence{attempt: attempt, on: true, claimed: !unclaimed}, runner.KindOf(err), s.cfg.ErrorText, err); ferr != nil {
		if isLost(ferr) {
			// Its claim was lost before the failure: the run is another's.
			return s.lost(ctx, fmt.Errorf("%w (failure not recorded: %v)", ferr, err), log)
		}
		log.ErrorContext(ctx, "continuation failed", "error", err, "kind", runner.KindOf(err))
		log.ErrorContext(ctx, "continuation: recording the failure failed", "error", ferr)
		return ferr
	}
	log.ErrorContext(ctx, "continuation failed", "error", err, "kind", runner.KindOf(err))
	// Recorded for good (attempts spent, or a permanent failure): River
	// must not deliver it again.
	return river.JobCancel(err)
}

// lost ends a delivery that lost its run to another holder (an adopter
// judged its worker dead, or another delivery claimed it): nothing of it
// was written after the loss; River checks back after the job timeout.
func (s *Service) lost(ctx context.Context, err error, log *deliveryLog) error {
	log.InfoContext(ctx, "continuation lost to another holder; this delivery stops without writing", "error", err)
	return river.JobSnooze(s.cfg.JobTimeout)
}

// retryLater hands the run back to the queue after a transient failure:
// a failed checkpoint becomes suspended again, so that the thread stays busy
// until the retry, and the job run records the error, ending its lease. A
// job run its delivery never claimed (unclaimed) counts the attempt as it
// records the error, fenced on the attempt read.
func (s *Service) retryLater(ctx context.Context, a Args, attempt int, unclaimed bool, cause error, log *deliveryLog) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := s.st.Tx(ctx, func(tx store.Tx) error {
		cp, err := tx.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: a.OwnerID, RunID: a.RunID})
		if err != nil {
			return err
		}
		if st := cp.State; st.Status == runstate.StatusFailed {
			st.Status, st.Failure = runstate.StatusSuspended, nil
			st.Step++
			if _, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: a.OwnerID, State: st, ParentID: cp.ID, Rows: cp.Rows}); err != nil {
				return err
			}
		}
		_, err = tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID, To: store.JobError,
			Error: cause.Error(), ExpectedAttempt: attempt, Fence: unclaimed, ViaProcessing: unclaimed})
		return err
	})
	switch {
	case isLost(err):
		// Fenced: its claim was lost, the run is another's.
		log.InfoContext(ctx, "continuation lost to another holder; its retry is not recorded", "error", err)
	case err != nil:
		log.WarnContext(ctx, "continuation: recording the retry failed", "error", err)
	}
}

// fence is what a delivery's record of a failure is fenced on: the job
// run's attempt as the delivery read or claimed it (claimed: the job run
// is then processing at it). The zero fence fences nothing (a delivery
// that gives up on the run without claiming it).
type fence struct {
	attempt     int
	on, claimed bool
}

// fail finalises a continuation that failed for good: the run gets a
// failed checkpoint if it has none (so that its thread is free), the
// placeholder goes to error with text (user-safe), the draft is cleared and
// the job run records the detail. Under fence f, a job run that moved on
// (another attempt; or, claimed, no longer processing: an adopter took the
// run) is errLost and nothing is written: the run is another delivery's.
func (s *Service) fail(ctx context.Context, a Args, f fence, kind runner.Kind, text string, cause error) error {
	attempt := f.attempt
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := s.st.Tx(ctx, func(tx store.Tx) error {
		jr, err := tx.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID})
		if err != nil {
			return err
		}
		if jr.Status == store.JobCompleted || jr.Status == store.JobCanceled {
			return nil
		}
		if f.on && (jr.Attempt != f.attempt || f.claimed && jr.Status != store.JobProcessing) {
			// Read unlocked: the job run's transitions below are fenced
			// on the attempt too, under its row lock.
			return fmt.Errorf("%w: job run %s is %s at attempt %d, the delivery's attempt is %d", errLost, jr.ID, jr.Status, jr.Attempt, f.attempt)
		}
		cp, err := tx.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: a.OwnerID, RunID: a.RunID})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && !cp.State.Status.Terminal() {
			st := cp.State
			st.Status = runstate.StatusFailed
			st.Failure = &runstate.Failure{Kind: string(kind), Message: cause.Error()}
			st.Step++
			if _, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: a.OwnerID, State: st, ParentID: cp.ID, Rows: cp.Rows}); err != nil {
				return err
			}
		}
		m, err := tx.GetMessage(ctx, &store.GetMessageParams{OwnerID: a.OwnerID, ID: a.EventID})
		if err != nil {
			return err
		}
		if m.Status == message.StatusQueued || m.Status == message.StatusStreaming {
			if _, err := tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: a.OwnerID, ID: a.EventID, Status: message.StatusError,
				Parts:    []message.Part{{Type: message.PartText, Text: text}},
				Metadata: map[string]any{MetaContinuation: map[string]any{"run_id": a.RunID, "job_run_id": a.JobRunID, "status": "error", "error_kind": string(kind)}},
			}); err != nil {
				return err
			}
		}
		if err := tx.DeleteDraft(ctx, &store.DeleteDraftParams{OwnerID: a.OwnerID, MessageID: a.EventID}); err != nil {
			return err
		}
		if _, err := tx.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: a.OwnerID, RunID: a.RunID, Holder: s.cfg.Holder, Deferred: true}); err != nil {
			return err
		}
		if jr.Status != store.JobProcessing {
			// Never claimed (queued), or handed back after a transient
			// failure (error): it enters processing to record the outcome.
			if jr, err = tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID, To: store.JobProcessing,
				ExpectedAttempt: attempt, Fence: f.on}); err != nil {
				return err
			}
			attempt = jr.Attempt
		}
		if _, err := tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID, To: store.JobError,
			Error: detail(kind, cause), ExpectedAttempt: attempt}); err != nil {
			return err
		}
		if tp, ok := s.broker.(draft.TxPublisher); ok {
			return tp.PublishTx(ctx, tx, draft.Event{OwnerID: a.OwnerID, ThreadID: a.ThreadID, MessageID: a.EventID})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("continuation: record failure of %s: %w", a.EventID, err)
	}
	if _, ok := s.broker.(draft.TxPublisher); !ok {
		s.publish(ctx, a.OwnerID, a.ThreadID, a.EventID)
	}
	return nil
}

func detail(kind runner.Kind, err error) string {
	var b strings.Builder
	if kind != "" {
		b.WriteString(string(kind) + ": ")
	}
	b.WriteString(err.Error())
	return b.String()
}
