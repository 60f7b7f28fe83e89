package a2aremote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/httpheader"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
)

// MetadataKey is the key of an answer's message metadata that names the
// remote context, task and state: {"context_id", "task_id", "state"}.
const MetadataKey = "a2a"

// DefaultReconnect is how long a task whose stream broke is followed again
// before the turn fails, unless the declaration says otherwise.
const DefaultReconnect = 60 * time.Second

// maxCard bounds an agent card (1 MiB).
const maxCard = 1 << 20

// Options tune [Factory] and [New]. The zero value means the defaults.
type Options struct {
	// HTTPClient talks to the remote agents. Defaults to a client without a
	// timeout: turns are bounded by their contexts (the run's timeout).
	HTTPClient *http.Client
	// LookupEnv expands the ${NAME} references of headers:. Defaults to
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger gets reconnections. Defaults to a logger that discards.
	Logger *slog.Logger
	// Backoff is the first wait before a broken task is followed again;
	// it doubles up to 2 seconds. Defaults to 250ms.
	Backoff time.Duration
}

// Factory returns netspec.Options.Remote: the remote agents of a network
// file built with opts.
func Factory(opts Options) func(netspec.Remote) (model.Model, error) {
	return func(r netspec.Remote) (model.Model, error) { return New(r, opts) }
}

// Agent is a remote A2A agent as a model.Model. It is safe for concurrent
// use; its agent card is fetched at its first turn and kept.
type Agent struct {
	name      string
	cardURL   string
	reconnect time.Duration
	backoff   time.Duration
	hc        *http.Client
	log       *slog.Logger

	mu   sync.Mutex
	card *a2a.AgentCard
	tr   a2aclient.Transport
}

// New returns the remote agent r declares. Its headers are expanded now: a
// variable that is not set is an error.
func New(r netspec.Remote, opts Options) (*Agent, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 250 * time.Millisecond
	}
	base := opts.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	h := map[string]string{}
	for k, v := range r.Spec.Headers {
		x, err := netspec.ExpandEnv(v, opts.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		h[k] = x
	}
	hc := *base
	hc.Transport = httpheader.Transport(base.Transport, h)
	card := r.Spec.Card
	if u, err := url.Parse(card); err == nil && !strings.HasSuffix(u.Path, ".json") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/.well-known/agent-card.json"
		card = u.String()
	}
	reconnect := time.Duration(r.Spec.Reconnect)
	if reconnect <= 0 {
		reconnect = DefaultReconnect
	}
	return &Agent{name: r.Agent, cardURL: card, reconnect: reconnect, backoff: opts.Backoff, hc: &hc, log: opts.Logger}, nil
}

// CardURL returns the URL the agent card is read from.
func (a *Agent) CardURL() string { return a.cardURL }

// Card returns the remote's agent card, fetching it the first time.
func (a *Agent) Card(ctx context.Context) (*a2a.AgentCard, error) {
	card, _, err := a.client(ctx)
	return card, err
}

// client returns the card and the JSON-RPC transport to its endpoint.
func (a *Agent) client(ctx context.Context) (*a2a.AgentCard, a2aclient.Transport, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.card != nil {
		return a.card, a.tr, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.cardURL, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, nil, a.transient(fmt.Errorf("agent card %s: %w", a.cardURL, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCard))
	if err != nil {
		return nil, nil, a.transient(fmt.Errorf("agent card %s: %w", a.cardURL, err))
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("agent card %s: HTTP %s", a.cardURL, resp.Status)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return nil, nil, a.transient(err)
		}
		return nil, nil, a.permanent(err)
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, nil, a.permanent(fmt.Errorf("agent card %s: %w", a.cardURL, err))
	}
	endpoint := card.URL
	if card.PreferredTransport != "" && card.PreferredTransport != a2a.TransportProtocolJSONRPC {
		endpoint = ""
		for _, i := range card.AdditionalInterfaces {
			if i.Transport == a2a.TransportProtocolJSONRPC {
				endpoint = i.URL
			}
		}
	}
	if endpoint == "" {
		return nil, nil, a.permanent(fmt.Errorf("agent card %s: no JSON-RPC endpoint (this client speaks A2A over JSON-RPC)", a.cardURL))
	}
	a.card, a.tr = &card, a2aclient.NewJSONRPCTransport(endpoint, a.hc)
	return a.card, a.tr, nil
}

func (a *Agent) transient(err error) error {
	return &model.Error{Provider: "a2a " + a.name, Transient: true, Err: err}
}

func (a *Agent) permanent(err error) error {
	return &model.Error{Provider: "a2a " + a.name, Err: err}
}

