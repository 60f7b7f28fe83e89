package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// Metadata keys of a placeholder message.
const (
	// MetaContinuationID holds the continuation's id (also the message id;
	// see [EventID]).
	MetaContinuationID = "continuation_id"
	// MetaContinuation holds an object: run_id, job_run_id, status
	// (queued, streaming, completed, interrupted, error), and once final
	// final_message_id (the run's answer in the thread) or error_kind.
	MetaContinuation = "continuation"
)

// metaContinuationIDV1 is [MetaContinuationID] in the placeholders written
// before continuations had their word.
const metaContinuationIDV1 = "handoff_event_id"

// IsPlaceholder reports whether m is the placeholder message of a
// hand-over. Its final text repeats the run's answer, so it is kept out of
// the model's history.
func IsPlaceholder(m *store.Message) bool {
	_, ok := m.Metadata[MetaContinuationID]
	if !ok {
		_, ok = m.Metadata[metaContinuationIDV1]
	}
	return ok && m.Metadata[MetaContinuation] != nil
}

// Extension returns the runner extension of the background path; the
// runner of the threads.Service given to [Service.Work], and of every
// process that runs the network, carries it. At each step boundary, inside
// the checkpoint's transaction (the checkpointer must be package threads'):
//
//   - in a run executed inline, the first boundary takes the run's lease
//     for this process, and a stop releases it; a suspension (a slow tool
//     is next) hands the run to a worker: job-run row, placeholder message
//     and River job, all or nothing with the checkpoint;
//   - in a run a worker resumes, the final checkpoint finalises the
//     continuation (placeholder, draft, job run and River job).
//
// After the run it stops renewing the run's lease.
func (s *Service) Extension() runner.Extension { return extension{s: s} }

type extension struct {
	runner.NopExtension
	s *Service
}

func (e extension) AtBoundary(ctx context.Context, b *runner.Boundary) error {
	s, st := e.s, b.State
	tx, owner, err := store.CheckpointTx(ctx, b.Tx, "continuation")
	if err != nil {
		return err
	}
	if jc := jobFrom(ctx); jc != nil && jc.args.RunID == st.RunID && jc.args.OwnerID == owner {
		jc.saved.Store(int64(st.Seq))
		switch st.Status {
		case runstate.StatusCompleted, runstate.StatusInterrupted, runstate.StatusCancelled:
			return s.finishTx(ctx, tx, jc, st)
		}
		return s.claimCheckpoint(ctx, tx, jc)
	}
	if st.Status == runstate.StatusRunning {
		if !b.First {
			return nil
		}
		// Deferred: on PostgreSQL the lease goes with the checkpoint's
		// COMMIT, no round trip of its own (its failure fails the commit).
		if _, err := tx.AcquireLease(ctx, &store.AcquireLeaseParams{OwnerID: owner, RunID: st.RunID, ThreadID: st.ThreadID,
			Holder: s.cfg.Holder, TTL: s.cfg.LeaseTTL, Deferred: true}); err != nil {
			return fmt.Errorf("continuation: lease of run %s: %w", st.RunID, err)
		}
		s.leases.hold(st.RunID, st)
		return nil
	}
	// Deferred: on PostgreSQL the delete goes with the hand-over's next
	// statement (or the commit), no round trip of its own.
	if _, err := tx.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: owner, RunID: st.RunID, Holder: s.cfg.Holder, Deferred: true}); err != nil {
		return fmt.Errorf("continuation: release lease of run %s: %w", st.RunID, err)
	}
	if st.Status != runstate.StatusSuspended {
		return nil
	}
	h, err := s.enqueueTx(ctx, tx, owner, b.CheckpointID, st, true)
	if err == nil && h.wake {
		s.wakes.Store(st.RunID, struct{}{})
	}
	return err
}

