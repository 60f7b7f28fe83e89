package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/batonhq/baton/eval"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/report"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/service"
)

// judgeEnv is the environment variable --judge defaults to.
const judgeEnv = "BATON_JUDGE"

// cmdEval runs an eval set on a network (baton eval SET), or exports
// stored threads as one (baton eval export).
func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "export" {
		return cmdEvalExport(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	synopsis(fs, "baton eval SET --network NETWORK.yaml [--baseline OLD.yaml] [-j N] [--live-tools] [--json] [--junit FILE] [--html FILE] [flags]\n       baton eval export --thread ID [--since 24h] [--network NETWORK.yaml] [-o FILE]\n\nRuns every case of SET (YAML, JSON Lines, or ADK's evalset JSON) on the network and scores it;\nexits 1 when a score is under its threshold or a case regresses against the baseline")
	sf := commonFlags(fs, "model", "tool")
	network := fs.String("network", "", "the network to evaluate (default: the set's network:)")
	baseline := fs.String("baseline", "", "a baseline network: every case runs on it too, and a check it passes that the network fails is a regression")
	jobs := fs.Int("j", eval.DefaultConcurrency, "cases run at once")
	liveTools := fs.Bool("live-tools", false, "run the tool calls that have no recorded result (by default they are answered with an error and reported)")
	judge := fs.String("judge", os.Getenv(judgeEnv), "the model that judges rubrics that name none, as --model takes models (default $"+judgeEnv+")")
	jsonOut := fs.Bool("json", false, "print the report as JSON instead of the table")
	junit := fs.String("junit", "", "write the report as JUnit XML to FILE")
	html := fs.String("html", "", "write the report as one self-contained HTML page to FILE")
	if err := fs.Parse(reorder(args, map[string]bool{"json": true, "live-tools": true})); err != nil {
		return usageError{err}
	}
	log, err := sf.logger(ctx, stderr)
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one eval set: baton eval SET --network NETWORK.yaml")
	}
	if *jobs < 1 {
		return usagef("-j must be 1 or more")
	}
	set, err := evalset.Load(fs.Arg(0))
	if err != nil {
		return usageError{err}
	}
	for _, w := range set.Warnings {
		fmt.Fprintln(stderr, "baton eval: warning:", w)
	}
	cfg := eval.Config{Set: set, Network: eval.Target{File: *network, Load: sf.load()}, Concurrency: *jobs, LiveTools: *liveTools, Judge: *judge,
		Logger: log}
	if cfg.Network.File == "" {
		if set.Network == "" {
			return usagef("want --network NETWORK.yaml (the set names none)")
		}
		cfg.Network.File = filepath.Join(filepath.Dir(fs.Arg(0)), set.Network)
	}
	if *baseline != "" {
		cfg.Baseline = &eval.Target{File: *baseline, Load: sf.load()}
	}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(f.Fd()) {
		cfg.Progress = report.Progress(stderr)
	}
	r, err := eval.Run(ctx, cfg)
	if err != nil {
		return runError(err)
	}
	if err := writeReports(r, *junit, *html); err != nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := report.Table(stdout, r); err != nil {
		return err
	}
	if r.Failed() {
		return fmt.Errorf("%s", r.Summary)
	}
	return nil
}

// commonFlags adds to fs the logging flags of every command and the flags
// names of the commands that run a network (serviceFlags), as they define
// them, and returns their values.
func commonFlags(fs *flag.FlagSet, names ...string) *serviceFlags {
	sf := &serviceFlags{}
	all := flag.NewFlagSet("", flag.ContinueOnError)
	sf.register(all, false)
	sf.log.register(fs, false)
	for _, n := range names {
		if f := all.Lookup(n); f != nil {
			fs.Var(f.Value, f.Name, f.Usage)
		}
	}
	return sf
}

// runError classifies an error of eval.Run: a set, a network file or a
// flag that is wrong is a usage error.
func runError(err error) error {
	var ne *netspec.Error
	if errors.As(err, &ne) || errors.Is(err, evalset.ErrInvalid) || errors.Is(err, service.ErrUnknownTool) || errors.Is(err, os.ErrNotExist) {
		return usageError{err}
	}
	return err
}

// writeReports writes the JUnit and HTML reports asked for.
func writeReports(r *eval.Report, junit, html string) error {
	for _, out := range []struct {
		path  string
		write func(io.Writer, *eval.Report) error
	}{{junit, report.JUnit}, {html, report.HTML}} {
		if out.path == "" {
			continue
		}
		if err := writeFile(out.path, func(w io.Writer) error { return out.write(w, r) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes path atomically: a temporary file renamed over it.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".baton-eval-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

// cmdEvalExport writes stored threads as an eval set.
func cmdEvalExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	synopsis(fs, "baton eval export --thread ID [--thread ID …] [--since 24h|2006-01-02|RFC3339] [--network NETWORK.yaml] [-o FILE] [flags]\n\nWrites stored threads as an eval set: one case per thread, its user turns, what each turn's\nrun did as its recording (model answers, tool results, transfers, status) and as its expectations")
	sf := commonFlags(fs, "database", "model")
	owner := ownerFlag(fs)
	var ids threadIDs
	fs.Var(&ids, "thread", "a thread to export (repeatable)")
	since := fs.String("since", "", "export every thread updated since then: a duration back from now (24h) or a time (2006-01-02, RFC 3339)")
	network := fs.String("network", "", "the network the threads ran on: transfers are told from tools by it, and, when the threads ran under this version, its unchanged agents are answered from the recording")
	out := fs.String("o", "", "write the set to FILE (.yaml or .jsonl) instead of standard output (YAML)")
	name := fs.String("name", "", "the set's name (default: export)")
	if err := fs.Parse(reorder(args, nil)); err != nil {
		return usageError{err}
	}
	if _, err := sf.logger(ctx, stderr); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	o := eval.ExportOptions{Owner: *owner, Threads: ids, Model: sf.model, Name: *name}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usageError{err}
		}
		o.Since = t
	}
	if len(ids) == 0 && o.Since.IsZero() {
		return usagef("want --thread ID or --since")
	}
	if *network != "" {
		spec, err := loadNetwork(*network, service.LoadOptions{Offline: true, Logger: sf.logTo})
		if err != nil {
			return err
		}
		if spec.Close != nil {
			defer spec.Close()
		}
		o.Network = spec
	}
	url, err := resolveDatabase(sf.database)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, url, true)
	if err != nil {
		return fmt.Errorf("open %s: %w", redactURL(url), err)
	}
	defer st.Close()
	res, err := eval.Export(ctx, st, o)
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "baton eval export: warning:", w)
	}
	comment := "Exported by baton eval export from " + redactURL(url)
	if *out == "" {
		return evalset.Write(stdout, res.Set, evalset.FormatYAML, comment)
	}
	format := evalset.FormatYAML
	if f := evalset.FormatOf(*out, nil); f == evalset.FormatJSONL {
		format = f
	}
	if err := writeFile(*out, func(w io.Writer) error { return evalset.Write(w, res.Set, format, comment) }); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %d cases to %s\n", len(res.Set.Cases), *out)
	return nil
}

// threadIDs is the repeatable --thread flag.
type threadIDs []string

func (t *threadIDs) String() string { return strings.Join(*t, ",") }

func (t *threadIDs) Set(v string) error {
	*t = append(*t, v)
	return nil
}

// parseSince parses --since: a duration back from now, a date or an RFC
// 3339 time.
func parseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (24h), a date (2006-01-02) or an RFC 3339 time", v)
}
