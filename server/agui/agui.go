package agui

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// This file serves the AG-UI protocol (https://docs.ag-ui.com, protocol
// 1.0) at POST /v1/agui/{network} (docs/agui.md): the body is AG-UI's
// RunAgentInput, the answer an SSE stream of AG-UI events made from the
// run's events. A run starts and is followed exactly as POST
// /v1/threads/{id}/runs does (startTurn, the run's log, events rebuilt from
// checkpoints); this file only translates. Every event's SSE id says where
// it stands in the baton run, so that the same request sent again with
// Last-Event-ID resumes after it, after a restart too.

// Protocol serves AG-UI over a server's core: POST /v1/agui/{network}. The
// zero value is ready to mount.
type Protocol struct{}

// Mount registers the route.
func (Protocol) Mount(c server.Core) {
	s := &api{c: c}
	c.Handle("POST /v1/agui/{network}", server.Route{Streaming: true}, s.aguiRun)
}

// api is the route's handler on a core.
type api struct {
	c server.Core
}

// aguiIDPattern is the shape of the threadId and runId a client chooses.
var aguiIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// Bounds of what a RunAgentInput brings.
const (
	maxAGUIMessages = 1000
	// maxAGUIValues bounds the bytes of state and context together: they
	// are kept in the run's state, in every checkpoint.
	maxAGUIValues = 16 << 10
)

// The run values (runner.WithValues) of a turn started by the AG-UI route,
// for Go instructions and tools (agent.RunContext.Values).
const (
	// AGUIStateValue holds the RunAgentInput's state, as the client sent
	// it, when it is not null or an empty object.
	AGUIStateValue = "agui_state"
	// AGUIContextValue holds the RunAgentInput's context, the list of
	// {description, value} as the client sent it, when not empty.
	AGUIContextValue = "agui_context"
)

