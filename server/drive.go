package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// startTurn starts a user turn on a thread in a goroutine of the server and
// returns once its first event (or the error that kept it from starting)
// is known.
func (s *Server) startTurn(ctx context.Context, owner, threadID, runID string, nw *Network, input string, opts []runner.RunOption) (*Run, error) {
	opts = append(nw.inlineOptions(), opts...)
	return s.launch(ctx, owner, threadID, runID, nw, nil, func(ctx context.Context) iter.Seq2[runner.Event, error] {
		return nw.svc.Turn(ctx, owner, input, threads.TurnOptions{ThreadID: threadID, RunID: runID, RunOptions: opts})
	})
}

// launch runs events in a goroutine on the thread, one run per thread at a
// time in this process, and returns once its first event (or the error
// that kept it from starting) is known. resumeAt, for a resumed run, is the
// seq of the checkpoint it resumes from: its events before are in the
// store.
func (s *Server) launch(ctx context.Context, owner, threadID, runID string, nw *Network, resumeAt *runlog.Cursor, events func(context.Context) iter.Seq2[runner.Event, error]) (*Run, error) {
	run, te, started, err := s.register(ctx, owner, threadID, runID, nw, resumeAt)
	if err != nil {
		return nil, err
	}
	s.inflight.add()
	go func() {
		defer s.inflight.done()
		s.drive(run, te, nw, events(s.runCtx), nil)
	}()
	select {
	case <-started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	run.mu.Lock()
	err = run.startErr
	run.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return run, nil
}

// register makes a run the thread's active run in this process. If the
// thread's active run has ended, it waits for it to free the thread, until
// ctx ends (at most endingWait).
func (s *Server) register(ctx context.Context, owner, threadID, runID string, nw *Network, resumeAt *runlog.Cursor) (*Run, *threadEntry, chan struct{}, error) {
	if s.draining.Load() {
		return nil, nil, nil, ErrShuttingDown
	}
	te := s.reg.thread(owner, threadID)
	te.mu.Lock()
	if a := te.active; a != nil && a.isEnding() {
		// The active run has ended (its client may have seen its
		// run_end and sent the next request at once): its goroutine
		// frees the thread as soon as its extensions are done.
		freed := te.freed
		te.mu.Unlock()
		waitFreed(ctx, freed)
		te.mu.Lock()
	}
	if a := te.active; a != nil {
		te.mu.Unlock()
		e := Errorf(http.StatusConflict, wire.ErrThreadBusy, "thread %s has a run in progress (%s): wait for it to end, or follow it at %s", threadID, a.id, EventsURL(threadID, a.id))
		e.Param = a.id
		return nil, nil, nil, e
	}
	run := s.reg.newRun(owner, threadID, runID, nw.name)
	run.mu.Lock()
	if run.producing {
		run.mu.Unlock()
		te.mu.Unlock()
		return nil, nil, nil, Errorf(http.StatusConflict, wire.ErrConflict, "run %s is in progress", runID)
	}
	run.producing = true
	if resumeAt != nil {
		// Events up to now are in the store (or still in the log): new
		// events continue after them.
		if last := run.lastEv; run.base.Less(last) {
			run.base = last
		}
		if run.base.Less(*resumeAt) {
			run.base = *resumeAt
		}
		run.started = make(chan struct{})
		run.startErr = nil
	}
	started := run.started
	run.mu.Unlock()
	te.setActive(run)
	te.mu.Unlock()
	if resumeAt != nil {
		// A resumed run's log goes on. A run started afresh keeps its log
		// as it is: a second start of a queued run that another start has
		// already run to its end fails at its gate, and must not reopen
		// the log its readers saw close (they would wait for nothing).
		run.log.Reopen()
	}
	return run, te, started, nil
}

// streamTurn starts a user turn and streams it in the request's own
// goroutine: the handler drives the run and writes each event to its
// client as it is produced, so that a streaming conversation costs no
// goroutine of its own. If the client goes, the run goes on to its end (or
// its hand-over to the background); other clients follow it through its
// log. After a hand-over the handler follows the worker's progress like
// any reader.
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request, owner, threadID, runID string, nw *Network, input string, opts []runner.RunOption) error {
	if !s.acquireStream(r.Context()) {
		return s.tooManyStreams()
	}
	defer s.releaseStream(r.Context())
	opts = append(nw.inlineOptions(), opts...)
	run, te, _, err := s.register(r.Context(), owner, threadID, runID, nw, nil)
	if err != nil {
		return err
	}
	run.addReader(1)
	defer run.addReader(-1)
	c := &inlineClient{s: s, r: r, w: w, run: run}
	s.inflight.add()
	s.drive(run, te, nw, nw.svc.Turn(s.runCtx, owner, input, threads.TurnOptions{ThreadID: threadID, RunID: runID, RunOptions: opts}), c.onEvent)
	s.inflight.done()
	run.mu.Lock()
	startErr := run.startErr
	run.mu.Unlock()
	if c.sw == nil {
		if startErr == nil {
			startErr = Errorf(http.StatusInternalServerError, wire.ErrInternal, "the run ended without events")
		}
		return startErr
	}
	if gone := c.stop(); gone {
		return nil
	}
	// Handed to the background (or done): follow the log from here.
	return s.followLog(r, c.sw, run, c.cur)
}

