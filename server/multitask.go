package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// This file is double-texting on POST /v1/threads/{id}/runs
// ("multitask_strategy"): the library's threads.Service.Submit decides and
// queues, this file answers and runs the queued runs of this process's
// threads (threads.Service.Start) so that their streams are served like
// any run's.

// multitaskRun answers a new run on a thread with a strategy other than
// reject: on a free thread it is an ordinary run; on a busy one it is
// queued (enqueue: 202 with the queued run; interrupt and rollback: the
// busy run is stopped and the answer is the new run's, as for an ordinary
// run, once it starts).
func (s *Server) multitaskRun(w http.ResponseWriter, r *http.Request, c *Caller, threadID, runID string, nw *Network, req *wire.CreateRun, strat threads.Strategy, opts []runner.RunOption) error {
	o := threads.TurnOptions{ThreadID: threadID, RunID: runID, Agent: req.Agent, Strategy: strat}
	var sub *threads.Submission
	for attempt := 0; ; attempt++ {
		var err error
		if sub, err = nw.svc.Submit(r.Context(), c.Owner, req.Input, o); err != nil {
			return err
		}
		if sub.Queued {
			break
		}
		// The thread was free: an ordinary run, unless another request
		// took the thread meanwhile (then submit again).
		err = s.ordinaryRun(w, r, c.Owner, threadID, runID, nw, req, opts)
		if attempt < 3 && isThreadBusy(err) {
			continue
		}
		return err
	}
	if strat != threads.Enqueue && sub.Busy != "" {
		// The busy run is stopped for this one: a cancel by this caller.
		s.auditRunCancel(r.Context(), c, nw, threadID, sub.Busy, map[string]string{"reason": string(strat), "stopped_by": runID})
	}
	run := s.queuedRun(c.Owner, threadID, runID, nw)
	if strat == threads.Enqueue {
		res := run.result()
		res.Position = sub.Position
		w.Header().Set("Location", res.EventsURL)
		WriteJSON(w, http.StatusAccepted, res)
		return nil
	}
	if req.Stream {
		return s.streamRun(w, r, run, runlog.Cursor{})
	}
	return s.waitRun(w, r, run)
}

// ordinaryRun runs a turn on a free thread, streamed or not.
func (s *Server) ordinaryRun(w http.ResponseWriter, r *http.Request, owner, threadID, runID string, nw *Network, req *wire.CreateRun, opts []runner.RunOption) error {
	if req.Stream {
		return s.streamTurn(w, r, owner, threadID, runID, nw, req.Input, opts)
	}
	run, err := s.startTurn(r.Context(), owner, threadID, runID, nw, req.Input, opts)
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil {
		// The run's start outlasted the request timeout (its first
		// checkpoint is slow to commit): it goes on, and the answer is
		// 202 with its state so far, as for a run that outlasts it later.
		if run = s.reg.run(owner, runID); run != nil {
			return s.waitRun(w, r, run)
		}
	}
	if err != nil {
		return err
	}
	return s.waitRun(w, r, run)
}

// isThreadBusy reports whether err refused a run because its thread is
// busy (nothing was answered yet).
func isThreadBusy(err error) bool {
	var busy *threads.BusyError
	var ae *Error
	return errors.As(err, &busy) || errors.As(err, &ae) && ae.Type == wire.ErrThreadBusy
}

// queuedRun returns the entry of a run waiting in a thread's queue: its
// readers wait for its events. It is started by this process
// (startQueued), or followed through the store once another process has
// started it.
func (s *Server) queuedRun(owner, threadID, runID string, nw *Network) *Run {
	run := s.reg.newRun(owner, threadID, runID, nw.name)
	run.mu.Lock()
	watch := !run.queued && !run.producing && run.log.Last() == (runlog.Cursor{}) && run.base == (runlog.Cursor{})
	if watch {
		run.queued = true
		run.res.Status = string(threads.StatusQueued)
		run.lastRead = time.Now()
	}
	run.mu.Unlock()
	if watch {
		s.followers.add()
		go func() {
			defer s.followers.done()
			s.watchQueued(run)
		}()
	}
	return run
}

// watchQueued waits until a queued run starts: here (its entry gets
// events) or in another process (its first checkpoint appears: it is then
// followed through the store). It gives up when nobody has read the run
// for LogTTL.
func (s *Server) watchQueued(run *Run) {
	t := time.NewTicker(s.cfg.FollowInterval)
	defer t.Stop()
	ctx := store.ContextWithOwner(s.runCtx, run.owner)
	for {
		select {
		case <-s.runCtx.Done():
			return
		case <-t.C:
		}
		run.mu.Lock()
		started := run.producing || run.following || run.base != (runlog.Cursor{}) || run.log.Last() != (runlog.Cursor{})
		idle := run.readers == 0 && time.Since(run.lastRead) > s.cfg.LogTTL
		run.mu.Unlock()
		if started {
			return
		}
		cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: run.owner, RunID: run.id})
		if err == nil {
			s.stored(run.owner, cp)
			return
		}
		if idle {
			s.reg.forget(run)
			return
		}
	}
}

// startQueued is the network's threads.Service.Start: it runs a queued
// run in this process like a run of a request, once the thread's previous
// run has left it.
func (s *Server) startQueued(nw *Network, owner, threadID string, q threads.Queued) {
	s.inflight.add()
	go func() {
		defer s.inflight.done()
		// The previous run's goroutine releases the thread as it ends:
		// wait for it (bounded, as register waits for an ended run).
		te := s.reg.thread(owner, threadID)
		te.mu.Lock()
		busy, freed := te.active != nil, te.freed
		te.mu.Unlock()
		if busy {
			waitFreed(s.runCtx, freed)
		}
		run := s.queuedRun(owner, threadID, q.RunID, nw)
		run, te, _, err := s.register(s.runCtx, owner, threadID, run.id, nw, nil)
		if err != nil {
			threads.QueuedStartError(s.runCtx, s.log, q.RunID, threadID, err)
			return
		}
		o := q.TurnOptions(threadID)
		o.RunOptions = nw.inlineOptions()
		s.drive(run, te, nw, nw.svc.Turn(s.runCtx, owner, q.Input, o), nil)
	}()
}

// withQueue makes s run the queued runs of nw's threads.
func (s *Server) withQueue(nw *Network) {
	nw.svc.Start = func(_ context.Context, owner, threadID string, q threads.Queued) {
		if s.draining.Load() {
			return // the queue is durable: a process that serves on starts it
		}
		s.startQueued(nw, owner, threadID, q)
	}
}
