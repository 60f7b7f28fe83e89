package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/server/internal/runlog"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/summary"
	"github.com/batonhq/baton/threadhandoff"
)

// Thread event types of thread handoffs.
const (
	eventHandoffProposed = "thread_handoff_proposed"
	eventHandoffDecided  = "thread_handoff_decided"
)

// threadHandoff is POST /v1/threads/{id}/handoff: it summarises the thread
// and stores the proposal as the thread's pending interrupt (201), or
// answers the pending one (200) unless the body asks to replace it
// (docs/thread-handoff.md). Proposals are decided through POST
// /v1/interrupts/{id}/decision.
func (s *Server) threadHandoff(w http.ResponseWriter, r *http.Request, c *Caller) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return JSONError(err)
	}
	var req wire.ThreadHandoffRequest
	if len(bytes.TrimSpace(body)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := DecodeJSON(r, &req, true); err != nil {
			return err
		}
	}
	if len(req.Interrupt) > 0 || len(req.Decision) > 0 {
		return BadParam("decision", "a thread handoff proposal is decided as an interrupt: POST /v1/interrupts/{interrupt_id}/decision with {\"decisions\": [{\"type\": \"approve\"}]}")
	}
	ctx := r.Context()
	th, err := s.thread(ctx, c, r.PathValue("id"))
	if err != nil {
		return err
	}
	nw, err := s.threadNetwork(th)
	if err != nil {
		return err
	}
	if nw.sum == nil {
		return Errorf(http.StatusUnprocessableEntity, wire.ErrUnsupported, "network %s has no summary model: declare `summary:` in its network file to hand threads off", nw.name)
	}
	if req.AssistantID != "" {
		if _, ok := nw.net.Agent(req.AssistantID); !ok {
			return BadParam("assistant_id", "network %s has no agent %q", nw.name, req.AssistantID)
		}
	} else if th.ActiveAgent == "" {
		return Errorf(http.StatusUnprocessableEntity, wire.ErrInvalidRequest, "thread %s has nothing to summarise yet: no agent has answered on it", th.ID)
	}
	p, err := nw.sum.Propose(ctx, &threadhandoff.ProposeParams{Owner: c.Owner, ThreadID: th.ID, AssistantID: req.AssistantID, Replace: req.Replace})
	var ise *summary.InvalidSummaryError
	switch {
	case errors.Is(err, store.ErrNotFound):
		return NotFound("thread", th.ID)
	case errors.Is(err, summary.ErrNothingToSummarise):
		return Errorf(http.StatusUnprocessableEntity, wire.ErrInvalidRequest, "thread %s has nothing to summarise yet: it needs a user message", th.ID)
	case errors.As(err, &ise):
		return Errorf(http.StatusBadGateway, wire.ErrUpstream, "the summary model gave an invalid summary: %s", ise.Error())
	case err != nil && ctx.Err() == nil:
		var ae *Error
		if errors.As(err, &ae) || errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrCorrupt) {
			return err
		}
		s.log.Warn("thread handoff proposal failed", "thread_id", th.ID, "error", err)
		return Errorf(http.StatusBadGateway, wire.ErrUpstream, "the summary could not be made: %s", err.Error())
	case err != nil:
		return err
	}
	dto := proposalDTO(p)
	status := http.StatusOK
	if !p.Existing {
		status = http.StatusCreated
		s.handoffChanged(ctx, c.Owner, th.ID)
	}
	w.Header().Set("Location", dto.InterruptURL)
	WriteJSON(w, status, dto)
	return nil
}

func proposalDTO(p *threadhandoff.Pending) wire.ThreadHandoffProposal {
	in := p.Interrupt
	return wire.ThreadHandoffProposal{Object: "thread.handoff.proposal", InterruptID: in.ID, ThreadID: in.ThreadID, Kind: in.Kind, Status: in.Status,
		Payload: in.Payload, Stale: p.Stale, Superseded: p.Superseded, InterruptURL: "/v1/interrupts/" + in.ID,
		DecisionURL: DecisionURL(in.ID), CreatedAt: in.CreatedAt}
}

