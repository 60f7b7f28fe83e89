package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

// Event types: a run's end, or its stop to wait for a decision.
const (
	RunCompleted   = "run.completed"
	RunFailed      = "run.failed"
	RunCancelled   = "run.cancelled"
	RunInterrupted = "run.interrupted"
	// RunWorking is a run's start, or its resumption after a decision: the
	// A2A task's change to working. It goes to a run's own targets (A2A
	// push notification configs, which receive every change of their task's
	// state) and not to the webhook URLs, whose events are the others.
	RunWorking = "run.working"
)

// Event is a webhook's body (Standard Webhooks: type, timestamp, data).
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is what an event is about.
type Data struct {
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	Network  string `json:"network"`
	Status   string `json:"status"`
	// Output is a completed run's answer (a cancelled run's, if it said
	// anything before it stopped).
	Output string `json:"output,omitempty"`
	// Interrupt is what an interrupted run waits for.
	Interrupt *runstate.Interrupt `json:"interrupt,omitempty"`
	// Failure is why a failed run failed.
	Failure *runstate.Failure `json:"failure,omitempty"`
}

// eventType returns the event of a checkpoint's status, "" for none.
func eventType(s runstate.Status) string {
	switch s {
	case runstate.StatusCompleted:
		return RunCompleted
	case runstate.StatusFailed:
		return RunFailed
	case runstate.StatusCancelled:
		return RunCancelled
	case runstate.StatusInterrupted:
		return RunInterrupted
	}
	return ""
}

// Kind is the River job kind of a delivery. It is persisted.
const Kind = "baton.webhook"

// Args are a delivery's River job args, persisted as JSON: one event to
// one URL. The secret is not in them: the worker signs with its own.
//
// The fields marked river:"unique" make a job's uniqueness ([unique]):
// the event (owner and webhook-id), the endpoint (its URL, and whether
// the owner named it: a run's webhook on a server-wide URL is a delivery
// of its own, with its own signature) and the target, not the payload,
// whose timestamp differs at each insert.
type Args struct {
	OwnerID string `json:"owner_id" river:"unique"`
	// ID is the event's webhook-id, the same on every attempt and for
	// every URL: "msg_" and the id of the checkpoint that caused it.
	ID      string          `json:"id" river:"unique"`
	Type    string          `json:"type"`
	URL     string          `json:"url" river:"unique"`
	Payload json.RawMessage `json:"payload"`
	// SecretEnv names the environment variable of the URL's own secret
	// ([Service.SetSecretEnv]); empty: the service's secret.
	SecretEnv string `json:"secret_env,omitempty"`
	// Endpoint is set for an endpoint the owner named itself (a run's
	// webhook, a [Target]): the delivery is signed with the secret of the
	// owner and URL ([Service.EndpointSecret]), not the service's.
	Endpoint bool `json:"endpoint,omitempty" river:"unique"`
	// Headers are a [Target]'s own headers (an A2A push notification's
	// token and authentication), sent besides the signature's.
	Headers map[string]string `json:"headers,omitempty"`
	// Target names a [Target] among those of the same URL (an A2A push
	// notification config's id); ThreadID, RunID and Network are its
	// event's, for the delivery log, when its payload is not an [Event].
	Target   string `json:"target,omitempty" river:"unique"`
	ThreadID string `json:"thread_id,omitempty"`
	RunID    string `json:"run_id,omitempty"`
	Network  string `json:"network,omitempty"`
}

// Target is a receiver a run names for itself with a body and headers of
// its own: an A2A push notification config, whose receiver expects its
// protocol's task rather than an [Event]. Its deliveries go through the
// same jobs, retries, delivery log and address checks as the URLs', and
// are signed too, with the secret of the owner and URL
// ([Service.EndpointSecret]).
type Target struct {
	URL string
	// Key tells the target from others of the same URL (a config's id).
	Key string
	// Headers are set on each request (Content-Type included, if given).
	Headers map[string]string
	// Payload is the body.
	Payload json.RawMessage
}

// TargetsFunc returns the targets of a run's event: st is the state of
// the checkpoint that causes it, read in its transaction tx.
type TargetsFunc func(ctx context.Context, tx store.Tx, owner string, st *runstate.State) ([]Target, error)

// SetTargets makes every run's events go to the targets f returns too
// (package a2apush's push notification configs). Call it before the
// service is used.
func (s *Service) SetTargets(f TargetsFunc) {
	if s != nil {
		s.targets = f
	}
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return Kind }

// unique: one delivery per event, URL and target (the Args fields marked
// river:"unique"), however often the event is recorded again while its
// first job is kept.
var unique = river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled, rivertype.JobStateCompleted,
}}

