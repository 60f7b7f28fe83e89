package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
	"github.com/batonhq/baton/webui"
)

// Config configures a [Server]. Service is required; every zero field
// means its default.
type Config struct {
	// Service is the assembled networks, store and background path the
	// server serves. The server neither starts nor stops it: whoever opened
	// it does (Start before serving, Stop and Close after Shutdown).
	Service *service.Service
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Telemetry, if set, observes runs (runner.Config.Observer), counts
	// open streams and serves GET /metrics.
	Telemetry *telemetry.Telemetry

	// FollowInterval is how often a stream that follows a run executed by
	// a background worker polls its checkpoints, besides the draft
	// broker's wake-ups. Defaults to 500ms.
	FollowInterval time.Duration

	// MaxStreams bounds the SSE streams open at once; more are refused with
	// 503. Defaults to 10000.
	MaxStreams int
	// RateLimit is the sustained requests per second allowed per API key;
	// 0 means no limit. RateBurst is the burst (default: RateLimit rounded
	// up). Excess requests get 429 with Retry-After.
	RateLimit float64
	RateBurst int
	// RequestTimeout bounds requests that are not streams, a non-streaming
	// run included (which then answers 202 with the run's state). Defaults
	// to 60 seconds.
	RequestTimeout time.Duration
	// MaxBodyBytes bounds request bodies (413 beyond). Defaults to 1 MiB.
	MaxBodyBytes int64
	// MaxInputBytes bounds a run's input text. Defaults to 64 KiB.
	MaxInputBytes int
	// Heartbeat is the interval of comment lines on idle streams. Defaults
	// to 15 seconds.
	Heartbeat time.Duration
	// StreamWriteTimeout drops a stream client that takes no bytes for
	// this long. Defaults to 10 seconds.
	StreamWriteTimeout time.Duration
	// StreamBuffer bounds the bytes queued for one stream client. Defaults
	// to 64 KiB.
	StreamBuffer int
	// LogEvents and LogBytes bound the in-memory event log of each run;
	// a client that falls further behind gets the missed events rebuilt
	// from the store. Default 4096 events, 1 MiB.
	LogEvents int
	LogBytes  int
	// LogTTL is how long the event log of a finished run is kept for
	// reconnecting clients. Defaults to 5 minutes.
	LogTTL time.Duration
	// KeyCacheTTL is how long an API key lookup is cached (a revoked key
	// works at most this long). Defaults to 5 seconds; negative disables.
	KeyCacheTTL time.Duration
	// NoUI turns the web UI off.
	NoUI bool
	// Protocols are the wire protocols served beside baton's own API, each
	// mounted once on the server's core (OpenAI's, AG-UI, A2A …: see the
	// packages under server/). None by default.
	Protocols []Protocol
}

// Server is baton's HTTP API. It is an http.Handler, safe for concurrent
// use. Call Shutdown to stop it.
type Server struct {
	cfg  Config
	st   store.Store
	log  *slog.Logger
	tel  *telemetry.Telemetry
	nets map[string]*Network
	// netList is the networks in name order.
	netList []*Network
	mux     *http.ServeMux
	keys    *keyCache
	limiter *rateLimiter
	reg     *registry
	watch   *threadWatcher
	// drafts reports the progress of messages that background workers
	// write, in this process or another.
	drafts DraftSource

	// inflight counts the runs executing inline in this process, and
	// followers the runs followed through the store, for Shutdown.
	inflight  tracker
	followers tracker
	// hijacked counts the thread streams whose connections this server
	// took over (threadStream): Shutdown waits for them to end, as the
	// http.Server no longer does.
	hijacked tracker
	// id names this server in its announcements of the threads it streams.
	id string
	// deltas sends the deltas of the runs this process executes to the
	// processes that stream their threads (nil without such processes).
	deltas *draft.DeltaSender
	// early holds the deltas of other processes' runs that came before
	// this process read the step they follow.
	early earlyDeltas

	// routeList is every route registered with Handle, in order.
	routeList []RouteInfo

	streams  atomic.Int64
	draining atomic.Bool
	drain    chan struct{} // closed when Shutdown starts
	runCtx   context.Context
	stopRuns context.CancelFunc
	stopOnce sync.Once
	janitor  chan struct{}
}

