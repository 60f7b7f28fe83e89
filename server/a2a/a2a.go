package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// This file publishes each network as an A2A agent (docs/a2a.md): its
// agent card at GET /a2a/{network}/.well-known/agent-card.json (and at
// /.well-known/agent-card.json when the server runs one network), and the
// A2A JSON-RPC methods, with their SSE streams, at POST /a2a/{network}. An
// A2A context is a thread, a task is a run: the methods run turns and
// follow runs exactly as the REST routes do, wherever the run executes.

// Protocol serves each network as an A2A agent over a server's core. The
// zero value is ready to mount.
type Protocol struct{}

// Mount registers the routes: the card (public) and the JSON-RPC endpoint
// of each network, and the card at /.well-known/agent-card.json when the
// server runs one network.
func (Protocol) Mount(c server.Core) {
	s := &api{c: c}
	c.Handle("GET /a2a/{network}/.well-known/agent-card.json", server.Route{Public: true}, s.a2aCard)
	c.Handle("POST /a2a/{network}", server.Route{Streaming: true}, s.a2aRPC)
	if len(c.Networks()) == 1 {
		c.Handle("GET /.well-known/agent-card.json", server.Route{Public: true}, s.a2aCard)
	}
}

// api is the routes' handlers on a core.
type api struct {
	c server.Core
}

// a2aProtocolVersion is the A2A protocol version the card declares.
const a2aProtocolVersion = "0.3.0"

// answerArtifact is the id of the artifact that holds a task's answer: the
// text of every assistant message of the run, in order, separated by blank
// lines (as /v1/chat/completions answers).
const answerArtifact a2a.ArtifactID = "answer"

func (s *api) a2aCard(w http.ResponseWriter, r *http.Request, _ *server.Caller) error {
	name := r.PathValue("network")
	if nets := s.c.Networks(); name == "" && len(nets) == 1 {
		name = nets[0].Name()
	}
	nw, ok := s.c.Network(name)
	if !ok {
		return server.NotFound("network", name)
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	server.WriteJSON(w, http.StatusOK, s.agentCard(r, nw))
	return nil
}

// agentCard is the A2A agent card of a network, with the URL the request
// reached the server at.
func (s *api) agentCard(r *http.Request, nw *server.Network) *a2a.AgentCard {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	entry, _ := nw.Agents().Agent(nw.Agents().Entry())
	desc := "A baton network of agents: " + strings.Join(nw.Agents().Names(), ", ") + "."
	if entry != nil && entry.Description != "" {
		desc = entry.Description
	}
	card := &a2a.AgentCard{
		Name: nw.Name(), Description: desc, URL: scheme + "://" + r.Host + "/a2a/" + nw.Name(),
		PreferredTransport: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2aProtocolVersion, Version: nw.Agents().Fingerprint(),
		Capabilities:      a2a.AgentCapabilities{Streaming: true},
		DefaultInputModes: []string{"text/plain", "application/json"}, DefaultOutputModes: []string{"text/plain"},
		Provider: &a2a.AgentProvider{Org: "baton", URL: scheme + "://" + r.Host},
		SecuritySchemes: a2a.NamedSecuritySchemes{"baton": a2a.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "A baton API key (baton keys create): the key's owner is the tenant of the tasks."}},
		Security: []a2a.SecurityRequirements{{"baton": a2a.SecuritySchemeScopes{}}},
		Skills:   []a2a.AgentSkill{},
	}
	card.AdditionalInterfaces = []a2a.AgentInterface{{Transport: a2a.TransportProtocolJSONRPC, URL: card.URL}}
	for _, a := range nw.Agents().Agents() {
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: a.Name, Name: a.Name, Description: a.Description, Tags: []string{"baton", nw.Name()}})
	}
	return card
}

// a2aRPC serves the A2A JSON-RPC methods of a network.
func (s *api) a2aRPC(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	nw, ok := s.c.Network(r.PathValue("network"))
	if !ok {
		return server.NotFound("network", r.PathValue("network"))
	}
	a2asrv.NewJSONRPCHandler(&a2aHandler{s: s, nw: nw, c: c}).ServeHTTP(w, r)
	return nil
}

