package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// Checkpointer persists run state at step boundaries: after each model turn,
// after each tool result, after each transfer, and when the run stops
// (completed, failed, interrupted, suspended). Boundaries with nothing in
// between share one write: a model turn whose calls stop the run is
// written once, with the stop; the last result of a turn without transfer
// calls is written with the results joined to the history. st.Step has been incremented
// for this write. Checkpoint must not retain st or its slices after it
// returns. An error stops the run; it can be resumed from the last
// checkpoint that was written.
type Checkpointer interface {
	Checkpoint(ctx context.Context, st *runstate.State) error
}

// CheckpointFunc adapts a function to [Checkpointer].
type CheckpointFunc func(ctx context.Context, st *runstate.State) error

// Checkpoint calls f.
func (f CheckpointFunc) Checkpoint(ctx context.Context, st *runstate.State) error { return f(ctx, st) }

// RetryPolicy configures retries of transient model and tool errors:
// exponential backoff with jitter that honours Retry-After. The zero value
// means 4 attempts, 250ms base delay, 30s cap.
type RetryPolicy struct {
	MaxAttempts int
	BaseDelay   time.Duration
	MaxDelay    time.Duration
}

// Config configures a [Runner]. Only Network is required.
type Config struct {
	Network *agent.Network
	// Policy decides automatic transfers. Defaults to policy.Explicit.
	Policy policy.Policy
	// Picker chooses the first agent of a new run. Defaults to the network's entry.
	Picker policy.Picker
	// Limits override the network's limits when not nil.
	Limits *agent.Limits
	Retry  RetryPolicy
	// Checkpointer, if set, persists state at every step boundary.
	Checkpointer Checkpointer
	// Logger gets the runner's warnings (retries) and, at info, its
	// transfers and limits. Defaults to a logger that discards: the library
	// is quiet unless given one.
	Logger *slog.Logger
	// MaxParallelTools bounds the calls of one turn that run at once. Defaults to 8.
	MaxParallelTools int
	// Observer is told about runs, model calls, tools and transfers
	// (tracing, metrics). Defaults to none.
	Observer Observer
	// Sleep replaces the retry wait, for tests.
	Sleep func(ctx context.Context, d time.Duration) error
	// Extensions run around every run's turns, in order (see [Extension]):
	// agent memory, hand-over to background workers, leases, clean-up.
	Extensions []Extension
	// RecordCalls makes every run record its model calls (request as
	// sent, answer, usage, timing, retries), tool calls and transfers and
	// hand them to the extensions at the next step boundary
	// ([Boundary].Calls), to be written with the checkpoint. Off by
	// default: a run then records nothing.
	RecordCalls bool
}

// Runner runs a network. It is safe for concurrent use; each run has its own state.
type Runner struct {
	cfg    Config
	net    *agent.Network
	limits agent.Limits
	plans  map[string]*plan
	log    *slog.Logger
	sleep  retry.Sleeper
	retry  retry.Policy
}

// plan is what the runner precomputes per agent.
type plan struct {
	a      *agent.Agent
	tools  []model.Tool // tools offered to the model, transfers included
	byName map[string]toolEntry
	// dynamic is set when some transfer has an Enabled predicate.
	dynamic bool
}

type toolEntry struct {
	kind      runstate.CallKind
	tool      *agent.Tool
	transfer  *transfer.Transfer
	agentTool *agent.AgentTool
	done      string // the result of a transfer call that was taken
}

// TransferContextTool is the tool offered to an agent whose transfer context
// has fields delivered by reference; it returns a field's full value.
const TransferContextTool = "read_transfer_context"

// contextToolV1 is [TransferContextTool] as run states of schema version 1
// name it: a call of it still pending in such a state is answered, its
// "handoff:" reference read as "transfer:".
const contextToolV1 = "read_handoff_context"

var transferContextParams = json.RawMessage(`{"type":"object","properties":{"ref":{"type":"string","description":"The reference shown in the transfer context block."}},"required":["ref"]}`)

