package continuation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/periodic"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// ErrNotOrphan: the run's lease has not expired (its process is alive) or
// it has none (it is not executed inline, or another process adopted it).
var ErrNotOrphan = errors.New("continuation: run is not orphaned")

// newHolder names this process in its leases: host, pid, random part.
func newHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

// leases are the runs this process executes inline and holds leases on.
type leases struct {
	mu   sync.Mutex
	runs map[string]map[*runstate.State]bool // run id -> executions holding it
}

func newLeases() *leases { return &leases{runs: map[string]map[*runstate.State]bool{}} }

// hold counts execution ex (its state) of run as holding the run's lease.
// Again for the same execution — its first boundary written once more,
// after a transaction that rolled back — it counts it once.
func (l *leases) hold(run string, ex *runstate.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs[run] == nil {
		l.runs[run] = map[*runstate.State]bool{}
	}
	l.runs[run][ex] = true
}

// drop ends execution ex's hold of run, if it had one.
func (l *leases) drop(run string, ex *runstate.State) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if delete(l.runs[run], ex); len(l.runs[run]) == 0 {
		delete(l.runs, run)
	}
}

func (l *leases) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.runs))
	for id := range l.runs {
		out = append(out, id)
	}
	return out
}

func (l *leases) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.runs) == 0
}

// awaitInline waits until this process executes no run inline (their
// leases renewed meanwhile by renewLoop), or ctx ends.
func (s *Service) awaitInline(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for !s.leases.empty() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Holder returns the name of this process in the leases it holds.
func (s *Service) Holder() string { return s.cfg.Holder }

// LeaseTTL returns how long a lease of this process holds unrenewed.
func (s *Service) LeaseTTL() time.Duration { return s.cfg.LeaseTTL }

// renewLoop renews the leases of the runs this process executes, every
// LeaseTTL/3, until ctx ends.
func (s *Service) renewLoop(ctx context.Context) {
	periodic.Every(ctx, s.cfg.LeaseTTL/3, func(ctx context.Context) {
		ids := append(s.leases.ids(), s.jobLeases.ids()...)
		if len(ids) == 0 {
			return
		}
		n, err := s.st.RenewLeases(ctx, &store.RenewLeasesParams{Holder: s.cfg.Holder, RunIDs: ids, TTL: s.cfg.LeaseTTL})
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.WarnContext(ctx, "renewing run leases failed: runs of this process may be adopted by another", "runs", len(ids), "error", err)
		case err == nil && n < len(ids):
			s.log.DebugContext(ctx, "some run leases were not renewed (released, or adopted meanwhile)", "runs", len(ids), "renewed", n)
		}
	})
}

