package server

import (
	"context"
	"iter"
	"log/slog"
	"net/http"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook"
)

// Core is the runs API of the server: what every protocol adapter (package
// server/openai, server/agui, server/a2a …) uses to serve its wire protocol,
// and all it uses. An adapter registers its routes with [Core.Handle], turns
// its requests into threads, turns and decisions, and translates the
// events of the runs ([Core.Events]) into its own wire format. Everything
// else — authentication and the caller's tenancy, rate and body limits, the
// runs' execution wherever it happens (this process, another replica, a
// background worker), event logs, reconnection, cancellation, shutdown — is
// the core's, the same for every protocol.
//
// Every method is safe for concurrent use. Each method that takes a
// [*Caller] acts as that caller's owner: another owner's threads and runs
// are not found.
type Core interface {
	// Handle registers a route: pattern is an [http.ServeMux] pattern
	// ("POST /v1/agui/{network}"), h its handler. The core authenticates
	// the request (unless rt.Public: 401 for a missing, unknown, revoked or
	// expired key), checks the key's scope (rt.Scope: 403 naming the scope
	// it lacks), applies the caller's rate limit and
	// the body limit, bounds it by the request timeout (unless
	// rt.Streaming), and answers the error h returns.
	Handle(pattern string, rt Route, h Handler)

	// Networks returns the served networks, in name order.
	Networks() []*Network
	// Network returns the served network of a name, if any.
	Network(name string) (*Network, bool)

	// Thread returns a thread of the caller; another owner's, or a missing
	// one, is a 404 [*Error].
	Thread(ctx context.Context, c *Caller, id string) (*store.Thread, error)
	// CreateThread creates a thread of the caller (its OwnerID is set), with
	// the messages p holds.
	CreateThread(ctx context.Context, c *Caller, p *store.CreateThreadParams) (*store.Thread, error)

	// CheckInput refuses a turn's input that is empty, too large or not
	// UTF-8 (a 400 [*Error] with param "input").
	CheckInput(input string) error
	// Webhook checks a run's own webhook URL named by a request (a 400
	// [*Error] with param param when the server has no webhooks or
	// refuses the URL) and returns the run option that sends the run's
	// events there too.
	Webhook(ctx context.Context, param, url string) (runner.RunOption, error)

	// PushNotifications reports whether the server sends A2A push
	// notifications (its webhooks are on).
	PushNotifications() bool
	// PutPushConfig stores an A2A push notification config of a run of the
	// caller (OwnerID set; the run need not have started yet), replacing
	// the run's config of the same ID; it needs the run scope, and its URL
	// is checked as a run's webhook's (a 400 [*Error] with param param).
	// The run's events then go to it (package a2apush) until it is deleted.
	PutPushConfig(ctx context.Context, c *Caller, param string, cfg store.PushConfig) (*store.PushConfig, error)
	// PushConfigs returns the push notification configs of a run of the
	// caller, oldest first.
	PushConfigs(ctx context.Context, c *Caller, runID string) ([]*store.PushConfig, error)
	// PushConfig returns a push notification config of a run of the
	// caller; a missing one is store.ErrNotFound.
	PushConfig(ctx context.Context, c *Caller, runID, id string) (*store.PushConfig, error)
	// DeletePushConfig deletes a push notification config of a run of the
	// caller (run scope); a missing one is store.ErrNotFound.
	DeletePushConfig(ctx context.Context, c *Caller, runID, id string) error
	// StartTurn starts a user turn on a thread of nw and returns once its
	// first event (or the error that kept it from starting) is known. The
	// run goes on after the request that started it ends.
	StartTurn(ctx context.Context, c *Caller, nw *Network, t Turn) (*Run, error)
	// Resume resumes the run of checkpoint cp, which waits for a decision,
	// with decisions, and returns once its first event is known.
	Resume(ctx context.Context, c *Caller, nw *Network, cp *store.Checkpoint, decisions []runner.Decision) (*Run, error)
	// Run returns a run of the caller by id: the one this process knows, or
	// one made from the store (its events rebuilt from its checkpoints, an
	// unfinished one followed wherever it executes). A missing run is
	// store.ErrNotFound.
	Run(ctx context.Context, c *Caller, runID string) (*Run, error)
	// LatestCheckpoint returns the latest checkpoint of a run of the caller.
	LatestCheckpoint(ctx context.Context, c *Caller, runID string) (*store.Checkpoint, error)
	// Interrupted returns the state of the run in which it raised the
	// interrupt of an id; store.ErrNotFound if it never did.
	Interrupted(ctx context.Context, c *Caller, runID, interruptID string) (*runstate.State, error)
	// Cancel cancels a run (threads.Service.Cancel: it stops at its next
	// safe boundary, wherever it executes) and returns it as the store now
	// has it.
	Cancel(ctx context.Context, c *Caller, nw *Network, threadID, runID string) (*Run, error)

	// Events calls fn with the run's events after from, in order: those only
	// the store still has rebuilt from its checkpoints, then live, until the
	// run's log closes (the run ended, waits for a decision, or this process
	// no longer follows it), fn returns false, or ctx ends. A context that is
	// already done reads what there is now. During a shutdown it returns
	// [ErrShuttingDown].
	Events(ctx context.Context, run *Run, from Cursor, fn func(Entry) bool) error
	// OpenStream counts a stream against the limit of open streams; it
	// returns a 503 [*Error] when there are too many. Call release when the
	// stream ends.
	OpenStream(ctx context.Context) (release func(), err error)
	// NewStream starts the SSE answer of a stream of run: its headers name
	// the run and its thread; without retry the stream has no retry field.
	NewStream(w http.ResponseWriter, run *Run, retry bool) (*sse.Writer, error)
	// Heartbeat is the interval of comment lines on idle streams.
	Heartbeat() time.Duration
	// RequestTimeout bounds the requests that are not streams.
	RequestTimeout() time.Duration
	// WithTimeout bounds a request that turned out not to be a stream (its
	// body says so): the request timeout applies unless stream is set. Call
	// cancel when the request is answered.
	WithTimeout(r *http.Request, stream bool) (*http.Request, context.CancelFunc)
	// ShuttingDown is closed when the server's runs are cut by a shutdown:
	// a stream then ends, and its client reconnects elsewhere.
	ShuttingDown() <-chan struct{}
	// Logger is the server's logger.
	Logger() *slog.Logger
}

