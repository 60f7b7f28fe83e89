package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

func loadNetwork(path string) (*netspec.Spec, error) {
	return loadNetworkWith(path, false)
}

func loadNetworkWith(path string, offline bool) (*netspec.Spec, error) {
	return loadNetworkOpts(path, netspec.Options{Provider: providerFactory(offline)})
}

func loadNetworkOpts(path string, opts netspec.Options) (*netspec.Spec, error) {
	spec, err := netspec.Load(path, opts)
	if err != nil {
		return nil, usageError{err}
	}
	return spec, nil
}

// newRunner returns the runner of spec; configure, if given, adjusts its
// config first (the agents' memory, for instance).
func newRunner(spec *netspec.Spec, configure ...func(*runner.Config)) (*runner.Runner, error) {
	cfg := runner.Config{Network: spec.Network, Policy: spec.Policy, Picker: spec.Picker}
	for _, f := range configure {
		f(&cfg)
	}
	return runner.New(cfg)
}

func cmdValidate(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if fs.NArg() != 1 {
		return usagef("want one network file: baton validate NETWORK.yaml")
	}
	spec, err := loadNetworkWith(fs.Arg(0), true)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: network %s is valid: %d agents, fingerprint %s\n", fs.Arg(0), spec.Network.Name(), len(spec.Network.Agents()), spec.Network.Fingerprint())
	return nil
}

// storeFlags are the flags of commands that use the database.
type storeFlags struct {
	database  string
	owner     string
	noMigrate bool
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.database, "database", "", databaseHelp)
	fs.StringVar(&f.owner, "owner", "local", "owner of the threads this command reads and writes")
	fs.BoolVar(&f.noMigrate, "no-migrate", false, "refuse to migrate the database; fail if its schema is out of date")
}

func (f *storeFlags) open(ctx context.Context) (store.Store, error) {
	url, err := resolveDatabase(f.database)
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, url, f.noMigrate)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", redactURL(url), err)
	}
	return st, nil
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object per event")
	agentName := fs.String("agent", "", "start with this agent instead of the picker's choice")
	thread := fs.String("thread", "", "continue this stored thread (default: a new thread)")
	record := fs.String("record", "", "write what each agent's model answered to this file, as a scripted network")
	var sf storeFlags
	sf.register(fs)
	var mf memoryFlags
	mf.register(fs)
	if err := fs.Parse(reorder(args, map[string]bool{"json": true, "no-migrate": true})); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 2 {
		return usagef("want a network file and a message: baton run NETWORK.yaml \"message\"")
	}
	lopts := netspec.Options{Provider: providerFactory(false)}
	var rec *netspec.Recorder
	if *record != "" {
		rec = netspec.NewRecorder()
		lopts.WrapModel = rec.Wrap
	}
	spec, err := loadNetworkOpts(fs.Arg(0), lopts)
	if err != nil {
		return err
	}
	if *agentName != "" {
		if _, ok := spec.Network.Agent(*agentName); !ok {
			return usagef("unknown agent %q", *agentName)
		}
	}
	st, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	hm, err := newHandoffMemory(st, sf.owner, mf, spec.Network, nil)
	if err != nil {
		return err
	}
	r, err := hm.runner(spec)
	if err != nil {
		return err
	}
	var opts []runner.RunOption
	if *agentName != "" {
		opts = append(opts, runner.WithAgent(*agentName))
	}
	svc := threads.New(st, r, nil)
	events := svc.Turn(ctx, sf.owner, fs.Arg(1), threads.TurnOptions{ThreadID: *thread, RunOptions: opts})
	runErr := printRun(events, *jsonOut, stdout, fs.Arg(0), sf.database)
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
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print one JSON object per event")
	runID := fs.String("run", "", "the run to resume")
	interrupt := fs.String("interrupt", "", "the interrupt to answer (instead of --run)")
	decision := fs.String("decision", "", "approve, reject or edit, for a run waiting for a decision")
	editArgs := fs.String("args", "", "the edited tool arguments (JSON object), with --decision edit")
	message := fs.String("message", "", "a reason shown to the model, with --decision reject")
	var sf storeFlags
	sf.register(fs)
	var mf memoryFlags
	mf.register(fs)
	if err := fs.Parse(reorder(args, map[string]bool{"json": true, "no-migrate": true})); err != nil {
		return usageError{err}
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
	spec, err := loadNetwork(fs.Arg(0))
	if err != nil {
		return err
	}
	st, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	hm, err := newHandoffMemory(st, sf.owner, mf, spec.Network, nil)
	if err != nil {
		return err
	}
	r, err := hm.runner(spec)
	if err != nil {
		return err
	}
	svc := threads.New(st, r, nil)
	return printRun(svc.Resume(ctx, sf.owner, id, opts...), *jsonOut, stdout, fs.Arg(0), sf.database)
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	database := fs.String("database", "", databaseHelp)
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	url, err := resolveDatabase(*database)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, url, true)
	if err != nil && !errors.Is(err, store.ErrSchemaVersion) {
		return fmt.Errorf("open database %s: %w", redactURL(url), err)
	}
	if err == nil {
		st.Close()
	}
	st, err = openStore(ctx, url, false)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", redactURL(url), err)
	}
	defer st.Close()
	// River's tables, for the background continuation workers.
	if err := continuation.Migrate(ctx, st, nil); err != nil {
		return fmt.Errorf("migrate %s: river: %w", redactURL(url), err)
	}
	fmt.Fprintf(stdout, "database %s is up to date (baton and River schemas)\n", redactURL(url))
	return nil
}

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
			if !strings.Contains(name, "=") && !boolFlags[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}
