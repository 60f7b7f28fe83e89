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

// Error is an error a route answers with: its HTTP status, its type (the
// "type" of the error object, wire.Err…) and message. A handler returns
// one (or any error, which [Classify] turns into one).
type Error struct {
	Status  int
	Type    string
	Message string
	// Param names the request field at fault, if any.
	Param string
	// Code is for the error bodies of adapters (Route.ErrorBody): OpenAI's
	// codes (model_not_found, unsupported_parameter, …). baton's own error
	// object repeats Type as its code.
	Code string
	// RetryAfter, when > 0, is sent as Retry-After (seconds).
	RetryAfter int
	headers    map[string]string
	extra      *wire.ErrorExtra // more fields of the error object
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an [Error] of status and type typ.
func Errorf(status int, typ, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
}

func BadRequest(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, wire.ErrInvalidRequest, format, args...)
}

func BadParam(param, format string, args ...any) *Error {
	e := BadRequest(format, args...)
	e.Param = param
	return e
}

func NotFound(what, id string) *Error {
	return Errorf(http.StatusNotFound, wire.ErrNotFound, "%s %q not found", what, id)
}

// Classify turns any error into an Error.
func Classify(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return Errorf(http.StatusRequestEntityTooLarge, wire.ErrTooLarge, "request body is larger than %d bytes", mbe.Limit)
	}
	var busy *threads.BusyError
	if errors.As(err, &busy) {
		if busy.Status == threads.StatusQueued {
			return Errorf(http.StatusConflict, wire.ErrThreadBusy, "thread %s has %d runs queued (next %s): wait for them, or send multitask_strategy enqueue", busy.ThreadID, busy.Queued, busy.RunID)
		}
		return Errorf(http.StatusConflict, wire.ErrThreadBusy, "thread %s has an unfinished run %s (%s): wait for it or answer its interrupt, or send multitask_strategy enqueue, interrupt or rollback", busy.ThreadID, busy.RunID, busy.Status)
	}
	var inc *runstate.IncompatibleError
	if errors.As(err, &inc) {
		return Errorf(http.StatusConflict, wire.ErrConflict, "%s", inc.Error())
	}
	var ee *runner.EditError
	if errors.As(err, &ee) {
		// An approval edit the tool's schema refuses: the interrupt stays pending.
		return BadParam("args", "%s", ee.Error())
	}
	var re *runner.Error
	if errors.As(err, &re) && re.Kind == runner.KindUserInput {
		return Errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "%s", re.Error())
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Errorf(http.StatusNotFound, wire.ErrNotFound, "not found")
	case errors.Is(err, store.ErrInvalid):
		return Errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "%s", err.Error())
	case errors.Is(err, store.ErrConflict):
		return Errorf(http.StatusConflict, wire.ErrConflict, "%s", err.Error())
	case errors.Is(err, store.ErrDiskFull):
		e := Errorf(http.StatusServiceUnavailable, wire.ErrUnavailable, "the database's disk is full; retry once space is freed")
		e.RetryAfter = 5
		return e
	case errors.Is(err, store.ErrUnavailable):
		e := Errorf(http.StatusServiceUnavailable, wire.ErrUnavailable, "the database is unavailable; retry later")
		e.RetryAfter = 1
		return e
	case errors.Is(err, threadhandoff.ErrInvalidInterrupt), errors.Is(err, threadhandoff.ErrInvalidDecision):
		return Errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "%s", err.Error())
	case errors.Is(err, ErrShuttingDown):
		e := Errorf(http.StatusServiceUnavailable, wire.ErrUnavailable, "the server is shutting down; retry on another instance")
		e.RetryAfter = 1
		return e
	}
	if re != nil && (re.Kind == runner.KindModelTransient || re.Kind == runner.KindToolTransient) {
		return Errorf(http.StatusBadGateway, wire.ErrUpstream, "%s", re.Error())
	}
	return Errorf(http.StatusInternalServerError, wire.ErrInternal, "internal error")
}

var ErrShuttingDown = errors.New("server: shutting down")

// Detail is the error object of baton's error answers: {"type",
// "message", "param", "code"} (code repeats type) and the fields some
// errors add.
func (e *Error) Detail() wire.ErrorDetail {
	return wire.ErrorDetail{Type: e.Type, Message: e.Message, Param: e.Param, Code: e.Type, ErrorExtra: e.extra}
}

// writeError writes err as {"error": {...}}. Internal errors are logged
// and their text is not sent.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := Classify(err)
	s.writeBody(w, r, err, ae, wire.ErrorBody{Error: ae.Detail()})
}

// writeBody answers err, classified as ae, with body.
func (s *Server) writeBody(w http.ResponseWriter, r *http.Request, err error, ae *Error, body any) {
	if ae.Status >= 500 && ae.Type == wire.ErrInternal {
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	} else if errors.Is(err, store.ErrDiskFull) {
		// The operator must act: say it in the log, not only to clients.
		s.log.ErrorContext(r.Context(), "request refused: the database's disk is full; free space", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfter))
	}
	for k, v := range ae.headers {
		w.Header().Set(k, v)
	}
	WriteJSON(w, ae.Status, body)
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
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

// DecodeJSON reads the request body into v: one JSON value, within the
// body limit, with unknown fields refused when strict.
func DecodeJSON(r *http.Request, v any, strict bool) error {
	// The body is JSON whatever the Content-Type says: `curl -d` sends
	// application/x-www-form-urlencoded by default.
	if ct := strings.ToLower(r.Header.Get("Content-Type")); strings.HasPrefix(ct, "multipart/") {
		return Errorf(http.StatusUnsupportedMediaType, wire.ErrInvalidRequest, "Content-Type %q: the body must be JSON", ct)
	}
	dec := json.NewDecoder(r.Body)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return JSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return BadRequest("invalid JSON: the body must hold one JSON value and nothing after it")
	}
	return nil
}

// ReadBody reads the request body, within the body limit (an error that
// [Classify] answers 413 beyond it).
func ReadBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, JSONError(err)
	}
	return b, nil
}

// JSONError is the answer to a body that json could not decode: a 400
// saying where and why (413 past the body limit).
func JSONError(err error) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return BadRequest("the request body is empty: send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return BadRequest("invalid JSON: the body ends in the middle of a value")
	case errors.As(err, &se):
		return BadRequest("invalid JSON at byte %d: %s", se.Offset, se.Error())
	case errors.As(err, &te):
		if te.Field != "" {
			return BadParam(te.Field, "invalid JSON: field %q must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return BadRequest("invalid JSON: the body must be a JSON object, not %s", te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for DisallowUnknownFields.
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return BadParam(strings.Trim(name, `"`), "unknown field %s", name)
	}
	return BadRequest("invalid JSON: %s", err.Error())
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