// Handler serves a route for an authenticated caller (nil on a public
// route). The error it returns is answered: an [*Error] as it is, any
// other through [Classify].
type Handler func(w http.ResponseWriter, r *http.Request, c *Caller) error

// Route are the options of a route of [Core.Handle]. The zero value is an
// authenticated route bounded by the request timeout, whose errors are
// baton's error object.
type Route struct {
	// Public routes take no API key (an agent card).
	Public bool
	// Scope is the scope the route's key needs (ScopeRead … ScopeAdmin):
	// a key without it gets 403 naming it. Every route that is not Public
	// declares one; [Core.Handle] panics otherwise. A route whose requests
	// need more in some cases (a JSON-RPC method that starts a run) checks
	// that itself with [Caller.Require].
	Scope Scope
	// Streaming routes are not bounded by the request timeout: the handler
	// bounds itself ([Core.WithTimeout]).
	Streaming bool
	// ErrorBody, if set, makes the JSON body of an error answer of the
	// route (OpenAI's error object); the core sets the status and the
	// Retry-After and authentication headers.
	ErrorBody func(*Error) any
}

// Protocol is a wire protocol served over the [Core]: Mount registers its
// routes. Config.Protocols lists the protocols a server speaks.
type Protocol interface {
	Mount(c Core)
}

// Turn is a user turn of [Core.StartTurn].
type Turn struct {
	ThreadID string
	// RunID is the run's id; empty means a new one.
	RunID string
	Input string
	// Options are the run's options (runner.WithAgent, WithSettings …);
	// the background boundary of runs started by a request is added.
	Options []runner.RunOption
}

// Cursor is the position of an event in a run's stream; its text form is
// the event's SSE id.
type Cursor = runlog.Cursor

// Entry is an event of a run: its cursor, type (runner.EventType, or
// "draft" for a background worker's progress) and JSON.
type Entry = runlog.Entry

