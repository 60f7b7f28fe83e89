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
		{"chat", "chat in the terminal, with /handoff: baton chat --network NETWORK.yaml", cmdChat},
		{"resume", "continue a stopped run: baton resume NETWORK.yaml --run ID [--decision approve|reject|edit]", cmdResume},
		{"migrate", "create or update the database schema: baton migrate [--database URL]", cmdMigrate},
		{"serve", "serve the HTTP API, web UI and workers: baton serve --network NETWORK.yaml [--addr 127.0.0.1:8080]", cmdServe},
		{"keys", "manage API keys: baton keys create|list|revoke --owner NAME", cmdKeys},
		{"worker", "work background continuations: baton worker --network NETWORK.yaml --database URL [--workers N] [--tool NAME=URL]", cmdWorker},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	slog.SetDefault(newLogger(stderr, os.Getenv("BATON_LOG_LEVEL"), os.Getenv("BATON_LOG_FORMAT")))
	for len(args) > 0 && (args[0] == "-v" || args[0] == "--v") {
		_ = verbosity{}.Set("true")
		args = args[1:]
	}
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
	fmt.Fprintln(w, "\nbaton COMMAND --help lists a command's flags. The CLI logs warnings only: -v logs more\n(-v -v: debug), as does BATON_LOG_LEVEL=info|debug.")
}

// verboseLevel is the level of the CLI's logs when BATON_LOG_LEVEL does not
// set one: warnings, lowered by each -v (info, then debug).
var verboseLevel = func() *slog.LevelVar {
	var v slog.LevelVar
	v.Set(slog.LevelWarn)
	return &v
}()

// verbosity is the -v flag: each time given, the CLI logs one level more.
type verbosity struct{}

func (verbosity) String() string   { return "" }
func (verbosity) IsBoolFlag() bool { return true }
func (verbosity) Set(v string) error {
	if v == "false" {
		return nil
	}
	verboseLevel.Set(max(verboseLevel.Level()-4, slog.LevelDebug))
	return nil
}

// synopsis makes fs's usage (--help) the command's synopsis and flags.
func synopsis(fs *flag.FlagSet, line string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\nFlags:\n", line)
		fs.PrintDefaults()
	}
}

// verboseFlag adds -v to fs.
func verboseFlag(fs *flag.FlagSet) {
	fs.Var(verbosity{}, "v", "log more: info (-v), debug (-v -v); by default only warnings (BATON_LOG_LEVEL sets a level too)")
}

// logLevel returns the level of the CLI's logs: level (debug, info, warn,
// error) if it is one, else warnings or what -v asked for.
func logLevel(level string) slog.Leveler {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || level == "" {
		return verboseLevel
	}
	return l
}

// newLogger returns the process logger: text (or json) on w at level
// (debug, info, warn, error; default warn for the CLI, or what -v asks).
func newLogger(w io.Writer, level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevel(level)}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