// AfterRun stops renewing the lease of a run executed inline and, when the
// run was handed over, wakes this process's workers. In a process
// that adopts (serve, worker), an inline run cancelled mid-flight — the
// process is shutting down — is handed to a worker at once rather than
// when its lease expires; a one-shot command's cancelled run (ctrl+c in
// the chat) keeps its lease until it expires, so that the user may resume
// it in the same command.
func (e extension) AfterRun(ctx context.Context, o *runner.Outcome) {
	if jobFrom(ctx) != nil {
		return
	}
	s := e.s
	s.leases.drop(o.State.RunID, o.State)
	if _, owed := s.wakes.LoadAndDelete(o.State.RunID); owed && o.State.Status == runstate.StatusSuspended && o.Err == nil {
		// The hand-over has committed: this process's workers start it now
		// rather than at their next poll.
		s.q.wake()
	}
	if s.cfg.NoAdopt || o.State.Status != runstate.StatusRunning || !cancelled(o.Err) {
		return
	}
	owner, ok := store.OwnerFromContext(ctx)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h, err := s.adopt(ctx, owner, o.State.RunID, false)
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "handing a cancelled run to a worker failed: it is adopted once its lease expires", "run_id", o.State.RunID, "error", err)
	case h != nil:
		s.log.InfoContext(ctx, "a cancelled run was handed to a worker", "run_id", o.State.RunID, "thread_id", o.State.ThreadID, "continuation_id", h.EventID)
	}
}

// cancelled reports whether a run's error is its context's end.
func cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Handover describes the hand-over of a run to a worker.
type Handover struct {
	// EventID is the hand-over's id; the placeholder message has it as id.
	EventID string
	// MessageID is the placeholder message, to follow with the Broker.
	MessageID string
	// JobRun is the job-run row.
	JobRun *store.JobRun
	// Duplicate reports that the hand-over existed already.
	Duplicate bool
	// wake: the hand-over inserted a job River sent no notification for
	// (see notifySpy); once committed, this process's workers are woken.
	wake bool
	// redelivered: an adopter found the continuation's worker dead; its
	// River job is to be delivered again (see Service.orphanedJob).
	redelivered bool
}

