package server

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"strings"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
)

// Interrupt statuses.
const (
	interruptPending  = "pending"
	interruptResolved = "resolved"
)

// interrupt finds an interrupt of the caller: the run it belongs to, its
// latest checkpoint, and the interrupt payload.
func (s *Server) interrupt(ctx context.Context, c *caller, id string) (*store.Checkpoint, *runstate.Interrupt, error) {
	runID, ok := runstate.RunOfInterrupt(id)
	if !ok || len(id) > 160 {
		return nil, nil, notFound("interrupt", id)
	}
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: c.owner, RunID: runID})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, notFound("interrupt", id)
	}
	if err != nil {
		return nil, nil, err
	}
	if in := cp.State.Interrupt; cp.State.Status == runstate.StatusInterrupted && in != nil && in.ID == id {
		return cp, in, nil
	}
	// Not pending: find it in the run's history, or it does not exist.
	for p, n := cp, 0; p.ParentID != "" && n < maxChain; n++ {
		p, err = s.st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: c.owner, ID: p.ParentID})
		if err != nil {
			return nil, nil, err
		}
		if in := p.State.Interrupt; in != nil && in.ID == id {
			return cp, in, nil
		}
	}
	return nil, nil, notFound("interrupt", id)
}

func interruptDTO(cp *store.Checkpoint, in *runstate.Interrupt) wire.Interrupt {
	status := interruptResolved
	if cp.State.Status == runstate.StatusInterrupted && cp.State.Interrupt != nil && cp.State.Interrupt.ID == in.ID {
		status = interruptPending
	}
	ars := in.ActionRequests
	if ars == nil {
		ars = []runstate.ActionRequest{}
	}
	return wire.Interrupt{ID: in.ID, Object: "interrupt", RunID: cp.RunID, ThreadID: cp.ThreadID, Network: cp.State.Network, Agent: cp.State.Agent,
		Status: status, SchemaVersion: in.SchemaVersion, Source: in.Source, ActionRequests: ars}
}

func (s *Server) getInterrupt(w http.ResponseWriter, r *http.Request, c *caller) error {
	cp, in, err := s.interrupt(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, interruptDTO(cp, in))
	return nil
}

// decide answers an interrupt and resumes its run, streaming it or waiting
// for its result like POST /v1/threads/{id}/runs.
func (s *Server) decide(w http.ResponseWriter, r *http.Request, c *caller) error {
	var req wire.Decision
	if err := decodeJSON(r, &req, true); err != nil {
		return err
	}
	decisions, err := decisionsOf(&req)
	if err != nil {
		return err
	}
	r, cancel := s.withTimeout(r, req.Stream)
	defer cancel()
	ctx := r.Context()
	id := r.PathValue("id")
	cp, in, err := s.interrupt(ctx, c, id)
	if err != nil {
		return err
	}
	if dto := interruptDTO(cp, in); dto.Status != interruptPending {
		return errorf(http.StatusConflict, wire.ErrConflict, "interrupt %s was already answered", id)
	}
	calls := map[string]bool{}
	for _, ar := range in.ActionRequests {
		calls[ar.CallID] = true
	}
	for i, d := range decisions {
		if d.CallID != "" && !calls[d.CallID] {
			return badParam("decisions", "decisions[%d]: call %q is not an action of interrupt %s", i, d.CallID, id)
		}
	}
	nw, ok := s.nets[cp.State.Network]
	if !ok {
		return errorf(http.StatusConflict, "network_unavailable", "run %s belongs to network %q, which this server does not run", cp.RunID, cp.State.Network)
	}
	opts := append([]runner.RunOption{runner.WithDecisions(decisions...)}, nw.inlineOptions()...)
	run, err := s.launch(ctx, c.owner, cp.ThreadID, cp.RunID, nw, &runlog.Cursor{Seq: cp.State.Seq}, func(rctx context.Context) iter.Seq2[runner.Event, error] {
		return nw.svc.Resume(rctx, c.owner, cp.RunID, opts...)
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

// decisionsOf validates a decision body.
func decisionsOf(req *wire.Decision) ([]runner.Decision, error) {
	if req.Type != "" && len(req.Decisions) > 0 {
		return nil, badRequest("give either type (one decision for every action) or decisions (one per call), not both")
	}
	var in []wire.CallDecision
	switch {
	case req.Type != "":
		in = []wire.CallDecision{{Type: req.Type, Args: req.Args, Message: req.Message}}
	case len(req.Decisions) > 0:
		if len(req.Decisions) > 100 {
			return nil, badParam("decisions", "at most 100 decisions")
		}
		in = req.Decisions
	default:
		return nil, badParam("type", "a decision is required: type approve, edit (with args) or reject (with an optional message)")
	}
	out := make([]runner.Decision, 0, len(in))
	for i, d := range in {
		t := runner.DecisionType(strings.ToLower(strings.TrimSpace(d.Type)))
		switch t {
		case runner.DecisionApprove, runner.DecisionReject:
		case runner.DecisionEdit:
			var obj map[string]json.RawMessage
			if len(d.Args) == 0 || json.Unmarshal(d.Args, &obj) != nil || obj == nil {
				return nil, badParam("args", "decision %d: an edit needs args, the edited tool arguments as a JSON object", i)
			}
		default:
			return nil, badParam("type", "decision %d: type %q is not approve, edit or reject", i, d.Type)
		}
		if len(d.Message) > 4096 {
			return nil, badParam("message", "decision %d: message is longer than 4096 bytes", i)
		}
		out = append(out, runner.Decision{Type: t, CallID: d.CallID, Args: d.Args, Message: d.Message})
	}
	return out, nil
}
