package server

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"slices"
	"strings"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

// MaxInterruptID bounds the interrupt ids looked up.
const MaxInterruptID = 160

// interrupt returns a stored interrupt of the caller: a run's approvals
// (kind run, stored by threads.InterruptExtension with the checkpoint that
// stops the run) or a thread handoff proposal (kind thread_handoff).
func (s *Server) interrupt(ctx context.Context, c *Caller, id string) (*store.Interrupt, error) {
	if id == "" || len(id) > MaxInterruptID {
		return nil, NotFound("interrupt", id)
	}
	in, err := s.st.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: c.Owner, ID: id})
	if errors.Is(err, store.ErrNotFound) || err == nil && !c.SeesNetwork(in.Network) {
		return nil, NotFound("interrupt", id)
	}
	return in, err
}

func DecisionURL(id string) string { return "/v1/interrupts/" + id + "/decision" }

// interruptDTO shows a stored interrupt. Its action requests are the run's
// tool calls, or, for a thread handoff, its one handoff_summary action
// (call_id handoff_summary). stale is whether a pending thread handoff's
// thread has outgrown it.
func interruptDTO(in *store.Interrupt, stale bool) wire.Interrupt {
	dto := wire.Interrupt{ID: in.ID, Object: "interrupt", Kind: in.Kind, RunID: in.RunID, ThreadID: in.ThreadID, Network: in.Network, Agent: in.Agent,
		Status: in.Status, Payload: in.Payload, Stale: stale && in.Status == store.InterruptPending, Decision: in.Decision, Outcome: in.Outcome,
		DecisionURL: DecisionURL(in.ID), CreatedAt: in.CreatedAt, ActionRequests: []runstate.ActionRequest{}}
	if !in.DecidedAt.IsZero() {
		at := in.DecidedAt
		dto.DecidedAt = &at
	}
	switch in.Kind {
	case store.InterruptRun:
		var ri runstate.Interrupt
		if json.Unmarshal(in.Payload, &ri) == nil {
			dto.SchemaVersion, dto.Source = ri.SchemaVersion, ri.Source
			if ri.ActionRequests != nil {
				dto.ActionRequests = ri.ActionRequests
			}
		}
	case store.InterruptThreadHandoff:
		if p, err := threadhandoff.ParseInterrupt(in.Payload); err == nil {
			dto.SchemaVersion, dto.Source = p.SchemaVersion, p.MiddlewareSource
			for _, ar := range p.ActionRequests {
				args, _ := json.Marshal(ar.Args)
				dto.ActionRequests = append(dto.ActionRequests, runstate.ActionRequest{Name: ar.Name, CallID: ar.Name, Description: ar.Description, Args: args})
			}
		}
	}
	return dto
}

// interruptView returns the DTO of in, with, for a pending thread handoff,
// whether its thread has outgrown it.
func (s *Server) interruptView(ctx context.Context, in *store.Interrupt) (wire.Interrupt, error) {
	stale := false
	if in.Kind == store.InterruptThreadHandoff && in.Status == store.InterruptPending {
		if nw, ok := s.nets[in.Network]; ok && nw.sum != nil {
			p, err := nw.sum.Of(ctx, in)
			if err != nil {
				return wire.Interrupt{}, err
			}
			stale = p.Stale
		}
	}
	return interruptDTO(in, stale), nil
}

// pendingInterrupts returns the DTOs of a thread's pending interrupts,
// oldest first.
func (s *Server) pendingInterrupts(ctx context.Context, owner, threadID string) ([]wire.Interrupt, error) {
	ins, err := s.st.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: owner, ThreadID: threadID, Status: store.InterruptPending})
	if err != nil {
		return nil, err
	}
	out := make([]wire.Interrupt, 0, len(ins))
	for _, in := range ins {
		dto, err := s.interruptView(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, dto)
	}
	return out, nil
}

func (s *Server) getInterrupt(w http.ResponseWriter, r *http.Request, c *Caller) error {
	in, err := s.interrupt(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	dto, err := s.interruptView(r.Context(), in)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, dto)
	return nil
}

