package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/telemetry"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// cmdServe runs the HTTP API, the web UI and the background workers until
// SIGINT or SIGTERM, then shuts down gracefully.
func cmdServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free port; the address is logged)")
	var files stringList
	fs.Var(&files, "network", "a network file to serve (repeatable; positional arguments count too)")
	database := fs.String("database", "", databaseHelp)
	noMigrate := fs.Bool("no-migrate", false, "refuse to migrate the database (baton's and River's tables); fail if it is out of date")
	noWorkers := fs.Bool("no-workers", false, "run no background workers here: suspended runs wait for `baton worker` processes")
	workers := fs.Int("workers", continuation.DefaultWorkers, "background continuations worked at once by this process, per network")
	maxStreams := fs.Int("max-streams", 10000, "most event streams open at once (503 beyond)")
	rateLimit := fs.String("rate-limit", "", "requests per API key: N/s, N/m or N (per second), with bursts of N; empty: no limit")
	requestTimeout := fs.Duration("request-timeout", 60*time.Second, "longest request that is not a stream")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long runs in flight may finish before they are cancelled at their last checkpoint")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	noUI := fs.Bool("no-ui", false, "do not serve the web UI")
	if err := fs.Parse(reorder(args, map[string]bool{"no-migrate": true, "no-workers": true, "no-ui": true})); err != nil {
		return usageError{err}
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		return usagef("want at least one network: baton serve --network NETWORK.yaml [--network …]")
	}
	if *workers < 1 || *maxStreams < 1 {
		return usagef("--workers and --max-streams must be at least 1")
	}
	rate, err := parseRate(*rateLimit)
	if err != nil {
		return usagef("--rate-limit: %v", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	log, err := telemetry.NewLogger(stderr, *logFormat, level)
	if err != nil {
		return usagef("--log-format %q: want text or json", *logFormat)
	}
	slog.SetDefault(log)

	var nets []server.Network
	seen := map[string]string{}
	for _, f := range files {
		spec, err := loadNetwork(f)
		if err != nil {
			return err
		}
		name := spec.Network.Name()
		if prev, dup := seen[name]; dup {
			return usagef("%s and %s both declare network %q", prev, f, name)
		}
		seen[name] = f
		nets = append(nets, server.NetworkFromSpec(spec))
	}
	tcfg, err := telemetry.FromEnv()
	if err != nil {
		return usageError{err}
	}
	tel, err := telemetry.New(tcfg)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))

	url, err := resolveDatabase(*database)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, url, *noMigrate)
	if err != nil {
		return fmt.Errorf("open database %s: %w", redactURL(url), err)
	}
	defer st.Close()

	cc := &continuation.Config{Workers: *workers, NoWorkers: *noWorkers, NoMigrate: *noMigrate, Logger: log}
	traceContinuations(cc, tel)
	srv, err := server.New(server.Config{
		Store: st, Networks: nets, Logger: log, Telemetry: tel,
		Continuation: cc,
		MaxStreams:   *maxStreams, RateLimit: rate, RequestTimeout: *requestTimeout, NoUI: *noUI,
	})
	if err != nil {
		return err
	}
	// The workers outlive ctx (the signal) by the grace period of Shutdown.
	if err := srv.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		return usagef("listen on %s: %v", *addr, err)
	}
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	names := make([]string, len(nets))
	for i, n := range nets {
		names[i] = n.Network.Name()
	}
	mode := "workers in process"
	if *noWorkers {
		mode = "no workers"
	}
	log.Info("baton serve: listening", "url", "http://"+ln.Addr().String(), "networks", strings.Join(names, ","), "database", redactURL(url), "background", mode)
	fmt.Fprintf(stderr, "baton serve: listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		_ = srv.Shutdown(context.Background())
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("baton serve: shutting down", "grace", *grace)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
	defer cancel()
	serr := srv.Shutdown(sctx)
	hctx, hcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer hcancel()
	herr := hs.Shutdown(hctx)
	if errors.Is(herr, context.DeadlineExceeded) {
		herr = hs.Close()
	}
	if serr != nil {
		log.Warn("baton serve: shutdown", "error", serr)
	}
	log.Info("baton serve: stopped")
	return herr
}

// parseRate parses a rate limit: N/s, N/m, N/h or N (per second).
func parseRate(v string) (float64, error) {
	v = strings.TrimSpace(v)
	if v == "" || v == "0" {
		return 0, nil
	}
	num, unit, _ := strings.Cut(v, "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 || n > 1e9 {
		return 0, fmt.Errorf("%q: want N/s, N/m, N/h or N (a positive number)", v)
	}
	switch unit {
	case "", "s":
		return n, nil
	case "m":
		return n / 60, nil
	case "h":
		return n / 3600, nil
	}
	return 0, fmt.Errorf("%q: unit %q is not s, m or h", v, unit)
}
