package threads

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// HistoryLimit is how many of a thread's latest messages a turn sees.
const HistoryLimit = 500

// Service runs turns on the threads of one store with one runner. It is
// safe for concurrent use; two turns on the same thread at once are fenced
// by the store (one of them fails with a store conflict).
type Service struct {
	st  store.Store
	r   *runner.Runner
	log *slog.Logger
	// Exclude, if set, leaves the stored messages for which it returns true
	// out of a turn's history. continuation.Service.Work excludes its
	// placeholder messages, whose final text repeats the run's answer.
	Exclude func(m *store.Message) bool
	// Start starts a run from a thread's queue (see [Service.Submit]) when
	// the thread is free; q.TurnOptions(threadID) are its options, to which
	// the caller adds its run options. The server sets it, to run and
	// stream queued runs like its own. Defaults to running the turn in a
	// goroutine with QueuedRunOptions.
	Start func(ctx context.Context, owner, threadID string, q Queued)
	// QueuedRunOptions are the run options of the default Start (package
	// service gives the background path's).
	QueuedRunOptions []runner.RunOption
	// KickTx, if set, is called in the transaction of a run's final
	// checkpoint (completed or failed) when the thread's queue holds runs
	// (runID is the run that ends): it records a durable kick of the thread (continuation.Service.Work
	// sets it to a River job that calls [Service.KickWait]), so that the
	// next run starts even if this process dies before its own kick.
	KickTx func(ctx context.Context, tx store.Tx, owner, threadID, runID string) error
	// EndTx, if set, is called in the transaction of a checkpoint that ends
	// a run outside the runner (a cancel of a run executed nowhere or
	// queued, double-texting's interrupt or rollback), with the state
	// written and its checkpoint's id: the runner's extensions do not see
	// it (package webhook's run.cancelled).
	EndTx func(ctx context.Context, tx store.Tx, owner string, st *runstate.State, checkpointID string) error
	// Committed, if set, is called after each checkpoint of a run on a
	// thread has committed, from the run's goroutine (it must not block):
	// package service signals the processes that stream the thread.
	Committed func(ctx context.Context, owner, threadID string, st *runstate.State)

	// StopWait bounds how long [Service.Cancel] and [Service.Submit]
	// wait for a run that another process executes to stop after they
	// signalled it, before they end it in the store. Defaults to
	// [DefaultStopWait].
	StopWait time.Duration

	// sig carries stops to other processes (Listen).
	sig draft.Signaller
	// running are the runs this process executes, by id: *active.
	running sync.Map
	// bg are the kicks and queued runs in the background.
	bg sync.WaitGroup
}

// New returns a service.
func New(st store.Store, r *runner.Runner, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{st: st, r: r, log: logger}
}

// Runner returns the service's runner.
func (s *Service) Runner() *runner.Runner { return s.r }

// Store returns the service's store.
func (s *Service) Store() store.Store { return s.st }

// TurnOptions are the knobs of one turn.
type TurnOptions struct {
	// ThreadID continues a thread; empty creates one.
	ThreadID string
	// Name names a new thread. Defaults to its first message's [Title].
	Name string
	// RunID is the run's id; defaults to a new one.
	RunID string
	// Agent starts the run with this agent instead of the picker's.
	Agent string
	// Strategy is what [Service.Submit] does when the thread is busy.
	Strategy Strategy
	// RunOptions are passed to the runner.
	RunOptions []runner.RunOption

	// dequeue marks a run from the thread's queue; stops is the run it
	// interrupts or rolls back.
	dequeue bool
	stops   string
}

