package server

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// fork answers POST /v1/threads/{id}/fork: a new thread of the caller
// holding the thread's history up to a checkpoint or a message, its last
// message edited when asked (threads.Service.Fork).
func (s *Server) fork(w http.ResponseWriter, r *http.Request, c *Caller) error {
	var req wire.ForkRequest
	if err := DecodeJSON(r, &req, true); err != nil {
		return err
	}
	switch {
	case req.At == "":
		return BadParam("at", "at is required: a checkpoint id or a message id of the thread")
	case len(req.At) > 256 || !utf8.ValidString(req.At) || strings.ContainsRune(req.At, 0):
		return BadParam("at", "at is not a checkpoint or message id")
	case len(req.Name) > maxNameLen || strings.ContainsAny(req.Name, "\r\n"):
		return BadParam("name", "name must be one line of at most %d bytes", maxNameLen)
	case req.Edit != nil && len(req.Edit.Text) > s.cfg.MaxInputBytes:
		return BadParam("edit", "edit.text is %d bytes, more than the limit of %d", len(req.Edit.Text), s.cfg.MaxInputBytes)
	}
	ctx := r.Context()
	th, err := s.thread(ctx, c, r.PathValue("id"))
	if err != nil {
		return err
	}
	nw, err := s.network(th.Network)
	if err != nil {
		return err
	}
	opts := threads.ForkOptions{Name: req.Name}
	if req.Edit != nil {
		opts.Edit = &threads.ForkEdit{Text: req.Edit.Text, IsError: req.Edit.IsError}
	}
	fork, err := nw.svc.Fork(ctx, c.Owner, th.ID, req.At, opts)
	switch {
	case errors.Is(err, threads.ErrForkPoint):
		return Errorf(http.StatusNotFound, wire.ErrNotFound, "%q is not a checkpoint or message of thread %s", req.At, th.ID)
	case errors.Is(err, threads.ErrForkEdit):
		return BadParam("edit", "%s", err.Error())
	case errors.Is(err, store.ErrInvalid):
		return BadParam("edit", "%s", err.Error())
	case err != nil:
		return err
	}
	s.reg.thread(c.Owner, fork.ID).setNetwork(fork.Network)
	dto, err := s.threadDetail(ctx, c.Owner, fork)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/threads/"+fork.ID)
	WriteJSON(w, http.StatusCreated, dto)
	return nil
}
