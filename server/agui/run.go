package agui

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// aguiRunID is the baton run id of an AG-UI run that starts a turn: derived
// from the owner, the thread and the client's runId, so that the same
// request sent again finds its run (and two owners never share one). It
// has the form of runstate.NewRunID.
func aguiRunID(owner, threadID, runID string) string {
	h := sha256.Sum256([]byte("agui\x00" + owner + "\x00" + threadID + "\x00" + runID))
	return "run_" + base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).EncodeToString(h[:16])
}

// aguiRun serves POST /v1/agui/{network}.
func (s *api) aguiRun(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	nw, ok := s.c.Network(r.PathValue("network"))
	if !ok {
		return server.NotFound("network", r.PathValue("network"))
	}
	body, err := server.ReadBody(r)
	if err != nil {
		return err
	}
	q, err := parseAGUIInput(body)
	if err != nil {
		return err
	}
	from, err := parseAGUICursor(sse.LastEventID(r))
	if err != nil {
		return server.BadParam("Last-Event-ID", "Last-Event-ID %q is not an event id of an AG-UI stream of this server", sse.LastEventID(r))
	}
	if q.agent != "" {
		if _, ok := nw.Agents().Agent(q.agent); !ok {
			return server.BadParam("forwardedProps", "network %s has no agent %q", nw.Name(), q.agent)
		}
	}
	release, err := s.c.OpenStream(r.Context())
	if err != nil {
		return err
	}
	defer release()
	run, start, err := s.aguiBegin(r.Context(), c, nw, q)
	if err != nil {
		return err
	}
	defer run.Reader()()
	sw, err := s.c.NewStream(w, run, true)
	if err != nil {
		return nil
	}
	f := newAGUIFold(run.ID(), q.threadID, q.runID, nw.Name(), q.state)
	// The events are read in a goroutine so that this one can send
	// heartbeats (": ping") while the run is quiet (a slow tool).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type item struct {
		ev  sse.Event
		err error
	}
	ch := make(chan item)
	go func() {
		defer close(ch)
		for ev, err := range f.stream(ctx, s.c, run, start, from) {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	hb := time.NewTicker(s.c.Heartbeat())
	defer hb.Stop()
	for {
		select {
		case it, ok := <-ch:
			if !ok {
				_ = sw.Flush()
				return nil
			}
			if it.err != nil {
				if r.Context().Err() == nil && !errors.Is(it.err, server.ErrShuttingDown) {
					s.c.Logger().Warn("agui stream", "run_id", run.ID(), "error", it.err)
				}
				return nil
			}
			if sw.Put(it.ev) != nil || sw.Flush() != nil {
				return nil
			}
			hb.Reset(s.c.Heartbeat())
		case <-hb.C:
			if sw.Comment("ping") != nil {
				return nil
			}
		}
	}
}

// aguiBegin finds or starts the baton run of a request: the turn its runId
// started (sent again: the same run), the run its resume entries answer
// (resumed now if still waiting), or a new turn on the thread (made if
// new). start is the cursor after which the AG-UI run's events begin.
func (s *api) aguiBegin(ctx context.Context, c *server.Caller, nw *server.Network, q *aguiRequest) (*server.Run, server.Cursor, error) {
	id := aguiRunID(c.Owner, q.threadID, q.runID)
	if run, err := s.aguiExisting(ctx, c, nw, q.threadID, id); run != nil || err != nil {
		return run, server.Cursor{}, err
	}
	if q.resume != nil {
		return s.aguiResume(ctx, c, nw, q)
	}
	if err := s.c.CheckInput(q.input); err != nil {
		e := server.Classify(err)
		e.Param = "messages"
		return nil, server.Cursor{}, e
	}
	th, err := s.c.Thread(ctx, c, q.threadID)
	switch {
	case err == nil && th.Network != nw.Name():
		return nil, server.Cursor{}, server.BadParam("threadId", "thread %s belongs to network %q, not %q", th.ID, th.Network, nw.Name())
	case err != nil && server.Classify(err).Status != http.StatusNotFound:
		return nil, server.Cursor{}, err
	case err != nil:
		nm := make([]store.NewMessage, len(q.history))
		for i, m := range q.history {
			nm[i] = store.NewMessage{Message: m}
		}
		md := map[string]json.RawMessage{"source": json.RawMessage(`"agui"`)}
		if _, err := s.c.CreateThread(ctx, c, &store.CreateThreadParams{ID: q.threadID, Network: nw.Name(), Name: threads.Title(q.input), Metadata: md, Messages: nm}); err != nil {
			// Another request of the caller made it first: the turn
			// runs on it (or finds it busy).
			if th, terr := s.c.Thread(ctx, c, q.threadID); errors.Is(err, store.ErrConflict) && terr == nil && th.Network == nw.Name() {
				break
			}
			if errors.Is(err, store.ErrConflict) {
				e := server.Errorf(http.StatusConflict, wire.ErrConflict, "threadId %q is taken: choose another", q.threadID)
				e.Param = "threadId"
				return nil, server.Cursor{}, e
			}
			return nil, server.Cursor{}, err
		}
	}
	var opts []runner.RunOption
	if len(q.values) > 0 {
		opts = append(opts, runner.WithValues(q.values))
	}
	if q.agent != "" {
		opts = append(opts, runner.WithAgent(q.agent))
	}
	run, err := s.c.StartTurn(ctx, c, nw, server.Turn{ThreadID: q.threadID, RunID: id, Input: q.input, Options: opts})
	return run, server.Cursor{}, err
}

// aguiExisting returns the run of id if it exists (this process runs it,
// or the store has it), on the thread; nil if it does not.
func (s *api) aguiExisting(ctx context.Context, c *server.Caller, nw *server.Network, threadID, id string) (*server.Run, error) {
	run, err := s.c.Run(ctx, c, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if run.ThreadID() != threadID || run.Network() != nw.Name() {
		return nil, server.BadParam("runId", "runId names a run of another thread")
	}
	return run, nil
}

// aguiResume answers the interrupt a request's resume entries name: the
// run resumes with their decisions. An interrupt already answered (the
// same request sent again, or one decided elsewhere) is followed: the
// stream is the run's from that interrupt on.
func (s *api) aguiResume(ctx context.Context, c *server.Caller, nw *server.Network, q *aguiRequest) (*server.Run, server.Cursor, error) {
	var id string
	var decisions []runner.Decision
	for k, d := range q.resume {
		id, decisions = k, d
	}
	runID, _ := runstate.RunOfInterrupt(id)
	if len(runID) > 128 {
		return nil, server.Cursor{}, server.BadParam("resume", "interrupt %q not found", id)
	}
	// The checkpoint that raised the interrupt: its seq is where the
	// resumed AG-UI run starts.
	raised, err := s.c.Interrupted(ctx, c, runID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, server.Cursor{}, server.BadParam("resume", "interrupt %q not found", id)
	}
	if err != nil {
		return nil, server.Cursor{}, err
	}
	if raised.ThreadID != q.threadID || raised.Network != nw.Name() {
		return nil, server.Cursor{}, server.BadParam("resume", "interrupt %q is not of thread %s", id, q.threadID)
	}
	start := server.Cursor{Seq: raised.Seq}
	cp, err := s.c.LatestCheckpoint(ctx, c, runID)
	if err != nil {
		return nil, server.Cursor{}, err
	}
	if cp.State.Status != runstate.StatusInterrupted || cp.State.Interrupt == nil || cp.State.Interrupt.ID != id {
		// Answered already: the run from that interrupt on.
		run, err := s.c.Run(ctx, c, runID)
		return run, start, err
	}
	calls := map[string]bool{}
	for _, ar := range cp.State.Interrupt.ActionRequests {
		calls[ar.CallID] = true
	}
	for i, d := range decisions {
		if d.CallID != "" && !calls[d.CallID] {
			return nil, server.Cursor{}, server.BadParam("resume", "resume[%d]: call %q is not an action of interrupt %s", i, d.CallID, id)
		}
	}
	run, err := s.c.Resume(ctx, c, nw, cp, decisions)
	if err != nil {
		return nil, server.Cursor{}, err
	}
	return run, start, nil
}
