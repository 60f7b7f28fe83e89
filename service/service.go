package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/sqlitestore"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/a2apush"
)

// Config configures [Open]. Files or Networks (or both) name the networks
// to serve; every other zero field means its default.
type Config struct {
	// Files are network files, loaded with [Load] and Load's options.
	Files []string
	Load  LoadOptions
	// Networks are networks declared in Go.
	Networks []Definition

	// Database is the database's URL (see store/open: sqlite:PATH,
	// postgres://…); "" is an SQLite file under the user's data directory.
	// Ignored when Store is set.
	Database string
	// Store, if set, is the store to use instead of opening Database: an
	// SQLite or PostgreSQL store of packages store/sqlitestore and
	// store/pgstore. The caller closes it after Close.
	Store store.Store
	// NoMigrate refuses to migrate the database (baton's tables and
	// River's): a schema that is out of date is an error.
	NoMigrate bool
	// MemoryDir, if set, keeps the agents' memory documents in
	// DIR/<owner>/<agent>.md instead of the database. Every process serving
	// the same threads must use the same.
	MemoryDir string

	// Workers is how many background continuations each network's River
	// workers run at once in this process. 0 runs none: runs handed to the
	// background wait for the workers of other processes (`baton worker`).
	Workers int
	// Adopt makes this process adopt the runs of processes that died
	// mid-run (their leases expired) and hand them to the workers: `baton
	// serve` and `baton worker` do; the CLI's one-shot commands do not.
	Adopt bool
	// Continuation tunes the background path: JobTimeout,
	// RescueStuckJobsAfter, MaxAttempts, retry delays, River's fetch
	// timings (FetchPollInterval defaults to 250ms on SQLite, where other
	// processes' jobs are found by polling), LeaseTTL, AdoptEvery, Draft, Notice, ErrorText, and
	// Queue (one network only; by default each network has the queue
	// [continuation.QueueName]). The service sets the rest.
	Continuation continuation.Config
	// StopWait bounds how long a cancel (or a double-texting interrupt or
	// rollback) waits for a run that another process executes to stop at
	// its next safe boundary, after signalling it, before ending it in the
	// store (threads.Service.StopWait). Defaults to
	// [threads.DefaultStopWait].
	StopWait time.Duration
	// CheckpointRetention is how long a run's checkpoints are kept: older
	// ones are deleted in the background (Start: a sweep at once, then
	// every CheckpointRetention/30, between a minute and an hour; in
	// batches), except the latest of every run, which resume and a run's
	// status need; every checkpoint written within the period stays, for a
	// fork from any step (docs/store.md, "Retention"). Defaults to
	// [DefaultCheckpointRetention] (30 days); negative keeps everything.
	CheckpointRetention time.Duration

	// Webhooks, if set (URLs or a secret), signs and delivers every
	// run's events (run.completed, run.failed, run.cancelled,
	// run.interrupted) to its URLs and to a run's own (package webhook): a
	// River job per event and URL, inserted in the transaction of the
	// checkpoint that caused it, worked by the network's continuation
	// workers (in this process or a `baton worker`, which needs the same
	// secret).
	Webhooks webhook.Config

	// Telemetry, if set, observes runs (traces, metrics) and links a
	// continuation's spans to the request that handed it over.
	Telemetry *telemetry.Telemetry
	// InspectRetention is how long the calls of runs recorded for the
	// inspector (package inspect: model calls with their requests and
	// answers, tool calls, transfers) are kept: a sweeper started by Start
	// deletes older ones. 0 means [inspect.DefaultRetention] (7 days); a
	// negative value keeps none, and runs record nothing.
	InspectRetention time.Duration
	// WebhookRetention is how long the webhook delivery log keeps the
	// attempts of a delivery that ended (answered 2xx, or tried for the
	// last time): older ones are deleted in the background, in small
	// batches, every WebhookRetention/30 (between a minute and an hour); a
	// pending delivery's attempts are kept. Defaults to
	// [DefaultWebhookRetention] (7 days); negative keeps none once the
	// delivery ended.
	WebhookRetention time.Duration
	// InspectMaxCallBytes caps one recorded call's detail
	// (inspect.Config.MaxCallBytes; 0: inspect.DefaultMaxCallBytes).
	InspectMaxCallBytes int

	// Logger defaults to a logger that discards: the library is quiet
	// unless given one. Given one, every runner of the service logs each
	// run's start and end on it at Info (a failed run's end at Error), with
	// the run's trace id when tracing is on (telemetry.LoggingObserver,
	// docs/observability.md): in every process alike, worker included. A
	// logger that enables no level when Open is called (one on
	// slog.DiscardHandler) gets no run log.
	Logger *slog.Logger
}

