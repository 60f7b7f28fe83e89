package continuation

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/store"
)

// KickKind is the River job kind of a thread's durable kick: the start of
// the next run of its queue (double-texting's enqueue strategy), recorded
// with the end of the run before it. It is persisted.
const KickKind = "baton.kick"

// KickArgs are the River job args of a kick. They are persisted as JSON;
// the field names are stable.
type KickArgs struct {
	OwnerID  string `json:"owner_id"`
	ThreadID string `json:"thread_id"`
	// After is the run whose end recorded the kick: a run's end kicks its
	// thread once, however often its final transaction is retried.
	After string `json:"after"`
}

// Kind implements river.JobArgs.
func (KickArgs) Kind() string { return KickKind }

// kickDelay is how long a kick waits before a worker takes it: the process
// that ended the run kicks the thread at once in process, which usually
// starts the next run first; the River job then finds it started and does
// nothing. It only matters when that process died in between.
const kickDelay = 2 * time.Second

// kickUnique: one kick per run's end, by its args, among the kicks not
// finished.
var kickUnique = river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}}

// kickTx is threads.Service.KickTx: a kick of the thread, in the
// transaction of the final checkpoint of run after. A service never
// started (a library that runs turns without background work, whose
// database may not have River's tables) records none: the in-process kick
// is all there is.
func (s *Service) kickTx(ctx context.Context, tx store.Tx, owner, threadID, after string) error {
	if !s.begun.Load() {
		return nil
	}
	if _, _, err := s.q.insertTx(ctx, tx, KickArgs{OwnerID: owner, ThreadID: threadID, After: after},
		&river.InsertOpts{Queue: s.cfg.Queue, ScheduledAt: time.Now().Add(kickDelay), UniqueOpts: kickUnique}); err != nil {
		return fmt.Errorf("continuation: kick of thread %s: %w", threadID, err)
	}
	return nil
}

// kickWorker is the River worker of kicks.
type kickWorker struct {
	river.WorkerDefaults[KickArgs]
	s *Service
}

// Work implements river.Worker: the next queued run of the thread starts
// in this process, and the kick ends once its first checkpoint is written
// (or it left the queue another way). If this process dies first, River
// retries the kick.
func (w *kickWorker) Work(ctx context.Context, job *river.Job[KickArgs]) error {
	a := job.Args
	return w.s.threads.KickWait(ctx, a.OwnerID, a.ThreadID)
}

// InsertTx inserts a River job of another kind (one [Config].AddWorkers
// added a worker for) in the store transaction tx, on this service's
// queue unless opts names one. A service never started inserts nothing
// and reports false (see kickTx).
func (s *Service) InsertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (bool, error) {
	if !s.begun.Load() {
		return false, nil
	}
	o := river.InsertOpts{}
	if opts != nil {
		o = *opts
	}
	if o.Queue == "" {
		o.Queue = s.cfg.Queue
	}
	if _, _, err := s.q.insertTx(ctx, tx, args, &o); err != nil {
		return false, fmt.Errorf("continuation: insert %s job: %w", args.Kind(), err)
	}
	return true, nil
}