// a2aHandler is a2asrv.RequestHandler on a served network, for one caller.
type a2aHandler struct {
	s  *api
	nw *server.Network
	c  *server.Caller
}

var _ a2asrv.RequestHandler = (*a2aHandler)(nil)

// a2aError turns an error of the server into an A2A error, whose JSON-RPC
// data carries the message.
func a2aError(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{a2a.ErrInvalidParams, a2a.ErrTaskNotFound, a2a.ErrInvalidRequest, a2a.ErrUnsupportedOperation, a2a.ErrUnsupportedContentType} {
		if errors.Is(err, e) {
			return err
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", a2a.ErrServerError, err)
	}
	ae := server.Classify(err)
	switch {
	case ae.Status == http.StatusNotFound:
		return fmt.Errorf("%w: %s", a2a.ErrTaskNotFound, ae.Message)
	case ae.Status == http.StatusConflict:
		return fmt.Errorf("%w: %s", a2a.ErrInvalidRequest, ae.Message)
	case ae.Status < 500:
		return fmt.Errorf("%w: %s", a2a.ErrInvalidParams, ae.Message)
	case ae.Status == http.StatusInternalServerError:
		return fmt.Errorf("%w: %s", a2a.ErrInternalError, ae.Message)
	}
	return fmt.Errorf("%w: %s", a2a.ErrServerError, ae.Message)
}

// a2aInput is what an A2A message asks: the user's input, the earlier
// history it brings for a new context, and the decisions that answer a
// task waiting for input.
type a2aInput struct {
	text      string
	history   []message.Message
	decisions []runner.Decision
}

// maxA2AHistory bounds the history a message brings.
const maxA2AHistory = 1000

// parseA2AMessage reads a message a client sends: its text parts are the
// input, a data part {"history": [{role, text, agent}]} the earlier
// conversation (for a new context), a data part with a decision ({"type":
// "approve"|"reject"|"edit", "args", "message", "call_id"} or {"decisions":
// [...]}) answers an interrupted task; the text "approve" or "reject"
// alone does too.
func parseA2AMessage(m *a2a.Message) (*a2aInput, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: message is required", a2a.ErrInvalidParams)
	}
	if m.Role != "" && m.Role != a2a.MessageRoleUser {
		return nil, fmt.Errorf("%w: a message to a baton agent is from the user (role %q)", a2a.ErrInvalidParams, m.Role)
	}
	in := &a2aInput{}
	var texts []string
	for i, p := range m.Parts {
		switch p := p.(type) {
		case a2a.TextPart:
			texts = append(texts, p.Text)
		case a2a.DataPart:
			if err := in.data(p.Data); err != nil {
				return nil, fmt.Errorf("%w: parts[%d]: %v", a2a.ErrInvalidParams, i, err)
			}
		case a2a.FilePart:
			return nil, fmt.Errorf("%w: parts[%d]: file parts are not supported (text and data only)", a2a.ErrUnsupportedContentType, i)
		default:
			return nil, fmt.Errorf("%w: parts[%d]: unknown part", a2a.ErrInvalidParams, i)
		}
	}
	in.text = strings.Join(texts, "\n")
	return in, nil
}