// Stream sends the turn to the remote agent, or picks up the task an
// earlier attempt of the turn started, and yields its answer.
func (a *Agent) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		t := &turn{a: a, yield: yield, texts: map[a2a.ArtifactID]string{}}
		msg, err := t.run(ctx, req)
		if t.stopped {
			return
		}
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		yield(model.Chunk{Type: model.ChunkDone, Message: msg, Usage: t.usage, FinishReason: model.FinishStop}, nil)
	}
}

// ref is what a turn saves in its memo: the remote task it started.
type ref struct {
	TaskID    a2a.TaskID `json:"a2a_task_id"`
	ContextID string     `json:"a2a_context_id,omitempty"`
}

// turn is one model call of a remote agent.
type turn struct {
	a     *Agent
	yield func(model.Chunk, error) bool
	memo  *agent.Memo

	taskID    a2a.TaskID
	contextID string
	saved     bool
	state     a2a.TaskState
	// order and texts are the task's artifacts' text; status is its
	// status message's.
	order  []a2a.ArtifactID
	texts  map[a2a.ArtifactID]string
	status string
	// reply is the answer when the remote answered with a message.
	reply *string
	// emitted is the text yielded as deltas so far.
	emitted string
	usage   message.Usage
	stopped bool
}

func (t *turn) run(ctx context.Context, req *model.Request) (*message.Message, error) {
	a := t.a
	t.memo, _ = agent.MemoFromContext(ctx)
	card, tr, err := a.client(ctx)
	if err != nil {
		return nil, err
	}
	if r := t.loadRef(); r != nil {
		t.taskID, t.contextID, t.saved = r.TaskID, r.ContextID, true
		a.log.InfoContext(ctx, "picking up the remote agent's task", "agent", a.name, "a2a_task_id", r.TaskID)
		if err := t.follow(ctx, tr); err != nil {
			return nil, err
		}
		return t.answer()
	}
	params, err := a.message(req)
	if err != nil {
		return nil, a.permanent(err)
	}
	if card.Capabilities.Streaming {
		done, err := t.consume(ctx, tr.SendStreamingMessage(ctx, params))
		if err != nil || t.stopped {
			return nil, err
		}
		if !done {
			if t.taskID == "" {
				return nil, a.transient(errors.New("the remote agent's stream ended before it named its task"))
			}
			if err := t.follow(ctx, tr); err != nil {
				return nil, err
			}
		}
		return t.answer()
	}
	res, err := tr.SendMessage(ctx, params)
	if err != nil {
		return nil, t.callError(ctx, err)
	}
	done, err := t.apply(ctx, res)
	if err != nil || t.stopped {
		return nil, err
	}
	if !done {
		if err := t.follow(ctx, tr); err != nil {
			return nil, err
		}
	}
	return t.answer()
}

func (t *turn) loadRef() *ref {
	if t.memo == nil {
		return nil
	}
	raw := t.memo.Load()
	if raw == nil {
		return nil
	}
	var r ref
	if json.Unmarshal(raw, &r) != nil || r.TaskID == "" {
		return nil
	}
	return &r
}

// consume applies a stream's events until the task is done or waits for
// input; it reports done, and false when the stream ended before.
func (t *turn) consume(ctx context.Context, events iter.Seq2[a2a.Event, error]) (done bool, err error) {
	for ev, err := range events {
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if isProtocol(err) {
				return false, t.callError(ctx, err)
			}
			t.a.log.WarnContext(ctx, "remote agent's stream broke", "agent", t.a.name, "a2a_task_id", t.taskID, "error", err)
			return false, nil
		}
		done, err := t.apply(ctx, ev)
		if err != nil || done || t.stopped {
			return done, err
		}
	}
	return false, ctx.Err()
}

// apply takes one event (or a send's result) into the turn; it reports
// whether the answer is complete.
func (t *turn) apply(ctx context.Context, ev a2a.Event) (done bool, err error) {
	switch e := ev.(type) {
	case *a2a.Message:
		text := partsText(e.Parts)
		t.reply = &text
		if e.ContextID != "" {
			t.contextID = e.ContextID
		}
		t.emit(text)
		return true, nil
	case *a2a.Task:
		if err := t.named(ctx, e.ID, e.ContextID); err != nil {
			return false, err
		}
		t.order, t.texts = nil, map[a2a.ArtifactID]string{}
		for _, art := range e.Artifacts {
			if art != nil {
				t.artifact(art.ID, partsText(art.Parts), false)
			}
		}
		t.setStatus(e.Status, e.Metadata)
	case *a2a.TaskArtifactUpdateEvent:
		if err := t.named(ctx, e.TaskID, e.ContextID); err != nil {
			return false, err
		}
		if e.Artifact != nil {
			t.artifact(e.Artifact.ID, partsText(e.Artifact.Parts), e.Append)
		}
	case *a2a.TaskStatusUpdateEvent:
		if err := t.named(ctx, e.TaskID, e.ContextID); err != nil {
			return false, err
		}
		t.setStatus(e.Status, e.Metadata)
		if e.Final && !t.settled() {
			// A final event in a working state: the stream ends, the task
			// goes on (followed with tasks/get).
			return false, nil
		}
	default:
		return false, nil
	}
	t.emit(t.text())
	return t.settled(), nil
}

