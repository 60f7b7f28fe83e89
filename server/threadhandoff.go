package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/summary"
	"github.com/batonhq/baton/threadhandoff"
)

// threadHandoff is POST /v1/threads/{id}/handoff: without a decision it
// previews a summary of the thread (no side effects) and answers its
// approval interrupt; with the interrupt and a decision it applies the
// decision (docs/thread-handoff.md).
func (s *Server) threadHandoff(w http.ResponseWriter, r *http.Request, c *caller) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return jsonError(err)
	}
	var req wire.ThreadHandoffRequest
	if len(bytes.TrimSpace(body)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := decodeJSON(r, &req, true); err != nil {
			return err
		}
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
		return errorf(http.StatusUnprocessableEntity, wire.ErrUnsupported, "network %s has no summary model: declare `summary:` in its network file to hand threads off", nw.name)
	}
	te := s.reg.thread(c.owner, th.ID)
	if req.Decision == nil {
		if len(req.Interrupt) > 0 {
			return badParam("decision", "an interrupt needs a decision: approve, edit or reject")
		}
		if req.AssistantID != "" {
			if _, ok := nw.net.Agent(req.AssistantID); !ok {
				return badParam("assistant_id", "network %s has no agent %q", nw.name, req.AssistantID)
			}
		} else if th.ActiveAgent == "" {
			return errorf(http.StatusUnprocessableEntity, wire.ErrInvalidRequest, "thread %s has nothing to summarise yet: no agent has answered on it", th.ID)
		}
		p, err := nw.sum.Preview(ctx, &threadhandoff.PreviewParams{Owner: c.owner, ThreadID: th.ID, AssistantID: req.AssistantID})
		var ise *summary.InvalidSummaryError
		switch {
		case errors.Is(err, store.ErrNotFound):
			return notFound("thread", th.ID)
		case errors.Is(err, summary.ErrNothingToSummarise):
			return errorf(http.StatusUnprocessableEntity, wire.ErrInvalidRequest, "thread %s has nothing to summarise yet: it needs a user message", th.ID)
		case errors.As(err, &ise):
			return errorf(http.StatusBadGateway, wire.ErrUpstream, "the summary model gave an invalid summary: %s", ise.Error())
		case err != nil && ctx.Err() == nil:
			var ae *apiError
			if errors.As(err, &ae) || errors.Is(err, store.ErrUnavailable) {
				return err
			}
			s.log.Warn("thread handoff preview failed", "thread_id", th.ID, "error", err)
			return errorf(http.StatusBadGateway, wire.ErrUpstream, "the summary could not be made: %s", err.Error())
		case err != nil:
			return err
		}
		in := p.Interrupt()
		data, _ := json.Marshal(in)
		te.append("", "thread_handoff_proposed", data)
		writeJSON(w, http.StatusOK, in)
		return nil
	}
	if len(req.Interrupt) == 0 {
		return badParam("interrupt", "a decision needs the interrupt it answers (the payload the preview returned)")
	}
	in, err := threadhandoff.ParseInterrupt(req.Interrupt)
	if err != nil {
		return badParam("interrupt", "%s", err.Error())
	}
	p, err := threadhandoff.ProposalFromInterrupt(in, c.owner, 0)
	if err != nil {
		return badParam("interrupt", "%s", err.Error())
	}
	if p.ParentThreadID != th.ID {
		return badParam("interrupt", "the interrupt is about thread %s, not %s", p.ParentThreadID, th.ID)
	}
	d := threadhandoff.Decision{Type: threadhandoff.DecisionType(req.Decision.Type), Title: req.Decision.Title, Markdown: req.Decision.Markdown, Reason: req.Decision.Reason}
	switch d.Type {
	case threadhandoff.DecisionApprove, threadhandoff.DecisionEdit, threadhandoff.DecisionReject:
	default:
		return badParam("decision.type", "decision type %q is not approve, edit or reject", req.Decision.Type)
	}
	if _, ok := nw.net.Agent(p.AssistantID); !ok {
		return badParam("interrupt", "network %s has no agent %q", nw.name, p.AssistantID)
	}
	out, err := nw.sum.Decide(ctx, p, d)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("thread", th.ID)
	}
	if err != nil {
		return err
	}
	dto := wire.ThreadHandoffOutcome{Object: "thread.handoff", HandoffID: out.HandoffID, Decision: string(out.Decision), Applied: out.Applied,
		AlreadyApplied: out.AlreadyApplied, ParentThreadID: out.ParentThreadID, ChildThreadID: out.ChildThreadID, AssistantID: out.AssistantID,
		Markdown: out.Markdown, MirrorStatus: out.MirrorStatus, Message: out.Message}
	data, _ := json.Marshal(dto)
	te.append("", "thread_handoff", data)
	writeJSON(w, http.StatusOK, dto)
	return nil
}
