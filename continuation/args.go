package continuation

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/batonhq/baton/runstate"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Kind is the River job kind of a continuation. It is persisted.
const Kind = "baton.continue"

// DefaultQueue is the River queue continuations go to by default.
const DefaultQueue = "baton"

// QueueName is the River queue of a network's continuations (what package
// service gives each network): "baton_" and the network's name in lowercase
// letters, digits and '_'. Every process serving the network derives the
// same.
func QueueName(network string) string {
	return "baton_" + strings.Trim(queueUnsafe.ReplaceAllString(strings.ToLower(network), "_"), "_")
}

var queueUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// Args are the River job args of a continuation. They are persisted as
// JSON; the field names are stable.
type Args struct {
	OwnerID string `json:"owner_id"`
	// ThreadID makes the job unique per thread: one continuation of a
	// thread is queued or running at a time.
	ThreadID string `json:"thread_id" river:"unique"`
	RunID    string `json:"run_id"`
	// EventID identifies the continuation (see [EventID]). It is also the
	// id of the placeholder message and the job run's idempotency key.
	EventID  string `json:"continuation_id"`
	JobRunID string `json:"job_run_id"`
	// Fingerprint is the network version the run was suspended under.
	Fingerprint string `json:"fingerprint"`
	// Trace carries the request's trace context (W3C traceparent) to the
	// worker, whose spans link to the request's (see Config.Inject, Link).
	Trace map[string]string `json:"trace,omitempty"`
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return Kind }

// UnmarshalJSON reads the args of a job, also of one enqueued before
// continuations had their word, whose continuation_id was called
// handoff_event_id.
func (a *Args) UnmarshalJSON(b []byte) error {
	type plain Args
	var v struct {
		plain
		EventIDV1 string `json:"handoff_event_id"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*a = Args(v.plain)
	if a.EventID == "" {
		a.EventID = v.EventIDV1
	}
	return nil
}

// InsertOpts implements river.JobArgsWithInsertOpts: the default queue,
// unique by thread among the jobs not finished.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: DefaultQueue, UniqueOpts: uniqueOpts}
}

var uniqueOpts = river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}}

// EventID returns the id of the hand-over of run runID at checkpoint step:
// runID + "-c" + step. It is stable, so that the same event always names
// the same placeholder message and job run.
func EventID(runID string, step int) string {
	return runstate.ContinuationID(runID, step)
}
