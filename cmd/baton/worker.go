package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/threadhandoff"
	"github.com/batonhq/baton/threads"
)

// toolURLs is the repeatable --tool NAME=URL flag.
type toolURLs map[string]string

func (t toolURLs) String() string { return "" }

func (t toolURLs) Set(v string) error {
	name, url, ok := strings.Cut(v, "=")
	if !ok || name == "" || !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return fmt.Errorf("want NAME=http(s)://URL, got %q", v)
	}
	t[name] = url
	return nil
}

// cmdWorker runs background continuation workers until SIGINT or SIGTERM.
func cmdWorker(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	network := fs.String("network", "", "the network file whose runs this worker continues (required)")
	database := fs.String("database", "", databaseHelp)
	noMigrate := fs.Bool("no-migrate", false, "refuse to migrate the database (baton's and River's tables); fail if it is out of date")
	concurrency := fs.Int("concurrency", continuation.DefaultWorkers, "continuations worked at once by this process")
	jobTimeout := fs.Duration("job-timeout", continuation.DefaultJobTimeout, "longest attempt of one continuation")
	rescueAfter := fs.Duration("rescue-after", 0, "retry a continuation whose worker died after this long (default: job-timeout + 1m)")
	maxAttempts := fs.Int("max-attempts", continuation.DefaultMaxAttempts, "attempts of a continuation before its message goes to error")
	queue := fs.String("queue", "", "the River queue to work (default \"baton\"; a baton serve with several networks uses baton_<network>, see server.QueueName)")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long running continuations may finish before they are cancelled (they resume later from their last checkpoint)")
	tools := toolURLs{}
	fs.Var(tools, "tool", "implement tool NAME by an HTTP POST of its arguments to URL, with an Idempotency-Key header (repeatable): NAME=URL")
	if err := fs.Parse(reorder(args, map[string]bool{"no-migrate": true})); err != nil {
		return usageError{err}
	}
	if *network == "" && fs.NArg() == 1 {
		*network = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	if *network == "" {
		return usagef("want --network NETWORK.yaml")
	}
	if *concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	impl := map[string]func(context.Context, json.RawMessage) (string, error){}
	for name, url := range tools {
		impl[name] = httpTool(name, url, http.DefaultClient)
	}
	spec, err := netspec.Load(*network, netspec.Options{Provider: providerFactory(false), Tools: impl})
	if err != nil {
		return usageError{err}
	}
	for name := range tools {
		if !declaresTool(spec, name) {
			return usagef("--tool %s: the network declares no tool %q", name, name)
		}
	}
	log := slog.Default()
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
	rcfg := runner.Config{Network: spec.Network, Policy: spec.Policy, Picker: spec.Picker, Logger: log, Observer: tel.Observer()}
	if spec.Summary != nil {
		// As in baton serve: the agents' memory (thread handoff summaries,
		// in the store) is in every model call of a resumed run, and the
		// seed of a child thread is cleared once a run of it completes.
		sum, err := threadhandoff.New(threadhandoff.Config{Store: st, Model: spec.Summary, Network: spec.Network, Logger: log})
		if err != nil {
			return err
		}
		rcfg.Extensions = []runner.Extension{sum.Extension()}
		rcfg.Picker = sum.Picker(spec.Picker)
	}
	r, err := runner.New(rcfg)
	if err != nil {
		return err
	}
	ccfg := continuation.Config{
		Store: st, Threads: threads.New(st, r, log), Workers: *concurrency,
		JobTimeout: *jobTimeout, RescueStuckJobsAfter: *rescueAfter, MaxAttempts: *maxAttempts,
		NoMigrate: *noMigrate, Logger: log, Queue: *queue,
	}
	traceContinuations(&ccfg, tel)
	cont, err := continuation.New(ccfg)
	if err != nil {
		return usageError{err}
	}
	// The workers outlive ctx (the signal) by the grace period of Stop.
	if err := cont.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "baton worker: continuing network %s (fingerprint %s) on %s with %d workers\n",
		spec.Network.Name(), spec.Network.Fingerprint(), redactURL(url), *concurrency)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
	defer cancel()
	return cont.Stop(sctx)
}

func declaresTool(spec *netspec.Spec, name string) bool {
	for _, a := range spec.Network.Agents() {
		for _, t := range a.Tools {
			if t.Name == name {
				return true
			}
		}
	}
	return false
}

// maxToolResponse caps the body an HTTP tool returns to the model.
const maxToolResponse = 1 << 20

// httpTool implements a tool by POSTing its JSON arguments to url. The
// call's idempotency key (run id + call id, stable across retries and
// resumes) goes in the Idempotency-Key header, so that the service can
// de-duplicate a call repeated after a crash. A 2xx body is the result;
// 408, 425, 429 and 5xx are transient (retried, honouring Retry-After);
// other statuses are errors the model sees.
func httpTool(name, url string, client *http.Client) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, args json.RawMessage) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(args))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		if ci, ok := agent.CallFromContext(ctx); ok {
			req.Header.Set("Idempotency-Key", ci.IdempotencyKey)
			req.Header.Set("Baton-Run-Id", ci.RunID)
			req.Header.Set("Baton-Call-Id", ci.CallID)
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", agent.Transient(fmt.Errorf("tool %s: %w", name, err), 0)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxToolResponse))
		if err != nil {
			return "", agent.Transient(fmt.Errorf("tool %s: read response: %w", name, err), 0)
		}
		switch c := resp.StatusCode; {
		case c >= 200 && c < 300:
			return string(body), nil
		case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
			after := time.Duration(0)
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				after = time.Duration(s) * time.Second
			}
			return "", agent.Transient(fmt.Errorf("tool %s: HTTP %d: %s", name, c, strings.TrimSpace(string(body))), after)
		}
		return "", errors.New("HTTP " + strconv.Itoa(resp.StatusCode) + ": " + strings.TrimSpace(string(body)))
	}
}
