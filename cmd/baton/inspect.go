package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/batonhq/baton/inspect"
	"github.com/batonhq/baton/store"
)

// cmdInspect prints a run's steps (package inspect, as GET
// /v1/threads/{id}/runs/{run_id}/steps gives them) as a table, or with
// --json as the API's JSON; given a step id too, that step in full.
func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf logFlags
	lf.register(fs, false)
	synopsis(fs, "baton inspect RUN_ID [STEP_ID] [--json] [--owner NAME] [--database URL]")
	owner := ownerFlag(fs)
	asJSON := fs.Bool("json", false, "print the steps as JSON (the API's shape)")
	database := fs.String("database", "", databaseHelp)
	noMigrate := fs.Bool("no-migrate", false, "refuse to migrate the database; fail if its schema is out of date")
	if err := fs.Parse(reorder(args, map[string]bool{"json": true, "no-migrate": true, "v": true})); err != nil {
		return usageError{err}
	}
	if _, err := lf.logger(ctx, stderr); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return usagef("want a run id: baton inspect RUN_ID [STEP_ID]")
	}
	st, err := openDatabase(ctx, *database, *noMigrate)
	if err != nil {
		return err
	}
	defer st.Close()
	runID := fs.Arg(0)
	if fs.NArg() == 2 {
		step, err := inspect.GetStep(ctx, st, *owner, "", runID, fs.Arg(1))
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("step %s of run %s not found (owner %s)", fs.Arg(1), runID, *owner)
		}
		if err != nil {
			return err
		}
		return printJSON(stdout, step)
	}
	run, err := inspect.Steps(ctx, st, *owner, "", runID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("run %s not found (owner %s)", runID, *owner)
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, run)
	}
	printSteps(stdout, run)
	return nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printSteps prints a run's steps as a table: when each started after the
// run's start, how long it took, its tokens, the checkpoint it ended in.
func printSteps(w io.Writer, run *inspect.Run) {
	fmt.Fprintf(w, "run %s  thread %s  %s  agent %s  tokens in %d out %d\n\n", run.RunID, run.ThreadID, run.Status, run.Agent,
		run.Tokens.Input, run.Tokens.Output)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTART\tDURATION\tTYPE\tAGENT\tWHAT\tTOKENS\tSTEP\tID")
	for i, s := range run.Steps {
		what := s.Name
		if s.Type == inspect.StepModelCall {
			what = s.Model
		}
		if s.Type == inspect.StepTransfer {
			what = "→ " + s.Name
		}
		if s.Error != "" {
			what += " (error)"
		}
		tokens := ""
		if t := s.Tokens; t != nil {
			tokens = strconv.FormatInt(t.Input, 10) + "/" + strconv.FormatInt(t.Output, 10)
		}
		dur := fmtMS(s.DurationMS)
		if s.Ongoing {
			dur += " …"
		}
		fmt.Fprintf(tw, "%d\t+%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i+1, fmtMS(float64(s.StartedAt.Sub(run.StartedAt).Microseconds())/1000), dur,
			s.Type, s.Agent, what, tokens, s.CheckpointStep, s.ID)
	}
	tw.Flush()
}

func fmtMS(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