// decideThreadHandoff answers POST /v1/interrupts/{id}/decision for a
// thread handoff proposal: one decision (approve, edit with args
// summary_md and/or title, reject or decline), applied by
// threadhandoff.Service.Decide.
func (s *Server) decideThreadHandoff(w http.ResponseWriter, r *http.Request, c *Caller, in *store.Interrupt, req *wire.Decision) error {
	var one wire.CallDecision
	switch {
	case req.Type != "" && len(req.Decisions) > 0:
		return BadRequest("give either type or decisions, not both")
	case req.Type != "":
		one = wire.CallDecision{Type: req.Type, Args: req.Args, Message: req.Message}
	case len(req.Decisions) == 1:
		one = req.Decisions[0]
	case len(req.Decisions) > 1:
		return BadParam("decisions", "a thread handoff proposal has one action: give one decision")
	default:
		return BadParam("decisions", "a decision is required: {\"decisions\": [{\"type\": \"approve\" | \"edit\" | \"reject\", \"args\": {\"summary_md\", \"title\"}}]}")
	}
	if one.CallID != "" && one.CallID != threadhandoff.ActionHandoffSummary {
		return BadParam("decisions", "call %q is not an action of interrupt %s (its one action is %s)", one.CallID, in.ID, threadhandoff.ActionHandoffSummary)
	}
	d, err := threadhandoff.ParseDecision(one.Type, one.Args)
	if err != nil {
		var de *threadhandoff.DecisionError
		if errors.As(err, &de) {
			return BadParam(de.Field, "%s", de.Reason)
		}
		return err
	}
	d.Reason, d.Force = one.Message, one.Force || req.Force
	nw, ok := s.nets[in.Network]
	if !ok {
		return Errorf(http.StatusConflict, "network_unavailable", "interrupt %s belongs to network %q, which this server does not run", in.ID, in.Network)
	}
	if nw.sum == nil {
		return Errorf(http.StatusUnprocessableEntity, wire.ErrUnsupported, "network %s has no summary model", nw.name)
	}
	ctx := r.Context()
	out, err := nw.sum.Decide(ctx, &threadhandoff.DecideParams{Owner: c.Owner, InterruptID: in.ID, Decision: d})
	var de *threadhandoff.DecisionError
	var decided *threadhandoff.DecidedError
	var stale *threadhandoff.StaleError
	switch {
	case errors.As(err, &de):
		return BadParam(de.Field, "%s", de.Reason)
	case errors.As(err, &decided):
		e := Errorf(http.StatusConflict, wire.ErrConflict, "interrupt %s was already decided: %s", in.ID, decided.Error())
		if decided.Status == store.InterruptSuperseded && decided.Outcome != nil {
			e.Message = "interrupt " + in.ID + " was superseded by a newer proposal, " + decided.Outcome.SupersededBy + ": decide that one"
		}
		if decided.Outcome != nil {
			e.extra = &wire.ErrorExtra{Outcome: outcomeDTO(decided.Outcome, decided.Status)}
		}
		return e
	case errors.As(err, &stale):
		e := Errorf(http.StatusConflict, wire.ErrStaleProposal,
			"thread %s has %d new message(s) since this proposal: propose again (POST /v1/threads/%s/handoff with {\"replace\": true}) or decide with \"force\": true",
			stale.ThreadID, stale.LastSeq-stale.ThroughSeq, stale.ThreadID)
		e.extra = &wire.ErrorExtra{ThroughSeq: stale.ThroughSeq, LastSeq: stale.LastSeq}
		return e
	case errors.Is(err, store.ErrNotFound):
		return NotFound("interrupt", in.ID)
	case err != nil:
		return err
	}
	dto := outcomeDTO(out, store.InterruptDecided)
	s.handoffChanged(ctx, c.Owner, in.ThreadID)
	WriteJSON(w, http.StatusOK, dto)
	return nil
}

func outcomeDTO(o *threadhandoff.Outcome, status string) wire.ThreadHandoffOutcome {
	return wire.ThreadHandoffOutcome{Object: "thread.handoff.decision", InterruptID: o.HandoffID, Kind: store.InterruptThreadHandoff, Status: status,
		HandoffID: o.HandoffID, Decision: string(o.Decision), Applied: o.Applied, ParentThreadID: o.ParentThreadID, ChildThreadID: o.ChildThreadID,
		AssistantID: o.AssistantID, Title: o.Summary.Title, Markdown: o.Markdown, Edited: o.Edited, SupersededBy: o.SupersededBy,
		MirrorStatus: o.MirrorStatus, Message: o.Message}
}