// holdJob holds the lease of the run a continuation's delivery works,
// taken by its claim, renewed with this process's other leases until the returned release
// (gone: a transaction of the delivery released it already, so that no
// write of its own is needed): if
// the process dies, the lease expires and an adopter delivers the
// continuation again (see [Service.Adopt]) instead of River's rescuer, much
// later. A live lease of another holder (the run delivered twice at once)
// is left alone: the fenced claims decide which delivery works the run. A
// failure to take it is logged, not fatal: River's rescue stays.
//
// A first delivery takes the lease with its read of the run's checkpoint
// (lazyClaim: store.LatestCheckpointParams.Lease, in that read's round
// trip on PostgreSQL), and holds it then whether or not another holder's
// live lease kept it: renewing and releasing touch only this holder's. A
// delivery that claims in a transaction takes it first (takeJobLease).
func (s *Service) holdJob(ctx context.Context, a Args, log *deliveryLog) (release func(gone bool)) {
	key := &runstate.State{}
	s.jobLeases.hold(a.RunID, key)
	return func(gone bool) {
		s.jobLeases.drop(a.RunID, key)
		if gone {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := s.st.ReleaseLease(ctx, &store.ReleaseLeaseParams{OwnerID: a.OwnerID, RunID: a.RunID, Holder: s.cfg.Holder}); err != nil {
			log.WarnContext(ctx, "releasing the continuation's lease failed: it expires", "error", err)
		}
	}
}

// jobLease is the lease a delivery of a takes on its run.
func (s *Service) jobLease(a Args) *store.AcquireLeaseParams {
	return &store.AcquireLeaseParams{OwnerID: a.OwnerID, RunID: a.RunID, ThreadID: a.ThreadID,
		Holder: s.cfg.Holder, TTL: s.cfg.LeaseTTL, Free: true}
}

// takeJobLease takes the lease of a delivery that claims its run in a
// transaction of its own, and reports whether it holds it.
func (s *Service) takeJobLease(ctx context.Context, a Args, log *deliveryLog) bool {
	_, err := s.st.AcquireLease(ctx, s.jobLease(a))
	switch {
	case errors.Is(err, store.ErrConflict):
		log.DebugContext(ctx, "another delivery holds the continuation's lease")
		return false
	case err != nil:
		log.WarnContext(ctx, "taking the continuation's lease failed: if this process dies, River's rescuer retries it", "error", err)
		return false
	}
	return true
}

// adoptLoop adopts the runs whose leases expired, at start and every
// AdoptEvery, until ctx ends.
func (s *Service) adoptLoop(ctx context.Context) {
	periodic.NowAndEvery(ctx, s.cfg.AdoptEvery, func(ctx context.Context) {
		if _, err := s.AdoptExpired(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "adopting orphaned runs failed; retrying later", "error", err)
		}
	})
}

// AdoptExpired adopts every run whose lease has expired (see
// [Service.Adopt]) and returns how many it handed to a worker. Runs another
// process adopts at the same moment are skipped.
func (s *Service) AdoptExpired(ctx context.Context) (int, error) {
	n := 0
	for {
		expired, err := s.st.ExpiredLeases(ctx, &store.ExpiredLeasesParams{Limit: 100})
		if err != nil {
			return n, fmt.Errorf("continuation: expired leases: %w", err)
		}
		adopted := 0
		for _, l := range expired {
			h, err := s.Adopt(ctx, l.OwnerID, l.RunID)
			switch {
			case errors.Is(err, ErrNotOrphan):
				continue
			case err != nil:
				return n, err
			}
			adopted++
			if h != nil && h.redelivered {
				n++
				s.log.InfoContext(ctx, "a continuation whose worker died is delivered again; a worker resumes it from its last checkpoint",
					"run_id", l.RunID, "thread_id", l.ThreadID, "holder", l.Holder, "expired_at", l.ExpiresAt, "continuation_id", h.EventID)
			} else if h != nil {
				n++
				s.log.InfoContext(ctx, "adopted a run whose process died; a worker resumes it from its last checkpoint",
					"run_id", l.RunID, "thread_id", l.ThreadID, "holder", l.Holder, "expired_at", l.ExpiresAt, "continuation_id", h.EventID)
			}
		}
		if len(expired) < 100 || adopted == 0 {
			return n, nil
		}
	}
}

// Adopt takes over run runID of owner if its lease has expired: its process
// died (or stalled past the lease), mid-run. In one transaction the lease is
// released and, if the run's latest checkpoint says it was running, a
// suspension is written after it and handed to a worker (job run,
// placeholder, River job), which resumes the run from that checkpoint with
// the same exactly-once guarantees as any continuation. A run that had
// stopped (its final checkpoint committed without its lease's release,
// which cannot happen through this package) only loses its lease; Adopt
// then returns a nil Handover. A run whose lease is alive, or that has none,
// is [ErrNotOrphan], and so is a run of another network than the one given
// to [Service.Work] (its own processes adopt it, onto their queue).
// Concurrent adopters of one run: one wins, the others
// get ErrNotOrphan. The former process, if it is still alive, fails at its
// next checkpoint (fenced) and stops.
func (s *Service) Adopt(ctx context.Context, owner, runID string) (*Handover, error) {
	return s.adopt(ctx, owner, runID, true)
}

