package continuationbench

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestDiagnosis: a continuation worked to its end is reported as such on
// both backends — its River job, job run and placeholder completed, its
// checkpoints listed — and a run the store does not hold as rows of none.
func TestDiagnosis(t *testing.T) {
	for _, be := range Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			st := be.Open(t)
			if err := driverOf(t, st).Migrate(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			var jobs finished
			tool := func(context.Context, json.RawMessage) (string, error) { return `{"status":"shipped"}`, nil }
			cont, svc := started(t, st, tool, &jobs)
			run, _ := Turn(t, svc, cont.RunOptions(), 1)
			deadline := time.Now().Add(time.Minute)
			for len(jobs.missing([]string{run})) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("run %s not done", run)
				}
				time.Sleep(time.Millisecond)
			}
			// The worker's transaction has committed once River records the job completed.
			var got string
			for time.Now().Before(deadline) {
				got = Diagnosis(context.Background(), st, []string{run, "run_absent"})
				if strings.Count(got, " completed") >= 4 { // River's job, the job run, the placeholder, the last checkpoint
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, want := range []string{
				"2 runs not done: [" + run + " run_absent]",
				"run " + run + ": river_job:\n\t",
				"run " + run + ": job_runs:\n\t",
				"run " + run + ": placeholder:\n\t",
				"run " + run + ": checkpoints:\n\t1 ",
				"run run_absent: river_job:\n\t(no rows)",
				"run run_absent: checkpoints:\n\t(no rows)",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("diagnosis lacks %q:\n%s", want, got)
				}
			}
			for _, what := range []string{"river_job", "job_runs", "placeholder"} {
				line := got[strings.Index(got, "run "+run+": "+what):]
				line = line[:strings.Index(line[1:], "\nrun ")+1]
				if !strings.Contains(line, "completed") {
					t.Errorf("%s not completed:\n%s", what, line)
				}
			}
		})
	}
}
