package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/protocols"
	"github.com/batonhq/baton/server"
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
	synopsis(fs, "baton serve --network NETWORK.yaml [--network …] [--addr 127.0.0.1:8080] [flags]")
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on (port 0 picks a free port; the address is logged)")
	var files stringList
	fs.Var(&files, "network", "a network file to serve (repeatable; positional arguments count too)")
	maxStreams := fs.Int("max-streams", 10000, "most event streams open at once (503 beyond)")
	rateLimit := fs.String("rate-limit", "", "requests per API key: N/s, N/m or N (per second), with bursts of N; empty: no limit (per replica unless --replicas)")
	replicas := fs.Int("replicas", 1, "how many replicas serve the database behind one round-robin load balancer: --rate-limit is then the fleet's, and each replica admits its share (1/N of it and of its bursts; docs/deploy.md)")
	requestTimeout := fs.Duration("request-timeout", 60*time.Second, "longest request that is not a stream")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long runs in flight may finish: inline runs still going then are cut at their last checkpoint and handed to the background queue at once (another process's workers resume them), continuations being worked are cancelled and resume from their last checkpoint")
	noUI := fs.Bool("no-ui", false, "do not serve the web UI")
	var sf serviceFlags
	sf.register(fs, true)
	if err := fs.Parse(reorder(args, map[string]bool{"no-migrate": true, "no-ui": true})); err != nil {
		return usageError{err}
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		return usagef("want at least one network: baton serve --network NETWORK.yaml [--network …]")
	}
	if *maxStreams < 1 {
		return usagef("--max-streams must be at least 1")
	}
	rate, err := parseRate(*rateLimit)
	if err != nil {
		return usagef("--rate-limit: %v", err)
	}
	if *replicas < 1 {
		return usagef("--replicas must be at least 1")
	}
	rate, burst := shareRate(rate, *replicas)
	log, tel, svc, err := openProcess(ctx, &sf, files, stderr, true)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	srv, err := server.New(server.Config{
		Service: svc, Logger: log, Telemetry: tel,
		MaxStreams: *maxStreams, RateLimit: rate, RateBurst: burst, RequestTimeout: *requestTimeout, NoUI: *noUI,
		Protocols: protocols.All(),
	})
	if err != nil {
		_ = closeService(ctx, svc, *grace)
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		_ = closeService(ctx, svc, *grace)
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
	var names []string
	for _, n := range svc.Networks() {
		names = append(names, n.Name())
	}
	url, _ := resolveDatabase(sf.database)
	log.Info("baton serve: listening", "url", "http://"+ln.Addr().String(), "networks", strings.Join(names, ","), "database", redactURL(url), "workers", sf.workers)
	fmt.Fprintf(stderr, "baton serve: listening on http://%s\n", ln.Addr())

	select {
	case err := <-served:
		_ = srv.Shutdown(context.Background())
		_ = closeService(ctx, svc, *grace)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("baton serve: shutting down", "grace", *grace)
	// One deadline for the whole drain: the inline runs, the streams and
	// the continuations this process's workers run all have until it, and
	// the workers take nothing new from now on (the leases of the inline
	// runs are renewed until they stop). Inline runs still going then are
	// cut at their last checkpoint and handed to River at once (the
	// continuation's extension), for another process's workers;
	// continuations still going are cancelled and River retries them
	// elsewhere. So the replica exits within --shutdown-timeout and a few
	// seconds.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- svc.Stop(sctx) }()
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
	if err := errors.Join(<-stopped, svc.Close()); err != nil {
		log.Warn("baton serve: stopping the background work", "error", err)
	}
	log.Info("baton serve: stopped")
	return herr
}

// parseRate parses a rate limit: N/s, N/m, N/h or N (per second).
// shareRate returns one replica's share of a fleet's rate limit of rate
// requests per second (bursts of ceil(rate)), with n replicas behind a
// round-robin load balancer: 1/n of the rate and of the burst (at least 1).
func shareRate(rate float64, n int) (float64, int) {
	if rate <= 0 {
		return 0, 0
	}
	return rate / float64(n), max(1, int(math.Ceil(math.Ceil(rate)/float64(n))))
}

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
