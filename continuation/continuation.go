package continuation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// Defaults of [Config].
const (
	DefaultWorkers        = 10
	DefaultJobTimeout     = 5 * time.Minute
	DefaultMaxAttempts    = 10
	DefaultRetryBaseDelay = time.Second
	DefaultRetryMaxDelay  = 5 * time.Minute
	// DefaultErrorText is the placeholder's text when a continuation fails.
	DefaultErrorText = "Sorry, something went wrong while working on this request. Please try again."
	// DefaultIncompatibleText is the placeholder's text when the run was
	// suspended under another version of the network.
	DefaultIncompatibleText = "This request was started with another version of the assistant and cannot be continued. Please send it again."
)

// Config configures a [Service]. Store, Driver and Broker are required; the
// zero value of every other field means its default.
type Config struct {
	// Inject, if set, is called with the request's context when a run is
	// handed over; what it returns (a trace context, e.g. telemetry.Inject)
	// travels in the job's args.
	Inject func(ctx context.Context) map[string]string
	// Link, if set, starts the context a worker resumes the run in from the
	// carried trace context (e.g. a new trace linked to the request's span,
	// telemetry.StartLinked); end is called when the delivery ends.
	Link func(ctx context.Context, carrier map[string]string) (_ context.Context, end func())
	// Store is baton's store. River's tables live in the same database (and
	// schema).
	Store store.Store
	// Driver is River on the Store's database: [PostgresDriver] or
	// [SQLiteDriver] of the same store.
	Driver Driver
	// Broker fans drafts out to subscribers: a pgbroker.Broker (LISTEN/NOTIFY)
	// on PostgreSQL, a draft.Hub (in-process) on SQLite. Whoever made it
	// starts and closes it.
	Broker draft.Broker
	// Draft tunes the draft writer of each continuation (flush every 200ms
	// or 1.5 KiB by default).
	Draft draft.Options

	// Workers is how many continuations this process works at once.
	// Defaults to 10.
	Workers int
	// NoWorkers makes the service enqueue only: Start starts no River
	// workers (`baton serve --workers 0`, and the CLI's inline runs).
	NoWorkers bool
	// Queue is the River queue. Defaults to "baton".
	Queue string
	// JobTimeout bounds one attempt of a continuation: its context is
	// cancelled after it, and a job run being worked is leased for it (a
	// duplicate delivery within the lease snoozes). Defaults to 5 minutes.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is when River's rescuer retries a job whose
	// worker died (SIGKILL, power loss): it must exceed JobTimeout.
	// Defaults to JobTimeout + 1 minute. (River's rescuer runs every 30
	// seconds on the elected leader.)
	RescueStuckJobsAfter time.Duration
	// MaxAttempts is how many times a continuation is tried before its
	// placeholder goes to error. Defaults to 10. (River's jobs get three
	// more deliveries, used only to record the failure of a continuation
	// whose last attempt died with its worker.)
	MaxAttempts int
	// RetryBaseDelay and RetryMaxDelay shape the retry backoff of transient
	// failures: exponential from the base, with jitter, capped. Default to
	// 1 second and 5 minutes.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// FetchCooldown and FetchPollInterval are River's (minimum time between
	// fetches; fetch period without notifications). Default to River's
	// defaults, 100ms and 1s, except FetchCooldown on SQLite: 5ms, so that
	// the workers woken in process by a hand-over (River's SQLite driver
	// has no LISTEN; other processes poll its notification table every
	// 50ms) start it at once.
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration

	// LeaseTTL is how long the lease of a run executed in this process
	// (inline, or a continuation its workers deliver) holds without a
	// renewal; the process renews its leases every
	// LeaseTTL/3. A run whose lease expired is adopted. Defaults to
	// [DefaultLeaseTTL].
	LeaseTTL time.Duration
	// Holder names this process in the leases it holds. Defaults to the
	// host name, the pid and a random part.
	Holder string
	// AdoptEvery is how often Start's adopter looks for expired leases.
	// Defaults to LeaseTTL/6.
	AdoptEvery time.Duration
	// InterestTTL is how long a process's announcement that it streams a
	// thread lasts (service.ThreadInterestTTL): while one does, the
	// workers send it the text deltas of the thread's continuations.
	// Defaults to 30 seconds.
	InterestTTL time.Duration
	// NoAdopt turns the adopter off: the process adopts no other process's
	// runs (the CLI's inline runs; `baton serve` and `baton worker` adopt).
	NoAdopt bool

	// Notice, if set, is told why a hand-over failed and returns the
	// notice the inline run's model gets instead of the slow tools' results
	// (see runner.WithBackgroundFallback). Defaults to logging the error
	// and runner.DefaultFallbackNotice.
	Notice func(ctx context.Context, err error) string
	// ErrorText is the placeholder's text when a continuation fails for
	// good. Defaults to [DefaultErrorText].
	ErrorText string
	// NoMigrate skips River's migrations in Start.
	NoMigrate bool
	// Logger defaults to slog.Default(). River logs to it too.
	Logger *slog.Logger

	// AddWorkers, if set, adds the workers of other job kinds to the
	// queue's River client (package webhook's deliveries): jobs inserted
	// with [Service.InsertTx] run on this queue's workers.
	AddWorkers func(*river.Workers) error

	// testHook, in tests, runs between the writes of a hand-over, in a
	// claim after its read of the job run ("claim read"), in a draft
	// flush's transaction after it claimed a lazily claimed run ("flush
	// claimed"), in the final transaction before its writes ("finish"),
	// and in a delivery that finished its run, before it returns to River
	// ("finished"); an error rolls back the hand-over, the claim, the
	// flush or the final transaction.
	testHook func(step string) error
	// testNoUnique lets tests enqueue duplicates of one job.
	testNoUnique bool
}

