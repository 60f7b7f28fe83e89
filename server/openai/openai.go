package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/runtext"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/server/openai/internal/oai"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// Protocol serves OpenAI's APIs over a server's core, where a model is a
// network: POST /v1/chat/completions (chat.go), POST /v1/responses
// (responses.go), GET /v1/models and /v1/models/{id}. Errors on its routes
// are OpenAI's error objects. The zero value is ready to mount.
type Protocol struct{}

// Mount registers the routes.
func (Protocol) Mount(c server.Core) {
	s := &api{c: c}
	rt := server.Route{Scope: server.ScopeRead, ErrorBody: errorBody}
	stream := server.Route{Scope: server.ScopeRun, Streaming: true, ErrorBody: errorBody}
	c.Handle("GET /v1/models", rt, s.listModels)
	c.Handle("GET /v1/models/{id}", rt, s.getModel)
	c.Handle("POST /v1/chat/completions", stream, s.chatCompletions)
	c.Handle("POST /v1/responses", stream, s.responses)
}

// api is the routes' handlers on a core. This file is what OpenAI's two
// APIs served here share (chat.go: /v1/chat/completions, responses.go:
// /v1/responses): the models (the networks), OpenAI's error names, request
// fields honoured or refused, the thread a request runs on, and the fold of
// a run's events into an answer.
type api struct {
	c server.Core
}

// startedAt is the "created" of the models: when this process started.
var startedAt = time.Now().Unix()

// listModels is OpenAI's GET /v1/models: the networks, as models.
func (s *api) listModels(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	out := wire.List[oai.Model]{Object: "list", Data: []oai.Model{}}
	for _, n := range s.c.Networks() {
		if !c.SeesNetwork(n.Name()) {
			continue
		}
		out.Data = append(out.Data, oai.Model{ID: n.Name(), Object: "model", Created: startedAt, OwnedBy: "baton"})
	}
	server.WriteJSON(w, http.StatusOK, out)
	return nil
}

// getModel is OpenAI's GET /v1/models/{id}: a network, as a model.
func (s *api) getModel(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	id := r.PathValue("id")
	if _, ok := s.c.Network(id); !ok || !c.SeesNetwork(id) {
		return unknownModel(id)
	}
	server.WriteJSON(w, http.StatusOK, oai.Model{ID: id, Object: "model", Created: startedAt, OwnedBy: "baton"})
	return nil
}

// model returns the network a request names as its model.
func (s *api) model(name string) (*server.Network, error) {
	if name == "" {
		return nil, server.BadParam("model", "model is required: the name of a baton network (GET /v1/models)")
	}
	if nw, ok := s.c.Network(name); ok {
		return nw, nil
	}
	return nil, unknownModel(name)
}

func unknownModel(name string) *server.Error {
	e := server.Errorf(http.StatusNotFound, wire.ErrNotFound, "the model %q does not exist: models are this server's networks (GET /v1/models)", name)
	e.Param, e.Code = "model", "model_not_found"
	return e
}

// openAIError is an error as OpenAI's API words it: type
// invalid_request_error (4xx), requests (429) or server_error (5xx), and a
// code (model_not_found, invalid_api_key, unsupported_parameter, …).
func openAIError(ae *server.Error) wire.ErrorDetail {
	d := ae.Detail()
	d.Type, d.Code = oai.OpenAIInvalidRequest, ae.Code
	switch {
	case ae.Status == http.StatusTooManyRequests:
		d.Type = oai.OpenAIRateLimit
	case ae.Status >= 500:
		d.Type = oai.OpenAIServer
	}
	if d.Code != "" {
		return d
	}
	switch ae.Type {
	case wire.ErrUnauthorized:
		d.Code = "invalid_api_key"
	case wire.ErrRateLimited:
		d.Code = "rate_limit_exceeded"
	case wire.ErrInvalidRequest:
		d.Code = "invalid_request"
		if ae.Param != "" {
			d.Code = "invalid_value"
		}
	case wire.ErrUnsupported:
		d.Code = "unsupported_parameter"
	default:
		d.Code = ae.Type
	}
	return d
}

// errorBody is the body of an error answer on OpenAI's routes.
func errorBody(ae *server.Error) any { return wire.ErrorBody{Error: openAIError(ae)} }