// Definition is a network declared in Go.
type Definition struct {
	Network *agent.Network
	// Policy and Picker are as in runner.Config.
	Policy policy.Policy
	Picker policy.Picker
	// Summary summarises threads for thread → thread handoffs; without it
	// the network's threads cannot be handed off (their memory and seeds
	// still work).
	Summary model.Model
	// Webhooks take the events of the network's runs and thread handoffs,
	// besides Config.Webhooks.URLs (the file's webhooks:); they need
	// Config.Webhooks.Secret and pass its allow list.
	Webhooks []netspec.WebhookSpec
	// Close, if set, releases what loading the network opened (the sessions
	// with its MCP servers, see [Load]): Service.Close calls it, and so
	// does Open when it fails.
	Close func() error
}

// DefinitionOf returns the Definition of a loaded network file; the
// service takes over its Close.
func DefinitionOf(spec *netspec.Spec) Definition {
	return Definition{Network: spec.Network, Policy: spec.Policy, Picker: spec.Picker, Summary: spec.Summary, Webhooks: spec.Webhooks, Close: spec.Close}
}

// Network is a served network: its runner, with the extensions every
// process registers (the background path, agent memory and thread handoff
// seeds, runs' interrupts stored), the threads it runs turns on, its thread
// handoffs and its background continuations.
type Network struct {
	Definition
	Runner        *runner.Runner
	Threads       *threads.Service
	ThreadHandoff *threadhandoff.Service
	Continuation  *continuation.Service
}

// Name returns the network's name.
func (n *Network) Name() string { return n.Network.Name() }

// Service is baton assembled: one database (store, draft broker, River)
// and the networks it serves. Every command — run, chat, serve, worker —
// and library users start from it, so that they behave the same. It is safe
// for concurrent use. Close it after Stop.
type Service struct {
	be   *backend
	nets []*Network
	log  *slog.Logger
	// obs observes every network's runs: telemetry, and the run log when
	// Config.Logger is set.
	obs runner.Observer

	// webhooks delivers run events (nil: none configured).
	webhooks *webhook.Service

	// retention is Config.InspectRetention with its default; <0: none.
	retention time.Duration
	// checkpoints deletes old checkpoints between Start and Stop (nil:
	// none).
	checkpoints *sweeper
	// deliveries sweeps the webhook delivery log (Config.WebhookRetention).
	deliveries *sweeper

	mu      sync.Mutex
	started bool
	// sweep stops the sweeper of call records and waits for it.
	sweep func()
}

// Open loads the networks, opens the database and assembles the service.
// It starts nothing in the background: Start does.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	defs := slices.Clone(cfg.Networks)
	load := cfg.Load
	if load.Logger == nil {
		load.Logger = log
	}
	for _, f := range cfg.Files {
		spec, err := Load(f, load)
		if err != nil {
			closeDefinitions(defs)
			return nil, err
		}
		defs = append(defs, DefinitionOf(spec))
	}
	if err := checkDefinitions(defs); err != nil {
		closeDefinitions(defs)
		return nil, err
	}
	var be *backend
	var err error
	if cfg.Store != nil {
		be, err = backendOf(cfg.Store, log)
	} else {
		be, err = openBackend(ctx, cfg.Database, &store.Options{NoMigrate: cfg.NoMigrate}, log)
	}
	if err != nil {
		closeDefinitions(defs)
		return nil, err
	}
	s := &Service{be: be, log: log, obs: cfg.Telemetry.Observer(), retention: cfg.InspectRetention}
	if s.retention == 0 {
		s.retention = inspect.DefaultRetention
	}
	s.checkpoints = newCheckpointSweeper(be.store, cfg.CheckpointRetention, log)
	s.deliveries = newWebhookSweeper(be.store, cfg.WebhookRetention, log)
	wcfg := cfg.Webhooks
	if wcfg.Logger == nil {
		wcfg.Logger = log
	}
	if wcfg.Log == nil {
		wcfg.Log = be.store
	}
	if s.webhooks, err = webhook.New(ctx, wcfg); err != nil {
		be.close()
		closeDefinitions(defs)
		return nil, fmt.Errorf("service: %w", err)
	}
	// A2A push notification configs (server/a2a stores them) are targets
	// of every run's events.
	s.webhooks.SetTargets(a2apush.Targets)
	if err := s.checkNetworkWebhooks(ctx, defs); err != nil {
		be.close()
		closeDefinitions(defs)
		return nil, err
	}
	if cfg.Logger != nil && cfg.Logger.Enabled(ctx, slog.LevelError) {
		// A logger that writes nothing (slog.DiscardHandler) gets no
		// run log.
		s.obs = cfg.Telemetry.LoggingObserver(cfg.Logger)
	}
	for _, d := range defs {
		n, err := s.assemble(d, cfg, len(defs))
		if err != nil {
			be.close()
			closeDefinitions(defs)
			return nil, err
		}
		s.nets = append(s.nets, n)
	}
	slices.SortFunc(s.nets, func(a, b *Network) int { return cmp.Compare(a.Name(), b.Name()) })
	return s, nil
}

