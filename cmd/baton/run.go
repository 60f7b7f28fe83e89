package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// loadNetwork loads a network file with real providers and the HTTP
// tools of tools (nil: none); a problem in it is a usage error.
func loadNetwork(path string, opts service.LoadOptions) (*netspec.Spec, error) {
	spec, err := service.Load(path, opts)
	if err != nil {
		return nil, usageError{err}
	}
	return spec, nil
}

// openNetwork opens the service of a one-shot command (run, resume, chat)
// on a loaded network, logging on log, with the telemetry of the OTEL_*
// variables (traces, no metrics): its runs are inline; the background
// path's lease renewal runs; no workers, no adoption. done stops the
// service and flushes the spans.
func openNetwork(ctx context.Context, sf *serviceFlags, spec *netspec.Spec, log *slog.Logger) (svc *service.Service, n *service.Network, done func(), err error) {
	tel, err := telemetryFromEnv(false)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := sf.config(nil, log, tel)
	if err == nil {
		cfg.Networks = []service.Definition{service.DefinitionOf(spec)}
		svc, err = openService(ctx, cfg)
	}
	if err != nil {
		_ = tel.Shutdown(context.WithoutCancel(ctx))
		return nil, nil, nil, err
	}
	done = func() {
		_ = closeService(ctx, svc, 10*time.Second)
		_ = tel.Shutdown(context.WithoutCancel(ctx))
	}
	return svc, svc.Networks()[0], done, nil
}

// openNetworkFile loads the network file at path with lopts (see
// loadNetwork) and opens it (see openNetwork); it returns the loaded spec
// too.
func openNetworkFile(ctx context.Context, sf *serviceFlags, path string, lopts service.LoadOptions, log *slog.Logger) (*netspec.Spec, *service.Network, func(), error) {
	spec, err := loadNetwork(path, lopts)
	if err != nil {
		return nil, nil, nil, err
	}
	_, n, done, err := openNetwork(ctx, sf, spec, log)
	return spec, n, done, err
}

func cmdValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.register(fs, false)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: baton validate NETWORK.yaml\n\nChecks a network file and lists every problem with its line; API keys may be missing.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(reorder(args, nil)); err != nil {
		return usageError{err}
	}
	if _, err := lf.logger(ctx, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one network file: baton validate NETWORK.yaml")
	}
	spec, err := loadNetwork(fs.Arg(0), service.LoadOptions{Offline: true})
	if err != nil {
		return err
	}
	if spec.Close != nil {
		defer spec.Close() // its MCP servers
	}
	fmt.Fprintf(stdout, "%s: network %s is valid: %d agents, fingerprint %s\n", fs.Arg(0), spec.Network.Name(), len(spec.Network.Agents()), spec.Network.Fingerprint())
	printTools(stdout, spec)
	return nil
}

// ownerFlag is the --owner flag of the commands that act for one owner.
func ownerFlag(fs *flag.FlagSet) *string {
	return fs.String("owner", "local", "owner of the threads this command reads and writes")
}

// eventFlags are the flags of the commands that run a network once and
// print its events (run, resume): --json, --owner and the service's.
type eventFlags struct {
	*flag.FlagSet
	json    *bool
	owner   *string
	service serviceFlags
	// log is the command's logger, made by parse.
	log *slog.Logger
}

