package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/internal/sse"
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
	if errors.Is(err, store.ErrNotFound) {
		return nil, NotFound("thread", id)
	}
	return th, err
}

// threadForRun returns a thread of the caller and its network, from the
// registry when this process has seen the thread (a thread's network never
// changes and threads are not deleted), else from the store.
func (s *Server) threadForRun(ctx context.Context, c *Caller, id string) (*store.Thread, *Network, error) {
	if netName := s.reg.network(c.Owner, id); netName != "" {
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
	run, te, started, err := s.register(owner, threadID, runID, nw, resumeAt)
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

// register makes a run the thread's active run in this process.
func (s *Server) register(owner, threadID, runID string, nw *Network, resumeAt *runlog.Cursor) (*Run, *threadEntry, chan struct{}, error) {
	if s.draining.Load() {
		return nil, nil, nil, ErrShuttingDown
	}
	te := s.reg.thread(owner, threadID)
	te.mu.Lock()
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
	te.active = run
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
	run, te, _, err := s.register(owner, threadID, runID, nw, nil)
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
		if s.runCtx.Err() != nil && endsInFailure(ev) {
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
	for _, h := range held {
		emit(h)
	}
	if !started {
		// The run did not start: the request answers with the error.
		run.mu.Lock()
		run.startErr, run.producing = runErr, false
		queued := run.queued
		run.mu.Unlock()
		te.mu.Lock()
		if te.active == run {
			te.active = nil
		}
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
	if te.active == run {
		te.active = nil
	}
	te.mu.Unlock()
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
		// it.
		run.mu.Lock()
		run.deltas++
		at = runlog.Cursor{Seq: prev.Seq, Sub: prev.Sub, Ver: run.deltas}
		run.mu.Unlock()
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

// streamRun streams a run's events after from as SSE until the run is
// final, or waits for a decision, or the client goes.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, run *Run, from runlog.Cursor) error {
	if !s.acquireStream(r.Context()) {
		return s.tooManyStreams()
	}
	defer s.releaseStream(r.Context())
	run.addReader(1)
	defer run.addReader(-1)
	sw, err := sse.NewWriter(w, s.sseOptions(http.Header{"Baton-Run-Id": {run.id}, "Baton-Thread-Id": {run.threadID}}))
	if err != nil {
		return nil
	}
	return s.followLog(r, sw, run, from)
}

// followLog writes a run's events after cur from its log (and the store,
// for events no longer in the log) until the log is closed.
func (s *Server) followLog(r *http.Request, sw *sse.Writer, run *Run, cur runlog.Cursor) error {
	var err error
	run.mu.Lock()
	base := run.base
	run.mu.Unlock()
	if cur.Less(base) {
		// Events before the log: rebuilt from the store.
		if cur, err = s.sendRebuilt(r.Context(), sw, run, cur, base); err != nil {
			return nil
		}
	}
	hb := time.NewTimer(s.cfg.Heartbeat)
	defer hb.Stop()
	var buf []runlog.Entry
	for {
		rd := run.log.Since(cur, 256, buf[:0])
		if rd.Lost && len(rd.Entries) > 0 {
			if cur, err = s.sendRebuilt(r.Context(), sw, run, cur, prev(rd.Entries[0].At)); err != nil {
				return nil
			}
		}
		if cur, err = s.sendEntries(sw, hb, rd.Entries, cur); err != nil {
			return nil
		}
		buf = rd.Entries
		if rd.Done {
			return nil
		}
		select {
		case <-rd.Wait:
		case <-r.Context().Done():
			return nil
		case <-s.runCtx.Done():
			// Shut down: the run goes on elsewhere (a run cut here was
			// handed to River). The client reconnects with Last-Event-ID.
			_ = sw.Send(shutdownEvent)
			return nil
		case <-hb.C:
			if sw.Comment("ping") != nil {
				return nil
			}
			hb.Reset(s.cfg.Heartbeat)
		}
	}
}

// prev returns a cursor just before c.
func prev(c runlog.Cursor) runlog.Cursor {
	switch {
	case c.Ver > 0:
		return runlog.Cursor{Seq: c.Seq, Sub: c.Sub, Ver: c.Ver - 1}
	case c.Sub > 0:
		return runlog.Cursor{Seq: c.Seq, Sub: c.Sub - 1, Ver: 1 << 30}
	}
	return runlog.Cursor{Seq: c.Seq - 1, Sub: 1 << 30, Ver: 1 << 30}
}

// sendEntries writes the entries after cur and, when there are any, flushes
// them and resets the heartbeat timer hb; it returns the cursor reached.
func (s *Server) sendEntries(sw *sse.Writer, hb *time.Timer, entries []runlog.Entry, cur runlog.Cursor) (runlog.Cursor, error) {
	for i := range entries {
		e := &entries[i]
		if !cur.Less(e.At) {
			continue
		}
		if err := sw.Put(sse.Event{ID: e.At.String(), Type: e.Type, Data: e.Data}); err != nil {
			return cur, err
		}
		cur = e.At
	}
	if len(entries) > 0 {
		if err := sw.Flush(); err != nil {
			return cur, err
		}
		resetTimer(hb, s.cfg.Heartbeat)
	}
	return cur, nil
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	t.Reset(d)
}

// sendRebuilt sends the events in (from, upto] rebuilt from the run's
// checkpoints, and returns the cursor reached.
func (s *Server) sendRebuilt(ctx context.Context, sw *sse.Writer, run *Run, from, upto runlog.Cursor) (runlog.Cursor, error) {
	entries, err := s.rebuild(ctx, run.owner, run.id, from)
	if err != nil {
		s.log.Warn("rebuild events from the store", "run_id", run.id, "error", err)
		return upto, nil // the client gets what the log has
	}
	for _, e := range entries {
		if !from.Less(e.At) || upto.Less(e.At) {
			continue
		}
		if err := sw.Put(sse.Event{ID: e.At.String(), Type: e.Type, Data: e.Data}); err != nil {
			return from, err
		}
		from = e.At
	}
	if err := sw.Flush(); err != nil {
		return from, err
	}
	if from.Less(upto) {
		from = upto
	}
	return from, nil
}

func (s *Server) sseOptions(h http.Header) sse.Options {
	return sse.Options{MaxBuffer: s.cfg.StreamBuffer, WriteTimeout: s.cfg.StreamWriteTimeout, Retry: 2 * time.Second, Header: h}
}

func (s *Server) acquireStream(ctx context.Context) bool {
	if s.streams.Add(1) > int64(s.cfg.MaxStreams) {
		s.streams.Add(-1)
		return false
	}
	s.tel.StreamOpened(ctx)
	return true
}

func (s *Server) releaseStream(ctx context.Context) {
	s.streams.Add(-1)
	s.tel.StreamClosed(ctx)
}

func (s *Server) tooManyStreams() error {
	e := Errorf(http.StatusServiceUnavailable, wire.ErrOverloaded, "too many open streams (limit %d); retry shortly", s.cfg.MaxStreams)
	e.RetryAfter = 1
	return e
}

// waitRun answers with the run's result once it is final or waits for a
// decision; past the request timeout, with 202 and its state so far.
func (s *Server) waitRun(w http.ResponseWriter, r *http.Request, run *Run) error {
	var cur runlog.Cursor
	for {
		rd := run.log.Since(cur, 0, nil)
		if n := len(rd.Entries); n > 0 {
			cur = rd.Entries[n-1].At
		}
		if rd.Done {
			WriteJSON(w, http.StatusOK, run.result())
			return nil
		}
		select {
		case <-rd.Wait:
		case <-s.runCtx.Done():
			// Shut down before the run's end: it goes on in another
			// process (a run cut here was handed to River).
			w.Header().Set("Location", EventsURL(run.threadID, run.id))
			WriteJSON(w, http.StatusAccepted, run.result())
			return nil
		case <-r.Context().Done():
			w.Header().Set("Location", EventsURL(run.threadID, run.id))
			WriteJSON(w, http.StatusAccepted, run.result())
			return nil
		}
	}
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
	return out
}

// runEvents resumes a run's event stream after Last-Event-ID.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request, c *Caller) error {
	from, err := runlog.ParseCursor(lastEventID(r))
	if err != nil {
		return BadParam("Last-Event-ID", "Last-Event-ID %q is not an event id of this stream (want N, N.M or N.M.V)", lastEventID(r))
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