// inlineClient writes the events of a run to the client of the request
// that drives it.
type inlineClient struct {
	s   *Server
	r   *http.Request
	w   http.ResponseWriter
	run *Run

	mu   sync.Mutex
	sw   *sse.Writer
	cur  runlog.Cursor
	gone bool
	hb   *time.Timer
	buf  []runlog.Entry
}

// onEvent writes the events the log got since the last call. It never
// blocks longer than the stream's write timeout; a client that fails is
// dropped and the run goes on.
func (c *inlineClient) onEvent() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return
	}
	if c.sw == nil {
		sw, err := sse.NewWriter(c.w, c.s.sseOptions(http.Header{"Baton-Run-Id": {c.run.id}, "Baton-Thread-Id": {c.run.threadID}}))
		c.sw = sw
		if err != nil {
			c.gone = true
			return
		}
		c.hb = time.AfterFunc(c.s.cfg.Heartbeat, c.heartbeat)
	}
	if c.r.Context().Err() != nil {
		c.gone = true
		return
	}
	rd := c.run.log.Since(c.cur, 0, c.buf[:0])
	for i := range rd.Entries {
		e := &rd.Entries[i]
		if c.sw.Put(sse.Event{ID: e.At.String(), Type: e.Type, Data: e.Data}) != nil {
			c.gone = true
			return
		}
		c.cur = e.At
	}
	c.buf = rd.Entries
	if c.sw.Flush() != nil {
		c.gone = true
		return
	}
	c.hb.Reset(c.s.cfg.Heartbeat)
}

func (c *inlineClient) heartbeat() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone || c.hb == nil {
		return
	}
	if c.r.Context().Err() != nil || c.sw.Comment("ping") != nil {
		c.gone = true
		return
	}
	c.hb.Reset(c.s.cfg.Heartbeat)
}

// stop ends the heartbeats; it reports whether the client is gone.
func (c *inlineClient) stop() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hb != nil {
		c.hb.Stop()
		c.hb = nil
	}
	return c.gone
}

// drive consumes a run's events into its logs, then hands a suspended run
// to the background, or closes its log. onEvent, if not nil, is called
// after each event is in the log.
//
// A run that Shutdown cuts (its context cancelled at the end of the grace
// period) stops at its last checkpoint and is handed to River from it (the
// continuation's extension, before its events end): the error and the
// run_end "failed" that the runner emits for the cancellation are not the
// run's, and are not published, and its log stays open, so that its
// readers get a shutdown event (followLog) and reconnect elsewhere with
// Last-Event-ID.
func (s *Server) drive(run *Run, te *threadEntry, nw *Network, events iter.Seq2[runner.Event, error], onEvent func()) {
	started := false
	var runErr error
	status := ""
	// held are the events that end a run in failure, emitted once the
	// server's runs are cancelled: published only if the run did not end
	// with that cancellation.
	var held []runner.Event
	emit := func(ev runner.Event) {
		at, prev, data := s.publish(run, ev)
		if onEvent != nil {
			onEvent()
		}
		s.publishThread(run, te, at, prev, string(ev.EventType()), data)
		if end, ok := ev.(*runner.RunEndEvent); ok {
			status = string(end.Status)
		}
	}
	for ev, err := range events {
		if err != nil {
			runErr = err
			break
		}
		if !started {
			started = true
			close(run.started)
		}
		if endsInFailure(ev) {
			// Published once the run's error is known (below): the
			// shutdown's cancellation and the database's loss are not
			// the run's failure.
			held = append(held, ev)
			continue
		}
		for _, h := range held {
			emit(h)
		}
		held = nil
		emit(ev)
	}
	if started && s.runCtx.Err() != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded)) {
		s.log.Info("run cut by the shutdown at its last checkpoint; its streams end with a shutdown event", "run_id", run.id, "thread_id", run.threadID)
		release(run, te)
		return
	}
	if started && errors.Is(runErr, store.ErrUnavailable) && s.runCtx.Err() == nil {
		// The database went away mid-run: the run could not record its
		// step, nor its failure. Its lease expires and an adopter resumes
		// it from its last checkpoint once the database is back; its
		// streams stay open and follow it through the store meanwhile
		// (docs/deploy.md, "The database goes away").
		s.log.Warn("run cut by the database's loss; its streams follow it through the store until it resumes elsewhere", "run_id", run.id, "thread_id", run.threadID, "error", runErr)
		s.continueRun(run, te)
		return
	}
	for _, h := range held {
		emit(h)
	}
	if !started {
		s.notStarted(run, te, nw, runErr)
		return
	}
	if status == "" {
		status = string(runstate.StatusFailed)
	}
	if runErr != nil {
		s.log.Warn("run failed", "run_id", run.id, "thread_id", run.threadID, "error", runErr)
	}
	if status == string(runstate.StatusSuspended) && runErr == nil {
		s.continueRun(run, te)
		return
	}
	s.finish(run, te, status)
}