// enqueueTx writes in tx the hand-over of the suspension st, stored as
// checkpoint cpID. fresh: the checkpoint was written in tx, so that no
// hand-over of it can exist yet; its job run is then created deferred (on
// PostgreSQL it goes with River's insert), and a job run of the same event
// fails the hand-over rather than being taken as a duplicate.
func (s *Service) enqueueTx(ctx context.Context, tx store.Tx, owner, cpID string, st *runstate.State, fresh bool) (*Handover, error) {
	ev := EventID(st.RunID, st.Step)
	fail := func(step string, err error) (*Handover, error) {
		if stale := (*store.StaleWriteError)(nil); errors.As(err, &stale) {
			// The suspension's checkpoint was refused, not the hand-over:
			// deferred (see threads), it is reported by the hand-over's
			// first statement.
			return nil, err
		}
		if step == "river" && fresh && errors.Is(err, store.ErrConflict) {
			// The deferred job run's refusal, reported by River's insert.
			step = "job run"
		}
		return nil, &EnqueueError{RunID: st.RunID, EventID: ev, Step: step, Err: err}
	}
	if st.ThreadID == "" {
		return fail("job run", ErrNoThread)
	}
	md, _ := json.Marshal(jobRunMeta{CheckpointID: cpID, MessageID: ev, RunID: st.RunID})
	// The placeholder is appended with the job run it names (one statement
	// on PostgreSQL), unless the job run exists already.
	jobRunID, err := uuid.NewV7()
	if err != nil {
		return fail("job run", err)
	}
	ph := message.Message{ID: ev, Role: message.RoleAssistant, Agent: st.Agent, Status: message.StatusQueued,
		Metadata: map[string]any{
			MetaContinuationID: ev,
			MetaContinuation:   map[string]any{"run_id": st.RunID, "job_run_id": jobRunID.String(), "status": "queued"},
		}}
	res, err := tx.CreateJobRun(ctx, &store.CreateJobRunParams{OwnerID: owner, ID: jobRunID.String(), IdempotencyKey: ev, Kind: Kind, ThreadID: st.ThreadID,
		Metadata: map[string]json.RawMessage{MetaContinuation: md}, Append: &store.NewMessage{Message: ph}, Deferred: fresh})
	if err != nil {
		return fail("job run", err)
	}
	h := &Handover{EventID: ev, MessageID: ev, JobRun: res.Run, Duplicate: res.Duplicate}
	if res.Duplicate {
		// The same event again: everything was written the first time.
		return h, nil
	}
	if err := s.inject("job run"); err != nil {
		return fail("job run", err)
	}
	if err := s.inject("placeholder"); err != nil {
		return fail("placeholder", err)
	}
	args := Args{OwnerID: owner, ThreadID: st.ThreadID, RunID: st.RunID, EventID: ev, JobRunID: res.Run.ID, Fingerprint: st.Fingerprint}
	if s.cfg.Inject != nil {
		args.Trace = s.cfg.Inject(ctx)
	}
	ir, quiet, err := s.q.insertTx(ctx, tx, args, &river.InsertOpts{Queue: s.cfg.Queue, UniqueOpts: uniqueOpts})
	if err != nil {
		return fail("river", err)
	}
	h.wake = quiet && !ir.UniqueSkippedAsDuplicate
	if ir.UniqueSkippedAsDuplicate {
		var cur Args
		_ = json.Unmarshal(ir.Job.EncodedArgs, &cur)
		if cur.EventID != ev {
			return fail("river", &BusyError{ThreadID: st.ThreadID, EventID: ev, Current: cur.EventID})
		}
	}
	if err := s.inject("river"); err != nil {
		return fail("river", err)
	}
	if tp, ok := s.broker.(draft.TxPublisher); ok {
		if err := tp.PublishTx(ctx, tx, draft.Event{OwnerID: owner, ThreadID: st.ThreadID, MessageID: ev}); err != nil {
			return fail("publish", err)
		}
	}
	return h, nil
}

// jobRunMeta is a job run's continuation metadata: the object a map of
// its names wrote (names in sorted order), without a map's encoding.
type jobRunMeta struct {
	CheckpointID string `json:"checkpoint_id"`
	MessageID    string `json:"message_id"`
	RunID        string `json:"run_id"`
}

func (s *Service) inject(step string) error {
	if s.cfg.testHook != nil {
		return s.cfg.testHook(step)
	}
	return nil
}

// Enqueue hands run runID of owner to a worker if its latest checkpoint is
// a suspension without one (written by a process without this service, for
// instance), and returns the run's latest hand-over. It is idempotent:
// calling it again, or at once from several processes, enqueues nothing
// more. A run that never suspended is [ErrNotSuspended].
func (s *Service) Enqueue(ctx context.Context, owner, runID string) (*Handover, error) {
	var h *Handover
	err := s.st.Tx(ctx, func(tx store.Tx) error {
		cp, latest, err := lastSuspension(ctx, tx, owner, runID)
		if err != nil {
			return err
		}
		if cp.ID == latest.ID {
			h, err = s.enqueueTx(ctx, tx, owner, cp.ID, cp.State, false)
			return err
		}
		jr, err := tx.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, IdempotencyKey: EventID(runID, cp.Step)})
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("continuation: run %s was resumed without a worker: %w", runID, ErrNotSuspended)
		}
		if err != nil {
			return err
		}
		ev := EventID(runID, cp.Step)
		h = &Handover{EventID: ev, MessageID: ev, JobRun: jr, Duplicate: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h != nil && !h.Duplicate {
		if h.wake {
			s.q.wake()
		}
		if _, ok := s.broker.(draft.TxPublisher); !ok {
			s.publish(ctx, owner, h.JobRun.ThreadID, h.MessageID)
		}
	}
	return h, nil
}