// data reads a data part.
func (in *a2aInput) data(d map[string]any) error {
	if h, ok := d["history"]; ok {
		items, ok := h.([]any)
		if !ok {
			return errors.New("history must be a list of {role, text}")
		}
		if len(items) > maxA2AHistory {
			return fmt.Errorf("history has %d messages, more than %d", len(items), maxA2AHistory)
		}
		for j, it := range items {
			e, _ := it.(map[string]any)
			role, _ := e["role"].(string)
			text, _ := e["text"].(string)
			if text == "" {
				continue
			}
			switch role {
			case "system":
				in.history = append(in.history, message.System(text))
			case "user":
				in.history = append(in.history, message.User(text))
			case "assistant", "agent":
				in.history = append(in.history, message.Assistant("", text))
			default:
				return fmt.Errorf("history[%d]: role %q is not system, user or assistant", j, role)
			}
		}
		return nil
	}
	if _, ok := d["type"]; ok {
		d = map[string]any{"decisions": []any{d}}
	}
	if ds, ok := d["decisions"]; ok {
		b, err := json.Marshal(ds)
		if err != nil {
			return err
		}
		var req wire.Decision
		if err := json.Unmarshal(b, &req.Decisions); err != nil {
			return fmt.Errorf("decisions: %v", err)
		}
		out, err := server.Decisions(&req)
		if err != nil {
			return err
		}
		in.decisions = append(in.decisions, out...)
		return nil
	}
	return errors.New(`a data part holds "history", a decision ("type") or "decisions"`)
}

// contextIDPattern is the shape of a context id a client may choose.
var contextIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// OnSendMessage runs the message's turn (or answers its task's interrupt)
// and returns the task once it is final or waits for input; with blocking
// false, or past the request timeout, as it is then.
func (h *a2aHandler) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	run, err := h.begin(ctx, p)
	if err != nil {
		return nil, a2aError(err)
	}
	f := newTaskFold(run)
	f.request(p.Message)
	blocking := p.Config == nil || p.Config.Blocking == nil || *p.Config.Blocking
	wctx, cancel := context.WithTimeout(ctx, h.s.c.RequestTimeout())
	defer cancel()
	if !blocking {
		wctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	// The run's earlier executions (a resumed task's) are folded too; only
	// an event of this one settles the task.
	from := run.StartedAt()
	_ = h.s.c.Events(wctx, run, server.Cursor{}, func(e server.Entry) bool {
		f.add(e)
		return !f.settled() || !from.Less(e.At)
	})
	return f.task(historyLength(p.Config)), nil
}

// OnSendMessageStream runs the message's turn and streams its task: the
// task first, then its status and artifact updates, until it is final or
// waits for input.
func (h *a2aHandler) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		run, err := h.begin(ctx, p)
		if err != nil {
			yield(nil, a2aError(err))
			return
		}
		h.stream(ctx, run, run.StartedAt(), p.Message, yield)
	}
}

// OnResubscribeToTask streams a task from now: the task as it is, then its
// updates, until it is final or waits for input.
func (h *a2aHandler) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if p == nil {
			yield(nil, a2a.ErrInvalidParams)
			return
		}
		run, err := h.run(ctx, string(p.ID))
		if err != nil {
			yield(nil, a2aError(err))
			return
		}
		h.stream(ctx, run, run.Last(), nil, yield)
	}
}

// stream yields a run's task: the events up to from are folded into the
// task yielded first, the later ones follow as updates. req, if not nil,
// is the message that started them.
func (h *a2aHandler) stream(ctx context.Context, run *server.Run, from server.Cursor, req *a2a.Message, yield func(a2a.Event, error) bool) {
	defer run.Reader()()
	f := newTaskFold(run)
	f.request(req)
	exec := run.StartedAt()
	sent := false
	ok := true
	err := h.s.c.Events(ctx, run, server.Cursor{}, func(e server.Entry) bool {
		if !sent && from.Less(e.At) {
			sent = true
			if ok = yield(f.task(nil), nil); !ok {
				return false
			}
		}
		evs := f.add(e)
		if sent {
			for _, ev := range evs {
				if ok = yield(ev, nil); !ok {
					return false
				}
			}
		}
		// Events of a resumed task's earlier executions do not settle it.
		return !f.settled() || !exec.Less(e.At)
	})
	if !ok {
		return
	}
	if !sent {
		if !yield(f.task(nil), nil) {
			return
		}
	}
	if err != nil && ctx.Err() == nil {
		yield(nil, a2aError(err))
	}
}