// aguiInput is AG-UI's RunAgentInput. Fields it does not name are ignored,
// as AG-UI's objects are open.
type aguiInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	State          json.RawMessage `json:"state"`
	Messages       []aguiMessage   `json:"messages"`
	Tools          json.RawMessage `json:"tools"`
	Context        json.RawMessage `json:"context"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
	Resume         []aguiResume    `json:"resume"`
}

type aguiMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type aguiContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

type aguiResume struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// aguiRequest is a RunAgentInput read and checked: what baton does with it.
type aguiRequest struct {
	threadID, runID string
	// input is the last user message (empty for a resume).
	input string
	// history is the earlier messages, for a new thread.
	history []message.Message
	// values are the state and context, for the run.
	values map[string]json.RawMessage
	// state is the client's state object (nil: none), the base of the
	// snapshots sent.
	state map[string]json.RawMessage
	// agent is forwardedProps.baton.agent: the agent to start with.
	agent string
	// resume answers interrupts: interrupt id -> decisions.
	resume map[string][]runner.Decision
}

// parseAGUIInput reads a RunAgentInput. Every refusal is a 400 naming the
// field.
func parseAGUIInput(body []byte) (*aguiRequest, error) {
	var in aguiInput
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		return nil, server.JSONError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, server.BadRequest("invalid JSON: the body must hold one JSON value and nothing after it")
	}
	if !aguiIDPattern.MatchString(in.ThreadID) {
		return nil, server.BadParam("threadId", "threadId is required: 1-128 letters, digits, '_', '.', ':' or '-' (the baton thread id)")
	}
	if !aguiIDPattern.MatchString(in.RunID) {
		return nil, server.BadParam("runId", "runId is required: 1-128 letters, digits, '_', '.', ':' or '-'")
	}
	q := &aguiRequest{threadID: in.ThreadID, runID: in.RunID, values: map[string]json.RawMessage{}}
	if len(in.Messages) > maxAGUIMessages {
		return nil, server.BadParam("messages", "messages has %d entries, more than %d", len(in.Messages), maxAGUIMessages)
	}
	if isJSON(in.State, '{') {
		if err := json.Unmarshal(in.State, &q.state); err != nil {
			return nil, server.BadParam("state", "state: %v", err)
		}
		if len(in.State) > 2 {
			q.values[AGUIStateValue] = in.State
		}
	} else if len(in.State) > 0 && !isJSON(in.State, 'n') {
		q.values[AGUIStateValue] = in.State
	}
	if len(in.Context) > 0 && !isJSON(in.Context, 'n') {
		var items []aguiContextItem
		if err := json.Unmarshal(in.Context, &items); err != nil {
			return nil, server.BadParam("context", "context must be a list of {description, value} strings")
		}
		if len(items) > 0 {
			q.values[AGUIContextValue] = in.Context
		}
	}
	if len(q.values[AGUIStateValue])+len(q.values[AGUIContextValue]) > maxAGUIValues {
		return nil, server.BadParam("state", "state and context are %d bytes together, more than %d", len(q.values[AGUIStateValue])+len(q.values[AGUIContextValue]), maxAGUIValues)
	}
	if len(in.Tools) > 0 && !isJSON(in.Tools, 'n') && !isJSON(in.Tools, '[') {
		return nil, server.BadParam("tools", "tools must be a list")
	}
	if len(in.ForwardedProps) > 0 && isJSON(in.ForwardedProps, '{') {
		var fp struct {
			Baton struct {
				Agent string `json:"agent"`
			} `json:"baton"`
		}
		if err := json.Unmarshal(in.ForwardedProps, &fp); err != nil {
			return nil, server.BadParam("forwardedProps", "forwardedProps.baton: %v", err)
		}
		q.agent = fp.Baton.Agent
	}
	if len(in.Resume) > 0 {
		if len(in.Resume) > 100 {
			return nil, server.BadParam("resume", "at most 100 resume entries")
		}
		q.resume = map[string][]runner.Decision{}
		for i, r := range in.Resume {
			d, err := aguiDecision(r)
			if err != nil {
				return nil, server.BadParam("resume", "resume[%d]: %s", i, err)
			}
			base, callID, _ := strings.Cut(r.InterruptID, "/")
			if _, ok := runstate.RunOfInterrupt(base); !ok {
				return nil, server.BadParam("resume", "resume[%d]: interruptId %q is not an interrupt of this server", i, r.InterruptID)
			}
			for j := range d {
				if callID != "" {
					d[j].CallID = callID
				}
			}
			q.resume[base] = append(q.resume[base], d...)
		}
		if len(q.resume) > 1 {
			return nil, server.BadParam("resume", "resume answers the interrupts of one run; got %d", len(q.resume))
		}
		return q, nil
	}
	if len(in.Messages) == 0 {
		return nil, server.BadParam("messages", "messages must end with the user's message")
	}
	last := in.Messages[len(in.Messages)-1]
	if last.Role != "user" {
		return nil, server.BadParam("messages", "the last message must be the user's (role user), not %q", last.Role)
	}
	text, err := aguiText(last.Content)
	if err != nil {
		return nil, server.BadParam("messages", "messages[%d]: %s", len(in.Messages)-1, err)
	}
	q.input = text
	for i, m := range in.Messages[:len(in.Messages)-1] {
		var t string
		if m.Role != "tool" && m.Role != "activity" && m.Role != "reasoning" {
			if t, err = aguiText(m.Content); err != nil && len(m.Content) > 0 && !isJSON(m.Content, 'n') {
				return nil, server.BadParam("messages", "messages[%d]: %s", i, err)
			}
		}
		if t == "" {
			continue
		}
		switch m.Role {
		case "system", "developer":
			q.history = append(q.history, message.System(t))
		case "user":
			q.history = append(q.history, message.User(t))
		case "assistant":
			q.history = append(q.history, message.Assistant("", t))
		default:
			return nil, server.BadParam("messages", "messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return q, nil
}

// isJSON reports whether raw's first byte (after spaces) is c.
func isJSON(raw json.RawMessage, c byte) bool {
	b := bytes.TrimLeft(raw, " \t\r\n")
	return len(b) > 0 && b[0] == c
}

// aguiText is the text of a message's content: a string, or text parts
// joined by newlines (other parts are refused).
func aguiText(raw json.RawMessage) (string, error) {
	if isJSON(raw, '"') {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if !isJSON(raw, '[') || json.Unmarshal(raw, &parts) != nil {
		return "", errors.New("content must be a string or a list of parts")
	}
	var texts []string
	for j, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content[%d]: only text parts are supported, not %q", j, p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// aguiDecision reads a resume entry: resolved with no payload approves,
// cancelled rejects; a payload is a baton decision ({"type": "approve" |
// "edit" | "reject", "args", "message"}, or {"decisions": [...]}).
func aguiDecision(r aguiResume) ([]runner.Decision, error) {
	if r.InterruptID == "" || len(r.InterruptID) > server.MaxInterruptID+200 {
		return nil, errors.New("interruptId is required")
	}
	switch r.Status {
	case "cancelled":
		return []runner.Decision{{Type: runner.DecisionReject, Message: "cancelled"}}, nil
	case "resolved":
	default:
		return nil, fmt.Errorf("status %q is not resolved or cancelled", r.Status)
	}
	if len(r.Payload) == 0 || isJSON(r.Payload, 'n') {
		return []runner.Decision{{Type: runner.DecisionApprove}}, nil
	}
	var req wire.Decision
	if !isJSON(r.Payload, '{') || json.Unmarshal(r.Payload, &req) != nil {
		return nil, errors.New(`payload must be a decision: {"type": "approve"|"edit"|"reject", "args": {...}, "message": "..."}`)
	}
	d, err := server.Decisions(&req)
	if err != nil {
		return nil, errors.New(server.Classify(err).Message)
	}
	return d, nil
}

// aguiRunID is the baton run id of an AG-UI run that starts a turn: derived
// from the owner, the thread and the client's runId, so that the same
// request sent again finds its run (and two owners never share one). It
// has the form of runstate.NewRunID.
func aguiRunID(owner, threadID, runID string) string {
	h := sha256.Sum256([]byte("agui\x00" + owner + "\x00" + threadID + "\x00" + runID))
	return "run_" + base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).EncodeToString(h[:16])
}

// aguiRun serves POST /v1/agui/{network}.
func (s *api) aguiRun(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	nw, ok := s.c.Network(r.PathValue("network"))
	if !ok {
		return server.NotFound("network", r.PathValue("network"))
	}
	body, err := server.ReadBody(r)
	if err != nil {
		return err
	}
	q, err := parseAGUIInput(body)
	if err != nil {
		return err
	}
	from, err := parseAGUICursor(sse.LastEventID(r))
	if err != nil {
		return server.BadParam("Last-Event-ID", "Last-Event-ID %q is not an event id of an AG-UI stream of this server", sse.LastEventID(r))
	}
	if q.agent != "" {
		if _, ok := nw.Agents().Agent(q.agent); !ok {
			return server.BadParam("forwardedProps", "network %s has no agent %q", nw.Name(), q.agent)
		}
	}
	release, err := s.c.OpenStream(r.Context())
	if err != nil {
		return err
	}
	defer release()
	run, start, err := s.aguiBegin(r.Context(), c, nw, q)
	if err != nil {
		return err
	}
	defer run.Reader()()
	sw, err := s.c.NewStream(w, run, true)
	if err != nil {
		return nil
	}
	f := newAGUIFold(run.ID(), q.threadID, q.runID, nw.Name(), q.state)
	// The events are read in a goroutine so that this one can send
	// heartbeats (": ping") while the run is quiet (a slow tool).
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type item struct {
		ev  sse.Event
		err error
	}
	ch := make(chan item)
	go func() {
		defer close(ch)
		for ev, err := range f.stream(ctx, s.c, run, start, from) {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	hb := time.NewTicker(s.c.Heartbeat())
	defer hb.Stop()
	for {
		select {
		case it, ok := <-ch:
			if !ok {
				_ = sw.Flush()
				return nil
			}
			if it.err != nil {
				if r.Context().Err() == nil && !errors.Is(it.err, server.ErrShuttingDown) {
					s.c.Logger().Warn("agui stream", "run_id", run.ID(), "error", it.err)
				}
				return nil
			}
			if sw.Put(it.ev) != nil || sw.Flush() != nil {
				return nil
			}
			hb.Reset(s.c.Heartbeat())
		case <-hb.C:
			if sw.Comment("ping") != nil {
				return nil
			}
		}
	}
}

// aguiBegin finds or starts the baton run of a request: the turn its runId
// started (sent again: the same run), the run its resume entries answer
// (resumed now if still waiting), or a new turn on the thread (made if
// new). start is the cursor after which the AG-UI run's events begin.
func (s *api) aguiBegin(ctx context.Context, c *server.Caller, nw *server.Network, q *aguiRequest) (*server.Run, server.Cursor, error) {
	id := aguiRunID(c.Owner, q.threadID, q.runID)
	if run, err := s.aguiExisting(ctx, c, nw, q.threadID, id); run != nil || err != nil {
		return run, server.Cursor{}, err
	}
	if q.resume != nil {
		return s.aguiResume(ctx, c, nw, q)
	}
	if err := s.c.CheckInput(q.input); err != nil {
		e := server.Classify(err)
		e.Param = "messages"
		return nil, server.Cursor{}, e
	}
	th, err := s.c.Thread(ctx, c, q.threadID)
	switch {
	case err == nil && th.Network != nw.Name():
		return nil, server.Cursor{}, server.BadParam("threadId", "thread %s belongs to network %q, not %q", th.ID, th.Network, nw.Name())
	case err != nil && server.Classify(err).Status != http.StatusNotFound:
		return nil, server.Cursor{}, err
	case err != nil:
		nm := make([]store.NewMessage, len(q.history))
		for i, m := range q.history {
			nm[i] = store.NewMessage{Message: m}
		}
		md := map[string]json.RawMessage{"source": json.RawMessage(`"agui"`)}
		if _, err := s.c.CreateThread(ctx, c, &store.CreateThreadParams{ID: q.threadID, Network: nw.Name(), Name: threads.Title(q.input), Metadata: md, Messages: nm}); err != nil {
			// Another request of the caller made it first: the turn
			// runs on it (or finds it busy).
			if th, terr := s.c.Thread(ctx, c, q.threadID); errors.Is(err, store.ErrConflict) && terr == nil && th.Network == nw.Name() {
				break
			}
			if errors.Is(err, store.ErrConflict) {
				e := server.Errorf(http.StatusConflict, wire.ErrConflict, "threadId %q is taken: choose another", q.threadID)
				e.Param = "threadId"
				return nil, server.Cursor{}, e
			}
			return nil, server.Cursor{}, err
		}
	}
	var opts []runner.RunOption
	if len(q.values) > 0 {
		opts = append(opts, runner.WithValues(q.values))
	}
	if q.agent != "" {
		opts = append(opts, runner.WithAgent(q.agent))
	}
	run, err := s.c.StartTurn(ctx, c, nw, server.Turn{ThreadID: q.threadID, RunID: id, Input: q.input, Options: opts})
	return run, server.Cursor{}, err
}

// aguiExisting returns the run of id if it exists (this process runs it,
// or the store has it), on the thread; nil if it does not.
func (s *api) aguiExisting(ctx context.Context, c *server.Caller, nw *server.Network, threadID, id string) (*server.Run, error) {
	run, err := s.c.Run(ctx, c, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if run.ThreadID() != threadID || run.Network() != nw.Name() {
		return nil, server.BadParam("runId", "runId names a run of another thread")
	}
	return run, nil
}

// aguiResume answers the interrupt a request's resume entries name: the
// run resumes with their decisions. An interrupt already answered (the
// same request sent again, or one decided elsewhere) is followed: the
// stream is the run's from that interrupt on.
func (s *api) aguiResume(ctx context.Context, c *server.Caller, nw *server.Network, q *aguiRequest) (*server.Run, server.Cursor, error) {
	var id string
	var decisions []runner.Decision
	for k, d := range q.resume {
		id, decisions = k, d
	}
	runID, _ := runstate.RunOfInterrupt(id)
	if len(runID) > 128 {
		return nil, server.Cursor{}, server.BadParam("resume", "interrupt %q not found", id)
	}
	// The checkpoint that raised the interrupt: its seq is where the
	// resumed AG-UI run starts.
	raised, err := s.c.Interrupted(ctx, c, runID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, server.Cursor{}, server.BadParam("resume", "interrupt %q not found", id)
	}
	if err != nil {
		return nil, server.Cursor{}, err
	}
	if raised.ThreadID != q.threadID || raised.Network != nw.Name() {
		return nil, server.Cursor{}, server.BadParam("resume", "interrupt %q is not of thread %s", id, q.threadID)
	}
	start := server.Cursor{Seq: raised.Seq}
	cp, err := s.c.LatestCheckpoint(ctx, c, runID)
	if err != nil {
		return nil, server.Cursor{}, err
	}
	if cp.State.Status != runstate.StatusInterrupted || cp.State.Interrupt == nil || cp.State.Interrupt.ID != id {
		// Answered already: the run from that interrupt on.
		run, err := s.c.Run(ctx, c, runID)
		return run, start, err
	}
	calls := map[string]bool{}
	for _, ar := range cp.State.Interrupt.ActionRequests {
		calls[ar.CallID] = true
	}
	for i, d := range decisions {
		if d.CallID != "" && !calls[d.CallID] {
			return nil, server.Cursor{}, server.BadParam("resume", "resume[%d]: call %q is not an action of interrupt %s", i, d.CallID, id)
		}
	}
	run, err := s.c.Resume(ctx, c, nw, cp, decisions)
	if err != nil {
		return nil, server.Cursor{}, err
	}
	return run, start, nil
}

// aguiCursor is the position of an AG-UI event, its SSE id: the baton
// event it comes from (At), how many AG-UI events made of that baton event
// follow it (K: 0 for the last), and, when a text message is open after
// it, that message's number and the bytes of its text sent (N, B). Text
// form: "AT:K" or "AT:K:N:B". K counts from the end because the events a
// baton event makes differ only at their start: a message whose deltas
// were streamed ends it (TEXT_MESSAGE_END), the same message rebuilt from a
// checkpoint (no deltas) opens, fills and ends it.
type aguiCursor struct {
	At   server.Cursor
	K    int
	N, B int
	set  bool // not the zero cursor (before every event)
	text bool // N and B are set
}

func (c aguiCursor) String() string {
	s := c.At.String() + ":" + strconv.Itoa(c.K)
	if c.text {
		s += ":" + strconv.Itoa(c.N) + ":" + strconv.Itoa(c.B)
	}
	return s
}

// parseAGUICursor parses an AG-UI event id; "" is before every event.
func parseAGUICursor(s string) (aguiCursor, error) {
	if s == "" {
		return aguiCursor{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 2 && len(parts) != 4 {
		return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
	}
	at, err := server.ParseCursor(parts[0])
	if err != nil || parts[0] == "" {
		return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
	}
	c := aguiCursor{At: at, set: true}
	nums := make([]int, len(parts)-1)
	for i, p := range parts[1:] {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) > 10 {
			return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
		}
		nums[i] = n
	}
	c.K = nums[0]
	if len(nums) == 3 {
		c.N, c.B, c.text = nums[1], nums[2], true
		if c.N < 1 {
			return aguiCursor{}, fmt.Errorf("agui: bad event id %q", s)
		}
	}
	return c, nil
}

// before reports whether c comes before the event at (at, k), k counted
// from the end as K is.
func (c aguiCursor) before(at server.Cursor, k int) bool {
	if !c.set {
		return true
	}
	return c.At.Less(at) || c.At == at && k < c.K
}

// aguiFold turns a baton run's events into AG-UI events. It is fed every
// event of the run from its start, live or rebuilt from checkpoints, and
// keeps what an AG-UI stream needs across them: the open text message, the
// open step (the active agent), whether an AG-UI run is open.
type aguiFold struct {
	runID, threadID, aguiRunID, network string
	state                               map[string]json.RawMessage

	inRun    bool   // RUN_STARTED sent, not yet finished
	step     string // the open step: the active agent
	agent    string
	status   string
	textOpen bool
	textN    int // text messages opened so far
	textSent int // bytes of the open message's text sent
	lastText string
	reasonN  int
	// failure is the error event that ends a failed run; interrupt the
	// interrupt that stops one.
	failure   *runner.ErrorEvent
	interrupt *runstate.Interrupt

	// settled is set by the RUN_FINISHED or RUN_ERROR of the last event.
	settled bool
	out     []aguiEvent
}

// aguiEvent is an AG-UI event and the text state after it.
type aguiEvent struct {
	v      map[string]any
	open   bool
	n, b   int
	settle bool
}

func newAGUIFold(runID, threadID, aguiRunID, network string, state map[string]json.RawMessage) *aguiFold {
	return &aguiFold{runID: runID, threadID: threadID, aguiRunID: aguiRunID, network: network, state: state}
}

func (f *aguiFold) emit(typ string, kv ...any) {
	v := map[string]any{"type": typ}
	for i := 0; i+1 < len(kv); i += 2 {
		v[kv[i].(string)] = kv[i+1]
	}
	f.out = append(f.out, aguiEvent{v: v, open: f.textOpen, n: f.textN, b: f.textSent})
}

func (f *aguiFold) textID(n int) string       { return f.runID + ":t" + strconv.Itoa(n) }
func (f *aguiFold) toolID(call string) string { return f.runID + ":" + call }

func (f *aguiFold) batonState() map[string]any {
	return map[string]any{"thread_id": f.threadID, "run_id": f.runID, "network": f.network, "agent": f.agent, "status": f.status}
}

func (f *aguiFold) snapshot() map[string]any {
	out := map[string]any{}
	for k, v := range f.state {
		out[k] = v
	}
	out["baton"] = f.batonState()
	return out
}

func (f *aguiFold) delta(path string, value any) {
	f.emit("STATE_DELTA", "delta", []any{map[string]any{"op": "add", "path": "/baton/" + path, "value": value}})
}

func (f *aguiFold) openRun(agent string) {
	f.inRun, f.settled, f.failure, f.interrupt = true, false, nil, nil
	f.agent, f.status = agent, "running"
	f.emit("RUN_STARTED", "threadId", f.threadID, "runId", f.aguiRunID)
	f.emit("STATE_SNAPSHOT", "snapshot", f.snapshot())
	f.setStep(agent)
}

func (f *aguiFold) setStep(agent string) {
	if agent == f.step {
		return
	}
	f.closeStep()
	if agent != "" {
		f.step = agent
		f.emit("STEP_STARTED", "stepName", agent)
	}
}

func (f *aguiFold) closeStep() {
	if f.step != "" {
		f.emit("STEP_FINISHED", "stepName", f.step)
		f.step = ""
	}
}

func (f *aguiFold) openText(agent string) {
	if f.textOpen {
		return
	}
	f.textN++
	f.textOpen, f.textSent = true, 0
	f.emit("TEXT_MESSAGE_START", "messageId", f.textID(f.textN), "role", "assistant", "name", agent)
}

func (f *aguiFold) closeText() {
	if !f.textOpen {
		return
	}
	f.textOpen = false
	f.lastText = f.textID(f.textN)
	f.emit("TEXT_MESSAGE_END", "messageId", f.lastText)
}

// add folds a baton event and returns the AG-UI events it makes.
func (f *aguiFold) add(e server.Entry) []aguiEvent {
	f.out = f.out[:0]
	f.addEntry(e)
	return f.out
}

func (f *aguiFold) addEntry(e server.Entry) {
	custom := func(name string) {
		var v map[string]any
		_ = json.Unmarshal(e.Data, &v)
		f.emit("CUSTOM", "name", name, "value", v)
	}
	switch runner.EventType(e.Type) {
	case runner.TypeRunStart:
		var ev runner.RunStartEvent
		if json.Unmarshal(e.Data, &ev) != nil {
			return
		}
		if !f.inRun {
			f.openRun(ev.Agent)
			return
		}
		// A worker took the run over (or adopted it after a crash).
		f.status = "running"
		custom("baton.resumed")
		f.delta("status", "running")
	case runner.TypeAgentStart:
		var ev runner.AgentStartEvent
		if json.Unmarshal(e.Data, &ev) != nil || !f.inRun {
			return
		}
		f.lastText = ""
		if ev.Agent != f.agent {
			f.agent = ev.Agent
			f.delta("agent", ev.Agent)
		}
		f.setStep(ev.Agent)
	case runner.TypeTextDelta:
		var ev runner.TextDeltaEvent
		if json.Unmarshal(e.Data, &ev) != nil || ev.Delta == "" || !f.inRun {
			return
		}
		f.openText(ev.Agent)
		f.textSent += len(ev.Delta)
		f.emit("TEXT_MESSAGE_CONTENT", "messageId", f.textID(f.textN), "delta", ev.Delta)
	case runner.TypeMessage:
		var ev runner.MessageEvent
		if json.Unmarshal(e.Data, &ev) != nil || !f.inRun || ev.Text == "" && !f.textOpen {
			return
		}
		f.openText(ev.Agent)
		if n := f.textSent; n < len(ev.Text) && utf8.RuneStart(ev.Text[n]) {
			f.textSent = len(ev.Text)
			f.emit("TEXT_MESSAGE_CONTENT", "messageId", f.textID(f.textN), "delta", ev.Text[n:])
		}
		f.closeText()
	case runner.TypeReasoning:
		var ev runner.ReasoningEvent
		if json.Unmarshal(e.Data, &ev) != nil || !f.inRun || ev.Text == "" {
			return
		}
		f.reasonN++
		id := f.runID + ":r" + strconv.Itoa(f.reasonN)
		f.emit("REASONING_START", "messageId", id)
		f.emit("REASONING_MESSAGE_START", "messageId", id, "role", "reasoning")
		f.emit("REASONING_MESSAGE_CONTENT", "messageId", id, "delta", ev.Text)
		f.emit("REASONING_MESSAGE_END", "messageId", id)
		f.emit("REASONING_END", "messageId", id)
	case runner.TypeToolCall:
		var ev runner.ToolCallEvent
		if json.Unmarshal(e.Data, &ev) != nil || !f.inRun {
			return
		}
		f.closeText()
		id := f.toolID(ev.ID)
		start := []any{"toolCallId", id, "toolCallName", ev.Name}
		if f.lastText != "" {
			start = append(start, "parentMessageId", f.lastText)
		}
		f.emit("TOOL_CALL_START", start...)
		args := string(ev.Arguments)
		if args == "" {
			args = "{}"
		}
		f.emit("TOOL_CALL_ARGS", "toolCallId", id, "delta", args)
		f.emit("TOOL_CALL_END", "toolCallId", id)
	case runner.TypeToolResult:
		var ev runner.ToolResultEvent
		if json.Unmarshal(e.Data, &ev) != nil || !f.inRun {
			return
		}
		f.closeText()
		f.lastText = ""
		id := f.toolID(ev.ID)
		content := ev.Output
		kv := []any{"messageId", id + ":result", "toolCallId", id, "role", "tool"}
		if ev.Error != "" {
			content = ev.Error
			kv = append(kv, "metadata", map[string]any{"baton": map[string]any{"error": true}})
		}
		f.emit("TOOL_CALL_RESULT", append(kv, "content", content)...)
	case runner.TypeTransfer:
		var ev runner.TransferEvent
		if json.Unmarshal(e.Data, &ev) != nil || !f.inRun {
			return
		}
		f.closeText()
		custom("baton.transfer")
	case runner.TypeTransferRejected:
		if f.inRun {
			custom("baton.transfer_rejected")
		}
	case runner.TypeInterrupt:
		var ev runner.InterruptEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			f.interrupt = ev.Interrupt
		}
	case runner.TypeSuspended:
		if !f.inRun {
			return
		}
		f.closeText()
		f.status = "background"
		custom("baton.suspended")
		f.delta("status", "background")
	case runner.TypeError:
		var ev runner.ErrorEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			f.failure = &ev
		}
	case runner.TypeRunEnd:
		var ev runner.RunEndEvent
		if json.Unmarshal(e.Data, &ev) != nil || !f.inRun {
			return
		}
		f.runEnd(&ev)
	case "draft":
		if f.inRun {
			custom("baton.draft")
		}
	}
}

// runEnd ends the AG-UI run when the baton run is final or waits for a
// decision; a run handed to a worker goes on.
func (f *aguiFold) runEnd(ev *runner.RunEndEvent) {
	if ev.Status == runstate.StatusSuspended || ev.Status == runstate.StatusRunning {
		return
	}
	f.closeText()
	f.status = string(ev.Status)
	f.delta("status", f.status)
	f.closeStep()
	f.inRun, f.settled = false, true
	if ev.LastAgent != "" {
		f.agent = ev.LastAgent
	}
	usage := []any{map[string]any{"inputTokens": ev.Usage.InputTokens, "outputTokens": ev.Usage.OutputTokens, "totalTokens": ev.Usage.InputTokens + ev.Usage.OutputTokens}}
	if ev.Status == runstate.StatusFailed {
		msg, code := "the run failed", string(runner.KindSystem)
		if f.failure != nil {
			msg, code = f.failure.Message, string(f.failure.Kind)
		}
		f.emit("RUN_ERROR", "message", msg, "code", code, "usage", usage)
		f.out[len(f.out)-1].settle = true
		return
	}
	result := map[string]any{"status": string(ev.Status), "output": ev.Output, "last_agent": ev.LastAgent, "turns": ev.Turns,
		"transfers": ev.Transfers, "run_id": f.runID, "thread_id": f.threadID}
	outcome := map[string]any{"type": "success"}
	if ev.Status == runstate.StatusInterrupted && f.interrupt != nil {
		outcome = map[string]any{"type": "interrupt", "interrupts": f.interrupts(f.interrupt)}
	}
	f.emit("RUN_FINISHED", "threadId", f.threadID, "runId", f.aguiRunID, "outcome", outcome, "result", result, "usage", usage)
	f.out[len(f.out)-1].settle = true
}

// aguiDecisionSchema is the responseSchema of an approval: the payload of
// a resume entry that answers it.
var aguiDecisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"type":    map[string]any{"type": "string", "enum": []string{"approve", "edit", "reject"}},
		"args":    map[string]any{"type": "object", "description": "the edited arguments (type edit)"},
		"message": map[string]any{"type": "string", "description": "why (type reject)"},
	},
	"required": []string{"type"},
}

// interrupts are the AG-UI interrupts of a baton interrupt: one per call
// that waits for approval, id "INTERRUPT/CALL".
func (f *aguiFold) interrupts(in *runstate.Interrupt) []any {
	var out []any
	for _, ar := range in.ActionRequests {
		var args any
		_ = json.Unmarshal(ar.Args, &args)
		out = append(out, map[string]any{
			"id": in.ID + "/" + ar.CallID, "reason": in.Source, "message": ar.Description, "toolCallId": f.toolID(ar.CallID),
			"responseSchema": aguiDecisionSchema,
			"metadata": map[string]any{"baton": map[string]any{"interrupt_id": in.ID, "call_id": ar.CallID, "tool": ar.Name, "args": args,
				"decision_url": server.DecisionURL(in.ID)}},
		})
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"id": in.ID, "reason": in.Source, "responseSchema": aguiDecisionSchema,
			"metadata": map[string]any{"baton": map[string]any{"interrupt_id": in.ID, "decision_url": server.DecisionURL(in.ID)}}})
	}
	return out
}

// stream yields the SSE events of the AG-UI run that starts after start:
// the run's events from its first are folded, those after start and after
// from are sent, until the AG-UI run finishes or errs.
func (f *aguiFold) stream(ctx context.Context, s server.Core, run *server.Run, start server.Cursor, from aguiCursor) iter.Seq2[sse.Event, error] {
	return func(yield func(sse.Event, error) bool) {
		reconciled := !from.set
		done := false
		seq, ord := -1, 0
		err := s.Events(ctx, run, server.Cursor{}, func(e server.Entry) bool {
			// The events a run did not number (N.M) are numbered by the
			// order of the stored ones among them: a followed worker's
			// events come after its drafts in a live log (N.2 after the
			// draft N.1) and without them when rebuilt (N.1), the same
			// event either way. A draft stands where the event before it
			// does.
			if e.At.Seq != seq {
				seq, ord = e.At.Seq, 0
			}
			if e.Type != "draft" && e.At.Sub > 0 {
				ord++
			}
			if e.At.Sub > 0 {
				e.At.Sub = ord
			}
			if from.set && !reconciled && from.At.Less(e.At) {
				// The client is past every event before this one: what it
				// holds of an open text message is in its id (the deltas
				// it got may not be stored: rebuilt events fold them).
				reconciled = true
				if from.text && !f.textOpen && f.inRun {
					f.textOpen, f.textSent = true, from.B
					f.textN = max(f.textN, from.N)
				}
			}
			if from.set && e.At == from.At {
				reconciled = true
			}
			evs := f.add(e)
			if !start.Less(e.At) {
				return true // before the AG-UI run
			}
			for i, ev := range evs {
				k := len(evs) - 1 - i
				if !from.before(e.At, k) {
					if ev.settle {
						// The client has the end of this AG-UI run.
						done = true
						return false
					}
					continue
				}
				id := aguiCursor{At: e.At, K: k, set: true, text: ev.open, N: ev.n, B: ev.b}.String()
				if e.Type == "draft" {
					// A worker's progress is not stored: it has no place
					// a reconnect could resume from, so no id (the
					// client's Last-Event-ID stays the event before).
					id = ""
				}
				data, err := json.Marshal(ev.v)
				if err != nil {
					continue
				}
				if !yield(sse.Event{ID: id, Type: ev.v["type"].(string), Data: data}, nil) {
					done = true
					return false
				}
				if ev.settle {
					done = true
					return false
				}
			}
			return true
		})
		if err != nil && !done {
			yield(sse.Event{}, err)
		}
	}
}