// Lookup returns the latest hand-over of run runID of owner.
func (s *Service) Lookup(ctx context.Context, owner, runID string) (*Handover, error) {
	cp, _, err := lastSuspension(ctx, s.st, owner, runID)
	if err != nil {
		return nil, err
	}
	ev := EventID(runID, cp.Step)
	jr, err := s.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, IdempotencyKey: ev})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("continuation: run %s suspended at step %d without a worker: %w", runID, cp.Step, ErrNotSuspended)
	}
	if err != nil {
		return nil, err
	}
	return &Handover{EventID: ev, MessageID: ev, JobRun: jr, Duplicate: true}, nil
}

// maxWalk bounds the walk back through a run's checkpoints.
const maxWalk = 10000

// lastSuspension returns the run's latest suspended checkpoint, walking
// back from the latest one.
func lastSuspension(ctx context.Context, ops store.Ops, owner, runID string) (suspended, latest *store.Checkpoint, err error) {
	latest, err = ops.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
	if err != nil {
		return nil, nil, fmt.Errorf("continuation: run %s: %w", runID, err)
	}
	cp := latest
	for range maxWalk {
		if cp.Status == runstate.StatusSuspended {
			return cp, latest, nil
		}
		if cp.ParentID == "" {
			break
		}
		if cp, err = ops.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ParentID}); err != nil {
			return nil, nil, fmt.Errorf("continuation: run %s: %w", runID, err)
		}
	}
	return nil, nil, fmt.Errorf("continuation: run %s: %w", runID, ErrNotSuspended)
}

// jobCtx is the continuation a worker is running, carried by the run's
// context down to the Hook.
type jobCtx struct {
	args   Args
	job    *river.Job[Args]
	writer *draft.Writer
	// lazy: the delivery claims its run with the run's first write (see
	// Service.lazyClaim). claimMu orders that write's claim and a draft
	// flush's (see Service.claimIn); it is taken only inside a
	// transaction, after its begin (on SQLite, with the write turn), and
	// never held past the claim's statements.
	lazy    bool
	claimMu sync.Mutex
	claims  int // claims written by this delivery, the undone included
	// claimed: a write has claimed the run (a checkpoint's claim counts
	// from its transaction: if it rolls back, the run stops there).
	claimed bool
	attempt int // the job run's attempt: read, or counted by the claim
	// finished is set by the Hook once the final transaction is written
	// (it may still roll back; the worker checks the run's outcome).
	finished bool
	final    runstate.Status
	// saved is the seq of the run's last checkpoint this delivery wrote
	// (from its boundary, before the commit that the model call after it
	// waits for): the stored event a delta that follows it comes after
	// (deltaStream).
	saved atomic.Int64
}

type jobKey struct{}

func withJob(ctx context.Context, jc *jobCtx) context.Context {
	return context.WithValue(ctx, jobKey{}, jc)
}

func jobFrom(ctx context.Context) *jobCtx {
	jc, _ := ctx.Value(jobKey{}).(*jobCtx)
	return jc
}

// claimState returns the job run's attempt as this delivery knows it, and
// whether the delivery has not claimed the run (a lazy claim not written).
func (jc *jobCtx) claimState() (attempt int, unclaimed bool) {
	jc.claimMu.Lock()
	defer jc.claimMu.Unlock()
	return jc.attempt, jc.lazy && !jc.claimed
}