// Network is a served network. sum is nil when the network declares no
// summary model: its threads cannot be handed off.
type Network struct {
	name string
	net  *agent.Network
	svc  *threads.Service
	sum  *threadhandoff.Service
	cont *continuation.Service
	wire wire.Network
}

// New returns a server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Service == nil {
		return nil, errors.New("server: Config.Service is required")
	}
	setDefaults(&cfg)
	s := &Server{cfg: cfg, st: cfg.Service.Store(), log: cfg.Logger, tel: cfg.Telemetry, nets: map[string]*Network{},
		keys: &keyCache{ttl: cfg.KeyCacheTTL, m: map[string]keyEntry{}}, limiter: newRateLimiter(cfg.RateLimit, cfg.RateBurst),
		drain: make(chan struct{}), janitor: make(chan struct{}), drafts: BrokerDrafts(cfg.Service.Broker())}
	s.reg = newRegistry(runlog.Limits{MaxEvents: cfg.LogEvents, MaxBytes: cfg.LogBytes}, cfg.LogTTL)
	s.watch = newThreadWatcher(s)
	for _, n := range cfg.Service.Networks() {
		nw := newNetwork(n)
		s.withQueue(nw)
		s.nets[nw.name] = nw
		s.netList = append(s.netList, nw)
	}
	s.runCtx, s.stopRuns = context.WithCancel(context.WithoutCancel(context.Background()))
	s.id = newRequestID()
	if sg, ok := cfg.Service.Broker().(draft.Signaller); ok {
		s.deltas = draft.NewDeltaSender(s.runCtx, sg, s.id, service.ThreadInterestTTL)
		s.signaller() // hear the deltas (and signals) of other processes from the start
	}
	s.routes()
	go s.sweep()
	return s, nil
}