// named records the task's ids; the first time, it saves them in the
// turn's memo before anything of the answer is shown.
func (t *turn) named(ctx context.Context, id a2a.TaskID, contextID string) error {
	if id == "" {
		return nil
	}
	if contextID != "" {
		t.contextID = contextID
	}
	if t.taskID == "" {
		t.taskID = id
	}
	if t.saved || t.memo == nil {
		t.saved = true
		return nil
	}
	b, _ := json.Marshal(ref{TaskID: t.taskID, ContextID: t.contextID})
	if err := t.memo.Save(ctx, b); err != nil {
		return t.a.permanent(fmt.Errorf("save the remote task %s in the run's state: %w", t.taskID, err))
	}
	t.saved = true
	return nil
}

func (t *turn) artifact(id a2a.ArtifactID, text string, appended bool) {
	if _, ok := t.texts[id]; !ok {
		t.order = append(t.order, id)
	} else if appended {
		text = t.texts[id] + text
	}
	t.texts[id] = text
}

func (t *turn) setStatus(s a2a.TaskStatus, meta map[string]any) {
	if s.State != "" {
		t.state = s.State
	}
	if s.Message != nil {
		t.status = partsText(s.Message.Parts)
	}
	if u, ok := usageOf(meta); ok {
		t.usage = u
	}
}

// settled reports whether the task is done or waits for its client.
func (t *turn) settled() bool {
	return t.state.Terminal() || t.state == a2a.TaskStateInputRequired || t.state == a2a.TaskStateAuthRequired
}

// text is the answer so far: the artifacts' text.
func (t *turn) text() string {
	var parts []string
	for _, id := range t.order {
		if s := t.texts[id]; s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

// emit yields what text adds to what was yielded.
func (t *turn) emit(text string) {
	if t.stopped || len(text) <= len(t.emitted) || !strings.HasPrefix(text, t.emitted) {
		return
	}
	delta := text[len(t.emitted):]
	t.emitted = text
	if !t.yield(model.Chunk{Type: model.ChunkText, Text: delta}, nil) {
		t.stopped = true
	}
}

// follow picks the task up until it is settled: tasks/get, then
// tasks/resubscribe, again after each break, for up to the reconnect
// window since the last sign of the remote.
func (t *turn) follow(ctx context.Context, tr a2aclient.Transport) error {
	a := t.a
	deadline := time.Now().Add(a.reconnect)
	wait := a.backoff
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if time.Now().Add(wait).After(deadline) {
				return a.transient(fmt.Errorf("the remote task %s could not be followed for %s: %w; the run can be resumed to pick it up again", t.taskID, a.reconnect, last))
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
			wait = min(2*wait, 2*time.Second)
		}
		task, err := tr.GetTask(ctx, &a2a.TaskQueryParams{ID: t.taskID})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if isProtocol(err) {
				return t.callError(ctx, err)
			}
			last = err
			continue
		}
		wait = a.backoff
		done, err := t.apply(ctx, task)
		if err != nil || done || t.stopped {
			return err
		}
		done, err = t.consume(ctx, tr.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: t.taskID}))
		if err != nil || t.stopped {
			return err
		}
		if done {
			// What happened between tasks/get and the subscription is not
			// replayed by every server: the task as stored is the answer.
			if task, err := tr.GetTask(ctx, &a2a.TaskQueryParams{ID: t.taskID}); err == nil {
				_, _ = t.apply(ctx, task)
			}
			return nil
		}
		last = errors.New("the task's stream ended before the task did")
		deadline = time.Now().Add(a.reconnect)
	}
}

// callError classifies an error of a call to the remote.
func (t *turn) callError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, a2a.ErrTaskNotFound):
		return t.a.permanent(fmt.Errorf("the remote agent does not know the task %s: %w", t.taskID, err))
	case isProtocol(err):
		return t.a.permanent(err)
	}
	return t.a.transient(err)
}

