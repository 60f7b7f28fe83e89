package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/telemetry"
)

// cmdWorker runs background continuation workers until SIGINT or SIGTERM:
// the same service as `baton serve`, without the HTTP API.
func cmdWorker(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	synopsis(fs, "baton worker --network NETWORK.yaml --database postgres://… [--workers N] [flags]")
	var files stringList
	fs.Var(&files, "network", "a network file whose runs this worker continues (repeatable; positional arguments count too)")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long running continuations may finish before they are cancelled (they resume later from their last checkpoint)")
	var sf serviceFlags
	sf.register(fs, true)
	if err := fs.Parse(reorder(args, map[string]bool{"no-migrate": true})); err != nil {
		return usageError{err}
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		return usagef("want --network NETWORK.yaml")
	}
	if sf.workers < 1 {
		return usagef("--workers must be at least 1 for a worker")
	}
	log, tel, svc, err := openProcess(ctx, &sf, files, stderr, false)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	names := make([]string, 0, len(files))
	for _, n := range svc.Networks() {
		names = append(names, n.Name()+" ("+n.Network.Fingerprint()+")")
	}
	url, _ := resolveDatabase(sf.database)
	log.Info("baton worker: started", "networks", strings.Join(names, ", "), "database", redactURL(url), "workers", sf.workers)
	fmt.Fprintf(stderr, "baton worker: continuing %s on %s with %d workers per network\n", strings.Join(names, ", "), redactURL(url), sf.workers)
	<-ctx.Done()
	// The workers outlive ctx (the signal) by the grace period.
	return closeService(ctx, svc, *grace)
}

// openProcess opens what a long-running process (serve, worker, mcp) runs
// on: its logger from the flags, the telemetry of the OTEL_* environment
// (metrics too, for serve) and the service of its network files. The caller
// shuts the telemetry down; on an error nothing stays open.
func openProcess(ctx context.Context, sf *serviceFlags, files []string, stderr io.Writer, metrics bool) (*slog.Logger, *telemetry.Telemetry, *service.Service, error) {
	log, err := sf.logger(ctx, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	tel, err := telemetryFromEnv(metrics)
	if err != nil {
		return nil, nil, nil, err
	}
	svc, err := openServed(ctx, sf, files, log, tel)
	if err != nil {
		_ = tel.Shutdown(context.WithoutCancel(ctx))
		return nil, nil, nil, err
	}
	return log, tel, svc, nil
}

// openServed loads the network files of a long-running command (serve,
// worker) and opens its service: workers, lease renewal, adoption.
func openServed(ctx context.Context, sf *serviceFlags, files []string, log *slog.Logger, tel *telemetry.Telemetry) (*service.Service, error) {
	cfg, err := sf.config(nil, log, tel)
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, f := range files {
		spec, err := loadNetwork(f, sf.load())
		if err != nil {
			return nil, err
		}
		name := spec.Network.Name()
		if prev, dup := seen[name]; dup {
			return nil, usagef("%s and %s both declare network %q", prev, f, name)
		}
		seen[name] = f
		cfg.Networks = append(cfg.Networks, service.DefinitionOf(spec))
	}
	return openService(ctx, cfg)
}