// notStarted ends a run that failed before its first event: the request
// answers with runErr; a queued run's readers wait on.
func (s *Server) notStarted(run *Run, te *threadEntry, nw *Network, runErr error) {
	run.mu.Lock()
	run.startErr, run.producing = runErr, false
	queued := run.queued
	run.mu.Unlock()
	te.mu.Lock()
	te.clearActive(run)
	te.mu.Unlock()
	if queued {
		// A queued run that another start took, or that waits
		// again: its readers wait on.
		threads.QueuedStartError(s.runCtx, s.log, run.id, run.threadID, runErr)
		return
	}
	if run.log.Last() == (runlog.Cursor{}) && run.base == (runlog.Cursor{}) {
		s.reg.forget(run)
	}
	run.log.Close(string(runstate.StatusFailed))
	close(run.started)
	if runErr != nil {
		s.recoverBusy(runErr, run.owner, nw)
	}
}

// shutdownEvent ends a stream when the server shuts down: the client
// reconnects (through the load balancer, to another instance) with
// Last-Event-ID.
var shutdownEvent = sse.Event{Type: "shutdown", Data: []byte(`{"reason":"the server is shutting down: reconnect"}`)}

// endsInFailure reports whether ev is an event the runner emits when a run
// fails or is cancelled: an error, or a run_end with status failed.
func endsInFailure(ev runner.Event) bool {
	switch e := ev.(type) {
	case *runner.ErrorEvent:
		return true
	case *runner.RunEndEvent:
		return e.Status == runstate.StatusFailed
	}
	return false
}

// finish closes a run's log with its status and frees its thread.
func (s *Server) finish(run *Run, te *threadEntry, status string) {
	release(run, te)
	run.log.Close(status)
}

// release records that this process no longer produces run, and frees its
// thread.
func release(run *Run, te *threadEntry) {
	run.mu.Lock()
	run.producing = false
	run.mu.Unlock()
	te.mu.Lock()
	te.clearActive(run)
	te.mu.Unlock()
}

// endingWait bounds how long a new run on a thread waits for the thread's
// run that has ended to free it (its extensions after run_end: a webhook's
// enqueue, a summary's mirror), so that a run whose goroutine is stuck
// cannot hold the thread's next requests for ever.
const endingWait = 30 * time.Second

// waitFreed waits until freed is closed, ctx ends or endingWait passes.
func waitFreed(ctx context.Context, freed <-chan struct{}) {
	t := time.NewTimer(endingWait)
	defer t.Stop()
	select {
	case <-freed:
	case <-t.C:
	case <-ctx.Done():
	}
}

// isEnding reports whether the run's run_end is in its log.
func (r *Run) isEnding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

// publish appends an event to the run's log and returns its cursor there,
// the cursor of the run's event before it, and its JSON (nil if it could
// not be encoded).
func (s *Server) publish(run *Run, ev runner.Event) (at, prev runlog.Cursor, data []byte) {
	data, err := json.Marshal(ev)
	if err != nil {
		s.log.Error("encode event", "run_id", run.id, "error", err)
		return at, prev, nil
	}
	run.observe(ev)
	at, prev = s.appendRun(run, string(ev.EventType()), runlog.Cursor{Seq: ev.Sequence()}, data)
	return at, prev, data
}

// publishThread appends an event of the run, at its run cursor at after
// prev, to its thread's log, at the run's position on the thread (read
// once per run, after the run stream got the event: its first checkpoint,
// which wrote the run's first message, is committed before its first
// event).
func (s *Server) publishThread(run *Run, te *threadEntry, at, prev runlog.Cursor, typ string, data []byte) {
	if data == nil {
		return
	}
	pos := s.runPos(s.runCtx, run)
	if pos <= 0 {
		return
	}
	if isDelta(typ) {
		// A delta is not stored: its thread id follows the run's last
		// event that is, so that the events a run resumed from its last
		// checkpoint (after its process died) numbers again come after
		// it. The processes that stream the thread get it too (deltas.go).
		run.mu.Lock()
		run.deltas++
		ver := run.deltas
		run.mu.Unlock()
		s.deltas.Add(run.owner, run.threadID, run.id, pos, prev.String(), at.String(), ver, typ, data)
		at = runlog.Cursor{Seq: prev.Seq, Sub: prev.Sub, Ver: ver}
	} else {
		s.deltas.Flush(run.owner, run.id)
	}
	te.addRun(pos, run.id, at, prev, typ, data)
}