// newEventFlags returns the flag set of such a command with those flags;
// the command adds its own, then parses.
func newEventFlags(name string, stderr io.Writer) *eventFlags {
	f := &eventFlags{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.SetOutput(stderr)
	f.json = f.Bool("json", false, "print one JSON object per event")
	f.owner = ownerFlag(f.FlagSet)
	f.service.register(f.FlagSet, false)
	return f
}

// parse parses args, with flags anywhere among them, and makes the
// command's logger; its error is a usage error.
func (f *eventFlags) parse(ctx context.Context, args []string) error {
	if err := f.Parse(reorder(args, map[string]bool{"json": true, "no-migrate": true})); err != nil {
		return usageError{err}
	}
	var err error
	f.log, err = f.service.logger(ctx, f.Output())
	return err
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newEventFlags("run", stderr)
	synopsis(fs.FlagSet, `baton run NETWORK.yaml "message" [--thread ID | --fork THREAD@POINT [--edit TEXT]] [--agent NAME] [--json] [flags]`)
	agentName := fs.String("agent", "", "start with this agent instead of the picker's choice")
	thread := fs.String("thread", "", "continue this stored thread (default: a new thread)")
	fork := fs.String("fork", "", "fork stored thread THREAD at POINT (a checkpoint or message id; baton inspect shows them) and run on the fork: THREAD@POINT; without a message, only fork")
	forkEdit := fs.String("edit", "", "with --fork: the new text of the last message at the point (a user message, or a tool result)")
	record := fs.String("record", "", "write what each agent's model answered to this file, as a scripted network")
	if err := fs.parse(ctx, args); err != nil {
		return err
	}
	var forkThread, forkPoint string
	switch {
	case *fork != "" && *thread != "":
		return usagef("--fork and --thread: give one")
	case *fork != "":
		var err error
		if forkThread, forkPoint, err = parseForkPoint(*fork); err != nil {
			return usageError{err}
		}
		if fs.NArg() != 1 && fs.NArg() != 2 {
			return usagef("want a network file and, to run on the fork, a message: baton run NETWORK.yaml --fork THREAD@POINT [\"message\"]")
		}
	case *forkEdit != "":
		return usagef("--edit goes with --fork")
	case fs.NArg() != 2:
		return usagef("want a network file and a message: baton run NETWORK.yaml \"message\"")
	}
	lopts := fs.service.load()
	var rec *netspec.Recorder
	if *record != "" {
		rec = netspec.NewRecorder()
		lopts.WrapModel = rec.Wrap
	}
	spec, n, done, err := openNetworkFile(ctx, &fs.service, fs.Arg(0), lopts, fs.log)
	if err != nil {
		return err
	}
	defer done()
	var opts []runner.RunOption
	if *agentName != "" {
		if _, ok := n.Network.Agent(*agentName); !ok {
			return usagef("unknown agent %q", *agentName)
		}
		opts = append(opts, runner.WithAgent(*agentName))
	}
	if forkThread != "" {
		var stop bool
		if *thread, stop, err = forkFor(ctx, n.Threads, *fs.owner, forkThread, forkPoint, *forkEdit, fs.NArg() == 1, stdout, stderr, fs.Arg(0), fs.service.database); stop || err != nil {
			return err
		}
	}
	events := n.Threads.Turn(ctx, *fs.owner, fs.Arg(1), threads.TurnOptions{ThreadID: *thread, RunOptions: opts})
	runErr := printRun(events, *fs.json, stdout, fs.Arg(0), fs.service.database)
	if rec != nil {
		if err := writeRecording(*record, rec, spec.File); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

// writeRecording writes a recorded network to path atomically.
func writeRecording(path string, rec *netspec.Recorder, f *netspec.File) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".baton-record-*")
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := rec.Write(tmp, f); err != nil {
		tmp.Close()
		return fmt.Errorf("record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// printRun prints a run's events and classifies its error for the exit code.
func printRun(events iter.Seq2[runner.Event, error], jsonOut bool, stdout io.Writer, file, database string) error {
	var p printer
	if jsonOut {
		p = &jsonPrinter{enc: json.NewEncoder(stdout)}
	} else {
		p = &textPrinter{w: stdout, file: file, database: database}
	}
	var runErr error
	for ev, err := range events {
		if err != nil {
			runErr = err
			break
		}
		p.print(ev)
	}
	p.done()
	var re *runner.Error
	if errors.As(runErr, &re) && re.Kind == runner.KindUserInput || errors.Is(runErr, store.ErrNotFound) || errors.Is(runErr, store.ErrInvalid) {
		return usageError{runErr}
	}
	return runErr
}

func cmdResume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newEventFlags("resume", stderr)
	synopsis(fs.FlagSet, "baton resume NETWORK.yaml --run ID|--interrupt ID [--decision approve|reject|edit] [flags]")
	runID := fs.String("run", "", "the run to resume")
	interrupt := fs.String("interrupt", "", "the interrupt to answer (instead of --run)")
	decision := fs.String("decision", "", "approve, reject or edit, for a run waiting for a decision")
	editArgs := fs.String("args", "", "the edited tool arguments (JSON object), with --decision edit")
	message := fs.String("message", "", "a reason shown to the model, with --decision reject")
	if err := fs.parse(ctx, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the network file: baton resume NETWORK.yaml --run RUN_ID [--decision approve|reject|edit]")
	}
	id := *runID
	if id == "" && *interrupt != "" {
		var ok bool
		if id, ok = runstate.RunOfInterrupt(*interrupt); !ok {
			return usagef("interrupt id %q is not of the form RUN-iN", *interrupt)
		}
	}
	if id == "" {
		return usagef("want --run RUN_ID or --interrupt ID")
	}
	var opts []runner.RunOption
	switch d := runner.DecisionType(*decision); d {
	case "":
	case runner.DecisionApprove, runner.DecisionReject, runner.DecisionEdit:
		dec := runner.Decision{Type: d, Message: *message}
		if d == runner.DecisionEdit {
			if !json.Valid([]byte(*editArgs)) || !strings.HasPrefix(strings.TrimSpace(*editArgs), "{") {
				return usagef("--decision edit needs --args with a JSON object")
			}
			dec.Args = json.RawMessage(*editArgs)
		}
		opts = append(opts, runner.WithDecisions(dec))
	default:
		return usagef("--decision %q: want approve, reject or edit", *decision)
	}
	_, n, done, err := openNetworkFile(ctx, &fs.service, fs.Arg(0), fs.service.load(), fs.log)
	if err != nil {
		return err
	}
	defer done()
	return printRun(n.Threads.Resume(ctx, *fs.owner, id, opts...), *fs.json, stdout, fs.Arg(0), fs.service.database)
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.register(fs, false)
	synopsis(fs, "baton migrate [--database URL]")
	database := fs.String("database", "", databaseHelp)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	log, err := lf.logger(ctx, stderr)
	if err != nil {
		return err
	}
	url, err := resolveDatabase(*database)
	if err != nil {
		return err
	}
	// baton's tables, then River's for the background continuation workers.
	if err := service.Migrate(ctx, url, log); err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return usageError{err}
		}
		return fmt.Errorf("migrate %s: %w", redactURL(url), err)
	}
	fmt.Fprintf(stdout, "database %s is up to date (baton and River schemas)\n", redactURL(url))
	return nil
}

// alwaysBool are the flags of every command that take no value.
var alwaysBool = map[string]bool{"h": true, "help": true, "v": true}

// reorder moves flags after positional arguments to the front, so that
// `baton run FILE "msg" --json` works like `baton run --json FILE "msg"`.
func reorder(args []string, boolFlags map[string]bool) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && !boolFlags[name] && !alwaysBool[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}