// Read is what [Run.Since] read of a run's log.
type Read = runlog.Read

// ParseCursor parses an event id; "" is before every event.
func ParseCursor(s string) (Cursor, error) { return runlog.ParseCursor(s) }

// ThreadHeader names the thread of a request that continues one (OpenAI's
// routes), and of the run an answer streams.
const ThreadHeader = "Baton-Thread-Id"

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// ThreadID is the id of the run's thread.
func (r *Run) ThreadID() string { return r.threadID }

// Network is the name of the run's network.
func (r *Run) Network() string { return r.network }

// StartedAt is the cursor before the events of the run's latest execution
// in this process: a stream of a turn or of a resumed run starts there.
func (r *Run) StartedAt() Cursor {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base
}

// Last is the cursor of the last event in the run's log.
func (r *Run) Last() Cursor { return r.log.Last() }

// Since reads the run's log after cur: at most max entries (0: all), into
// buf. Read.Wait is closed when more come; Read.Done says the log is
// closed. Unlike [Core.Events] it does not rebuild what the log no longer
// holds (Read.Lost).
func (r *Run) Since(cur Cursor, max int, buf []Entry) Read { return r.log.Since(cur, max, buf) }

// Reader counts a reader of the run (a finished run's log is kept while it
// has readers); call done when it stops reading.
func (r *Run) Reader() (done func()) {
	r.addReader(1)
	return func() { r.addReader(-1) }
}

// Name is the network's name.
func (nw *Network) Name() string { return nw.name }

// Agents is the network's agents.
func (nw *Network) Agents() *agent.Network { return nw.net }

// The methods of Core that the rest of the server does not already have.

var _ Core = (*Server)(nil)

// Networks returns the served networks, in name order.
func (s *Server) Networks() []*Network { return s.netList }

// Network returns the served network of a name.
func (s *Server) Network(name string) (*Network, bool) {
	nw, ok := s.nets[name]
	return nw, ok
}

// Thread returns a thread of the caller.
func (s *Server) Thread(ctx context.Context, c *Caller, id string) (*store.Thread, error) {
	return s.thread(ctx, c, id)
}

// CreateThread creates a thread of the caller.
func (s *Server) CreateThread(ctx context.Context, c *Caller, p *store.CreateThreadParams) (*store.Thread, error) {
	if err := c.Require(ScopeRun); err != nil {
		return nil, err
	}
	if err := c.RequireNetwork(p.Network); err != nil {
		return nil, err
	}
	if _, err := s.st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: c.Owner}); err != nil {
		return nil, err
	}
	q := *p
	q.OwnerID = c.Owner
	return s.st.CreateThread(ctx, &q)
}

// CheckInput refuses a bad input.
func (s *Server) CheckInput(input string) error { return s.checkInput(input) }

// Webhook checks a run's own webhook URL.
func (s *Server) Webhook(ctx context.Context, param, url string) (runner.RunOption, error) {
	if err := s.cfg.Service.Webhooks().CheckURL(ctx, url); err != nil {
		return nil, BadParam(param, "%v", err)
	}
	return runner.WithValues(webhook.RunValues(url)), nil
}

// StartTurn starts a user turn.
func (s *Server) StartTurn(ctx context.Context, c *Caller, nw *Network, t Turn) (*Run, error) {
	if err := c.Require(ScopeRun); err != nil {
		return nil, err
	}
	if err := c.RequireNetwork(nw.name); err != nil {
		return nil, err
	}
	if t.RunID == "" {
		t.RunID = runstate.NewRunID()
	}
	return s.startTurn(ctx, c.Owner, t.ThreadID, t.RunID, nw, t.Input, t.Options)
}

// Resume resumes a run that waits for a decision.
func (s *Server) Resume(ctx context.Context, c *Caller, nw *Network, cp *store.Checkpoint, decisions []runner.Decision) (*Run, error) {
	if err := c.Require(ScopeDecide); err != nil {
		return nil, err
	}
	if err := c.RequireNetwork(nw.name); err != nil {
		return nil, err
	}
	opts := append([]runner.RunOption{runner.WithDecisions(decisions...)}, nw.inlineOptions()...)
	return s.launch(ctx, c.Owner, cp.ThreadID, cp.RunID, nw, &runlog.Cursor{Seq: cp.State.Seq}, func(rctx context.Context) iter.Seq2[runner.Event, error] {
		return nw.svc.Resume(withActor(rctx, c), c.Owner, cp.RunID, opts...)
	})
}