// handoffEntries returns the thread handoff events of a thread, made from
// its stored interrupts of kind thread_handoff (ins, oldest first): for
// each, thread_handoff_proposed (the interrupt as it was when proposed)
// and, once it is no longer pending, thread_handoff_decided (its stored
// outcome, with its status: decided, or superseded by the next proposal).
// Live and rebuilt streams send these same events, with the same ids.
//
// A proposal follows the messages it summarises: its id is
// "THROUGH+1.0.0.0.H", THROUGH its through_seq — after every event of the
// runs at or before THROUGH, before every event of the next run (whose
// position is above THROUGH; a run's events have a SEQ or N of at least
// one). A decision follows the thread's last message when it was decided
// (the outcome's last_seq), a superseded proposal's the proposal that
// superseded it. H numbers the handoff events at one position (1, 2, …),
// and a position is never below the one of the event before.
func handoffEntries(ins []*store.Interrupt) []runlog.Entry {
	var out []runlog.Entry
	var last runlog.Cursor
	add := func(pos int64, typ string, v any) {
		at := runlog.Cursor{Pos: max(int(pos), 1, last.Pos), Ext: 1}
		if at.Pos == last.Pos {
			at.Ext = last.Ext + 1
		}
		data, _ := json.Marshal(v)
		out = append(out, runlog.Entry{At: at, Type: typ, Data: data})
		last = at
	}
	through := func(in *store.Interrupt) int64 {
		if p, err := threadhandoff.ParseInterrupt(in.Payload); err == nil {
			return p.ThroughSeq
		}
		return 0
	}
	for i, in := range ins {
		if in.Kind != store.InterruptThreadHandoff {
			continue
		}
		proposed := *in
		proposed.Status, proposed.Decision, proposed.Outcome, proposed.DecidedAt = store.InterruptPending, nil, nil, time.Time{}
		add(through(in)+1, eventHandoffProposed, interruptDTO(&proposed, false))
		if in.Status == store.InterruptPending || len(in.Outcome) == 0 {
			continue
		}
		var o threadhandoff.Outcome
		if json.Unmarshal(in.Outcome, &o) != nil {
			continue
		}
		pos := o.LastSeq + 1
		if in.Status == store.InterruptSuperseded {
			pos = 0
			if i+1 < len(ins) {
				pos = through(ins[i+1]) + 1
			}
		}
		add(pos, eventHandoffDecided, outcomeDTO(&o, in.Status))
	}
	return out
}

// handoffEvents returns the thread handoff events of a thread, rebuilt
// from the store (see handoffEntries).
func (s *Server) handoffEvents(ctx context.Context, owner, threadID string) ([]runlog.Entry, error) {
	ins, err := s.st.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: owner, ThreadID: threadID, Kind: store.InterruptThreadHandoff, Limit: 1000})
	if err != nil {
		return nil, err
	}
	return handoffEntries(ins), nil
}

// handoffTail returns the id of a thread's last thread handoff event in
// the store (zero without any). Best effort: zero if the store fails.
func (s *Server) handoffTail(ctx context.Context, te *threadEntry) runlog.Cursor {
	entries, err := s.handoffEvents(ctx, te.owner, te.id)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("thread stream: the thread's handoffs", "thread_id", te.id, "error", err)
		}
		return runlog.Cursor{}
	}
	if len(entries) == 0 {
		return runlog.Cursor{}
	}
	return entries[len(entries)-1].At
}

// handoffChanged tells the thread's streams that a thread handoff was
// proposed or decided: this process's move on to its last handoff event
// (they read it from the store), and a draft.KindThread signal wakes the
// thread's watchers in the other processes, which do the same.
func (s *Server) handoffChanged(ctx context.Context, owner, threadID string) {
	te := s.reg.thread(owner, threadID)
	te.advance(s.handoffTail(context.WithoutCancel(ctx), te))
	sg := s.signaller()
	if sg == nil {
		return
	}
	sig := draft.Signal{Kind: draft.KindThread, OwnerID: owner, Key: threadID, Data: "thread_handoff"}
	if _, local := sg.(*draft.Hub); local {
		_ = sg.Signal(ctx, sig)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = sg.Signal(ctx, sig) // lost, the watchers poll
	}()
}