// Turn runs one user turn on a thread of owner and streams its events. The
// run's context carries the owner (store.OwnerFromContext). The
// thread's earlier messages are the history, its active agent goes to the
// picker (so a sticky picker keeps it), and everything the run produces is
// stored as it goes. A thread of another network is refused.
func (s *Service) Turn(ctx context.Context, owner, input string, o TurnOptions) iter.Seq2[runner.Event, error] {
	return func(yield func(runner.Event, error) bool) {
		ctx := store.ContextWithOwner(ctx, owner)
		if o.Name == "" {
			o.Name = Title(input)
		}
		th, hist, err := s.prepare(ctx, owner, o)
		if err != nil {
			s.unstartable(ctx, owner, o, err)
			yield(nil, err)
			return
		}
		opts, ck, stop := s.runOptions(owner, th, hist, &o)
		started := false
		for ev, err := range s.tracked(ctx, owner, th.ID, o.RunID, ck, stop, s.r.Stream(ctx, input, opts...)) {
			if err != nil && !started {
				s.unstartable(ctx, owner, o, err)
			}
			started = started || err == nil
			if !yield(ev, err) {
				return
			}
		}
	}
}

// runOptions are the options of a new run on th: its thread, history,
// checkpointer, id and stopper, then o's.
func (s *Service) runOptions(owner string, th *store.Thread, hist *history, o *TurnOptions) ([]runner.RunOption, *checkpointer, *runner.Stopper) {
	if o.RunID == "" {
		o.RunID = runstate.NewRunID()
	}
	ck := s.checkpointer(owner, th)
	ck.rows = hist.rows
	ck.gate, ck.dequeue = ck.create == nil, o.dequeue
	stop := runner.NewStopper()
	opts := append(make([]runner.RunOption, 0, 7+len(o.RunOptions)),
		runner.WithThread(th.ID), runner.WithHistory(hist.msgs), runner.WithLastAgent(th.ActiveAgent),
		runner.WithCheckpointer(ck), runner.WithRunID(o.RunID), runner.WithStopper(stop))
	if o.Agent != "" {
		opts = append(opts, runner.WithAgent(o.Agent))
	}
	return append(opts, o.RunOptions...), ck, stop
}

// Run is Turn without events: it returns the result.
func (s *Service) Run(ctx context.Context, owner, input string, o TurnOptions) (*runner.Result, error) {
	ctx = store.ContextWithOwner(ctx, owner)
	th, hist, err := s.prepare(ctx, owner, o)
	if err != nil {
		return nil, err
	}
	opts, ck, stop := s.runOptions(owner, th, hist, &o)
	var res *runner.Result
	run := func(yield func(runner.Event, error) bool) {
		res, err = s.r.Run(ctx, input, opts...)
		if res != nil {
			yield(runEndEvent(res), nil)
		}
	}
	for range s.tracked(ctx, owner, th.ID, o.RunID, ck, stop, run) {
		continue
	}
	return res, err
}

// runEndEvent is the run_end of a result, for tracked.
func runEndEvent(res *runner.Result) runner.Event {
	return &runner.RunEndEvent{Status: res.Status}
}

// history is a turn's history: its messages, and the rows they are
// (their positions in the thread), for the run's checkpoints to refer to.
type history struct {
	msgs []message.Message
	rows *runstate.Rows
}

func (s *Service) prepare(ctx context.Context, owner string, o TurnOptions) (*store.Thread, *history, error) {
	net := s.r.Network()
	if o.ThreadID == "" {
		// A new thread is created by the run's first checkpoint, in its
		// transaction: a run that does not start leaves no empty thread,
		// and the turn costs no transaction of its own.
		id, err := uuid.NewV7()
		if err != nil {
			return nil, nil, fmt.Errorf("threads: new thread id: %w", err)
		}
		return &store.Thread{ID: id.String(), OwnerID: owner, Name: o.Name, Network: net.Name()}, &history{}, nil
	}
	th, err := s.st.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: o.ThreadID})
	if err != nil {
		return nil, nil, fmt.Errorf("threads: thread %s: %w", o.ThreadID, err)
	}
	if th.Network != "" && th.Network != net.Name() {
		return nil, nil, fmt.Errorf("threads: thread %s belongs to network %q, not %q: %w", th.ID, th.Network, net.Name(), store.ErrInvalid)
	}
	if _, ok := net.Agent(th.ActiveAgent); !ok {
		th.ActiveAgent = "" // an agent the network no longer has: let the picker choose
	}
	if err := s.checkFree(ctx, owner, th, o); err != nil {
		return nil, nil, err
	}
	h, err := s.readHistory(ctx, owner, th.ID, o)
	if err != nil {
		return nil, nil, err
	}
	return th, h, nil
}