// unsupported refuses a request field baton does not honour.
func unsupported(param, format string, args ...any) *server.Error {
	e := server.BadParam(param, format, args...)
	e.Type, e.Code = wire.ErrUnsupported, "unsupported_parameter"
	return e
}

// WebhookKey is the metadata key of a request that names its run's own
// webhook URL (POST /v1/chat/completions and /v1/responses).
const WebhookKey = "webhook"

// openAIRun is what an OpenAI request runs: a turn of nw on the thread of
// req (see openAIThread) with input after hist, and opts.
type openAIRun struct {
	nw     *server.Network
	req    *oai.OpenAIRequest
	source string // the API, kept in a new thread's metadata
	hist   []message.Message
	input  string
	opts   []runner.RunOption
}

// serveOpenAI answers an OpenAI request whose body is a Req (an unknown
// field refused): check refuses it or turns it into the run it asks for,
// which starts within the request's timeout (or the stream's, when it
// streams), and respond writes the answer, whole or streamed.
func serveOpenAI[Req any](s *api, w http.ResponseWriter, r *http.Request, c *server.Caller,
	check func(*Req) (openAIRun, error), respond func(http.ResponseWriter, *http.Request, *answer, *Req) error) error {
	var req Req
	if err := server.DecodeJSON(r, &req, true); err != nil {
		return err
	}
	o, err := check(&req)
	if err != nil {
		return err
	}
	r, cancel := s.c.WithTimeout(r, o.req.Stream)
	defer cancel()
	a, err := s.openAITurn(w, r, c, o)
	if err != nil {
		return err
	}
	return respond(w, r, a, &req)
}

// openAITurn starts the run of an OpenAI request and names its thread and
// run in the answer's headers.
func (s *api) openAITurn(w http.ResponseWriter, r *http.Request, c *server.Caller, o openAIRun) (*answer, error) {
	if err := s.c.CheckInput(o.input); err != nil {
		return nil, err
	}
	ctx := r.Context()
	if u, ok := o.req.Metadata[WebhookKey]; ok {
		// The run's own webhook, as POST …/runs' "webhook".
		opt, err := s.c.Webhook(ctx, "metadata."+WebhookKey, u)
		if err != nil {
			return nil, err
		}
		o.opts = append(o.opts, opt)
	}
	threadID, err := s.openAIThread(ctx, r, c, o.nw, o.req, o.source, o.hist, o.input)
	if err != nil {
		return nil, err
	}
	run, err := s.c.StartTurn(ctx, c, o.nw, server.Turn{ThreadID: threadID, Input: o.input, Options: o.opts})
	if err != nil {
		return nil, err
	}
	w.Header().Set(server.ThreadHeader, threadID)
	w.Header().Set("Baton-Run-Id", run.ID())
	return &answer{run: run}, nil
}

// openAIAnswer waits for the answer of a request that does not stream: a
// failed run is the request's error; a run waiting for approval names its
// interrupt in the Baton-Interrupt-Id header.
func (s *api) openAIAnswer(w http.ResponseWriter, r *http.Request, a *answer) error {
	if err := s.wait(r.Context(), a); err != nil {
		return err
	}
	if a.failed != nil {
		return a.failed
	}
	if a.interrupt != nil {
		w.Header().Set("Baton-Interrupt-Id", a.interrupt.ID)
	}
	return nil
}

