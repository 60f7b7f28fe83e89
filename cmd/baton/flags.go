package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/webhook"
)

// logFlags are the logging flags of every command: --log-format,
// --log-level and -v. Every command registers them and makes its logger
// with logger before it does anything else.
type logFlags struct {
	format  string
	level   string
	verbose int
}

// register adds the flags to fs; daemon (serve, worker) logs at Info by
// default, the other commands (whose output is what they print) warnings
// only.
func (l *logFlags) register(fs *flag.FlagSet, daemon bool) {
	def := "warn"
	if daemon {
		def = "info"
	}
	fs.StringVar(&l.format, "log-format", cmp.Or(os.Getenv("BATON_LOG_FORMAT"), "text"), "log format: text or json ($BATON_LOG_FORMAT sets the default)")
	fs.StringVar(&l.level, "log-level", cmp.Or(os.Getenv("BATON_LOG_LEVEL"), def), "log level: debug, info, warn or error ($BATON_LOG_LEVEL sets the default)")
	fs.Var(verbosity{&l.verbose}, "v", "log more: each -v lowers --log-level one step (warn → info → debug)")
}

// logger returns the command's logger on w, which redacts secrets and
// joins lines to traces (telemetry.NewLogger), and makes it slog's
// default. A -v before the command (in ctx) counts too.
func (l *logFlags) logger(ctx context.Context, w io.Writer) (*slog.Logger, error) {
	level, err := l.levelOf(ctx)
	if err != nil {
		return nil, err
	}
	log, err := telemetry.NewLogger(w, l.format, level)
	if err != nil {
		return nil, usagef("--log-format %q (or $BATON_LOG_FORMAT): want text or json", l.format)
	}
	slog.SetDefault(log)
	return log, nil
}

// levelOf returns the level of --log-level lowered by each -v, to Debug at
// most.
func (l *logFlags) levelOf(ctx context.Context) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return 0, usagef("--log-level %q (or $BATON_LOG_LEVEL): want debug, info, warn or error", l.level)
	}
	v, _ := ctx.Value(verboseKey{}).(int)
	return max(level-slog.Level(4*(l.verbose+v)), slog.LevelDebug), nil
}

// verboseKey is the context key of the number of -v given before the
// command's name (baton -v run …).
type verboseKey struct{}

// verbosity is the -v flag: it counts how often it is given.
type verbosity struct{ n *int }

func (verbosity) String() string   { return "" }
func (verbosity) IsBoolFlag() bool { return true }
func (v verbosity) Set(s string) error {
	if s != "false" {
		*v.n++
	}
	return nil
}

// serviceFlags are the flags of every command that runs a network: run,
// resume, chat, serve and worker take the same, so that a network behaves
// the same in each of them. They become a service.Config.
type serviceFlags struct {
	log logFlags
	// logTo is the command's logger, once made (logger); its networks'
	// MCP servers and remote agents log to it too.
	logTo     *slog.Logger
	database  string
	noMigrate bool
	memoryDir string
	tools     toolURLs
	model     string
	// background is set for serve and worker: they work continuations and
	// adopt dead processes' runs.
	background  bool
	workers     int
	jobTimeout  time.Duration
	rescueAfter time.Duration
	maxAttempts int
	leaseTTL    time.Duration
	// inspectRetention keeps the calls recorded for the inspector; 0
	// records none.
	inspectRetention time.Duration
	// retention keeps checkpoints (service.Config.CheckpointRetention).
	retention time.Duration
	// webhooks, webhookSecret and webhookAllow are
	// service.Config.Webhooks.
	webhooks      stringList
	webhookSecret secretFlag
	webhookAllow  stringList
	// webhookRetention keeps the delivery log of deliveries that ended; 0
	// keeps none past delivery.
	webhookRetention time.Duration
}

