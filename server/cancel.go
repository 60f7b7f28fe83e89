package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// cancelRun is POST /v1/threads/{id}/runs/{run_id}/cancel: the run stops at
// its next safe boundary, keeping what it did, and ends cancelled, in
// whichever process executes it (threads.Service.Cancel). It answers 200
// with the cancelled run, again for a run cancelled already; 409
// run_finished for a run that completed or failed.
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request, c *Caller) error {
	th, nw, err := s.threadForRun(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	runID := r.PathValue("run_id")
	if runID == "" || len(runID) > 128 {
		return NotFound("run", runID)
	}
	cp, err := nw.svc.Cancel(r.Context(), c.Owner, th.ID, runID)
	var fe *threads.FinishedError
	switch {
	case errors.As(err, &fe):
		return Errorf(http.StatusConflict, wire.ErrRunFinished, "run %s is already %s: only an unfinished run can be cancelled", runID, fe.Status)
	case errors.Is(err, store.ErrNotFound):
		return NotFound("run", runID)
	case err != nil:
		return err
	}
	s.refresh(c.Owner, cp)
	s.auditCancel(r.Context(), c, nw, cp)
	WriteJSON(w, http.StatusOK, runView(cp, nw.name))
	return nil
}

// runView is the run of checkpoint cp, of network net, as the API shows
// it.
func runView(cp *store.Checkpoint, net string) wire.Run {
	out := runFromState(cp.State)
	out.ID, out.Object, out.ThreadID, out.Network = cp.RunID, "thread.run", cp.ThreadID, net
	out.EventsURL = EventsURL(cp.ThreadID, cp.RunID)
	return out
}

// refresh returns this process's entry of a run that the store has moved on
// to cp: an entry whose log closed at the run's previous stop (it waited
// for a decision, or a worker), which nothing here follows any more, is
// replaced by one made from cp, so that readers get the run from the store
// again (registry.forget drops the old entry: the run is not in flight).
func (s *Server) refresh(owner string, cp *store.Checkpoint) *Run {
	if run := s.reg.run(owner, cp.RunID); run != nil {
		wrapUp(run, 2*time.Second)
		run.mu.Lock()
		stale := !run.producing && !run.following && run.res.Status != string(cp.State.Status)
		run.mu.Unlock()
		if !stale {
			return run
		}
		s.reg.forget(run)
	}
	return s.stored(owner, cp)
}

// current returns run, or a fresh entry when the store has moved the run
// on without this process: a run this process stopped following (it waited
// for a decision, or ended) that another process — or a cancel — resumed,
// cancelled or rolled back. One read of the run's latest checkpoint, for an
// entry that nothing here follows.
func (s *Server) current(ctx context.Context, run *Run) *Run {
	run.mu.Lock()
	idle := !run.producing && !run.following && !run.queued && run.res.Status != ""
	run.mu.Unlock()
	if !idle {
		return run
	}
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: run.owner, RunID: run.id})
	if err != nil || cp.State == nil {
		return run
	}
	return s.refresh(run.owner, cp)
}

// wrapUp waits, up to d, until this process no longer produces run: a run
// that ended here (its last event sent) is still closing its log for a
// moment, and an entry it still produces is not replaced.
func wrapUp(run *Run, d time.Duration) {
	for deadline := time.Now().Add(d); ; {
		run.mu.Lock()
		producing := run.producing
		run.mu.Unlock()
		if !producing || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// resultNow is run's result as the database has it: an entry that follows
// a run another process executes may be a moment behind the store, so its
// result is read from the run's latest checkpoint (a replica answers a run
// that another replica just finished as finished). An entry this process
// produces is current; one that nothing follows was checked by current.
func (s *Server) resultNow(ctx context.Context, run *Run) wire.Run {
	out := run.result()
	run.mu.Lock()
	following := run.following
	run.mu.Unlock()
	if !following {
		return out
	}
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: run.owner, RunID: run.id})
	if err != nil || cp.State == nil || string(cp.State.Status) == out.Status {
		return out
	}
	return runView(cp, out.Network)
}

// auditCancel records a cancel in the owner's audit log. A failure to
// record it is logged: the run is cancelled either way.
func (s *Server) auditCancel(ctx context.Context, c *Caller, nw *Network, cp *store.Checkpoint) {
	s.auditRunCancel(ctx, c, nw, cp.ThreadID, cp.RunID, map[string]string{"status": string(cp.State.Status)})
}

// auditRunCancel records that caller c stopped run runID of thread
// threadID: a cancel, or a new run's double-texting (detail says which).
func (s *Server) auditRunCancel(ctx context.Context, c *Caller, nw *Network, threadID, runID string, detail map[string]string) {
	d, _ := json.Marshal(detail)
	_, err := s.st.AppendAudit(context.WithoutCancel(ctx), &store.AppendAuditParams{OwnerID: c.Owner, Kind: store.AuditRunCancel, KeyID: c.KeyID,
		Actor: store.ActorAPIKey, RequestID: c.RequestID, ThreadID: threadID, RunID: runID, Network: nw.name, Detail: d})
	if err != nil {
		s.log.ErrorContext(ctx, "audit of a cancel failed", "run_id", runID, "error", err)
	}
}