// checkNetworkWebhooks checks the networks' own webhooks: they need the
// server's secret, and each URL passes its allow list.
func (s *Service) checkNetworkWebhooks(ctx context.Context, defs []Definition) error {
	for _, d := range defs {
		for _, w := range d.Webhooks {
			if s.webhooks == nil {
				return fmt.Errorf("service: network %s names webhooks: a webhook secret is required (--webhook-secret or BATON_WEBHOOK_SECRET)", d.Network.Name())
			}
			if err := s.webhooks.CheckURL(ctx, w.URL); err != nil {
				return fmt.Errorf("service: network %s: webhook %s: %w", d.Network.Name(), w.URL, err)
			}
			if w.SecretEnv != "" {
				if err := s.webhooks.SetSecretEnv(w.URL, w.SecretEnv); err != nil {
					return fmt.Errorf("service: network %s: webhook %s: %w", d.Network.Name(), w.URL, err)
				}
			}
		}
	}
	return nil
}

// webhookURLs returns the URLs of a network's own webhooks.
func webhookURLs(d Definition) []string {
	urls := make([]string, len(d.Webhooks))
	for i, w := range d.Webhooks {
		urls[i] = w.URL
	}
	return urls
}

func checkDefinitions(defs []Definition) error {
	if len(defs) == 0 {
		return errors.New("service: no network: give Config.Files or Config.Networks")
	}
	seen := map[string]bool{}
	for i, d := range defs {
		if d.Network == nil {
			return fmt.Errorf("service: network %d has no agent.Network", i)
		}
		if seen[d.Network.Name()] {
			return fmt.Errorf("service: network %q is given twice", d.Network.Name())
		}
		seen[d.Network.Name()] = true
	}
	return nil
}

// assemble builds a network's runner, threads, thread handoffs and
// continuation, wired to each other once.
func (s *Service) assemble(d Definition, cfg Config, networks int) (*Network, error) {
	name := d.Network.Name()
	n := &Network{Definition: d}
	hcfg := threadhandoff.Config{Store: s.be.store, Model: d.Summary, Network: d.Network, Logger: s.log}
	if s.webhooks != nil {
		// Proposals and decisions are sent to the server-wide webhooks,
		// through the network's queue (n.Continuation, made below).
		hcfg.EventTx = func(ctx context.Context, tx store.Tx, owner string, ev *threadhandoff.Event) error {
			return s.webhooks.HandoffEventTx(n.Continuation, webhookURLs(d)...)(ctx, tx, owner, ev)
		}
	}
	if cfg.MemoryDir != "" {
		hcfg.Memory = &memory.Dir{Path: cfg.MemoryDir}
	}
	var err error
	if n.ThreadHandoff, err = threadhandoff.New(hcfg); err != nil {
		return nil, fmt.Errorf("service: network %s: %w", name, err)
	}
	if n.Continuation, err = continuation.New(s.continuationConfig(cfg, name, networks)); err != nil {
		return nil, fmt.Errorf("service: network %s: %w", name, err)
	}
	rc := runner.Config{Network: d.Network, Policy: d.Policy, Picker: n.ThreadHandoff.Picker(d.Picker), Logger: s.log,
		Extensions: []runner.Extension{n.Continuation.Extension(), n.ThreadHandoff.Extension(), threads.InterruptExtension()},
		Observer:   s.obs}
	if s.webhooks != nil {
		rc.Extensions = append(rc.Extensions, s.webhooks.Extension(n.Continuation, webhookURLs(d)))
	}
	if s.retention > 0 {
		// Every run's calls are recorded, for the inspector, with its
		// checkpoints.
		rc.RecordCalls = true
		rc.Extensions = append(rc.Extensions, inspect.Extension(inspect.Config{MaxCallBytes: cfg.InspectMaxCallBytes}))
	}
	if n.Runner, err = runner.New(rc); err != nil {
		return nil, fmt.Errorf("service: network %s: %w", name, err)
	}
	n.Threads = threads.New(s.be.store, n.Runner, s.log)
	n.Threads.StopWait = cfg.StopWait
	if s.webhooks != nil {
		// A run ended outside the runner (a cancel) has its event too.
		n.Threads.EndTx = s.webhooks.EndTx(n.Continuation, webhookURLs(d))
	}
	if sg, ok := s.be.broker.(draft.Signaller); ok {
		// Cancels and double-texting's stops reach the run in whichever
		// process executes it.
		n.Threads.Listen(sg)
		// Checkpoints wake the thread streams of every process.
		n.Threads.Committed = threadSignaller(sg)
	}
	// A run from a thread's queue, started by this process, is an inline
	// run: its slow tools go to the background.
	n.Threads.QueuedRunOptions = n.Continuation.RunOptions()
	n.Continuation.Work(n.Threads)
	return n, nil
}