// Run returns a run of the caller.
func (s *Server) Run(ctx context.Context, c *Caller, runID string) (*Run, error) {
	if run := s.reg.run(c.Owner, runID); run != nil {
		if !c.SeesNetwork(run.network) {
			return nil, store.ErrNotFound
		}
		return s.current(ctx, run), nil
	}
	if runID == "" || len(runID) > 128 {
		return nil, store.ErrNotFound
	}
	cp, err := s.LatestCheckpoint(ctx, c, runID)
	if err != nil {
		return nil, err
	}
	return s.stored(c.Owner, cp), nil
}

// LatestCheckpoint returns a run's latest checkpoint.
func (s *Server) LatestCheckpoint(ctx context.Context, c *Caller, runID string) (*store.Checkpoint, error) {
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: c.Owner, RunID: runID})
	if err == nil && !c.SeesNetwork(cp.State.Network) {
		return nil, store.ErrNotFound
	}
	return cp, err
}

// Interrupted returns the state in which a run raised an interrupt.
func (s *Server) Interrupted(ctx context.Context, c *Caller, runID, interruptID string) (*runstate.State, error) {
	_, raised, _, err := s.chain(ctx, c.Owner, runID, func(cp *store.Checkpoint) bool {
		return cp.State.Status == runstate.StatusInterrupted && cp.State.Interrupt != nil && cp.State.Interrupt.ID == interruptID
	})
	if err == nil && (raised == nil || !c.SeesNetwork(raised.Network)) {
		raised, err = nil, store.ErrNotFound
	}
	return raised, err
}

// Cancel cancels a run.
func (s *Server) Cancel(ctx context.Context, c *Caller, nw *Network, threadID, runID string) (*Run, error) {
	if err := c.Require(ScopeRun); err != nil {
		return nil, err
	}
	if err := c.RequireNetwork(nw.name); err != nil {
		return nil, err
	}
	cp, err := nw.svc.Cancel(ctx, c.Owner, threadID, runID)
	if err != nil {
		return nil, err
	}
	s.auditCancel(ctx, c, nw, cp)
	return s.refresh(c.Owner, cp), nil
}

// Events calls fn with the run's events after from.
func (s *Server) Events(ctx context.Context, run *Run, from Cursor, fn func(Entry) bool) error {
	return s.eachEntry(ctx, run, from, fn)
}

// OpenStream counts an open stream.
func (s *Server) OpenStream(ctx context.Context) (func(), error) {
	if !s.acquireStream(ctx) {
		return nil, s.tooManyStreams()
	}
	return func() { s.releaseStream(ctx) }, nil
}

// NewStream starts a run's SSE answer.
func (s *Server) NewStream(w http.ResponseWriter, run *Run, retry bool) (*sse.Writer, error) {
	o := s.sseOptions(http.Header{"Baton-Run-Id": {run.id}, ThreadHeader: {run.threadID}})
	if !retry {
		o.Retry = 0
	}
	return sse.NewWriter(w, o)
}

// Heartbeat is the interval of comment lines on idle streams.
func (s *Server) Heartbeat() time.Duration { return s.cfg.Heartbeat }

// RequestTimeout bounds the requests that are not streams.
func (s *Server) RequestTimeout() time.Duration { return s.cfg.RequestTimeout }

// WithTimeout bounds a request that is not a stream.
func (s *Server) WithTimeout(r *http.Request, stream bool) (*http.Request, context.CancelFunc) {
	return s.withTimeout(r, stream)
}

// ShuttingDown is closed when the server's runs are cut by a shutdown.
func (s *Server) ShuttingDown() <-chan struct{} { return s.runCtx.Done() }

// Logger is the server's logger.
func (s *Server) Logger() *slog.Logger { return s.log }