// checkFree returns a *BusyError when th has a run in progress (other than
// the one o stops) or, unless o dequeues, queued runs.
func (s *Service) checkFree(ctx context.Context, owner string, th *store.Thread, o TurnOptions) error {
	if cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: th.ID, NoState: true}); err == nil && !cp.Status.Terminal() && (o.stops == "" || cp.RunID != o.stops) {
		return &BusyError{ThreadID: th.ID, RunID: cp.RunID, Status: cp.Status, Queued: len(QueueOf(th))}
	} else if q := QueueOf(th); err == nil && len(q) > 0 && !o.dequeue {
		return &BusyError{ThreadID: th.ID, RunID: q[0].RunID, Status: StatusQueued, Queued: len(q)}
	} else if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrIncompatible) {
		return fmt.Errorf("threads: thread %s: %w", th.ID, err)
	}
	return nil
}

// readHistory reads the thread's history for a turn: its last HistoryLimit
// messages that are complete and not excluded, without those of the run a
// rollback removes, with the rows they are.
func (s *Service) readHistory(ctx context.Context, owner, threadID string, o TurnOptions) (*history, error) {
	msgs, err := s.st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: threadID, Limit: HistoryLimit, Last: true})
	if err != nil {
		return nil, fmt.Errorf("threads: messages of %s: %w", threadID, err)
	}
	hist := make([]message.Message, 0, len(msgs))
	rows := make([]runstate.Row, 0, len(msgs))
	rolledBack := ""
	if o.stops != "" && o.Strategy == Rollback {
		rolledBack = o.stops + "-" // its messages leave the thread with this run's first checkpoint
	}
	for _, m := range msgs {
		if rolledBack != "" && strings.HasPrefix(m.ID, rolledBack) {
			continue
		}
		if (m.Status == "" || m.Status == message.StatusCompleted) && (s.Exclude == nil || !s.Exclude(m)) {
			hist = append(hist, m.Message)
			rows = append(rows, runstate.Row{Seq: m.Seq, Message: m.Message})
		}
	}
	return &history{msgs: hist, rows: runstate.NewRows(0, rows)}, nil
}

// BusyError refuses a new turn on a thread whose last run has not finished:
// it waits for a decision, a background worker, or a resume after a crash.
type BusyError struct {
	ThreadID, RunID string
	// Status is the run's; [StatusQueued] when runs wait in the thread's
	// queue (RunID is the next).
	Status runstate.Status
	// Queued is how many runs wait in the thread's queue.
	Queued int
}

func (e *BusyError) Error() string {
	if e.Status == StatusQueued {
		return fmt.Sprintf("threads: thread %s has %d queued runs, next %s", e.ThreadID, e.Queued, e.RunID)
	}
	return fmt.Sprintf("threads: thread %s has an unfinished run %s (%s); resume it first", e.ThreadID, e.RunID, e.Status)
}

// Unwrap returns store.ErrConflict.
func (e *BusyError) Unwrap() error { return store.ErrConflict }

// Latest returns the latest checkpoint of a run.
func (s *Service) Latest(ctx context.Context, owner, runID string) (*store.Checkpoint, error) {
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID, Fingerprint: s.r.Network().Fingerprint()})
	if err != nil {
		return nil, fmt.Errorf("threads: run %s: %w", runID, err)
	}
	return cp, nil
}