// claimIn claims a lazily claimed run in tx, unless a write claimed it
// already: the placeholder from queued to streaming, the job run to
// processing, fenced on the attempt read. The delivery counts the run
// claimed from then on, and jc.claimMu is not held past claimIn: the
// delivery's later writes come after tx (on SQLite in the same write
// group or after its commit; on PostgreSQL they wait for the rows tx
// holds), and holding the lock to tx's commit would deadlock a later
// write of the run in tx's write group. The function it returns (nil when
// nothing was written) is told how tx ended: if tx did not commit, the
// claim is undone unless another write claimed since. A write made in the
// meantime on the belief that the run was claimed fails on its fences
// (the placeholder's status, the job run's), which stops the run as the
// lost claim would have; a checkpoint, fenced on the run's own, stays
// valid and the final transaction claims.
func (s *Service) claimIn(ctx context.Context, tx store.Tx, jc *jobCtx) (func(error), error) {
	a := jc.args
	jc.claimMu.Lock()
	defer jc.claimMu.Unlock()
	if jc.claimed {
		return nil, nil
	}
	_, err := tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: a.OwnerID, ID: a.EventID, Status: message.StatusStreaming,
		Metadata:       map[string]any{MetaContinuation: map[string]any{"run_id": a.RunID, "job_run_id": a.JobRunID, "status": "streaming"}},
		ExpectedStatus: message.StatusQueued})
	var jr *store.JobRun
	if err == nil {
		jr, err = tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID, To: store.JobProcessing,
			ExpectedAttempt: jc.attempt, Fence: true})
	}
	if err != nil {
		return nil, fmt.Errorf("continuation: claim run %s: %w", a.RunID, err)
	}
	before := jc.attempt
	jc.claimed, jc.attempt = true, jr.Attempt
	jc.claims++
	mine := jc.claims
	return func(err error) {
		if err == nil {
			return
		}
		jc.claimMu.Lock()
		defer jc.claimMu.Unlock()
		if jc.claims == mine {
			jc.claimed, jc.attempt = false, before
		}
	}, nil
}

// claimCheckpoint fences a checkpoint of a delivery (not its final one:
// finishTx claims and finishes at once, fenced on the attempt) on the
// delivery's claim: a lazily claimed run not claimed yet is claimed in its
// transaction (claimIn, fenced on the attempt read); otherwise the job run
// must still be processing at the delivery's attempt (a Hold, deferred: on
// PostgreSQL it goes with the COMMIT). A delivery whose run was taken over
// — an adopter judged its worker dead and moved the job run to error, or
// another delivery claimed it — thus writes nothing more for the run: no
// checkpoint (a failed one included), message, event or webhook of its
// transaction; the refusal (a *store.TransitionError) stops the run.
func (s *Service) claimCheckpoint(ctx context.Context, tx store.Tx, jc *jobCtx) error {
	if _, unclaimed := jc.claimState(); unclaimed {
		done, err := s.claimIn(ctx, tx, jc)
		if done != nil {
			done(nil)
		}
		if err != nil || done != nil {
			return err
		}
		// Claimed meanwhile by a draft flush: held like any claim.
	}
	a := jc.args
	attempt, _ := jc.claimState()
	if _, err := tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID, To: store.JobProcessing,
		ExpectedAttempt: attempt, Hold: true, Deferred: true}); err != nil {
		return fmt.Errorf("continuation: hold job run %s: %w", a.JobRunID, err)
	}
	return nil
}