// OnGetTask returns a task as it is now.
func (h *a2aHandler) OnGetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	if q == nil || q.ID == "" {
		return nil, fmt.Errorf("%w: id is required", a2a.ErrInvalidParams)
	}
	run, err := h.run(ctx, string(q.ID))
	if err != nil {
		return nil, a2aError(err)
	}
	f := newTaskFold(run)
	now, cancel := context.WithCancel(ctx)
	cancel() // what is there now, without waiting
	_ = h.s.c.Events(now, run, server.Cursor{}, func(e server.Entry) bool {
		f.add(e)
		return true
	})
	return f.task(q.HistoryLength), nil
}

// OnCancelTask cancels the task's run, as POST
// /v1/threads/{id}/runs/{run_id}/cancel does (threads.Service.Cancel): it
// stops at its next safe boundary, keeping what it did, wherever it
// executes. A finished task is not cancelable.
func (h *a2aHandler) OnCancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	if p == nil || p.ID == "" {
		return nil, fmt.Errorf("%w: id is required", a2a.ErrInvalidParams)
	}
	run, err := h.run(ctx, string(p.ID))
	if err != nil {
		return nil, a2aError(err)
	}
	run, err = h.s.c.Cancel(ctx, h.c, h.nw, run.ThreadID(), run.ID())
	var fe *threads.FinishedError
	switch {
	case errors.As(err, &fe):
		return nil, fmt.Errorf("%w: task %s is already %s", a2a.ErrTaskNotCancelable, p.ID, taskState(fe.Status))
	case err != nil:
		return nil, a2aError(err)
	}
	f := newTaskFold(run)
	now, cancel := context.WithCancel(ctx)
	cancel()
	_ = h.s.c.Events(now, run, server.Cursor{}, func(e server.Entry) bool {
		f.add(e)
		return true
	})
	t := f.task(nil)
	// The run's entry in this process may not have caught up with its end
	// yet (another process executed it): the store says it is cancelled.
	t.Status.State = a2a.TaskStateCanceled
	return t, nil
}

// OnGetTaskPushConfig: no push notifications.
func (h *a2aHandler) OnGetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// OnListTaskPushConfig: no push notifications.
func (h *a2aHandler) OnListTaskPushConfig(context.Context, *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// OnSetTaskPushConfig: no push notifications.
func (h *a2aHandler) OnSetTaskPushConfig(context.Context, *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// OnDeleteTaskPushConfig: no push notifications.
func (h *a2aHandler) OnDeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigParams) error {
	return a2a.ErrPushNotificationNotSupported
}

// OnGetExtendedAgentCard: the public card is the whole card.
func (h *a2aHandler) OnGetExtendedAgentCard(context.Context) (*a2a.AgentCard, error) {
	return nil, a2a.ErrAuthenticatedExtendedCardNotConfigured
}

// begin starts what a message asks: a turn on its context's thread (made
// for a new context), or the answer to its task's interrupt.
func (h *a2aHandler) begin(ctx context.Context, p *a2a.MessageSendParams) (*server.Run, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: params are required", a2a.ErrInvalidParams)
	}
	in, err := parseA2AMessage(p.Message)
	if err != nil {
		return nil, err
	}
	s, c, nw := h.s, h.c, h.nw
	if p.Message.TaskID != "" {
		return h.answer(ctx, p.Message, in)
	}
	if len(in.decisions) > 0 {
		return nil, fmt.Errorf("%w: a decision answers a task: give the message its taskId", a2a.ErrInvalidParams)
	}
	if err := s.c.CheckInput(in.text); err != nil {
		return nil, err
	}
	threadID := p.Message.ContextID
	if threadID != "" {
		if !contextIDPattern.MatchString(threadID) {
			return nil, fmt.Errorf("%w: contextId %q: want 1-128 letters, digits, '_', '.', ':' or '-'", a2a.ErrInvalidParams, threadID)
		}
		th, err := s.c.Thread(ctx, c, threadID)
		switch {
		case err == nil && th.Network != nw.Name():
			return nil, fmt.Errorf("%w: context %s is a thread of network %q, not %q", a2a.ErrInvalidParams, threadID, th.Network, nw.Name())
		case err == nil:
			if len(in.history) > 0 {
				return nil, fmt.Errorf("%w: history is for a new context; context %s has its own", a2a.ErrInvalidParams, threadID)
			}
			return s.c.StartTurn(ctx, c, nw, server.Turn{ThreadID: threadID, Input: in.text})
		case server.Classify(err).Status != http.StatusNotFound:
			return nil, err
		}
	}
	// A new context: a new thread, with the history the message brings.
	md := map[string]json.RawMessage{"source": json.RawMessage(`"a2a"`)}
	nm := make([]store.NewMessage, len(in.history))
	for i, m := range in.history {
		nm[i] = store.NewMessage{Message: m}
	}
	th, err := s.c.CreateThread(ctx, c, &store.CreateThreadParams{ID: threadID, Network: nw.Name(), Name: threads.Title(in.text), Metadata: md, Messages: nm})
	if err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("%w: contextId %q is taken", a2a.ErrInvalidParams, threadID)
		}
		return nil, err
	}
	return s.c.StartTurn(ctx, c, nw, server.Turn{ThreadID: th.ID, Input: in.text})
}

