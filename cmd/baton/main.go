// Command baton runs agent networks: `baton run` for one offline
// conversation, `baton validate` to check a network file, and the server,
// worker, chat and migration commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/batonhq/baton/telemetry"
)

// exitUsage is the exit code for bad input: flags, files, networks.
const exitUsage = 2

// usageError marks errors that exit with code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run one conversation turn: baton run NETWORK.yaml \"message\"", cmdRun},
		{"validate", "check a network file: baton validate NETWORK.yaml", cmdValidate},
		{"eval", "score a network on an eval set: baton eval SET --network NETWORK.yaml [--baseline OLD.yaml]; baton eval export --thread ID", cmdEval},
		{"chat", "chat in the terminal, with /handoff: baton chat --network NETWORK.yaml", cmdChat},
		{"resume", "continue a stopped run: baton resume NETWORK.yaml --run ID [--decision approve|reject|edit]", cmdResume},
		{"inspect", "show a run's steps (model calls, tools, transfers, waits): baton inspect RUN_ID [STEP_ID] [--json]", cmdInspect},
		{"migrate", "create or update the database schema: baton migrate [--database URL]", cmdMigrate},
		{"serve", "serve the HTTP API, web UI and workers: baton serve --network NETWORK.yaml [--addr 127.0.0.1:8080]", cmdServe},
		{"keys", "manage API keys: baton keys create|list|revoke --owner NAME", cmdKeys},
		{"worker", "work background continuations: baton worker --network NETWORK.yaml --database URL [--workers N] [--tool NAME=URL]", cmdWorker},
		{"mcp", "serve a network as an MCP server over stdio, for desktop apps: baton mcp --network NETWORK.yaml", cmdMCP},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Until a command has parsed its logging flags: warnings on stderr.
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: telemetry.Redact})))
	// -v before the command counts as the command's own.
	verbose := 0
	for len(args) > 0 && (args[0] == "-v" || args[0] == "--v") {
		verbose++
		args = args[1:]
	}
	ctx = context.WithValue(ctx, verboseKey{}, verbose)
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			if err == nil || errors.Is(err, flag.ErrHelp) {
				return 0 // --help printed the command's usage
			}
			fmt.Fprintln(stderr, "baton "+c.name+":", err)
			var ue usageError
			if errors.As(err, &ue) {
				return exitUsage
			}
			return 1
		}
	}
	fmt.Fprintf(stderr, "baton: unknown command %q\n", args[0])
	usage(stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: baton COMMAND [flags] [args]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nbaton COMMAND --help lists a command's flags. Every command takes the same logging flags:\n--log-format text|json, --log-level and -v (each -v logs one level more). serve and worker log\nat info, the others warnings only (BATON_LOG_LEVEL and BATON_LOG_FORMAT set the defaults).")
}

// synopsis makes fs's usage (--help) the command's synopsis and flags.
func synopsis(fs *flag.FlagSet, line string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nFlags:\n", line)
		fs.PrintDefaults()
	}
}