// finishTx finalises a continuation in the transaction of the run's final
// checkpoint: the placeholder gets the answer (or, for a run now waiting for
// a human, an empty text and status interrupted in its metadata), the draft
// is cleared, the job run and the River job are completed.
func (s *Service) finishTx(ctx context.Context, tx store.Tx, jc *jobCtx, st *runstate.State) error {
	if jc.writer != nil {
		jc.writer.Abandon()
	}
	a := jc.args
	meta := map[string]any{"run_id": a.RunID, "job_run_id": a.JobRunID, "status": "completed"}
	var parts []message.Part
	switch st.Status {
	case runstate.StatusCompleted:
		parts = []message.Part{{Type: message.PartText, Text: st.FinalOutput}}
		if id := lastAnswerID(st); id != "" {
			meta["final_message_id"] = id
		}
	case runstate.StatusCancelled:
		// Cancelled (see threads.Service.Cancel): what the run said before
		// it stopped, if anything.
		meta["status"] = "cancelled"
		parts = []message.Part{}
		if st.FinalOutput != "" {
			parts = []message.Part{{Type: message.PartText, Text: st.FinalOutput}}
		}
	case runstate.StatusInterrupted:
		meta["status"] = "interrupted"
		if st.Interrupt != nil {
			meta["interrupt_id"] = st.Interrupt.ID
		}
		parts = []message.Part{}
	}
	usage := st.Usage
	// A run not claimed yet (see Service.lazyClaim) is claimed here: its
	// placeholder is still queued, and its job run moves from queued to
	// completed through processing, fenced on the attempt read.
	if err := s.inject("finish"); err != nil {
		return err
	}
	jc.claimMu.Lock()
	defer jc.claimMu.Unlock()
	claim := jc.lazy && !jc.claimed
	expected := message.StatusStreaming
	if claim {
		expected = message.StatusQueued
	}
	// Deferred, like the job run's transition: on PostgreSQL both go with
	// the transaction's COMMIT, in its round trip, each a statement of its
	// own, and a refusal of either rolls the transaction back.
	if _, err := tx.UpdateMessage(ctx, &store.UpdateMessageParams{OwnerID: a.OwnerID, ID: a.EventID, Status: message.StatusCompleted,
		Parts: parts, Usage: &usage, Metadata: map[string]any{MetaContinuation: meta}, ExpectedStatus: expected, Deferred: true}); err != nil {
		return fmt.Errorf("continuation: finalise placeholder %s: %w", a.EventID, err)
	}
	// The draft is deleted with the job run's completion (one statement
	// on PostgreSQL), after the placeholder's update: a draft flush that
	// got the placeholder's row before it has committed by then, and one
	// after it finds the placeholder completed and writes nothing.
	jr, err := tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: a.OwnerID, ID: a.JobRunID, To: store.JobCompleted,
		ExpectedAttempt: jc.attempt, Fence: claim, ViaProcessing: claim, ClearDraft: a.EventID, Deferred: true})
	if err != nil {
		return fmt.Errorf("continuation: finalise placeholder %s, complete job run %s and clear its draft: %w", a.EventID, a.JobRunID, err)
	}
	if claim {
		// The move through processing counts the attempt read, fenced: one
		// more (jr is nil when the transition was deferred).
		jc.claimed, jc.attempt = true, jc.attempt+1
		if jr != nil {
			jc.attempt = jr.Attempt
		}
	}
	// The delivery's lease (holdJob) goes with the run's end: no adopter
	// finds it after the commit.
	if _, err := tx.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: a.OwnerID, RunID: a.RunID, Holder: s.cfg.Holder, Deferred: true}); err != nil {
		return fmt.Errorf("continuation: release lease of run %s: %w", a.RunID, err)
	}
	if jc.job != nil {
		// Completing the River job here closes the window in which the
		// thread is free (its run is over) but River still holds the
		// thread's unique job. A job no longer running (rescued meanwhile)
		// is left to its next delivery, which finds the job run completed.
		if err := s.q.completeTx(ctx, tx, jc.job); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
			return fmt.Errorf("continuation: complete river job %d: %w", jc.job.ID, err)
		}
	}
	if tp, ok := s.broker.(draft.TxPublisher); ok {
		if err := tp.PublishTx(ctx, tx, draft.Event{OwnerID: a.OwnerID, ThreadID: a.ThreadID, MessageID: a.EventID}); err != nil {
			return err
		}
	}
	jc.finished, jc.final = true, st.Status
	return nil
}

// lastAnswerID returns the id of the run's last assistant message.
func lastAnswerID(st *runstate.State) string {
	for i := len(st.Transcript) - 1; i >= 0; i-- {
		if st.Transcript[i].Role == message.RoleAssistant {
			return st.Transcript[i].ID
		}
	}
	return ""
}

func (s *Service) publish(ctx context.Context, owner, thread, msg string) {
	if err := s.broker.Publish(ctx, draft.Event{OwnerID: owner, ThreadID: thread, MessageID: msg}); err != nil {
		s.log.WarnContext(ctx, "draft publish failed", "message_id", msg, "error", err)
	}
}
