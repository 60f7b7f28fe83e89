package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/batonhq/baton/server"
	mcpserver "github.com/batonhq/baton/server/mcp"
)

// cmdMCP serves one network as an MCP server over stdio (a desktop app
// starts it: docs/mcp.md): the same service as baton serve — its database,
// workers and adoption — with the network's tool, for one owner, until the
// client closes stdin or SIGINT/SIGTERM. Logs go to stderr; stdout is the
// protocol's.
func cmdMCP(ctx context.Context, args []string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	synopsis(fs, "baton mcp --network NETWORK.yaml [--database URL] [--owner NAME] [flags]")
	network := fs.String("network", "", "the network file to serve (required)")
	owner := ownerFlag(fs)
	var sf serviceFlags
	sf.register(fs, true)
	if err := fs.Parse(reorder(args, map[string]bool{"no-migrate": true})); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 || *network == "" {
		return usagef("want one network: baton mcp --network NETWORK.yaml")
	}
	log, tel, svc, err := openProcess(ctx, &sf, []string{*network}, stderr, false)
	if err != nil {
		return err
	}
	defer tel.Shutdown(context.WithoutCancel(ctx))
	srv, err := server.New(server.Config{Service: svc, Logger: log, Telemetry: tel, NoUI: true})
	if err != nil {
		_ = closeService(ctx, svc, grace)
		return err
	}
	name := svc.Networks()[0].Name()
	log.Info("baton mcp: serving over stdio", "network", name, "owner", *owner)
	err = mcpserver.ServeStdio(ctx, srv, name, &server.Caller{Owner: *owner, Scopes: []server.Scope{server.ScopeAdmin}}, os.Stdin, os.Stdout)
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("mcp: %w", err)
	} else {
		err = nil
	}
	_ = srv.Shutdown(context.WithoutCancel(ctx))
	if cerr := closeService(ctx, svc, grace); cerr != nil {
		log.Warn("baton mcp: stopping the background work", "error", cerr)
	}
	return err
}

// grace is how long baton mcp's runs in flight may finish when it stops.
const grace = 10 * time.Second