// DefaultLeaseTTL is the default [Config].LeaseTTL. With it, a run whose
// process died is adopted within LeaseTTL + AdoptEvery (35 seconds) and
// resumed by the next free worker.
const DefaultLeaseTTL = 30 * time.Second

func (c *Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("continuation: Config.Store is required")
	case c.Driver == nil:
		return errors.New("continuation: Config.Driver is required")
	case c.Broker == nil:
		return errors.New("continuation: Config.Broker is required")
	case c.Workers < 0, c.JobTimeout < 0, c.RescueStuckJobsAfter < 0, c.MaxAttempts < 0,
		c.RetryBaseDelay < 0, c.RetryMaxDelay < 0, c.FetchCooldown < 0, c.FetchPollInterval < 0,
		c.LeaseTTL < 0, c.AdoptEvery < 0:
		return errors.New("continuation: Config has a negative count or duration")
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.Queue == "" {
		c.Queue = DefaultQueue
	}
	if c.JobTimeout == 0 {
		c.JobTimeout = DefaultJobTimeout
	}
	if c.RescueStuckJobsAfter == 0 {
		c.RescueStuckJobsAfter = c.JobTimeout + time.Minute
	}
	if c.RescueStuckJobsAfter <= c.JobTimeout {
		return fmt.Errorf("continuation: RescueStuckJobsAfter (%s) must exceed JobTimeout (%s)", c.RescueStuckJobsAfter, c.JobTimeout)
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBaseDelay == 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if c.RetryMaxDelay == 0 {
		c.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.AdoptEvery == 0 {
		c.AdoptEvery = c.LeaseTTL / 6
	}
	if c.InterestTTL <= 0 {
		c.InterestTTL = 30 * time.Second
	}
	if c.Holder == "" {
		c.Holder = newHolder()
	}
	if c.ErrorText == "" {
		c.ErrorText = DefaultErrorText
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Service hands runs to background workers and works them, holds the
// leases of the runs this process executes inline and adopts the runs of
// processes that died. Create it with [New], put its [Service.Extension] in
// the runner of the threads.Service given to [Service.Work]; it is safe for
// concurrent use.
type Service struct {
	cfg     Config
	st      store.Store
	threads *threads.Service
	fp      string
	network string
	q       queue
	broker  draft.Broker
	log     *slog.Logger
	leases  *leases
	// deltaSender sends the deltas of the runs this process's workers
	// resume to the processes that stream their threads (deltas.go); nil
	// when the broker reaches no other process. Set by Start.
	deltaSender *draft.DeltaSender
	// jobLeases are the runs of the continuations this process's
	// workers are working (holdJob), renewed with leases.
	jobLeases *leases
	// wakes holds the runs whose hand-over, made by the runner's
	// extension, owes this process's workers a wake once committed
	// (Handover.wake): AfterRun takes it.
	wakes sync.Map

	// begun: Start succeeded once (River's tables are there: durable
	// kicks are inserted from then on).
	begun atomic.Bool

	mu      sync.Mutex
	started bool
	stop    context.CancelFunc
	loops   sync.WaitGroup
}

// New returns a Service for cfg. It connects to nothing: Start does.
func New(cfg Config) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, st: cfg.Store, broker: cfg.Broker, log: cfg.Logger, leases: newLeases(), jobLeases: newLeases()}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &worker{s: s}); err != nil {
		return nil, fmt.Errorf("continuation: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &kickWorker{s: s}); err != nil {
		return nil, fmt.Errorf("continuation: %w", err)
	}
	if cfg.AddWorkers != nil {
		if err := cfg.AddWorkers(workers); err != nil {
			return nil, fmt.Errorf("continuation: %w", err)
		}
	}
	rc := &river.Config{
		Logger:               cfg.Logger,
		Workers:              workers,
		JobTimeout:           cfg.JobTimeout,
		RescueStuckJobsAfter: cfg.RescueStuckJobsAfter,
		MaxAttempts:          cfg.MaxAttempts + finalAttempts, // every job's: its insert sets none
		FetchCooldown:        cfg.FetchCooldown,
		FetchPollInterval:    cfg.FetchPollInterval,
		RetryPolicy:          backoff{base: cfg.RetryBaseDelay, max: cfg.RetryMaxDelay},
	}
	rc.Test.DisableUniqueEnforcement = cfg.testNoUnique
	if !cfg.NoWorkers {
		rc.Queues = map[string]river.QueueConfig{cfg.Queue: {MaxWorkers: cfg.Workers}}
	}
	q, err := cfg.Driver.queue(rc, !cfg.NoWorkers)
	if err != nil {
		return nil, err
	}
	s.q = q
	return s, nil
}

// Work makes the service resume runs through th: its workers resume
// continuations with th.ResumeCheckpoint, and th's turns leave placeholders
// out of the model's history. th's runner must carry [Service.Extension].
// Call it once, before Start.
func (s *Service) Work(th *threads.Service) {
	s.threads = th
	s.fp = th.Runner().Network().Fingerprint()
	s.network = th.Runner().Network().Name()
	prevEx := th.Exclude
	th.Exclude = func(m *store.Message) bool {
		return IsPlaceholder(m) || prevEx != nil && prevEx(m)
	}
	// A run's end with runs queued behind it commits a kick of the
	// thread: the next run starts even if this process dies first.
	th.KickTx = s.kickTx
}

// Broker returns the draft broker subscribers use: Subscribe(ctx,
// draft.Filter{OwnerID, ThreadID or MessageID}). On PostgreSQL it hears
// other processes between Start and Stop.
func (s *Service) Broker() draft.Broker { return s.broker }

// RunOptions are the options of an inline run that hands its slow tools to
// a worker: runner.WithBackgroundBoundary, and runner.WithBackgroundFallback
// so that a failed hand-over answers without tools instead of failing.
func (s *Service) RunOptions() []runner.RunOption {
	return []runner.RunOption{runner.WithBackgroundBoundary(), runner.WithBackgroundFallback(s.notice)}
}

func (s *Service) notice(ctx context.Context, err error) string {
	s.log.ErrorContext(ctx, "hand-over to a background worker failed; the run answers without its slow tools", "error", err)
	if s.cfg.Notice != nil {
		return s.cfg.Notice(ctx, err)
	}
	return ""
}

// Migrate applies River's migrations (the store's own are applied when it
// is opened). It is safe to call from several processes at once.
func (s *Service) Migrate(ctx context.Context) error {
	return s.cfg.Driver.Migrate(ctx, s.log)
}

// Start migrates River's tables (unless Config.NoMigrate), starts River's
// workers (unless Config.NoWorkers), the renewal of this process's leases
// and (unless Config.NoAdopt) the adopter of expired ones. They stop when
// Stop is called or ctx ends. Workers need [Service.Work] first.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("continuation: already started")
	}
	if (!s.cfg.NoWorkers || !s.cfg.NoAdopt) && s.threads == nil {
		return errors.New("continuation: Start with workers or the adopter needs Work(threads) first")
	}
	if !s.cfg.NoMigrate {
		if err := s.Migrate(ctx); err != nil {
			return err
		}
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	// Before the workers: a delivery reads it (a job may be waiting).
	if sg, ok := s.broker.(draft.Signaller); ok && !s.cfg.NoWorkers {
		if s.deltaSender = draft.NewDeltaSender(lctx, sg, s.cfg.Holder, s.cfg.InterestTTL); s.deltaSender != nil {
			s.deltaSender.Follow = true
		}
	}
	if err := s.q.start(ctx); err != nil {
		stop()
		s.deltaSender = nil
		return fmt.Errorf("continuation: start workers: %w", err)
	}
	s.stop = stop
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		s.renewLoop(lctx)
	}()
	if !s.cfg.NoAdopt {
		s.loops.Add(1)
		go func() {
			defer s.loops.Done()
			s.adoptLoop(lctx)
		}()
	}
	s.started = true
	s.begun.Store(true)
	return nil
}