// continuationConfig is the background path of network name.
func (s *Service) continuationConfig(cfg Config, name string, networks int) continuation.Config {
	c := cfg.Continuation
	c.Store, c.Driver, c.Broker, c.Logger = s.be.store, s.be.driver, s.be.broker, s.log
	c.Workers, c.NoWorkers = cfg.Workers, cfg.Workers <= 0
	c.NoAdopt, c.NoMigrate = !cfg.Adopt, cfg.NoMigrate
	c.InterestTTL = ThreadInterestTTL
	if s.webhooks != nil {
		c.AddWorkers = s.webhooks.AddWorkers
	}
	if c.Queue == "" || networks > 1 {
		c.Queue = continuation.QueueName(name)
	}
	if _, ok := s.be.store.(*sqlitestore.Store); ok && c.FetchPollInterval == 0 {
		// River's SQLite driver learns of other processes' jobs by
		// polling (its notification table every 50 ms, jobs every
		// FetchPollInterval); this process's own hand-overs wake its
		// workers at once (continuation's in-process wake).
		c.FetchPollInterval = 250 * time.Millisecond
	}
	if tel := cfg.Telemetry; tel != nil && tel.TracingEnabled() {
		// A continuation's spans link to those of the request that
		// handed it over: the trace context travels in the job.
		c.Inject = telemetry.Inject
		c.Link = func(ctx context.Context, carrier map[string]string) (context.Context, func()) {
			ctx, span := tel.StartLinked(ctx, carrier, "")
			return ctx, func() { span.End() }
		}
	}
	return c
}

// Webhooks returns the webhook service, nil when none is configured;
// routes check a run's webhook URL with its CheckURL.
func (s *Service) Webhooks() *webhook.Service { return s.webhooks }

// Store returns the service's store.
func (s *Service) Store() store.Store { return s.be.store }

// Broker returns the draft broker: subscribers follow the messages that
// background workers write, across processes on PostgreSQL.
func (s *Service) Broker() draft.Broker { return s.be.broker }

// Networks returns the served networks, by name.
func (s *Service) Networks() []*Network { return s.nets }

// Network returns the served network of a name.
func (s *Service) Network(name string) (*Network, bool) {
	for _, n := range s.nets {
		if n.Name() == name {
			return n, true
		}
	}
	return nil, false
}

// Start starts what runs in the background: the draft broker's listener
// (PostgreSQL), and for every network River's migrations (unless
// NoMigrate), its workers (Config.Workers), the renewal of this process's
// run leases and (Config.Adopt) the adoption of dead processes' runs; and
// the deletion of checkpoints older than Config.CheckpointRetention and of
// the webhook deliveries that ended before Config.WebhookRetention. They
// run until Stop, or until ctx ends.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("service: already started")
	}
	if err := s.be.start(ctx); err != nil {
		return err
	}
	for i, n := range s.nets {
		if err := n.Continuation.Start(ctx); err != nil {
			for _, m := range s.nets[:i] {
				_ = m.Continuation.Stop(ctx)
			}
			return fmt.Errorf("service: network %s: %w", n.Name(), err)
		}
	}
	if s.retention > 0 {
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			inspect.Sweep(sctx, s.be.store, s.retention, inspect.SweepEvery(s.retention), s.log)
		}()
		s.sweep = func() { cancel(); <-done }
	}
	s.checkpoints.start(ctx)
	s.deliveries.start(ctx)
	s.started = true
	return nil
}

// Stop stops the background work gracefully: the retention sweeps (call
// records, then checkpoints), then each network's workers and leases as
// [continuation.Service.Stop] does, ctx bounding the drain (a server that
// drains calls Stop as soon as it starts to, with the deadline its inline
// runs get; a run cut at that deadline is handed to River at once).
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	s.started = false
	if s.sweep != nil {
		s.sweep()
		s.sweep = nil
	}
	s.checkpoints.stop()
	s.deliveries.stop()
	var errs []error
	for _, n := range s.nets {
		errs = append(errs, n.Continuation.Stop(ctx))
	}
	return errors.Join(errs...)
}

// Close releases the database (the broker, and the store unless it was
// given in Config.Store) and what loading the networks opened (their MCP
// servers' sessions: stdio servers are stopped). Call it after Stop.
func (s *Service) Close() error {
	defs := make([]Definition, len(s.nets))
	for i, n := range s.nets {
		defs[i] = n.Definition
		// Runs ending kick their threads' queues in the background: let
		// them finish with the database open.
		n.Threads.Wait()
	}
	return errors.Join(closeDefinitions(defs), s.be.close())
}