// openAIThread returns the thread an OpenAI request runs on: the one its
// Baton-Thread-Id header names (the request's history then is the
// thread's), else a new thread seeded with hist, named after the input.
func (s *api) openAIThread(ctx context.Context, r *http.Request, c *server.Caller, nw *server.Network, q *oai.OpenAIRequest, source string, hist []message.Message, input string) (string, error) {
	if id := r.Header.Get(server.ThreadHeader); id != "" {
		th, err := s.c.Thread(ctx, c, id)
		if err != nil {
			return "", err
		}
		if th.Network != nw.Name() {
			return "", server.BadParam("model", "thread %s belongs to network %q, not %q", th.ID, th.Network, nw.Name())
		}
		return th.ID, nil
	}
	md := map[string]json.RawMessage{"source": json.RawMessage(`"` + source + `"`)}
	if user := cmp.Or(q.User, q.SafetyIdentifier); user != "" {
		md["user"], _ = json.Marshal(user)
	}
	if len(q.Metadata) > 0 {
		if len(q.Metadata) > 16 {
			return "", server.BadParam("metadata", "at most 16 metadata keys")
		}
		md["metadata"], _ = json.Marshal(q.Metadata)
	}
	nm := make([]store.NewMessage, len(hist))
	for i, m := range hist {
		nm[i] = store.NewMessage{Message: m}
	}
	th, err := s.c.CreateThread(ctx, c, &store.CreateThreadParams{Network: nw.Name(), Name: threads.Title(input), Metadata: md, Messages: nm})
	if err != nil {
		return "", err
	}
	return th.ID, nil
}

// turn is a message of a request's conversation: its role and content
// (a string or an array of text parts).
type turn struct {
	role    string
	content json.RawMessage
}

// conversation turns a request's conversation (messages, input; param
// names it) into the thread's earlier messages, after hist, and the input:
// the last turn, the user's.
func conversation(hist []message.Message, turns []turn, param string) ([]message.Message, string, error) {
	if len(turns) == 0 || len(turns) > maxChatMessages {
		return nil, "", server.BadParam(param, "%s must hold at least one message (at most %d), the last from the user", param, maxChatMessages)
	}
	for i, t := range turns {
		text, err := chatText(t.content)
		if err != nil {
			return nil, "", server.BadParam(param, "%s[%d].content: %s", param, i, err.Error())
		}
		last := i == len(turns)-1
		switch t.role {
		case "user":
			if last {
				return hist, text, nil
			}
			hist = append(hist, message.User(text))
		case "system", "developer":
			if !last {
				hist = append(hist, message.System(text))
			}
		case "assistant":
			if !last && text != "" {
				hist = append(hist, message.Assistant("", text))
			}
		default:
			return nil, "", server.BadParam(param, "%s[%d].role %q is not system, developer, user or assistant", param, i, t.role)
		}
	}
	return nil, "", server.BadParam(param, "the last message must be from the user")
}

// answer folds a run's events into an OpenAI answer: the text of every
// assistant message of the run, in order, separated by blank lines; how it
// finished; its usage.
type answer struct {
	run  *server.Run
	text runtext.Answer
	end  *runner.RunEndEvent
	// finish is the answer's finish: stop, length (cut at the output
	// token limit), content_filter, or interrupted (the run waits for a
	// person's approval: interrupt).
	finish    string
	interrupt *oai.OpenAIInterrupt
	failed    *server.Error
}

// add folds an event and returns the text it adds.
func (a *answer) add(e server.Entry) string {
	out := a.text.Add(e)
	switch runner.EventType(e.Type) {
	case runner.TypeInterrupt:
		var ev runner.InterruptEvent
		if json.Unmarshal(e.Data, &ev) == nil && ev.Interrupt != nil {
			in := &oai.OpenAIInterrupt{ID: ev.Interrupt.ID, Tools: []string{}, DecisionURL: "/v1/interrupts/" + ev.Interrupt.ID + "/decision"}
			for _, ar := range ev.Interrupt.ActionRequests {
				in.Tools = append(in.Tools, ar.Name)
			}
			a.interrupt, a.finish = in, "interrupted"
			out = a.text.Note("[Waiting for approval of " + strings.Join(in.Tools, ", ") + ": interrupt " + in.ID +
				". Decide with POST " + in.DecisionURL + ".]")
		}
	case runner.TypeError:
		var ev runner.ErrorEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			switch ev.Kind {
			case runner.KindLength:
				a.finish = "length"
			case runner.KindContentFilter:
				a.finish = "content_filter"
			case runner.KindModelTransient, runner.KindToolTransient:
				a.failed = server.Errorf(http.StatusBadGateway, wire.ErrUpstream, "the run failed: %s", ev.Message)
			case runner.KindUserInput:
				a.failed = server.Errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "the run failed: %s", ev.Message)
			default:
				a.failed = server.Errorf(http.StatusInternalServerError, wire.ErrInternal, "the run failed: %s", ev.Message)
			}
		}
	case runner.TypeRunEnd:
		var ev runner.RunEndEvent
		if json.Unmarshal(e.Data, &ev) == nil && ev.Status != runstate.StatusSuspended {
			a.end = &ev
		}
	}
	return out
}