// runPos returns the run's position on its thread: the seq of its first
// message (runstate.MessageID(run, 1), the input, stored with its first
// checkpoint), which orders the thread's runs (a thread runs one run at a
// time). It is read once per run; 0 if it cannot be read (the run's thread
// events are then left out of the thread's log, and its readers get them
// from the store).
func (s *Server) runPos(ctx context.Context, run *Run) int {
	run.mu.Lock()
	pos := run.pos
	run.mu.Unlock()
	if pos > 0 {
		return pos
	}
	m, err := s.st.GetMessage(ctx, &store.GetMessageParams{OwnerID: run.owner, ID: runstate.MessageID(run.id, 1)})
	if err == nil && m.ThreadID != run.threadID {
		err = fmt.Errorf("message %s is of thread %s: %w", m.ID, m.ThreadID, store.ErrNotFound)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("the run's position on its thread", "run_id", run.id, "thread_id", run.threadID, "error", err)
		}
		return 0
	}
	run.mu.Lock()
	run.pos = int(m.Seq)
	run.mu.Unlock()
	return int(m.Seq)
}

// appendRun appends an event at cursor at (its seq, or the Sub id of an
// event rebuilt from a checkpoint: see eventIDs), or right after the run's
// last event when at is not after it (ids stay increasing whatever
// happens). It returns the event's cursor and the cursor of the run's last
// event before it that is not a delta (or its base). Drafts take Ver ids
// after the event they follow, which the next event comes after: they
// shift no id, in the run's stream nor in the thread's.
func (s *Server) appendRun(run *Run, typ string, at runlog.Cursor, data []byte) (runlog.Cursor, runlog.Cursor) {
	run.mu.Lock()
	last := run.lastEv
	if last.Less(run.base) {
		last = run.base
	}
	if !last.Less(at) {
		at = runlog.Cursor{Seq: last.Seq, Sub: last.Sub + 1}
	}
	run.lastEv = at
	prev := run.durable
	if prev.Less(run.base) {
		prev = run.base
	}
	if !isDelta(typ) {
		run.durable, run.deltas = at, 0
	}
	run.mu.Unlock()
	inLog := at
	if last := run.log.Last(); !last.Less(inLog) {
		inLog = runlog.Cursor{Seq: last.Seq, Sub: last.Sub + 1}
	}
	run.log.Append(runlog.Entry{At: inLog, Type: typ, Data: data})
	return at, prev
}

// isDelta reports whether events of type typ are text the run streams and
// does not store (folded into the message or reasoning event after them).
func isDelta(typ string) bool {
	return typ == string(runner.TypeTextDelta) || typ == string(runner.TypeReasoningDelta)
}

// continueRun follows a run handed to a background worker: its log stays
// open for the worker's progress, read from the store and the draft broker.
func (s *Server) continueRun(run *Run, te *threadEntry) {
	release(run, te)
	s.follow(run)
}

// recoverBusy answers for a turn refused because the thread's last run is
// unfinished and no goroutine of this process executes it. A run whose
// process died (its lease expired) is adopted now, rather than at the
// adopters' next round, and handed to a worker; a run in the background is
// followed through the store, so that the thread's streams show it.
func (s *Server) recoverBusy(err error, owner string, nw *Network) {
	var busy *threads.BusyError
	if !errors.As(err, &busy) || busy.Status == runstate.StatusInterrupted || s.draining.Load() {
		return
	}
	if busy.Status == runstate.StatusRunning {
		h, err := nw.cont.Adopt(s.runCtx, owner, busy.RunID)
		switch {
		case err == nil && h != nil:
			s.log.Info("adopted a run whose process died; a worker resumes it", "run_id", busy.RunID, "thread_id", busy.ThreadID)
		case err != nil && !errors.Is(err, continuation.ErrNotOrphan):
			s.log.Warn("adopting a dead process's run failed; the adopters retry", "run_id", busy.RunID, "error", err)
		}
	}
	cp, err := s.st.LatestCheckpoint(s.runCtx, &store.LatestCheckpointParams{OwnerID: owner, RunID: busy.RunID})
	if err != nil {
		return
	}
	s.stored(owner, cp)
}