// register adds the flags to fs; background adds those of the commands
// that work the background queue.
func (f *serviceFlags) register(fs *flag.FlagSet, background bool) {
	f.tools = toolURLs{}
	f.background = background
	f.log.register(fs, background)
	fs.StringVar(&f.model, "model", os.Getenv(service.ModelEnv), "run every agent on this live model instead of the file's (default $"+service.ModelEnv+"): openai:MODEL, openai-responses:MODEL, anthropic:MODEL (API key from OPENAI_API_KEY or ANTHROPIC_API_KEY), ollama:MODEL (Ollama at $OLLAMA_HOST, else localhost:11434) or openai-compatible:MODEL@URL (any OpenAI-compatible server)")
	fs.StringVar(&f.database, "database", "", databaseHelp)
	fs.BoolVar(&f.noMigrate, "no-migrate", false, "refuse to migrate the database (baton's tables and River's); fail if it is out of date")
	fs.StringVar(&f.memoryDir, "memory-dir", "", "keep the agents' memory documents in DIR/<owner>/<agent>.md (default: in the database; every process serving the same threads must agree)")
	fs.Var(f.tools, "tool", "implement tool NAME by an HTTP POST of its arguments to URL, with an Idempotency-Key header (repeatable; every process running the network must give the same): NAME=URL")
	fs.DurationVar(&f.leaseTTL, "lease-ttl", continuation.DefaultLeaseTTL, "how long a run this process executes (inline, or a continuation in its workers) survives the process unrenewed; then a baton serve or baton worker process adopts it (within lease-ttl × 1.5)")
	f.inspectRetention = inspect.DefaultRetention
	fs.Var((*retention)(&f.inspectRetention), "inspect-retention", "keep the calls of runs recorded for the inspector (model requests and answers, tool calls, transfers: baton inspect, the steps API) this long: days (7d) or a Go duration (36h, 90m); 0 records none")
	fs.DurationVar(&f.retention, "checkpoint-retention", service.DefaultCheckpointRetention, "delete, in the background, the checkpoints older than this, except the latest of every run (what resume needs); those within it stay, for a fork from any step; 0 or less keeps them all")
	fs.Var(&f.webhooks, "webhook", "send every run's events (run.completed, run.failed, run.cancelled, run.interrupted) to this URL, signed per Standard Webhooks (repeatable; needs --webhook-secret)")
	fs.Var(&f.webhookSecret, "webhook-secret", "the `secret` that signs webhooks: whsec_ and the base64 of at least 16 random bytes (default $BATON_WEBHOOK_SECRET; every process of the deployment, workers included, needs the same); it enables a run's own webhook (POST …/runs \"webhook\")")
	f.webhookRetention = service.DefaultWebhookRetention
	fs.Var((*retention)(&f.webhookRetention), "webhook-retention", "keep the webhook delivery log's attempts of a delivery that ended (answered, or tried for the last time) this long, then delete them in the background: days (7d) or a Go duration (36h, 90m); 0 keeps none past delivery; a pending delivery's attempts are always kept")
	fs.Var(&f.webhookAllow, "webhook-allow", "a host name, address or CIDR that webhooks may call although it is loopback, private or link-local (repeatable; every other such URL is refused, at the request and again when dialled)")
	if !background {
		return
	}
	fs.IntVar(&f.workers, "workers", continuation.DefaultWorkers, "background continuations worked at once by this process, per network; 0 leaves them to baton worker processes")
	fs.DurationVar(&f.jobTimeout, "job-timeout", continuation.DefaultJobTimeout, "longest attempt of one continuation")
	fs.DurationVar(&f.rescueAfter, "rescue-after", 0, "last resort, after the lease: River retries a continuation whose worker died after this long (default: job-timeout + 1m)")
	fs.IntVar(&f.maxAttempts, "max-attempts", continuation.DefaultMaxAttempts, "attempts of a continuation before its message goes to error")
}

// secretFlag is a flag holding a secret. Its default comes from an
// environment variable read after parsing ([secretFlag.value]), not from
// the flag's default, which usage output would print.
type secretFlag struct {
	s   string
	set bool
}

// String implements flag.Value; it never shows the secret.
func (f *secretFlag) String() string { return "" }

// Set implements flag.Value.
func (f *secretFlag) Set(s string) error {
	f.s, f.set = s, true
	return nil
}

// value returns the flag's value if it was given (empty included), else
// the environment variable env.
func (f *secretFlag) value(env string) string {
	if f.set {
		return f.s
	}
	return os.Getenv(env)
}

// logger makes the command's logger on w (logFlags.logger), for its
// networks too.
func (f *serviceFlags) logger(ctx context.Context, w io.Writer) (*slog.Logger, error) {
	log, err := f.log.logger(ctx, w)
	f.logTo = log
	return log, err
}