// adopt hands run runID to a worker: when expired, if its lease has
// expired; otherwise if this process holds it.
func (s *Service) adopt(ctx context.Context, owner, runID string, expired bool) (*Handover, error) {
	var h *Handover
	err := s.st.Tx(ctx, func(tx store.Tx) error {
		cp, err := tx.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
		switch {
		case errors.Is(err, store.ErrNotFound):
			cp = nil // nothing of the run was stored: only the lease goes
		case err != nil:
			return err
		case s.network != "" && cp.State.Network != s.network:
			// Another network's run: its own processes adopt it, onto
			// their queue.
			return ErrNotOrphan
		}
		release := &store.ReleaseLeaseParams{OwnerID: owner, RunID: runID, Expired: true}
		if !expired {
			release = &store.ReleaseLeaseParams{OwnerID: owner, RunID: runID, Holder: s.cfg.Holder}
		}
		ok, err := tx.ReleaseLease(ctx, release)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotOrphan
		}
		if cp == nil {
			return nil
		}
		st := cp.State
		if expired {
			// A continuation's lease (holdJob): its worker died.
			if h, err = s.orphanedJob(ctx, tx, owner, runID, cp); h != nil || err != nil {
				return err
			}
		}
		if st.Status != runstate.StatusRunning {
			return nil
		}
		// The suspension the runner would have written at a background
		// boundary: its event and the run's end reserve two seqs.
		st.Status, st.Failure = runstate.StatusSuspended, nil
		st.Step++
		st.Seq += 2
		sus, err := tx.SaveCheckpoint(ctx, &store.SaveCheckpointParams{OwnerID: owner, State: st, ParentID: cp.ID, Rows: cp.Rows})
		if err != nil {
			return err
		}
		h, err = s.enqueueTx(ctx, tx, owner, sus.ID, st, true)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("continuation: adopt run %s: %w", runID, err)
	}
	if h != nil && h.redelivered {
		// The job run is free (error, or queued): River's job, still
		// running for its dead worker, is made available now rather than
		// by River's rescuer (RescueStuckJobsAfter).
		cause := fmt.Sprintf("continuation: the worker of run %s died (its lease expired); delivered again", runID)
		found, err := s.q.redeliver(ctx, h.JobRun.ID, cause)
		if err != nil {
			return nil, fmt.Errorf("continuation: adopt run %s: %w", runID, err)
		}
		if !found {
			s.log.DebugContext(ctx, "the dead worker's River job is not running (rescued, or retried already)", "run_id", runID, "job_run_id", h.JobRun.ID)
		}
		s.q.wake()
	}
	if h != nil && h.wake {
		s.q.wake()
	}
	return h, nil
}

// orphanedJob returns the hand-over of run runID (latest checkpoint cp) if
// a continuation of it is unfinished — its job run queued, processing or
// in error: the lease that expired was its worker's. A processing job run
// moves to error in tx (fenced on its attempt), so that the next delivery
// claims it at once (see Service.taken); the caller then delivers River's
// job again. It returns nil for a run executed inline.
func (s *Service) orphanedJob(ctx context.Context, tx store.Tx, owner, runID string, cp *store.Checkpoint) (*Handover, error) {
	if st := cp.State.Status; st != runstate.StatusRunning && st != runstate.StatusSuspended {
		return nil, nil
	}
	sus, _, err := lastSuspension(ctx, tx, owner, runID)
	if errors.Is(err, ErrNotSuspended) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ev := EventID(runID, sus.Step)
	jr, err := tx.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, IdempotencyKey: ev})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case jr.Status == store.JobCompleted || jr.Status == store.JobCanceled:
		return nil, nil
	case jr.Status == store.JobProcessing:
		if jr, err = tx.TransitionJobRun(ctx, &store.TransitionJobRunParams{OwnerID: owner, ID: jr.ID, To: store.JobError,
			Error: "continuation: its worker died (lease expired)", ExpectedAttempt: jr.Attempt, Fence: true}); err != nil {
			return nil, err
		}
	}
	return &Handover{EventID: ev, MessageID: ev, JobRun: jr, Duplicate: true, redelivered: true}, nil
}