// answer resumes the interrupted run of a message's task with the
// decisions the message gives.
func (h *a2aHandler) answer(ctx context.Context, m *a2a.Message, in *a2aInput) (*server.Run, error) {
	s, c, nw := h.s, h.c, h.nw
	cp, err := s.c.LatestCheckpoint(ctx, c, string(m.TaskID))
	if errors.Is(err, store.ErrNotFound) || err == nil && cp.State.Network != nw.Name() {
		return nil, fmt.Errorf("%w: task %s", a2a.ErrTaskNotFound, m.TaskID)
	}
	if err != nil {
		return nil, err
	}
	if m.ContextID != "" && m.ContextID != cp.ThreadID {
		return nil, fmt.Errorf("%w: task %s is in context %s, not %s", a2a.ErrInvalidParams, m.TaskID, cp.ThreadID, m.ContextID)
	}
	if cp.State.Status != runstate.StatusInterrupted || cp.State.Interrupt == nil {
		return nil, fmt.Errorf("%w: task %s is %s, not waiting for input: send a new message in its context (contextId %s) to go on", a2a.ErrInvalidParams, m.TaskID, taskState(cp.State.Status), cp.ThreadID)
	}
	decisions := in.decisions
	if len(decisions) == 0 {
		switch strings.ToLower(strings.TrimSpace(in.text)) {
		case "approve", "approved", "yes":
			decisions = []runner.Decision{{Type: runner.DecisionApprove}}
		case "reject", "rejected", "no":
			decisions = []runner.Decision{{Type: runner.DecisionReject}}
		default:
			return nil, fmt.Errorf("%w: task %s waits for a decision on %s: answer approve or reject, or a data part {\"type\": \"approve\"|\"reject\"|\"edit\", ...}", a2a.ErrInvalidParams, m.TaskID, actionNames(cp.State.Interrupt))
		}
	}
	return s.c.Resume(ctx, c, nw, cp, decisions)
}