// New returns a runner for cfg.Network.
func New(cfg Config) (*Runner, error) {
	if cfg.Network == nil {
		return nil, errors.New("runner: no network")
	}
	r := &Runner{cfg: cfg, net: cfg.Network, plans: map[string]*plan{}, log: cfg.Logger, sleep: cfg.Sleep,
		retry: retry.Policy{MaxAttempts: cfg.Retry.MaxAttempts, BaseDelay: cfg.Retry.BaseDelay, MaxDelay: cfg.Retry.MaxDelay}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.sleep == nil {
		r.sleep = retry.Sleep
	}
	if r.cfg.Policy == nil {
		r.cfg.Policy = policy.Explicit{}
	}
	if r.cfg.MaxParallelTools <= 0 {
		r.cfg.MaxParallelTools = 8
	}
	if r.cfg.Observer == nil {
		r.cfg.Observer = nopObserver{}
	}
	r.limits = cfg.Network.Limits()
	if cfg.Limits != nil {
		r.limits = cfg.Limits.Defaults()
	}
	for _, a := range cfg.Network.Agents() {
		p := &plan{a: a, byName: map[string]toolEntry{}}
		for _, t := range a.Tools {
			p.tools = append(p.tools, model.Tool{Name: t.Name, Description: t.Description, Parameters: paramsOr(t.Parameters)})
			p.byName[t.Name] = toolEntry{kind: runstate.CallTool, tool: t}
		}
		for _, t := range a.AgentTools {
			desc := t.Description
			if desc == "" {
				target, _ := cfg.Network.Agent(t.Agent)
				desc = "Ask " + t.Agent + " and get its answer back. " + target.Description
			}
			p.tools = append(p.tools, model.Tool{Name: t.Tool(), Description: desc, Parameters: agent.AgentToolParameters})
			p.byName[t.Tool()] = toolEntry{kind: runstate.CallAgentTool, agentTool: t}
		}
		for _, h := range a.Transfers {
			desc := h.Description
			if desc == "" {
				target, _ := cfg.Network.Agent(h.To)
				desc = "Transfer the conversation to " + h.To + ". " + target.Description
			}
			p.tools = append(p.tools, model.Tool{Name: h.Tool(), Description: desc, Parameters: h.Parameters()})
			p.byName[h.Tool()] = toolEntry{kind: runstate.CallTransfer, transfer: h, done: "Transferred to " + h.To + "."}
			if h.Enabled != nil {
				p.dynamic = true
			}
		}
		r.plans[a.Name] = p
	}
	return r, nil
}

func paramsOr(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return p
}

// Network returns the runner's network.
func (r *Runner) Network() *agent.Network { return r.net }

// RunOption tunes one run.
type RunOption func(*runOpts)

type runOpts struct {
	threadID     string
	history      []message.Message
	lastAgent    string
	agent        string
	runID        string
	values       map[string]json.RawMessage
	decisions    []Decision
	background   bool
	fallback     func(ctx context.Context, err error) string
	checkpointer Checkpointer
	settings     *model.Settings
	stopper      *Stopper
	deferResults bool
}

// WithThread sets the run's thread id.
func WithThread(id string) RunOption { return func(o *runOpts) { o.threadID = id } }

// WithHistory gives the thread's earlier messages; they are repaired to keep
// the pairing invariant and precede the new input.
func WithHistory(msgs []message.Message) RunOption { return func(o *runOpts) { o.history = msgs } }

// WithLastAgent tells the picker which agent was last active on the thread.
func WithLastAgent(name string) RunOption { return func(o *runOpts) { o.lastAgent = name } }

// WithAgent starts the run with the named agent, bypassing the picker.
func WithAgent(name string) RunOption { return func(o *runOpts) { o.agent = name } }

// WithRunID sets the run id. Defaults to a new random id ([runstate.NewRunID]).
func WithRunID(id string) RunOption { return func(o *runOpts) { o.runID = id } }

// WithValues gives small JSON application values to the run; they are kept in
// its state and visible to instructions and tools through the run context.
func WithValues(v map[string]json.RawMessage) RunOption { return func(o *runOpts) { o.values = v } }

// WithDecisions answers the interrupt of a run being resumed.
func WithDecisions(d ...Decision) RunOption {
	return func(o *runOpts) { o.decisions = append(o.decisions, d...) }
}

// WithBackgroundBoundary makes the run stop with status suspended before it
// executes a slow tool (Tool.Slow, or any tool of an Agent.Background agent),
// so that a background worker can resume it. Inline request handlers use it.
func WithBackgroundBoundary() RunOption { return func(o *runOpts) { o.background = true } }

// DefaultFallbackNotice is the tool result given to the model for the slow
// calls of a run whose hand-over to a background worker failed (see
// [WithBackgroundFallback]).
const DefaultFallbackNotice = "not run: background processing is unavailable right now; answer without this tool and tell the user it could not run"

// WithBackgroundFallback makes a run whose hand-over to a background worker
// fails finish inline instead of failing. It applies with
// [WithBackgroundBoundary] when the checkpoint of the suspension returns an
// error (the job queue or the transaction that enqueues it failed; nothing of
// it was written): the run goes on without the worker, the calls that have
// no result yet are answered with a notice as an error result, the agent is
// called once more without tools, and the run completes with that answer.
// The failure is logged at warn level. A checkpoint refused because another
// writer has superseded the run (an error with a Superseded() bool method
// that returns true, as the store's *StaleWriteError) is not a failed
// hand-over: the run stops with it, without calling the model again.
//
// notice, if not nil, is told the hand-over error (so the caller gets it) and
// returns the notice text; "" means [DefaultFallbackNotice].
func WithBackgroundFallback(notice func(ctx context.Context, err error) string) RunOption {
	return func(o *runOpts) {
		o.fallback = notice
		if o.fallback == nil {
			o.fallback = func(context.Context, error) string { return "" }
		}
	}
}

// WithDeferredResults lets the run write the results of idempotent tools
// ([agent.Tool].Idempotent) with its next checkpoint rather than in a
// checkpoint of their own the moment the tool returns: when every call of a
// turn is of such a tool (or needs no tool: an unknown tool, the transfer
// context's reader) and the turn transfers nowhere, the results join the
// history and the next model call is made without a write in between. A
// crash before the next checkpoint loses the results, and the run resumed
// from its last checkpoint runs the calls again with the same idempotency
// keys, which the tools de-duplicate. The calls of other tools (and agent
// tools) are checkpointed as they return, as without the option.
//
// The events of the deferred results are numbered before the next model
// call's text deltas, while a stream rebuilt from the checkpoints numbers a
// step's stored events after its deltas: use it for runs whose events are
// not published live with their seq numbers, such as a background worker's
// (package continuation sets it), whose streams are built from its
// checkpoints.
func WithDeferredResults() RunOption { return func(o *runOpts) { o.deferResults = true } }

// WithCheckpointer overrides the runner's checkpointer for this run.
func WithCheckpointer(c Checkpointer) RunOption { return func(o *runOpts) { o.checkpointer = c } }

// DecisionType is a human's answer to an interrupt.
type DecisionType string

// Decision types.
const (
	DecisionApprove DecisionType = "approve"
	DecisionReject  DecisionType = "reject"
	DecisionEdit    DecisionType = "edit"
)

// Decision answers one action request of an interrupt. CallID selects the
// action; empty applies the decision to every action of the interrupt.
type Decision struct {
	Type   DecisionType    `json:"type"`
	CallID string          `json:"call_id,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	// Message is an optional reason shown to the model on rejection.
	Message string `json:"message,omitempty"`
}

// Result is the outcome of a run that ended, or stopped to wait.
type Result struct {
	RunID    string
	ThreadID string
	Status   runstate.Status
	// LastAgent is the agent active when the run ended or stopped.
	LastAgent string
	// Output is the final answer of a completed run.
	Output string
	// Messages are the messages of this run, input first.
	Messages  []message.Message
	Turns     int
	Transfers int
	Usage     message.Usage
	// Interrupt is set when Status is interrupted.
	Interrupt *runstate.Interrupt
	// Limit names the limit that ended the run with a final answer.
	Limit string
	// State is the run's final state (serialisable; resumable unless terminal).
	State *runstate.State
}

// Run runs a new conversation turn with input and returns its result. A run
// that stops to wait (interrupted, suspended) returns a nil error and a
// Result saying so. A failed run returns its classified error and a Result
// whose State is the last state (resumable for transient failures).
func (r *Runner) Run(ctx context.Context, input string, opts ...RunOption) (*Result, error) {
	x, err := r.start(ctx, input, opts, nil)
	if err == nil {
		err = x.begin(ctx)
	}
	if err != nil {
		return nil, err
	}
	return x.finish(ctx, x.exec(ctx))
}

// Stream runs like [Runner.Run] and yields its events as they happen. After
// a failure it yields an ErrorEvent, a RunEndEvent and then (nil, err).
// Breaking out of the loop cancels the run (its last checkpoint stays
// resumable).
func (r *Runner) Stream(ctx context.Context, input string, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		x, err := r.start(ctx, input, opts, func(e Event) bool { return yield(e, nil) })
		if err == nil {
			err = x.deferBegin(ctx)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		err = x.exec(ctx)
		if berr := x.begun(); berr != nil {
			// The run did not start (its first checkpoint failed): nothing
			// of it was emitted.
			if x.end.observe != nil {
				x.end.observe(nil, berr)
			}
			yield(nil, berr)
			return
		}
		if _, err := x.finish(ctx, err); err != nil && !x.stopped {
			yield(nil, err)
		}
	}
}

// Resume continues a run from its state: after an interrupt (give
// WithDecisions), after a background hand-over, after a crash, or after a
// transient failure (model or tool kept failing). The state
// must have been written under this runner's network fingerprint; otherwise
// a *runstate.IncompatibleError (wrapped in *Error) is returned and nothing
// runs.
func (r *Runner) Resume(ctx context.Context, st *runstate.State, opts ...RunOption) (*Result, error) {
	x, err := r.resume(ctx, st, opts, nil)
	if err != nil {
		return nil, err
	}
	return x.finish(ctx, x.exec(ctx))
}

// ResumeStream is [Runner.Resume] with events, as [Runner.Stream].
func (r *Runner) ResumeStream(ctx context.Context, st *runstate.State, opts ...RunOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		x, err := r.resume(ctx, st, opts, func(e Event) bool { return yield(e, nil) })
		if err != nil {
			yield(nil, err)
			return
		}
		if _, err := x.finish(ctx, x.exec(ctx)); err != nil && !x.stopped {
			yield(nil, err)
		}
	}
}

func collectOpts(opts []RunOption) runOpts {
	if len(opts) == 0 {
		return runOpts{}
	}
	o := new(runOpts)
	for _, f := range opts {
		f(o)
	}
	return *o
}

func (r *Runner) start(ctx context.Context, input string, opts []RunOption, emit func(Event) bool) (*run, error) {
	o := collectOpts(opts)
	if input == "" {
		return nil, &Error{Kind: KindUserInput, Err: ErrInputEmpty}
	}
	first := o.agent
	reason := ""
	if first != "" {
		reason = "requested"
	}
	if first == "" && r.cfg.Picker != nil {
		a, why, err := r.cfg.Picker.Pick(ctx, policy.PickInput{Input: input, LastAgent: o.lastAgent, ThreadID: o.threadID})
		if err != nil {
			return nil, &Error{Kind: KindSystem, Err: fmt.Errorf("pick first agent: %w", err)}
		}
		first, reason = a, why
	}
	if first == "" {
		first, reason = r.net.Entry(), "entry"
	}
	a, ok := r.net.Agent(first)
	if !ok {
		return nil, &Error{Kind: KindSystem, Err: fmt.Errorf("first agent %q is not in network %s", first, r.net.Name())}
	}
	runID := o.runID
	if runID == "" {
		runID = runstate.NewRunID()
	}
	now := time.Now()
	nb := new(newRun) // zeroed: its fields are set one by one, not copied in
	nb.input[0].Type, nb.input[0].Text = message.PartText, input
	in := message.Message{ID: runstate.MessageID(runID, 1), Role: message.RoleUser, Parts: nb.input[:]} // message.User(input)
	hist := message.Repair(o.history, message.DropOrphans)
	o.history = nil // in msgs now: the run does not keep the caller's slice
	msgs := nb.msgs[:0]
	if len(hist) > 0 {
		// Room for the run's new messages (growing a long thread's history
		// would copy all of it).
		msgs = make([]message.Message, 0, len(hist)+8)
	}
	st := &nb.st
	st.SchemaVersion, st.RunID, st.ThreadID = runstate.SchemaVersion, runID, o.threadID
	st.Network, st.Fingerprint, st.Agent = r.net.Name(), r.net.Fingerprint(), a.Name
	st.Messages = append(append(msgs, hist...), in)
	st.Transcript = append(nb.transcript[:0], in)
	st.Trail = append(nb.trail[:0], a.Name)
	st.Status, st.StartedAt, st.Values = runstate.StatusRunning, now.UTC(), o.runValues()
	x := &nb.run
	r.initRun(x, st, o, emit, now)
	x.res = &nb.res
	x.input = input
	if x.streaming() {
		x.startEvents = startEvents(st, a.Name, reason)
	}
	for _, g := range a.InputGuardrails {
		if err := g.Check(ctx, agent.GuardrailInput{Agent: a.Name, Text: input, Messages: st.Messages}); err != nil {
			x.preErr = &Error{Kind: KindUserInput, Agent: a.Name, Err: &GuardrailError{Guardrail: g.Name, Agent: a.Name, Phase: "input", Err: err}}
			break
		}
	}
	return x, nil
}

func (r *Runner) resume(ctx context.Context, st *runstate.State, opts []RunOption, emit func(Event) bool) (*run, error) {
	o := collectOpts(opts)
	if st == nil {
		return nil, &Error{Kind: KindSystem, Err: errors.New("resume: nil state")}
	}
	if err := st.CheckFingerprint(r.net.Fingerprint()); err != nil {
		return nil, &Error{Kind: KindSystem, Err: err}
	}
	if st.Status.Terminal() && !resumableFailure(st) {
		return nil, &Error{Kind: KindUserInput, Err: fmt.Errorf("resume: run %s is already %s", st.RunID, st.Status)}
	}
	st.Failure = nil
	if _, ok := r.net.Agent(st.Agent); !ok {
		return nil, &Error{Kind: KindSystem, Err: fmt.Errorf("resume: agent %q of run %s is not in network %s", st.Agent, st.RunID, r.net.Name())}
	}
	answered := ""
	if st.Status == runstate.StatusInterrupted {
		if st.Interrupt != nil {
			answered = st.Interrupt.ID
		}
		if err := applyDecisions(st, o.decisions, r.plans[st.Agent]); err != nil {
			return nil, &Error{Kind: KindUserInput, Agent: st.Agent, Err: err}
		}
	} else if len(o.decisions) > 0 {
		return nil, &Error{Kind: KindUserInput, Err: fmt.Errorf("resume: run %s is not waiting for a decision", st.RunID)}
	}
	st.Status = runstate.StatusRunning
	x := r.newRun(st, o, emit)
	x.resumed, x.decided = true, answered
	x.input = firstUserText(st.Transcript)
	x.emit(runStartEvent(st, st.Agent, true))
	return x, nil
}

// resumableFailure reports whether st failed transiently (a model, tool or
// store outage), so that resuming it retries from where it stopped.
func resumableFailure(st *runstate.State) bool {
	if st.Status != runstate.StatusFailed || st.Failure == nil {
		return false
	}
	switch Kind(st.Failure.Kind) {
	case KindModelTransient, KindToolTransient:
		return true
	}
	return false
}

func firstUserText(msgs []message.Message) string {
	for i := range msgs {
		if msgs[i].Role == message.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}
