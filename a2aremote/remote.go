package a2aremote

import (
	"cmp"
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

	"github.com/batonhq/baton/internal/a2av1"
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
	// A 1.0 card declares its endpoints in supportedInterfaces: the agent
	// is called with protocol 1.0 (a2av1).
	if in, ok := a2av1.CardInterface(body); ok {
		var c1 struct {
			Name, Description, Version string
			Capabilities               struct{ Streaming bool }
		}
		if err := json.Unmarshal(body, &c1); err != nil {
			return nil, nil, a.permanent(fmt.Errorf("agent card %s: %w", a.cardURL, err))
		}
		card := a2a.AgentCard{Name: c1.Name, Description: c1.Description, Version: c1.Version, URL: in.URL, ProtocolVersion: cmp.Or(in.ProtocolVersion, a2av1.Version),
			PreferredTransport: a2a.TransportProtocolJSONRPC, Capabilities: a2a.AgentCapabilities{Streaming: c1.Capabilities.Streaming}}
		a.card, a.tr = &card, a2av1.NewTransport(in.URL, a.hc)
		return a.card, a.tr, nil
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
		return nil, nil, a.permanent(fmt.Errorf("agent card %s: no JSON-RPC endpoint (this client speaks A2A 1.0 and 0.3 over JSON-RPC)", a.cardURL))
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
