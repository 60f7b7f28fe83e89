package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

// apiError is an error with its HTTP status and error type.
type apiError struct {
	status  int
	typ     string
	msg     string
	param   string
	retry   int // Retry-After seconds, when > 0
	headers map[string]string
	extra   *wire.ErrorExtra // more fields of the error object
	code    string           // OpenAI's code, on its routes (model_not_found, …)
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, typ, format string, args ...any) *apiError {
	return &apiError{status: status, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, wire.ErrInvalidRequest, format, args...)
}

func badParam(param, format string, args ...any) *apiError {
	e := badRequest(format, args...)
	e.param = param
	return e
}

func notFound(what, id string) *apiError {
	return errorf(http.StatusNotFound, wire.ErrNotFound, "%s %q not found", what, id)
}

// classify turns any error into an apiError.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errorf(http.StatusRequestEntityTooLarge, wire.ErrTooLarge, "request body is larger than %d bytes", mbe.Limit)
	}
	var busy *threads.BusyError
	if errors.As(err, &busy) {
		if busy.Status == threads.StatusQueued {
			return errorf(http.StatusConflict, wire.ErrThreadBusy, "thread %s has %d runs queued (next %s): wait for them, or send multitask_strategy enqueue", busy.ThreadID, busy.Queued, busy.RunID)
		}
		return errorf(http.StatusConflict, wire.ErrThreadBusy, "thread %s has an unfinished run %s (%s): wait for it or answer its interrupt, or send multitask_strategy enqueue, interrupt or rollback", busy.ThreadID, busy.RunID, busy.Status)
	}
	var inc *runstate.IncompatibleError
	if errors.As(err, &inc) {
		return errorf(http.StatusConflict, wire.ErrConflict, "%s", inc.Error())
	}
	var ee *runner.EditError
	if errors.As(err, &ee) {
		// An approval edit the tool's schema refuses: the interrupt stays pending.
		return badParam("args", "%s", ee.Error())
	}
	var re *runner.Error
	if errors.As(err, &re) && re.Kind == runner.KindUserInput {
		return errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "%s", re.Error())
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errorf(http.StatusNotFound, wire.ErrNotFound, "not found")
	case errors.Is(err, store.ErrInvalid):
		return errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "%s", err.Error())
	case errors.Is(err, store.ErrConflict):
		return errorf(http.StatusConflict, wire.ErrConflict, "%s", err.Error())
	case errors.Is(err, store.ErrUnavailable):
		e := errorf(http.StatusServiceUnavailable, wire.ErrUnavailable, "the database is unavailable; retry later")
		e.retry = 1
		return e
	case errors.Is(err, threadhandoff.ErrInvalidInterrupt), errors.Is(err, threadhandoff.ErrInvalidDecision):
		return errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "%s", err.Error())
	case errors.Is(err, errShuttingDown):
		e := errorf(http.StatusServiceUnavailable, wire.ErrUnavailable, "the server is shutting down; retry on another instance")
		e.retry = 1
		return e
	}
	if re != nil && (re.Kind == runner.KindModelTransient || re.Kind == runner.KindToolTransient) {
		return errorf(http.StatusBadGateway, wire.ErrUpstream, "%s", re.Error())
	}
	return errorf(http.StatusInternalServerError, wire.ErrInternal, "internal error")
}

var errShuttingDown = errors.New("server: shutting down")

// writeError writes err as {"error": {...}}. Internal errors are logged
// and their text is not sent.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	s.writeErrorDetail(w, r, err, ae, wire.ErrorDetail{Type: ae.typ, Message: ae.msg, Param: ae.param, Code: ae.typ, ErrorExtra: ae.extra})
}

// writeErrorDetail answers err, classified as ae, with d as the error
// object.
func (s *Server) writeErrorDetail(w http.ResponseWriter, r *http.Request, err error, ae *apiError, d wire.ErrorDetail) {
	if ae.status >= 500 && ae.typ == wire.ErrInternal {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if ae.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retry))
	}
	for k, v := range ae.headers {
		w.Header().Set(k, v)
	}
	writeJSON(w, ae.status, wire.ErrorBody{Error: d})
}

// writeOpenAIError writes err as OpenAI's API does (see openAIError).
func (s *Server) writeOpenAIError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	s.writeErrorDetail(w, r, err, ae, openAIError(ae))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		slog.Error("encode response", "error", err)
		status, b = http.StatusInternalServerError, []byte(`{"error":{"type":"internal_error","message":"internal error"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// decodeJSON reads the request body into v: one JSON value, within the
// body limit, with unknown fields refused when strict.
func decodeJSON(r *http.Request, v any, strict bool) error {
	// The body is JSON whatever the Content-Type says: `curl -d` sends
	// application/x-www-form-urlencoded by default.
	if ct := strings.ToLower(r.Header.Get("Content-Type")); strings.HasPrefix(ct, "multipart/") {
		return errorf(http.StatusUnsupportedMediaType, wire.ErrInvalidRequest, "Content-Type %q: the body must be JSON", ct)
	}
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("invalid JSON: the body must hold one JSON value and nothing after it")
	}
	return nil
}

func jsonError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return badRequest("the request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("invalid JSON: the body ends in the middle of a value")
	case errors.As(err, &se):
		return badRequest("invalid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.As(err, &te):
		if te.Field != "" {
			return badParam(te.Field, "invalid JSON: field %q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return badRequest("invalid JSON: the body must be a JSON object, not %s", te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return badParam(strings.Trim(name, `"`), "unknown field %s", name)
	}
	return badRequest("invalid JSON: %s", err.Error())
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int", "int64", "int32", "float64", "uint", "uint64":
		return "a number"
	}
	return k
}