func setDefaults(cfg *Config) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.FollowInterval <= 0 {
		cfg.FollowInterval = 500 * time.Millisecond
	}
	if cfg.MaxStreams <= 0 {
		cfg.MaxStreams = 10000
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 60 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxInputBytes <= 0 {
		cfg.MaxInputBytes = 64 << 10
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.LogTTL <= 0 {
		cfg.LogTTL = 5 * time.Minute
	}
	if cfg.KeyCacheTTL == 0 {
		cfg.KeyCacheTTL = 5 * time.Second
	}
}

// newNetwork returns the served form of a network of the service.
func newNetwork(n *service.Network) *Network {
	name := n.Name()
	w := wire.Network{Object: "network", Name: name, Fingerprint: n.Network.Fingerprint(), Entry: n.Network.Entry(), ThreadHandoff: n.Summary != nil}
	for _, a := range n.Network.Agents() {
		wa := wire.Agent{Name: a.Name, Description: a.Description}
		for _, h := range a.Transfers {
			wa.Transfers = append(wa.Transfers, h.To)
		}
		w.Agents = append(w.Agents, wa)
	}
	nw := &Network{name: name, net: n.Network, svc: n.Threads, cont: n.Continuation, wire: w}
	if n.Summary != nil {
		nw.sum = n.ThreadHandoff
	}
	return nw
}

func (s *Server) routes() {
	mux := http.NewServeMux()
	s.mux = mux
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.tel != nil {
		mux.Handle("GET /metrics", s.tel.MetricsHandler())
	}
	read, run := Route{Scope: ScopeRead}, Route{Scope: ScopeRun}
	readStream, runStream := Route{Scope: ScopeRead, Streaming: true}, Route{Scope: ScopeRun, Streaming: true}
	s.Handle("GET /v1/networks", read, s.listNetworks)
	s.Handle("POST /v1/threads", run, s.createThread)
	s.Handle("GET /v1/threads", read, s.listThreads)
	s.Handle("GET /v1/threads/{id}", read, s.getThread)
	s.Handle("GET /v1/threads/{id}/messages", read, s.listMessages)
	s.Handle("POST /v1/threads/{id}/runs", runStream, s.createRun)
	s.Handle("GET /v1/threads/{id}/runs/{run_id}", read, s.getRun)
	s.Handle("GET /v1/threads/{id}/runs/{run_id}/events", readStream, s.runEvents)
	s.Handle("POST /v1/threads/{id}/runs/{run_id}/cancel", run, s.cancelRun)
	s.Handle("GET /v1/threads/{id}/runs/{run_id}/steps", read, s.listSteps)
	s.Handle("GET /v1/threads/{id}/runs/{run_id}/steps/{step_id}", read, s.getStep)
	s.Handle("GET /v1/threads/{id}/events", readStream, s.threadEvents)
	s.Handle("POST /v1/threads/{id}/handoff", run, s.threadHandoff)
	s.Handle("POST /v1/threads/{id}/fork", run, s.fork)
	s.Handle("GET /v1/interrupts/{id}", read, s.getInterrupt)
	s.Handle("GET /v1/audit", Route{Scope: ScopeAdmin}, s.listAudit)
	s.Handle("GET /v1/webhooks/deliveries", Route{Scope: ScopeRead}, s.listWebhookDeliveries)
	s.Handle("POST /v1/webhooks/secret", run, s.webhookSecret)
	s.Handle("POST /v1/interrupts/{id}/decision", Route{Scope: ScopeDecide, Streaming: true}, s.decide)
	for _, p := range s.cfg.Protocols {
		p.Mount(s)
	}
	if !s.cfg.NoUI {
		ui := webui.Handler()
		mux.Handle("GET /{$}", ui)
		mux.Handle("GET /assets/", ui)
		mux.Handle("GET /favicon.ico", ui)
	}
}

// Handle registers a route: authentication, rate limit, body limit and
// (unless streaming) the request timeout around h.
func (s *Server) Handle(pattern string, rt Route, h Handler) {
	writeError := s.writeError
	if rt.ErrorBody != nil {
		writeError = func(w http.ResponseWriter, r *http.Request, err error) {
			ae := Classify(err)
			s.writeBody(w, r, err, ae, rt.ErrorBody(ae))
		}
	}
	if !rt.Public && !rt.Scope.Valid() {
		panic(fmt.Sprintf("server: route %q declares no scope (Route.Scope): want read, run, decide or admin", pattern))
	}
	s.routeList = append(s.routeList, RouteInfo{Pattern: pattern, Public: rt.Public, Scope: rt.Scope})
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var c *Caller
		if !rt.Public {
			var err error
			if c, err = s.authenticate(r); err != nil {
				writeError(w, r, err)
				return
			}
			if err := c.Require(rt.Scope); err != nil {
				writeError(w, r, err)
				return
			}
			rc := *c // the cached Caller is shared: the request's own copy
			rc.RequestID = w.Header().Get(RequestIDHeader)
			c = &rc
			// What the request decides is recorded as the key's doing.
			ctx := store.ContextWithActor(context.WithValue(r.Context(), callerKey{}, c), c.actor())
			if ok, wait := s.limiter.allow(c.KeyID, time.Now()); !ok {
				e := Errorf(http.StatusTooManyRequests, wire.ErrRateLimited, "rate limit of %g requests per second exceeded; retry in %s", s.cfg.RateLimit, wait.Round(time.Millisecond))
				e.RetryAfter = int(math.Ceil(wait.Seconds()))
				writeError(w, r, e)
				return
			}
			r = r.WithContext(ctx)
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		if !rt.Streaming {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		if err := h(w, r, c); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				// The request's timeout, or the one a streaming route set
				// itself once it knew it would not stream (WithTimeout).
				err = Errorf(http.StatusGatewayTimeout, wire.ErrTimeout, "the request took longer than %s", s.cfg.RequestTimeout)
			}
			writeError(w, r, err)
		}
	})
}

