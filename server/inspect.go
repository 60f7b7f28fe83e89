package server

import (
	"errors"
	"net/http"

	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/store"
)

// This file is the inspector's routes (docs/inspect.md): a run's steps and
// one step in full, from package inspect.

// listSteps answers GET /v1/threads/{id}/runs/{run_id}/steps: the run's
// steps in the order they started.
func (s *Server) listSteps(w http.ResponseWriter, r *http.Request, c *Caller) error {
	th, runID, err := s.stepsOf(r, c)
	if err != nil {
		return err
	}
	run, err := inspect.Steps(r.Context(), s.st, c.Owner, th, runID)
	return writeFound(w, run, err, "run", runID)
}

// getStep answers GET /v1/threads/{id}/runs/{run_id}/steps/{step_id}: one
// step with its detail (a model call's request and answer).
func (s *Server) getStep(w http.ResponseWriter, r *http.Request, c *Caller) error {
	th, runID, err := s.stepsOf(r, c)
	if err != nil {
		return err
	}
	id := r.PathValue("step_id")
	if id == "" || len(id) > 256 {
		return NotFound("step", id)
	}
	step, err := inspect.GetStep(r.Context(), s.st, c.Owner, th, runID, id)
	return writeFound(w, step, err, "step", id)
}

// writeFound answers 200 with v, what err says when it is not nil, or 404
// naming what and id when it is store.ErrNotFound.
func writeFound(w http.ResponseWriter, v any, err error, what, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return NotFound(what, id)
	}
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, v)
	return nil
}

// stepsOf returns the thread (the caller's) and run of a steps route.
func (s *Server) stepsOf(r *http.Request, c *Caller) (string, string, error) {
	th, err := s.thread(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return "", "", err
	}
	runID := r.PathValue("run_id")
	if runID == "" || len(runID) > 128 {
		return "", "", NotFound("run", runID)
	}
	return th.ID, runID, nil
}