// decide answers an interrupt, the one route of every approval: a thread
// handoff proposal is decided by decideThreadHandoff; a run's interrupt
// resumes the run, streaming it or waiting for its result like POST
// /v1/threads/{id}/runs.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, c *Caller) error {
	var req wire.Decision
	if err := DecodeJSON(r, &req, true); err != nil {
		return err
	}
	// The shape of every decision first, whatever the interrupt.
	decisions, err := Decisions(&req)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	in, err := s.interrupt(r.Context(), c, id)
	if err != nil {
		return err
	}
	if in.Kind == store.InterruptThreadHandoff {
		return s.decideThreadHandoff(w, r, c, in, &req)
	}
	if in.Kind != store.InterruptRun {
		return Errorf(http.StatusConflict, wire.ErrUnsupported, "interrupt %s is of kind %q, which this server cannot decide", id, in.Kind)
	}
	if req.Force || slices.ContainsFunc(req.Decisions, func(d wire.CallDecision) bool { return d.Force }) {
		return BadParam("force", "force approves a thread handoff proposal that its thread has outgrown; a run's interrupt has no use for it")
	}
	if in.Status != store.InterruptPending {
		e := Errorf(http.StatusConflict, wire.ErrConflict, "interrupt %s was already answered", id)
		if len(in.Outcome) > 0 {
			e.extra = &wire.ErrorExtra{Outcome: in.Outcome}
		}
		return e
	}
	r, cancel := s.withTimeout(r, req.Stream)
	defer cancel()
	ctx := r.Context()
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: c.Owner, RunID: in.RunID})
	if errors.Is(err, store.ErrNotFound) {
		return NotFound("interrupt", id)
	}
	if err != nil {
		return err
	}
	if ri := cp.State.Interrupt; cp.State.Status != runstate.StatusInterrupted || ri == nil || ri.ID != id {
		return Errorf(http.StatusConflict, wire.ErrConflict, "interrupt %s was already answered", id)
	}
	calls := map[string]bool{}
	for _, ar := range cp.State.Interrupt.ActionRequests {
		calls[ar.CallID] = true
	}
	for i, d := range decisions {
		if d.CallID != "" && !calls[d.CallID] {
			return BadParam("decisions", "decisions[%d]: call %q is not an action of interrupt %s", i, d.CallID, id)
		}
	}
	nw, ok := s.nets[cp.State.Network]
	if !ok {
		return Errorf(http.StatusConflict, "network_unavailable", "run %s belongs to network %q, which this server does not run", cp.RunID, cp.State.Network)
	}
	opts := append([]runner.RunOption{runner.WithDecisions(decisions...)}, nw.inlineOptions()...)
	run, err := s.launch(ctx, c.Owner, cp.ThreadID, cp.RunID, nw, &runlog.Cursor{Seq: cp.State.Seq}, func(rctx context.Context) iter.Seq2[runner.Event, error] {
		return nw.svc.Resume(withActor(rctx, c), c.Owner, cp.RunID, opts...)
	})
	if err != nil {
		return err
	}
	if req.Stream {
		run.mu.Lock()
		from := run.base
		run.mu.Unlock()
		return s.streamRun(w, r, run, from)
	}
	return s.waitRun(w, r, run)
}

// decisionsOf validates a decision body: known types (decline is taken for
// reject), an edit's args a JSON object, bounded messages. It returns the
// decisions of a run's interrupt.
// Decisions are the decisions of a decision body (POST
// /v1/interrupts/{id}/decision): one for every action ({"type"}), or one
// per call ({"decisions": [...]}); a 400 [*Error] when it is not one.
func Decisions(req *wire.Decision) ([]runner.Decision, error) {
	if req.Type != "" && len(req.Decisions) > 0 {
		return nil, BadRequest("give either type (one decision for every action) or decisions (one per call), not both")
	}
	var in []wire.CallDecision
	switch {
	case req.Type != "":
		in = []wire.CallDecision{{Type: req.Type, Args: req.Args, Message: req.Message}}
	case len(req.Decisions) > 0:
		if len(req.Decisions) > 100 {
			return nil, BadParam("decisions", "at most 100 decisions")
		}
		in = req.Decisions
	default:
		return nil, BadParam("type", "a decision is required: type approve, edit (with args) or reject (with an optional message)")
	}
	out := make([]runner.Decision, 0, len(in))
	for i, d := range in {
		t := runner.DecisionType(strings.ToLower(strings.TrimSpace(d.Type)))
		if t == "decline" {
			t = runner.DecisionReject
		}
		switch t {
		case runner.DecisionApprove, runner.DecisionReject:
		case runner.DecisionEdit:
			var obj map[string]json.RawMessage
			if len(d.Args) == 0 || json.Unmarshal(d.Args, &obj) != nil || obj == nil {
				return nil, BadParam("args", "decision %d: an edit needs args, the edited tool arguments as a JSON object", i)
			}
		default:
			return nil, BadParam("type", "decision %d: type %q is not approve, edit or reject", i, d.Type)
		}
		if len(d.Message) > 4096 {
			return nil, BadParam("message", "decision %d: message is longer than 4096 bytes", i)
		}
		out = append(out, runner.Decision{Type: t, CallID: d.CallID, Args: d.Args, Message: d.Message})
	}
	return out, nil
}