// Inserter inserts a River job in a store transaction: the network's
// continuation service ([continuation.Service.InsertTx]), whose River
// client has this service's worker ([Service.AddWorkers]). inserted is
// false when it has no River (a service never started).
type Inserter interface {
	InsertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (inserted bool, err error)
}

// Extension returns the runner extension that records a run's events: at
// a checkpoint whose status ends the run (completed, failed, cancelled) or
// waits for a decision (interrupted), one River job per URL, inserted in
// the checkpoint's transaction through ins, so that the event commits with
// the checkpoint or not at all: to the server-wide URLs, network's (a
// network's own webhooks, signed like them) and the run's own webhook
// ([RunURLs], signed with its [Service.EndpointSecret]). At
// the first checkpoint of an execution of a run (its start, a resumption)
// still running, [RunWorking] goes to the run's targets: once per change
// of status, never per step or text delta.
func (s *Service) Extension(ins Inserter, network []string) runner.Extension {
	return runner.ExtensionFuncs{Boundary: func(ctx context.Context, b *runner.Boundary) error {
		return s.atBoundary(ctx, ins, network, b)
	}}
}

func (s *Service) atBoundary(ctx context.Context, ins Inserter, network []string, b *runner.Boundary) error {
	if s == nil || b.CheckpointID == "" {
		return nil
	}
	typ := eventType(b.State.Status)
	if typ == "" && b.First && b.State.Status == runstate.StatusRunning && s.targets != nil {
		typ = RunWorking
	}
	if typ == "" {
		return nil
	}
	tx, owner, err := store.CheckpointTx(ctx, b.Tx, "webhook")
	if err != nil {
		return err
	}
	return s.record(ctx, ins, network, tx, owner, b.State, b.CheckpointID, typ)
}

// EndTx returns the threads.Service.EndTx that records the event of a run
// ended outside the runner (run.cancelled of a cancel or double-texting's
// stop), in the transaction of its checkpoint, like [Service.Extension].
func (s *Service) EndTx(ins Inserter, network []string) func(ctx context.Context, tx store.Tx, owner string, st *runstate.State, checkpointID string) error {
	return func(ctx context.Context, tx store.Tx, owner string, st *runstate.State, checkpointID string) error {
		return s.record(ctx, ins, network, tx, owner, st, checkpointID, eventType(st.Status))
	}
}

// record inserts the deliveries of event typ of checkpoint checkpointID
// (state st) in tx: [RunWorking] to the run's targets alone.
func (s *Service) record(ctx context.Context, ins Inserter, network []string, tx store.Tx, owner string, st *runstate.State, checkpointID, typ string) error {
	if s == nil || typ == "" || checkpointID == "" {
		return nil
	}
	var urls, own []string
	if typ != RunWorking {
		urls = append(append([]string(nil), s.cfg.URLs...), network...)
		own = RunURLs(st)
	}
	var targets []Target
	if s.targets != nil {
		var err error
		if targets, err = s.targets(ctx, tx, owner, st); err != nil {
			return fmt.Errorf("webhook: %s of run %s: %w", typ, st.RunID, err)
		}
	}
	if len(urls) == 0 && len(own) == 0 && len(targets) == 0 {
		return nil
	}
	ev := Event{Type: typ, Timestamp: time.Now().UTC(), Data: Data{ThreadID: st.ThreadID, RunID: st.RunID,
		Network: st.Network, Status: string(st.Status), Output: st.FinalOutput, Interrupt: st.Interrupt, Failure: st.Failure}}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	insert := func(a Args) error {
		a.OwnerID, a.ID, a.Type = owner, "msg_"+checkpointID, typ
		if _, err := ins.InsertTx(ctx, tx, a, &river.InsertOpts{MaxAttempts: s.cfg.MaxAttempts, UniqueOpts: unique}); err != nil {
			return fmt.Errorf("webhook: %s of run %s to %s: %w", typ, st.RunID, a.URL, err)
		}
		return nil
	}
	for _, u := range urls {
		if err := insert(Args{URL: u, Payload: body, SecretEnv: s.envs[u]}); err != nil {
			return err
		}
	}
	for _, u := range own {
		if err := insert(Args{URL: u, Payload: body, Endpoint: true}); err != nil {
			return err
		}
	}
	for _, t := range targets {
		if err := insert(Args{URL: t.URL, Payload: t.Payload, Endpoint: true, Headers: t.Headers, Target: t.Key,
			ThreadID: st.ThreadID, RunID: st.RunID, Network: st.Network}); err != nil {
			return err
		}
	}
	return nil
}

// HandoffData is the data of a thread_handoff.proposed or
// thread_handoff.decided event.
type HandoffData = threadhandoff.Event