// finishReason is the answer's finish: stop unless add saw another.
func (a *answer) finishReason() string {
	if a.finish == "" {
		return "stop"
	}
	return a.finish
}

// usage is the run's usage.
func (a *answer) usage() message.Usage {
	if a.end == nil {
		return message.Usage{}
	}
	return a.end.Usage
}

// baton is the run behind the answer, for its "baton" field.
func (a *answer) baton() *oai.OpenAIRun {
	o := &oai.OpenAIRun{ThreadID: a.run.ThreadID(), RunID: a.run.ID(), Status: string(runstate.StatusRunning), Interrupt: a.interrupt}
	if a.end != nil {
		o.Status, o.LastAgent = string(a.end.Status), a.end.LastAgent
	}
	return o
}

// wait folds the run's events until it ends (or waits for a person).
func (s *api) wait(ctx context.Context, a *answer) error {
	var cur server.Cursor
	for {
		rd := a.run.Since(cur, 0, nil)
		for _, e := range rd.Entries {
			a.add(e)
			cur = e.At
		}
		if rd.Done {
			return nil
		}
		select {
		case <-rd.Wait:
		case <-s.c.ShuttingDown():
			return server.ErrShuttingDown
		case <-ctx.Done():
			return server.Errorf(http.StatusGatewayTimeout, wire.ErrTimeout, "the run did not finish within %s; follow it at %s", s.c.RequestTimeout(), server.EventsURL(a.run.ThreadID(), a.run.ID()))
		}
	}
}

// followOpenAI streams the run's events to an OpenAI client: each event folded
// into a, its text (if any) sent by send; a comment ping after each
// heartbeat without events. It returns false when the client is gone. A
// run cut by the server's shutdown (handed to another instance) fails the
// answer with a 503-type error naming the run's events URL: an OpenAI
// client, which cannot resume a stream, raises it instead of taking the
// cut answer for a whole one.
func (s *api) followOpenAI(ctx context.Context, sw *sse.Writer, a *answer, send func(text string) error) bool {
	hb := time.NewTimer(s.c.Heartbeat())
	defer hb.Stop()
	var cur server.Cursor
	for {
		rd := a.run.Since(cur, 256, nil)
		for _, e := range rd.Entries {
			cur = e.At
			if out := a.add(e); out != "" {
				if send(out) != nil {
					return false
				}
			}
		}
		if len(rd.Entries) > 0 {
			if sw.Flush() != nil {
				return false
			}
			hb.Stop()
			hb.Reset(s.c.Heartbeat())
		}
		if rd.Done {
			return true
		}
		select {
		case <-rd.Wait:
		case <-ctx.Done():
			return false
		case <-s.c.ShuttingDown():
			e := server.Errorf(http.StatusServiceUnavailable, wire.ErrUnavailable, "the server is shutting down: the run %s goes on on another instance; follow it at %s", a.run.ID(), server.EventsURL(a.run.ThreadID(), a.run.ID()))
			e.RetryAfter = 1
			a.failed = e
			return true
		case <-hb.C:
			if sw.Comment("ping") != nil {
				return false
			}
			hb.Reset(s.c.Heartbeat())
		}
	}
}

// openAIStream streams the answer of a run to an OpenAI client with send:
// an event stream of data-only events, with no retry field (OpenAI's Python
// client reads a block without data as an event whose empty data is not
// JSON).
func (s *api) openAIStream(w http.ResponseWriter, r *http.Request, a *answer, send func(ctx context.Context, sw *sse.Writer)) error {
	ctx := r.Context()
	release, err := s.c.OpenStream(ctx)
	if err != nil {
		return err
	}
	defer release()
	defer a.run.Reader()()
	sw, err := s.c.NewStream(w, a.run, false)
	if err != nil {
		return nil
	}
	send(ctx, sw)
	return nil
}

// data is an SSE event of v's JSON.
func data(v any) sse.Event {
	b, _ := json.Marshal(v)
	return sse.Event{Data: b}
}