// Resume continues a stopped run of owner from its latest checkpoint, with
// decisions when it waits for one, and streams its events. A checkpoint of
// another network version is refused with a *runstate.IncompatibleError.
func (s *Service) Resume(ctx context.Context, owner, runID string, opts ...runner.RunOption) iter.Seq2[runner.Event, error] {
	return func(yield func(runner.Event, error) bool) {
		cp, err := s.Latest(ctx, owner, runID)
		if err != nil {
			yield(nil, err)
			return
		}
		for ev, err := range s.ResumeCheckpoint(ctx, owner, cp, opts...) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// ResumeCheckpoint is [Service.Resume] from cp, a checkpoint of owner the
// caller has loaded (or just written, to claim the run). Its writes are
// fenced on cp: if another writer has moved the run on since, the first
// checkpoint fails with a *store.StaleWriteError and the run stops. cp.State
// is resumed in place.
func (s *Service) ResumeCheckpoint(ctx context.Context, owner string, cp *store.Checkpoint, opts ...runner.RunOption) iter.Seq2[runner.Event, error] {
	return func(yield func(runner.Event, error) bool) {
		if cp == nil || cp.State == nil {
			yield(nil, fmt.Errorf("threads: resume: no checkpoint state: %w", store.ErrInvalid))
			return
		}
		ck := &checkpointer{s: s, owner: owner, threadID: cp.ThreadID, parent: cp.ID, persisted: len(cp.State.Transcript), agent: cp.State.Agent, rows: cp.Rows}
		stop := runner.NewStopper()
		opts = append([]runner.RunOption{runner.WithCheckpointer(ck), runner.WithStopper(stop)}, opts...)
		ctx = store.ContextWithOwner(ctx, owner)
		for ev, err := range s.tracked(ctx, owner, cp.ThreadID, cp.RunID, ck, stop, s.r.ResumeStream(ctx, cp.State, opts...)) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// checkpointer returns the checkpointer of a run on th; a thread without
// a creation time is new, created by the first checkpoint.
func (s *Service) checkpointer(owner string, th *store.Thread) *checkpointer {
	c := &checkpointer{s: s, owner: owner, threadID: th.ID, agent: th.ActiveAgent}
	if th.CreatedAt.IsZero() {
		c.create = &store.CreateThreadParams{OwnerID: owner, ID: th.ID, Name: th.Name, Network: th.Network}
	}
	return c
}

// checkpointer writes a run's checkpoints, the messages produced since the
// previous one and the active agent, in one transaction per checkpoint.
type checkpointer struct {
	s        *Service
	owner    string
	threadID string
	// create, for a new thread, creates it in the first checkpoint's
	// transaction.
	create *store.CreateThreadParams
	// parent is the id of the last checkpoint written (or resumed from):
	// writes are fenced on it, so a stale writer fails instead of overwriting.
	parent string
	// persisted counts the transcript messages already stored.
	persisted int
	// rows are the run's history rows (or those its resumed checkpoint
	// referred to): its checkpoints refer to them, and to the transcript's
	// rows, instead of copying them (see stored).
	rows  *runstate.Rows
	agent string
	// gate: the next write is the first of a new run on an existing
	// thread, which must be free (see Service.gate); dequeue: the run is
	// the next of the thread's queue.
	gate, dequeue bool
	// ended: the last write was the run's end (a terminal status), and its
	// transaction saw the thread's queue empty with the thread's row
	// locked. A run enqueued after that commits after it, and its
	// Submit kicks the thread itself: the run's end need not (see
	// Service.tracked). Atomic: the run may write in a goroutine of its
	// own.
	ended atomic.Bool
}

// Checkpoint implements runner.Checkpointer.
func (c *checkpointer) Checkpoint(ctx context.Context, st *runstate.State) error {
	return c.CheckpointTx(ctx, st, nil)
}

// CheckpointTx implements runner.TxCheckpointer: the extensions' AtBoundary
// run in the checkpoint's transaction, with its store.Tx.
func (c *checkpointer) CheckpointTx(ctx context.Context, st *runstate.State, at func(tx any, checkpointID string) error) error {
	c.ended.Store(false)
	cp, th, err := c.write(ctx, st, at)
	if c.create != nil && errors.Is(err, errNoOwner) {
		// The owner usually exists; it is created only when the store
		// says it is missing, and the write is tried again.
		if _, err := c.s.st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: c.owner}); err != nil {
			return fmt.Errorf("threads: owner %s: %w", c.owner, err)
		}
		cp, th, err = c.write(ctx, st, at)
	}
	if err != nil {
		return err
	}
	c.ended.Store(th != nil && st.Status.Terminal() && len(QueueOf(th)) == 0)
	if c.s.Committed != nil && c.threadID != "" {
		c.s.Committed(ctx, c.owner, c.threadID, st)
	}
	c.create, c.gate = nil, false
	c.parent = cp.ID
	c.persisted = len(st.Transcript)
	c.agent = st.Agent
	return nil
}

// errNoOwner marks the failure of a new thread's creation for want of its
// owner.
var errNoOwner = errors.New("threads: the thread's owner does not exist")

// newMessages returns the messages of st's transcript not stored yet.
func (c *checkpointer) newMessages(st *runstate.State) []store.NewMessage {
	if c.threadID == "" || len(st.Transcript) <= c.persisted {
		return nil
	}
	nm := make([]store.NewMessage, 0, len(st.Transcript)-c.persisted)
	for _, m := range st.Transcript[c.persisted:] {
		nm = append(nm, store.NewMessage{Message: m})
	}
	return nm
}

// stored returns the rows of st's thread that its checkpoint refers to:
// its history's, and its whole transcript, every message of which is a row
// once the checkpoint is written (the new ones are written with it). None
// when st has no thread, or another than the run's.
func (c *checkpointer) stored(st *runstate.State) *runstate.Rows {
	if c.threadID == "" || st.ThreadID != c.threadID {
		return nil
	}
	return c.rows.WithTranscript(len(st.Transcript))
}

// tracked runs events, a run of owner on threadID this process executes,
// as a run that [Service.Submit] can stop (stop is the run's Stopper); when
// it ends completed or failed, the thread's queue is kicked, unless ck, the
// run's checkpointer, wrote its end and saw the queue empty then.
func (s *Service) tracked(ctx context.Context, owner, threadID, runID string, ck *checkpointer, stop *runner.Stopper, events iter.Seq2[runner.Event, error]) iter.Seq2[runner.Event, error] {
	return func(yield func(runner.Event, error) bool) {
		a := &active{owner: owner, stop: stop, done: make(chan struct{})}
		s.running.Store(runID, a)
		var end runstate.Status
		defer func() {
			s.running.CompareAndDelete(runID, a)
			close(a.done)
			if threadID != "" && (end == "" || end.Terminal()) && !ck.ended.Load() {
				s.bg.Go(func() { s.Kick(context.WithoutCancel(ctx), owner, threadID) })
			}
		}()
		for ev, err := range events {
			if e, ok := ev.(*runner.RunEndEvent); ok {
				end = e.Status
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// QueuedStartError logs why a queued run did not start or failed: at debug
// level when another start took it first (two kicks of one thread), else
// as a warning.
func QueuedStartError(ctx context.Context, log *slog.Logger, runID, threadID string, err error) {
	var busy *BusyError
	if errors.Is(err, store.ErrConflict) && !errors.As(err, &busy) || errors.As(err, &busy) {
		log.DebugContext(ctx, "queued run not started: another start took it, or the thread is busy again", "run_id", runID, "thread_id", threadID, "error", err)
		return
	}
	log.WarnContext(ctx, "queued run", "run_id", runID, "thread_id", threadID, "error", err)
}
