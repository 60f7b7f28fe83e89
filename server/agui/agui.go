package agui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/wire"
)

// Protocol serves AG-UI over a server's core: POST /v1/agui/{network}. The
// zero value is ready to mount.
type Protocol struct{}

// Mount registers the route.
func (Protocol) Mount(c server.Core) {
	s := &api{c: c}
	c.Handle("POST /v1/agui/{network}", server.Route{Scope: server.ScopeRun, Streaming: true}, s.aguiRun)
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
	if err := q.readValues(&in); err != nil {
		return nil, err
	}
	if len(in.Tools) > 0 && !isJSON(in.Tools, 'n') && !isJSON(in.Tools, '[') {
		return nil, server.BadParam("tools", "tools must be a list")
	}
	if err := q.readAgent(in.ForwardedProps); err != nil {
		return nil, err
	}
	var err error
	if len(in.Resume) > 0 {
		err = q.readResume(in.Resume)
	} else {
		err = q.readMessages(in.Messages)
	}
	if err != nil {
		return nil, err
	}
	return q, nil
}

// readValues keeps the input's state and context as run values (and the
// state as the base of the snapshots).
func (q *aguiRequest) readValues(in *aguiInput) error {
	if isJSON(in.State, '{') {
		if err := json.Unmarshal(in.State, &q.state); err != nil {
			return server.BadParam("state", "state: %v", err)
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
			return server.BadParam("context", "context must be a list of {description, value} strings")
		}
		if len(items) > 0 {
			q.values[AGUIContextValue] = in.Context
		}
	}
	if n := len(q.values[AGUIStateValue]) + len(q.values[AGUIContextValue]); n > maxAGUIValues {
		return server.BadParam("state", "state and context are %d bytes together, more than %d", n, maxAGUIValues)
	}
	return nil
}

// readAgent reads forwardedProps.baton.agent, the agent to start with.
func (q *aguiRequest) readAgent(props json.RawMessage) error {
	if len(props) == 0 || !isJSON(props, '{') {
		return nil
	}
	var fp struct {
		Baton struct {
			Agent string `json:"agent"`
		} `json:"baton"`
	}
	if err := json.Unmarshal(props, &fp); err != nil {
		return server.BadParam("forwardedProps", "forwardedProps.baton: %v", err)
	}
	q.agent = fp.Baton.Agent
	return nil
}

// readResume reads the resume entries: the decisions on the interrupts of
// one run, by interrupt id.
func (q *aguiRequest) readResume(resume []aguiResume) error {
	if len(resume) > 100 {
		return server.BadParam("resume", "at most 100 resume entries")
	}
	q.resume = map[string][]runner.Decision{}
	for i, r := range resume {
		d, err := aguiDecision(r)
		if err != nil {
			return server.BadParam("resume", "resume[%d]: %s", i, err)
		}
		base, callID, _ := strings.Cut(r.InterruptID, "/")
		if _, ok := runstate.RunOfInterrupt(base); !ok {
			return server.BadParam("resume", "resume[%d]: interruptId %q is not an interrupt of this server", i, r.InterruptID)
		}
		for j := range d {
			if callID != "" {
				d[j].CallID = callID
			}
		}
		q.resume[base] = append(q.resume[base], d...)
	}
	if len(q.resume) > 1 {
		return server.BadParam("resume", "resume answers the interrupts of one run; got %d", len(q.resume))
	}
	return nil
}

// readMessages reads the conversation: the input is the last message, the
// user's; the earlier messages' text is the history of a new thread.
func (q *aguiRequest) readMessages(msgs []aguiMessage) error {
	if len(msgs) == 0 {
		return server.BadParam("messages", "messages must end with the user's message")
	}
	last := msgs[len(msgs)-1]
	if last.Role != "user" {
		return server.BadParam("messages", "the last message must be the user's (role user), not %q", last.Role)
	}
	text, err := aguiText(last.Content)
	if err != nil {
		return server.BadParam("messages", "messages[%d]: %s", len(msgs)-1, err)
	}
	q.input = text
	for i, m := range msgs[:len(msgs)-1] {
		var t string
		if m.Role != "tool" && m.Role != "activity" && m.Role != "reasoning" {
			if t, err = aguiText(m.Content); err != nil && len(m.Content) > 0 && !isJSON(m.Content, 'n') {
				return server.BadParam("messages", "messages[%d]: %s", i, err)
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
			return server.BadParam("messages", "messages[%d]: unknown role %q", i, m.Role)
		}
	}
	return nil
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
	var parts []wire.ContentPart
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
