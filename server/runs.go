package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, c *Caller) error {
	var req wire.CreateRun
	if err := DecodeJSON(r, &req, true); err != nil {
		return err
	}
	r, cancel := s.withTimeout(r, req.Stream)
	defer cancel()
	if err := s.checkInput(req.Input); err != nil {
		return err
	}
	th, nw, err := s.threadForRun(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	if req.Agent != "" {
		if _, ok := nw.net.Agent(req.Agent); !ok {
			return BadParam("agent", "network %s has no agent %q", nw.name, req.Agent)
		}
	}
	strat, err := threads.ParseStrategy(req.MultitaskStrategy)
	if err != nil {
		return BadParam("multitask_strategy", "multitask_strategy %q is not one of reject, enqueue, interrupt, rollback", req.MultitaskStrategy)
	}
	var opts []runner.RunOption
	if req.Agent != "" {
		opts = append(opts, runner.WithAgent(req.Agent))
	}
	if req.Webhook != "" {
		if strat != threads.Reject {
			// A queued run starts from the thread's queue, which keeps
			// its input only.
			return BadParam("webhook", "webhook is not supported with multitask_strategy %s", req.MultitaskStrategy)
		}
		o, err := s.Webhook(r.Context(), "webhook", req.Webhook)
		if err != nil {
			return err
		}
		opts = append(opts, o)
	}
	if strat != threads.Reject {
		return s.multitaskRun(w, r, c, th.ID, runstate.NewRunID(), nw, &req, strat, opts)
	}
	return s.ordinaryRun(w, r, c.Owner, th.ID, runstate.NewRunID(), nw, &req, opts)
}

// withTimeout bounds a request that turned out not to be a stream (its
// body says so): the request timeout applies unless stream is set. Call
// cancel when the request is answered.
func (s *Server) withTimeout(r *http.Request, stream bool) (*http.Request, context.CancelFunc) {
	if stream {
		return r, func() {}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	return r.WithContext(ctx), cancel
}

func (s *Server) checkInput(input string) error {
	switch {
	case strings.TrimSpace(input) == "":
		return BadParam("input", "input is required: the user's message, a non-empty string")
	case len(input) > s.cfg.MaxInputBytes:
		return BadParam("input", "input is %d bytes, more than the limit of %d", len(input), s.cfg.MaxInputBytes)
	case !utf8.ValidString(input):
		return BadParam("input", "input is not valid UTF-8")
	}
	return nil
}

// thread returns a thread of the caller; another owner's is 404.
func (s *Server) thread(ctx context.Context, c *Caller, id string) (*store.Thread, error) {
	if id == "" || len(id) > 128 {
		return nil, NotFound("thread", id)
	}
	th, err := s.st.GetThread(ctx, &store.GetThreadParams{OwnerID: c.Owner, ID: id})
	if errors.Is(err, store.ErrNotFound) || err == nil && !c.SeesNetwork(th.Network) {
		// A key limited to networks does not see the others' threads.
		return nil, NotFound("thread", id)
	}
	return th, err
}

// threadForRun returns a thread of the caller and its network, from the
// registry when this process has seen the thread (a thread's network never
// changes and threads are not deleted), else from the store.
func (s *Server) threadForRun(ctx context.Context, c *Caller, id string) (*store.Thread, *Network, error) {
	if netName := s.reg.network(c.Owner, id); netName != "" {
		if !c.SeesNetwork(netName) {
			return nil, nil, NotFound("thread", id)
		}
		if nw, ok := s.nets[netName]; ok {
			return &store.Thread{ID: id, OwnerID: c.Owner, Network: netName}, nw, nil
		}
	}
	th, err := s.thread(ctx, c, id)
	if err != nil {
		return nil, nil, err
	}
	nw, err := s.threadNetwork(th)
	if err != nil {
		return nil, nil, err
	}
	s.reg.thread(c.Owner, th.ID).setNetwork(th.Network)
	return th, nw, nil
}

func (s *Server) threadNetwork(th *store.Thread) (*Network, error) {
	nw, ok := s.nets[th.Network]
	if !ok {
		return nil, Errorf(http.StatusConflict, "network_unavailable", "thread %s belongs to network %q, which this server does not run", th.ID, th.Network)
	}
	return nw, nil
}

// runOf returns the run of the caller that the request's path names
// ({id}, {run_id}): from memory, or adopted from the store (its events
// rebuilt from its checkpoints).
func (s *Server) runOf(r *http.Request, c *Caller) (*Run, error) {
	ctx, runID := r.Context(), r.PathValue("run_id")
	th, err := s.thread(ctx, c, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if run := s.reg.run(c.Owner, runID); run != nil {
		if run.threadID != th.ID {
			return nil, NotFound("run", runID)
		}
		return s.current(ctx, run), nil
	}
	if runID == "" || len(runID) > 128 {
		return nil, NotFound("run", runID)
	}
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: c.Owner, RunID: runID})
	if errors.Is(err, store.ErrNotFound) {
		// A run waiting in the thread's queue: its readers wait for it.
		for _, q := range threads.QueueOf(th) {
			if nw, ok := s.nets[th.Network]; ok && q.RunID == runID {
				go nw.svc.Kick(s.runCtx, c.Owner, th.ID) // in case the kick that starts it was lost
				return s.queuedRun(c.Owner, th.ID, runID, nw), nil
			}
		}
	}
	if errors.Is(err, store.ErrNotFound) || err == nil && cp.ThreadID != th.ID {
		return nil, NotFound("run", runID)
	}
	if err != nil {
		return nil, err
	}
	return s.stored(c.Owner, cp), nil
}

// stored returns the entry of a run this process does not execute, made
// from its latest checkpoint cp if the process had none: its earlier events
// are rebuilt from the store when read, and an unfinished run is followed
// through the store.
func (s *Server) stored(owner string, cp *store.Checkpoint) *Run {
	run := s.reg.newRun(owner, cp.ThreadID, cp.RunID, cp.State.Network)
	isFresh := func() bool {
		return run.log.Last() == (runlog.Cursor{}) && run.base == (runlog.Cursor{}) && !run.producing && run.followCP == ""
	}
	run.mu.Lock()
	fresh := isFresh()
	run.mu.Unlock()
	base := runlog.Cursor{Seq: cp.State.Seq}
	if fresh && cp.ParentID != "" {
		// The id of its last event: a checkpoint written by another
		// writer than the runner has events its seq does not number.
		base = s.lastOf(store.ContextWithOwner(s.runCtx, owner), owner, cp)
	}
	run.mu.Lock()
	if fresh = isFresh(); fresh {
		run.base = base
	}
	if fresh {
		run.res = runFromState(cp.State)
		run.followCP = cp.ID
	}
	run.mu.Unlock()
	if fresh {
		select {
		case <-run.started:
		default:
			close(run.started)
		}
		switch cp.State.Status {
		case runstate.StatusCompleted, runstate.StatusFailed, runstate.StatusCancelled, runstate.StatusInterrupted:
			run.log.Close(string(cp.State.Status))
		default:
			s.follow(run)
		}
	}
	return run
}

func runFromState(st *runstate.State) wire.Run {
	out := wire.Run{Status: string(st.Status), LastAgent: st.Agent, Output: st.FinalOutput, Turns: st.Turns,
		Transfers: st.Transfers, Usage: st.Usage, Interrupt: st.Interrupt}
	if st.Failure != nil {
		out.Error = &wire.RunError{Kind: st.Failure.Kind, Message: st.Failure.Message, Limit: st.Failure.Limit}
		out.Limit = st.Failure.Limit
	}
	out.Stopped = stopView(runner.StopOf(st))
	return out
}

// stopView is what stopped a run, as the API shows it.
func stopView(s *runner.Stop) *wire.RunStop {
	if s == nil {
		return nil
	}
	return &wire.RunStop{Reason: s.Reason, RunID: s.RunID}
}

// runEvents resumes a run's event stream after Last-Event-ID.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, c *Caller) error {
	from, err := runlog.ParseCursor(lastEventID(r))
	if err != nil {
		return BadParam("Last-Event-ID", "Last-Event-ID %q is not an event id of this stream (want N, N.M, N.M.V or N.M.V.K)", lastEventID(r))
	}
	run, err := s.runOf(r, c)
	if err != nil {
		return err
	}
	return s.streamRun(w, r, run, from)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request, c *Caller) error {
	run, err := s.runOf(r, c)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, s.resultNow(r.Context(), run))
	return nil
}

// inlineOptions are the options of runs started by a request: the
// background boundary and its fallback (a failed hand-over answers without
// the slow tools instead of failing).
func (nw *Network) inlineOptions() []runner.RunOption {
	return nw.cont.RunOptions()
}