// config returns the service's config for files.
func (f *serviceFlags) config(files []string, log *slog.Logger, tel *telemetry.Telemetry) (service.Config, error) {
	url, err := resolveDatabase(f.database)
	if err != nil {
		return service.Config{}, err
	}
	if f.workers < 0 {
		return service.Config{}, usagef("--workers must be 0 or more")
	}
	cfg := service.Config{Files: files, Load: f.load(), Database: url, NoMigrate: f.noMigrate,
		MemoryDir: f.memoryDir, Logger: log, Telemetry: tel}
	cfg.Continuation.LeaseTTL = f.leaseTTL
	cfg.Webhooks = webhook.Config{URLs: f.webhooks, Secret: f.webhookSecret.value("BATON_WEBHOOK_SECRET"), Allow: f.webhookAllow}
	switch {
	case f.inspectRetention < 0:
		return service.Config{}, usagef("--inspect-retention must be 0 or more")
	case f.inspectRetention == 0:
		cfg.InspectRetention = -1 // none kept, none recorded
	default:
		cfg.InspectRetention = f.inspectRetention
	}
	switch {
	case f.webhookRetention < 0:
		return service.Config{}, usagef("--webhook-retention must be 0 or more")
	case f.webhookRetention == 0:
		cfg.WebhookRetention = -1 // none kept past delivery
	default:
		cfg.WebhookRetention = f.webhookRetention
	}
	cfg.CheckpointRetention = f.retention
	if f.retention <= 0 {
		cfg.CheckpointRetention = -1 // keep every checkpoint
	}
	if f.background {
		cfg.Workers, cfg.Adopt = f.workers, true
		cfg.Continuation.JobTimeout, cfg.Continuation.RescueStuckJobsAfter, cfg.Continuation.MaxAttempts = f.jobTimeout, f.rescueAfter, f.maxAttempts
	}
	return cfg, nil
}

// load returns the options of loading a network file with these flags.
func (f *serviceFlags) load() service.LoadOptions {
	return service.LoadOptions{HTTPTools: f.tools, Model: f.model, Logger: f.logTo}
}

// open opens and starts the service of cfg. An invalid network file or
// database URL is a usage error.
func openService(ctx context.Context, cfg service.Config) (*service.Service, error) {
	svc, err := service.Open(ctx, cfg)
	if err != nil {
		var ne *netspec.Error
		if errors.As(err, &ne) || errors.Is(err, store.ErrInvalid) || errors.Is(err, errUnknownTool) || errors.Is(err, webhook.ErrRefused) || errors.Is(err, webhook.ErrConfig) {
			return nil, usageError{err}
		}
		return nil, fmt.Errorf("open %s: %w", redactURL(cfg.Database), err)
	}
	// The background work outlives ctx (a signal) until closeService.
	if err := svc.Start(context.WithoutCancel(ctx)); err != nil {
		svc.Close()
		return nil, fmt.Errorf("start %s: %w", redactURL(cfg.Database), err)
	}
	return svc, nil
}

// closeService stops the service, giving work in flight grace, and closes
// it.
func closeService(ctx context.Context, svc *service.Service, grace time.Duration) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	return errors.Join(svc.Stop(sctx), svc.Close())
}

// errUnknownTool is service.Load's error for a --tool the network does not
// declare.
var errUnknownTool = service.ErrUnknownTool

// toolURLs is the repeatable --tool NAME=URL flag.
type toolURLs map[string]string

func (t toolURLs) String() string {
	names := make([]string, 0, len(t))
	for n, u := range t {
		names = append(names, n+"="+u)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func (t toolURLs) Set(v string) error {
	name, url, err := service.ParseHTTPTool(v)
	if err != nil {
		return err
	}
	t[name] = url
	return nil
}

// telemetryFromEnv returns the telemetry configured by the OTEL_*
// variables (off when none is set); metrics only for a command that serves
// them (serve: /metrics).
func telemetryFromEnv(metrics bool) (*telemetry.Telemetry, error) {
	tcfg, err := telemetry.FromEnv()
	if err != nil {
		return nil, usageError{err}
	}
	tcfg.Metrics = tcfg.Metrics && metrics
	return telemetry.New(tcfg)
}

// retention is --inspect-retention: a number of days ("7d") or a Go
// duration ("36h"); "0" keeps none.
type retention time.Duration

func (r *retention) String() string {
	d := time.Duration(*r)
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

func (r *retention) Set(v string) error {
	d, err := parseRetention(v)
	if err != nil {
		return err
	}
	*r = retention(d)
	return nil
}

// maxRetentionDays bounds a retention in days (about 100 years).
const maxRetentionDays = 36500

// parseRetention parses a retention: "Nd" (whole days, at most 36 500), a
// Go duration, or "0"; never negative.
func parseRetention(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok && days != "" && strings.Trim(days, "0123456789") == "" {
		n, err := strconv.Atoi(days)
		if err != nil || n > maxRetentionDays {
			return 0, fmt.Errorf("%q: at most %d days", v, maxRetentionDays)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q: want days (7d) or a duration (36h, 90m), 0 for none", v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: a retention cannot be negative", v)
	}
	return d, nil
}