// run returns a run of the caller on this network, by id.
func (h *a2aHandler) run(ctx context.Context, id string) (*server.Run, error) {
	if id == "" || len(id) > 128 {
		return nil, fmt.Errorf("%w: task %q", a2a.ErrTaskNotFound, id)
	}
	run, err := h.s.c.Run(ctx, h.c, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && run.Network() != h.nw.Name() {
		return nil, fmt.Errorf("%w: task %s", a2a.ErrTaskNotFound, id)
	}
	return run, err
}

func historyLength(c *a2a.MessageSendConfig) *int {
	if c == nil {
		return nil
	}
	return c.HistoryLength
}

func actionNames(in *runstate.Interrupt) string {
	var names []string
	for _, ar := range in.ActionRequests {
		names = append(names, ar.Name)
	}
	return strings.Join(names, ", ")
}

// taskState is the A2A state of a run's status.
func taskState(st runstate.Status) a2a.TaskState {
	switch st {
	case runstate.StatusCompleted:
		return a2a.TaskStateCompleted
	case runstate.StatusFailed:
		return a2a.TaskStateFailed
	case runstate.StatusCancelled:
		return a2a.TaskStateCanceled
	case runstate.StatusInterrupted:
		return a2a.TaskStateInputRequired
	}
	return a2a.TaskStateWorking
}

// taskFold folds a run's events into its A2A task and the updates that
// stream it.
type taskFold struct {
	info    a2a.TaskInfo
	state   a2a.TaskState
	answer  strings.Builder
	started bool // the answer artifact has text
	// deltas is set when the current message's text came as deltas.
	deltas    bool
	history   []*a2a.Message
	status    *a2a.Message
	lastAgent string
	usage     *message.Usage
	failure   string
	final     bool
}

func newTaskFold(run *server.Run) *taskFold {
	return &taskFold{info: a2a.TaskInfo{TaskID: a2a.TaskID(run.ID()), ContextID: run.ThreadID()}, state: a2a.TaskStateSubmitted}
}

// request puts the message that started the task's latest execution in
// its history.
func (f *taskFold) request(m *a2a.Message) {
	if m == nil {
		return
	}
	c := *m
	c.TaskID, c.ContextID = f.info.TaskID, f.info.ContextID
	f.history = append(f.history, &c)
}

// settled reports whether the task is final or waits for input.
func (f *taskFold) settled() bool { return f.final }

func (f *taskFold) agentMessage(text string) *a2a.Message {
	m := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleAgent, TaskID: f.info.TaskID, ContextID: f.info.ContextID, Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}
	if f.lastAgent != "" {
		m.Metadata = map[string]any{"baton": map[string]any{"agent": f.lastAgent}}
	}
	return m
}

func (f *taskFold) metadata() map[string]any {
	b := map[string]any{"run_id": string(f.info.TaskID), "thread_id": f.info.ContextID}
	if f.lastAgent != "" {
		b["last_agent"] = f.lastAgent
	}
	if f.usage != nil {
		b["usage"] = map[string]any{"input_tokens": f.usage.InputTokens, "output_tokens": f.usage.OutputTokens}
	}
	return map[string]any{"baton": b}
}

// appendText adds text to the answer and returns its artifact update.
func (f *taskFold) appendText(text string, sep bool) a2a.Event {
	if sep && f.answer.Len() > 0 {
		text = "\n\n" + text
	}
	f.answer.WriteString(text)
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: f.info.TaskID, ContextID: f.info.ContextID, Append: f.started,
		Artifact: &a2a.Artifact{ID: answerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}}
	f.started = true
	return ev
}

func (f *taskFold) statusEvent(final bool, meta map[string]any) a2a.Event {
	now := time.Now().UTC()
	return &a2a.TaskStatusUpdateEvent{TaskID: f.info.TaskID, ContextID: f.info.ContextID, Final: final,
		Status: a2a.TaskStatus{State: f.state, Message: f.status, Timestamp: &now}, Metadata: meta}
}