// isProtocol reports whether err is the remote's JSON-RPC answer (rather
// than a broken connection).
func isProtocol(err error) bool {
	// (An internal or server error is the remote's trouble: retried.)
	for _, e := range []error{a2a.ErrParseError, a2a.ErrInvalidRequest, a2a.ErrMethodNotFound, a2a.ErrInvalidParams,
		a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrUnsupportedOperation, a2a.ErrUnsupportedContentType,
		a2a.ErrInvalidAgentResponse} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// answer is the turn's message once the task is settled.
func (t *turn) answer() (*message.Message, error) {
	text := t.text()
	switch {
	case t.reply != nil:
		text = *t.reply
	case t.state == a2a.TaskStateCompleted:
		if text == "" {
			text = t.status
		}
	case t.state == a2a.TaskStateInputRequired || t.state == a2a.TaskStateAuthRequired:
		if t.status != "" && !strings.Contains(text, t.status) {
			text = strings.TrimSpace(text + "\n\n" + t.status)
		}
	case t.state.Terminal():
		why := t.status
		if why == "" {
			why = "no reason given"
		}
		return nil, t.a.permanent(fmt.Errorf("the remote task %s is %s: %s", t.taskID, t.state, why))
	}
	t.emit(text)
	m := message.Assistant("", text)
	meta := map[string]any{"context_id": t.contextID}
	if t.taskID != "" {
		meta["task_id"] = string(t.taskID)
		meta["state"] = string(t.state)
	}
	m.Metadata = map[string]any{MetadataKey: meta}
	return &m, nil
}

// partsText is the text of parts: text parts as is, data parts as JSON,
// files named.
func partsText(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			out = append(out, p.Text)
		case a2a.DataPart:
			b, _ := json.Marshal(p.Data)
			out = append(out, string(b))
		case a2a.FilePart:
			out = append(out, fileText(p))
		}
	}
	return strings.Join(out, "")
}

func fileText(p a2a.FilePart) string {
	switch f := p.File.(type) {
	case a2a.FileURI:
		return "[file " + f.URI + "]"
	case a2a.FileBytes:
		name := f.Name
		if name == "" {
			name = "unnamed"
		}
		return "[file " + name + "]"
	}
	return "[file]"
}

// usageOf reads the usage a baton server puts in its task's metadata:
// {"baton": {"usage": {"input_tokens", "output_tokens"}}}.
func usageOf(meta map[string]any) (message.Usage, bool) {
	b, ok := meta["baton"].(map[string]any)
	if !ok {
		return message.Usage{}, false
	}
	u, ok := b["usage"].(map[string]any)
	if !ok {
		return message.Usage{}, false
	}
	num := func(k string) int64 {
		f, _ := u[k].(float64)
		return int64(f)
	}
	return message.Usage{InputTokens: num("input_tokens"), OutputTokens: num("output_tokens")}, true
}

// message builds what a turn sends: the last user message, in the
// remote's context when the history has one (and for its task when it
// asked for input); on first contact with the earlier history.
func (a *Agent) message(req *model.Request) (*a2a.MessageSendParams, error) {
	msgs := req.Messages
	prev := -1
	var ctxID, taskID, state string
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != message.RoleAssistant || m.Agent != req.Agent {
			continue
		}
		if md, ok := m.Metadata[MetadataKey].(map[string]any); ok {
			ctxID, _ = md["context_id"].(string)
			taskID, _ = md["task_id"].(string)
			state, _ = md["state"].(string)
			prev = i
			break
		}
	}
	last := -1
	for i := len(msgs) - 1; i > prev; i-- {
		if msgs[i].Role == message.RoleUser {
			last = i
			break
		}
	}
	if last < 0 {
		return nil, errors.New("nothing to send: no user message since the remote agent last answered")
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: msgs[last].Text()})
	if ctxID != "" {
		m.ContextID = ctxID
		if state == string(a2a.TaskStateInputRequired) || state == string(a2a.TaskStateAuthRequired) {
			m.TaskID = a2a.TaskID(taskID)
		}
	} else {
		var hist []any
		if req.System != "" {
			hist = append(hist, map[string]any{"role": "system", "text": req.System})
		}
		for _, h := range msgs[:last] {
			text := h.Text()
			if text == "" || h.Role == message.RoleTool {
				continue
			}
			e := map[string]any{"role": string(h.Role), "text": text}
			if h.Agent != "" {
				e["agent"] = h.Agent
			}
			hist = append(hist, e)
		}
		if len(hist) > 0 {
			m.Parts = append(m.Parts, a2a.DataPart{Data: map[string]any{"history": hist}, Metadata: map[string]any{"baton": "history"}})
		}
	}
	blocking := true
	return &a2a.MessageSendParams{Message: m, Config: &a2a.MessageSendConfig{Blocking: &blocking, AcceptedOutputModes: []string{"text/plain"}}}, nil
}
