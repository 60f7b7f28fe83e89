package runner

import (
	"context"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/runstate"
)

// Extension runs code around a run at three named points: before each model
// turn, at each step boundary (inside the checkpoint's write) and after the
// run stops. What surrounds turns — agent memory in the system prompt, the
// hand-over of a run to a background worker, a thread handoff's clean-up,
// leases on running runs — is an Extension registered once in
// [Config].Extensions, so that every process running the network behaves the
// same.
//
// Extensions are called in the order of Config.Extensions, from the run's
// goroutine, never concurrently for one run; an implementation shared by
// runs must be safe for concurrent use. Embed [NopExtension] to implement
// only some of the points.
type Extension interface {
	// BeforeTurn is called before each model call of a run (agent-tool
	// sub-runs included) with the turn about to be made; it may add text to
	// the agent's system prompt with [Turn.AddSystem]. An error fails the
	// run (KindSystem).
	BeforeTurn(ctx context.Context, t *Turn) error
	// AtBoundary is called at each checkpoint, after the state is written
	// and before the write commits when the checkpointer is a
	// [TxCheckpointer] (b.Tx is then its transaction); otherwise right after
	// Checkpoint returns. An error aborts the write (with a TxCheckpointer)
	// and is the checkpoint's error. Runs without a checkpointer have no
	// boundaries.
	AtBoundary(ctx context.Context, b *Boundary) error
	// AfterRun is called once the run has stopped — completed, failed,
	// interrupted, suspended, or cancelled by its context — after its last
	// checkpoint was written. It cannot change the outcome. ctx has the
	// run's values but is not cancelled with the run.
	AfterRun(ctx context.Context, o *Outcome)
}

// NopExtension implements every point of [Extension] by doing nothing; embed
// it in an extension that needs only some of them.
type NopExtension struct{}

// BeforeTurn does nothing.
func (NopExtension) BeforeTurn(context.Context, *Turn) error { return nil }

// AtBoundary does nothing.
func (NopExtension) AtBoundary(context.Context, *Boundary) error { return nil }

// AfterRun does nothing.
func (NopExtension) AfterRun(context.Context, *Outcome) {}

// Turn is a model turn about to be made, as [Extension].BeforeTurn sees it.
type Turn struct {
	// Run is the run as the turn sees it: ids, active agent, history,
	// counters, values. It must not be changed.
	Run *agent.RunContext
	// Sub is set for a turn of an agent-tool sub-run.
	Sub    bool
	system []string
}

// AddSystem appends text to the system prompt of this turn, after the
// agent's instructions and its transfer context block. Empty text is ignored.
func (t *Turn) AddSystem(text string) {
	if text != "" {
		t.system = append(t.system, text)
	}
}

// Boundary is a step boundary: the checkpoint being written.
type Boundary struct {
	// State is the state written. It must not be changed nor retained.
	State *runstate.State
	// CheckpointID is the stored checkpoint's id, when the checkpointer
	// reports it (a [TxCheckpointer] does).
	CheckpointID string
	// Tx is the write's transaction (a store.Tx for package threads' checkpointer), nil
	// when the checkpointer is not a [TxCheckpointer].
	Tx any
	// First is set at the first boundary of this execution of the run: the
	// run's first checkpoint, or the first after a resume.
	First bool
	// Answered, at the first boundary of a run resumed with decisions, is
	// the id of the interrupt they answered, and Decisions are those
	// decisions: the checkpoint being written is the first past that
	// interrupt. "" and nil at every other boundary.
	Answered  string
	Decisions []Decision
	// Calls are the calls the run made since its previous boundary, in
	// the order they ended, when the runner records them
	// ([Config].RecordCalls); nil otherwise. See [CallRecord] for what an
	// extension may keep of them.
	Calls []CallRecord
}