// ServeHTTP routes a request. Unknown routes and methods answer JSON
// errors (404, 405).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(RequestIDHeader, newRequestID())
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // sets the path values
		return
	}
	// The mux's own 404 or 405: find which, answer in JSON.
	probe := &statusProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		s.writeError(w, r, Errorf(http.StatusMethodNotAllowed, wire.ErrInvalidRequest, "method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, probe.header.Get("Allow")))
		return
	}
	if probe.status >= 300 && probe.status < 400 {
		h.ServeHTTP(w, r) // the mux's redirects (clean paths)
		return
	}
	s.writeError(w, r, Errorf(http.StatusNotFound, wire.ErrNotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// RequestIDHeader is sent on every answer, as OpenAI's API does: its
// clients report it (openai.Error.RequestID, response.request_id).
const RequestIDHeader = "X-Request-Id"

// newRequestID returns a request id: req_ and 24 hex digits.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// statusProbe records the status the mux's fallback handler writes.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(code int)        { p.status = code }

// healthz is the liveness check: 200 while the process serves, also when
// the database is away (restarting the process would not bring it back),
// saying so: status "unavailable" and checks.database "unreachable" (the
// readiness check, /readyz, is then 503).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.st.Ping(ctx); err != nil {
		WriteJSON(w, http.StatusOK, wire.Health{Status: "unavailable", Checks: map[string]string{"database": "unreachable"}})
		return
	}
	WriteJSON(w, http.StatusOK, wire.Health{Status: "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	checks := map[string]string{}
	status, code := "ready", http.StatusOK
	if s.draining.Load() {
		status, code = "draining", http.StatusServiceUnavailable
		checks["server"] = "shutting down"
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.st.Ping(ctx); err != nil {
		status, code = "unavailable", http.StatusServiceUnavailable
		checks["database"] = "unreachable"
	} else {
		checks["database"] = "ok"
	}
	checks["streams"] = strconv.FormatInt(s.streams.Load(), 10) + "/" + strconv.Itoa(s.cfg.MaxStreams)
	if code != http.StatusOK {
		w.Header().Set("Retry-After", "1")
	}
	WriteJSON(w, code, wire.Health{Status: status, Checks: checks})
}

func (s *Server) listNetworks(w http.ResponseWriter, r *http.Request, c *Caller) error {
	out := wire.List[wire.Network]{Object: "list", Data: make([]wire.Network, 0, len(s.netList))}
	for _, n := range s.netList {
		if c.SeesNetwork(n.name) {
			out.Data = append(out.Data, n.wire)
		}
	}
	WriteJSON(w, http.StatusOK, out)
	return nil
}

// network returns the served network of a name.
func (s *Server) network(name string) (*Network, error) {
	if n, ok := s.nets[name]; ok {
		return n, nil
	}
	names := make([]string, len(s.netList))
	for i, n := range s.netList {
		names[i] = n.name
	}
	return nil, BadParam("network", "unknown network %q (this server runs: %v)", name, names)
}

// Shutdown stops the server gracefully: readiness fails, new runs are
// refused (503, Retry-After), thread event streams end with a shutdown
// event, and until ctx ends the runs executing inline finish, and so do
// the runs their streams follow in the background (worked by any
// process), their streams with them. Runs
// still going then are cancelled at their last checkpoint, and each run
// executing inline is handed to River from it at once, in one transaction
// with its lease's release (the continuation's extension, as for any
// process that adopts: serve, worker, a library process with
// service.Config.Adopt), so that another process's workers resume it
// without waiting for its lease to expire. Their streams end with a
// shutdown event: the clients reconnect (to another instance) with
// Last-Event-ID; a request waiting for a run's result gets 202 and the
// run's events URL. Shutdown does not stop the service nor the
// http.Server: call service.Service.Stop alongside it, with the same
// deadline (its workers then take nothing new, and it renews the inline
// runs' leases until they stop), http.Server.Shutdown after it, and
// service.Service.Close once both have returned (baton serve does).
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.draining.Store(true)
		close(s.drain)
		close(s.janitor)
		s.wakeStreams() // the parked thread streams end with a shutdown event
	})
	err := s.inflight.wait(ctx)
	if err == nil {
		err = s.followers.wait(ctx)
	}
	s.stopRuns()
	s.wakeStreams()
	if err == nil {
		// The thread streams woken by the drain send their shutdown
		// event and close; each write is bounded by StreamWriteTimeout.
		err = s.hijacked.wait(ctx)
	}
	if err == nil {
		return nil
	}
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.inflight.wait(wctx)
	return fmt.Errorf("server: shutdown: runs still in flight were canceled at their last checkpoint: %w", ctx.Err())
}

// RouteInfo is a route registered with [Server.Handle]: its pattern and
// what it requires.
type RouteInfo struct {
	Pattern string
	Public  bool
	Scope   Scope
}

// Routes returns every route registered with Handle — baton's and every
// protocol's — in the order registered.
func (s *Server) Routes() []RouteInfo { return slices.Clone(s.routeList) }