// add folds an event and returns the A2A events that stream it.
func (f *taskFold) add(e server.Entry) []a2a.Event {
	batonEvent := func() map[string]any {
		var v map[string]any
		_ = json.Unmarshal(e.Data, &v)
		return map[string]any{"baton": map[string]any{"event": v}}
	}
	switch runner.EventType(e.Type) {
	case runner.TypeRunStart:
		var ev runner.RunStartEvent
		if json.Unmarshal(e.Data, &ev) != nil {
			return nil
		}
		f.state, f.status, f.final, f.failure = a2a.TaskStateWorking, nil, false, ""
		if ev.Agent != "" {
			f.lastAgent = ev.Agent
		}
		return []a2a.Event{f.statusEvent(false, batonEvent())}
	case runner.TypeAgentStart:
		var ev runner.AgentStartEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			f.lastAgent = ev.Agent
		}
		return []a2a.Event{f.statusEvent(false, batonEvent())}
	case runner.TypeTextDelta:
		var ev runner.TextDeltaEvent
		if json.Unmarshal(e.Data, &ev) != nil || ev.Delta == "" {
			return nil
		}
		sep := !f.deltas
		f.deltas = true
		return []a2a.Event{f.appendText(ev.Delta, sep)}
	case runner.TypeMessage:
		var ev runner.MessageEvent
		if json.Unmarshal(e.Data, &ev) != nil {
			return nil
		}
		deltas := f.deltas
		f.deltas = false
		if ev.Text != "" {
			f.history = append(f.history, f.agentMessage(ev.Text))
		}
		if !deltas && ev.Text != "" {
			return []a2a.Event{f.appendText(ev.Text, true)}
		}
		return nil
	case runner.TypeToolCall, runner.TypeToolResult, runner.TypeTransfer, runner.TypeTransferRejected, runner.TypeSuspended:
		return []a2a.Event{f.statusEvent(false, batonEvent())}
	case runner.TypeInterrupt:
		var ev runner.InterruptEvent
		if json.Unmarshal(e.Data, &ev) != nil || ev.Interrupt == nil {
			return nil
		}
		f.state = a2a.TaskStateInputRequired
		f.status = f.agentMessage("Waiting for a decision on " + actionNames(ev.Interrupt) + " (interrupt " + ev.Interrupt.ID +
			`): answer this task with "approve" or "reject", or a data part {"type": "approve"|"reject"|"edit", "args": {...}}.`)
		f.status.Metadata = map[string]any{"baton": map[string]any{"interrupt": ev.Interrupt}}
		return nil
	case runner.TypeError:
		var ev runner.ErrorEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			f.failure = ev.Message
		}
		return nil
	case runner.TypeRunEnd:
		var ev runner.RunEndEvent
		if json.Unmarshal(e.Data, &ev) != nil {
			return nil
		}
		u := ev.Usage
		f.usage = &u
		if ev.LastAgent != "" {
			f.lastAgent = ev.LastAgent
		}
		switch ev.Status {
		case runstate.StatusCompleted:
			f.state, f.final = a2a.TaskStateCompleted, true
			if ev.Output != "" {
				f.status = f.agentMessage(ev.Output)
			}
		case runstate.StatusCancelled:
			f.state, f.final = a2a.TaskStateCanceled, true
			if ev.Output != "" {
				f.status = f.agentMessage(ev.Output)
			}
		case runstate.StatusFailed:
			f.state, f.final = a2a.TaskStateFailed, true
			why := f.failure
			if why == "" {
				why = "the run failed"
			}
			f.status = f.agentMessage(why)
		case runstate.StatusInterrupted:
			f.state, f.final = a2a.TaskStateInputRequired, true
		default:
			// suspended: a background worker goes on with the run.
			return []a2a.Event{f.statusEvent(false, f.metadata())}
		}
		return []a2a.Event{f.statusEvent(true, f.metadata())}
	}
	return nil
}

// task is the task as folded so far; history, if not nil, bounds the
// messages of its history (the latest kept).
func (f *taskFold) task(history *int) *a2a.Task {
	now := time.Now().UTC()
	t := &a2a.Task{ID: f.info.TaskID, ContextID: f.info.ContextID, Status: a2a.TaskStatus{State: f.state, Message: f.status, Timestamp: &now},
		History: f.history, Metadata: f.metadata()}
	if f.answer.Len() > 0 {
		t.Artifacts = []*a2a.Artifact{{ID: answerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: f.answer.String()}}}}
	}
	if history != nil {
		switch n := *history; {
		case n <= 0:
			t.History = []*a2a.Message{}
		case n < len(t.History):
			t.History = t.History[len(t.History)-n:]
		}
	}
	if t.History == nil {
		t.History = []*a2a.Message{}
	}
	return t
}