// Stop stops the workers gracefully: they take no more continuations at
// once, and running ones finish, until ctx ends; then they are cancelled
// and resume later from their last checkpoint, in another process (or
// this one, restarted). Until the runs this process executes inline have
// stopped, or ctx ends, their leases are still renewed; then renewal stops,
// and a run still executing is adopted by another process once its lease
// expires. A process that drains calls Stop as soon as it starts to, with
// the deadline it gives its inline runs (baton serve: --shutdown-timeout):
// its workers take nothing new, and an inline run cut at the deadline is
// handed to River at once (see [Service.Extension]) for another process's
// workers.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil
	}
	s.started = false
	err := s.q.stop(ctx)
	s.awaitInline(ctx)
	s.stop()
	s.loops.Wait()
	if err != nil {
		return fmt.Errorf("continuation: stop workers: %w", err)
	}
	return nil
}

// finalAttempts are River deliveries kept beyond Config.MaxAttempts to
// finalise a continuation whose last attempt never reported (its worker
// was killed or stopped): that delivery marks it failed, placeholder
// included, where River would otherwise discard the job and leave the
// placeholder streaming. Three, so that it takes as many more crashes in a
// row to lose it.
const finalAttempts = 3

// backoff is the retry policy of transient failures: exponential from
// base, with full jitter over its upper half, capped at max.
type backoff struct{ base, max time.Duration }

// NextRetry implements river.ClientRetryPolicy.
func (b backoff) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(b.delay(job.Attempt))
}

func (b backoff) delay(attempt int) time.Duration {
	d := b.base
	for i := 1; i < attempt && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	return d/2 + rand.N(d/2+1)
}