// HandoffEventTx returns the threadhandoff.Config.EventTx that records a
// thread handoff's proposal or decision for the server-wide URLs and
// extra (a network's own), in the transaction that stores it. Its
// webhook-id is the handoff's id and the event's type.
func (s *Service) HandoffEventTx(ins Inserter, extra ...string) func(ctx context.Context, tx store.Tx, owner string, ev *threadhandoff.Event) error {
	return func(ctx context.Context, tx store.Tx, owner string, ev *threadhandoff.Event) error {
		if s == nil {
			return nil
		}
		urls := append(append([]string(nil), s.cfg.URLs...), extra...)
		if len(urls) == 0 {
			return nil
		}
		body, err := json.Marshal(struct {
			Type      string               `json:"type"`
			Timestamp time.Time            `json:"timestamp"`
			Data      *threadhandoff.Event `json:"data"`
		}{ev.Type, time.Now().UTC(), ev})
		if err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		for _, u := range urls {
			a := Args{OwnerID: owner, ID: "msg_" + ev.HandoffID + "_" + strings.TrimPrefix(ev.Type, "thread_handoff."), Type: ev.Type, URL: u, Payload: body, SecretEnv: s.envs[u]}
			if _, err := ins.InsertTx(ctx, tx, a, &river.InsertOpts{MaxAttempts: s.cfg.MaxAttempts, UniqueOpts: unique}); err != nil {
				return fmt.Errorf("webhook: %s of thread handoff %s: %w", ev.Type, ev.HandoffID, err)
			}
		}
		return nil
	}
}

// AddWorkers adds the delivery worker to a River client's workers.
func (s *Service) AddWorkers(w *river.Workers) error {
	return river.AddWorkerSafely(w, &worker{s: s})
}

// worker is the River worker of deliveries.
type worker struct {
	river.WorkerDefaults[Args]
	s *Service
}

// Work implements river.Worker: one attempt; an error (a refused address,
// no answer, a non-2xx status) makes River retry with its backoff.
func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	a := job.Args
	start := time.Now()
	key, err := w.s.keyOf(&a)
	status := 0
	if err == nil {
		status, err = w.s.send(ctx, key, a.URL, a.ID, a.Payload, a.Headers)
	}
	if err != nil {
		w.s.log.WarnContext(ctx, "webhook delivery failed", "webhook_id", a.ID, "type", a.Type, "attempt", job.Attempt, "error", err)
	}
	if l := w.s.cfg.Log; l != nil {
		ev := Event{Data: Data{ThreadID: a.ThreadID, RunID: a.RunID, Network: a.Network}}
		if a.RunID == "" {
			_ = json.Unmarshal(a.Payload, &ev)
		}
		p := &store.AppendWebhookDeliveryParams{OwnerID: a.OwnerID, WebhookID: a.ID, EventType: a.Type, URL: a.URL, Target: a.Target,
			ThreadID: ev.Data.ThreadID, RunID: ev.Data.RunID, Network: ev.Data.Network, Attempt: job.Attempt, StatusCode: status, Duration: time.Since(start),
			// The last attempt: answered, or not tried again.
			Final: err == nil || job.Attempt >= job.MaxAttempts}
		if err != nil {
			p.Error = err.Error()
		}
		if _, lerr := l.AppendWebhookDelivery(context.WithoutCancel(ctx), p); lerr != nil {
			w.s.log.WarnContext(ctx, "webhook delivery log", "webhook_id", a.ID, "error", lerr)
		}
	}
	return err
}

// Timeout implements river.Worker: an attempt's bound, a little over the
// HTTP client's.
func (w *worker) Timeout(*river.Job[Args]) time.Duration { return w.s.cfg.Timeout + time.Second }

// NextRetry implements river.Worker: River's default backoff (attempt⁴
// seconds, with jitter), not the continuation queue's policy.
func (w *worker) NextRetry(job *river.Job[Args]) time.Time {
	return (&river.DefaultClientRetryPolicy{}).NextRetry(job.JobRow)
}

// RunValue is the key of a run's own webhook URL in its values
// (runstate.State.Values; runner.WithValues): a JSON string.
const RunValue = "baton.webhook"

// RunURLs returns the URL of a run's own webhook, [RunValue], if it
// names one.
func RunURLs(st *runstate.State) []string {
	raw, ok := st.Values[RunValue]
	if !ok {
		return nil
	}
	var u string
	if json.Unmarshal(raw, &u) != nil || u == "" {
		return nil
	}
	return []string{u}
}

// RunValues returns the run values that name url as the run's own
// webhook (see [RunValue]).
func RunValues(url string) map[string]json.RawMessage {
	b, _ := json.Marshal(url)
	return map[string]json.RawMessage{RunValue: b}
}