// Outcome is how a run stopped, as [Extension].AfterRun sees it.
type Outcome struct {
	// State is the run's final state. It must not be changed nor retained.
	State *runstate.State
	// Err is the run's error, if it failed or was cancelled. A cancelled run
	// keeps the status of its last checkpoint in State (running or
	// suspended): it can be resumed from it.
	Err error
	// Resumed is set when this execution resumed the run from a state.
	Resumed bool
}

// TxCheckpointer is a [Checkpointer] whose writes are transactions: the
// extensions' AtBoundary run inside them, so that what they write commits
// with the checkpoint or not at all.
type TxCheckpointer interface {
	Checkpointer
	// CheckpointTx writes st like Checkpoint and, when at is not nil, calls
	// it after st is written and before the write commits, with the write's
	// transaction and the stored checkpoint's id. An error from at aborts
	// the write and is CheckpointTx's error.
	CheckpointTx(ctx context.Context, st *runstate.State, at func(tx any, checkpointID string) error) error
}

// ExtensionFuncs is an [Extension] made of functions; a nil function does
// nothing.
type ExtensionFuncs struct {
	Before   func(ctx context.Context, t *Turn) error
	Boundary func(ctx context.Context, b *Boundary) error
	After    func(ctx context.Context, o *Outcome)
}

// BeforeTurn calls f.Before.
func (f ExtensionFuncs) BeforeTurn(ctx context.Context, t *Turn) error {
	if f.Before == nil {
		return nil
	}
	return f.Before(ctx, t)
}

// AtBoundary calls f.Boundary.
func (f ExtensionFuncs) AtBoundary(ctx context.Context, b *Boundary) error {
	if f.Boundary == nil {
		return nil
	}
	return f.Boundary(ctx, b)
}

// AfterRun calls f.After.
func (f ExtensionFuncs) AfterRun(ctx context.Context, o *Outcome) {
	if f.After != nil {
		f.After(ctx, o)
	}
}

// beforeTurn runs the extensions' BeforeTurn for the active agent and
// returns the system text they add.
func (x *run) beforeTurn(ctx context.Context) (string, error) {
	exts := x.r.cfg.Extensions
	if len(exts) == 0 {
		return "", nil
	}
	t := &Turn{Run: x.runContext(), Sub: x.sub}
	for _, e := range exts {
		if err := e.BeforeTurn(ctx, t); err != nil {
			return "", &Error{Kind: KindSystem, Agent: x.st.Agent, Err: err}
		}
	}
	out := ""
	for _, s := range t.system {
		out = joinPrompt(out, s)
	}
	return out, nil
}

// write writes the state as a checkpoint, with the extensions' AtBoundary
// inside the write when the checkpointer allows it.
func (x *run) write(ctx context.Context) error {
	exts := x.r.cfg.Extensions
	first := !x.wrote
	x.wrote = true
	if len(exts) == 0 {
		return x.ck.Checkpoint(ctx, x.st)
	}
	calls := x.rec.take()
	at := func(tx any, id string) error {
		b := &Boundary{State: x.st, CheckpointID: id, Tx: tx, First: first, Calls: calls}
		if first && x.decided != "" {
			b.Answered, b.Decisions = x.decided, x.o.decisions
		}
		for _, e := range exts {
			if err := e.AtBoundary(ctx, b); err != nil {
				return err
			}
		}
		return nil
	}
	if tc, ok := x.ck.(TxCheckpointer); ok {
		return tc.CheckpointTx(ctx, x.st, at)
	}
	if err := x.ck.Checkpoint(ctx, x.st); err != nil {
		return err
	}
	return at(nil, "")
}

// afterRun runs the extensions' AfterRun.
func (x *run) afterRun(ctx context.Context, err error) {
	if x.sub || len(x.r.cfg.Extensions) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	o := &Outcome{State: x.st, Err: err, Resumed: x.resumed}
	for _, e := range x.r.cfg.Extensions {
		e.AfterRun(ctx, o)
	}
}
