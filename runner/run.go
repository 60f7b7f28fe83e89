package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runstate"
)

// This file is a run's lifecycle: the run, its loop, its checkpoints, its
// start (begin) and its end (finish). The loop's steps are in turn.go (the
// model turn), calls.go (the calls of a turn) and transfer.go (who acts
// next: transfers, returns, policies, limits, the final answer).

// run is one execution of the loop over a state: a new run, a resumed one,
// or an agent-tool sub-run. One goroutine drives it; only the calls of a
// turn run concurrently, and they share st under mu.
type run struct {
	r  *Runner
	st *runstate.State
	o  runOpts
	ck Checkpointer
	// sub is set for an agent-tool sub-run: no events, no checkpoints, no
	// waiting.
	sub bool
	// parent is the run that called a sub-run's agent tool (nil for a
	// top-level run): the top-level run keeps the sub-run's memos.
	parent *run
	// input is the run's user input, shown to the policy.
	input string
	// resumed is set for a run continued from a state.
	resumed bool
	// decided is the interrupt the decisions of a resumed run answered.
	decided string
	// preErr is the refusal of an input guardrail: the run fails without a
	// turn.
	preErr error
	// began is when the active time added to st.Elapsed at the next
	// checkpoint started.
	began time.Time

	// sink receives the events; nil when nobody wants them (Run, sub-runs).
	sink func(Event) bool
	// stopped is set when the consumer of a stream stopped iterating.
	stopped bool
	// startEvents are the events of a new run, emitted by begin once the
	// run is stored.
	startEvents [2]Event

	// callsChecked is set when the turn just made has run stopForCalls on
	// its pending calls, so that runPending does not ask again (a tool's
	// RequireApproval is called once per call).
	callsChecked bool
	// wrote is set once this execution has written a checkpoint.
	wrote bool
	// lazy: the begin of a new streamed run waits for its first model
	// call, which starts while the first checkpoint commits (see
	// streamBeginning), or for whatever comes first that must follow it
	// (an event, a checkpoint); beginCtx is its context. beginErr is the
	// begin's failure: the run did not start.
	lazy     bool
	beginCtx context.Context
	beginErr error

	turn turnState
	end  endState
	// res is where the run's result goes, allocated with the run (nil:
	// allocated at the end).
	res *Result
	// pview is the view a policy is given, valid only during its call.
	pview policy.View

	// mu guards st while the calls of a turn run concurrently.
	mu sync.Mutex
	// rec records the run's calls (Config.RecordCalls); nil otherwise.
	rec *recorder
}

// turnState is what the model turns of a run keep from one call to the next.
type turnState struct {
	// onChunk is x.chunk: one closure per run, reused by every model call.
	onChunk func(model.Chunk, error) bool
	// cs is the state of the model stream being drained.
	cs chunkState
	// block caches the rendering of the active transfer context.
	block block
	// requestID is the provider request id of the last model call.
	requestID string
}

// endState is the bookkeeping of how the run ends.
type endState struct {
	// seq is the seq of run_end reserved by the last checkpoint, so that a
	// resumed run's events continue after it; 0 when none is reserved.
	seq int
	// limit names the limit that ended the run with a final answer.
	limit string
	// observe ends the observer's run span (set by exec).
	observe func(*Result, error)
}

var errStopped = errors.New("runner: stream consumer stopped")

// errTimeout is the cause of the run's timeout context.
var errTimeout = errors.New("runner: run timeout")

// newRun is what a new run allocates at once rather than piece by piece:
// the run, its state, the first slots of its history (when it starts
// without one), transcript and trail, and its result. They live as long as
// the result does.
type newRun struct {
	run   run
	st    runstate.State
	res   Result
	input [1]message.Part
	// msgs and transcript hold a run with one round of tool calls: the
	// input, the call, its result and the answer.
	msgs       [4]message.Message
	transcript [4]message.Message
	trail      [4]string
}

func (r *Runner) newRun(st *runstate.State, o runOpts, sink func(Event) bool) *run {
	x := new(run)
	r.initRun(x, st, o, sink, time.Now())
	return x
}

// initRun sets up x, a zero run, to run st from now. Its fields are set one
// by one: copying a whole run into x would move every word of it.
func (r *Runner) initRun(x *run, st *runstate.State, o runOpts, sink func(Event) bool, now time.Time) {
	x.r, x.st, x.o, x.ck, x.sink, x.began = r, st, o, r.cfg.Checkpointer, sink, now
	if o.checkpointer != nil {
		x.ck = o.checkpointer
	}
	if r.cfg.RecordCalls {
		x.rec = new(recorder)
	}
}

// reserveEnd reserves the seq of run_end in the state when the run is about
// to stop, so that the state written now numbers a resumed run's events
// after it.
func (x *run) reserveEnd() {
	if x.sink == nil || x.stopped || x.st.Status == runstate.StatusRunning || x.end.seq != 0 {
		return
	}
	x.st.Seq++
	x.end.seq = x.st.Seq
}

// checkpoint writes the state at a step boundary (nothing for sub-runs and
// runs without a checkpointer).
func (x *run) checkpoint(ctx context.Context) error {
	if x.ck == nil || x.sub {
		return nil
	}
	if err := x.begun(); err != nil {
		return err
	}
	x.reserveEnd()
	x.st.Step++
	x.st.Elapsed += time.Since(x.began)
	x.began = time.Now()
	if err := x.write(ctx); err != nil {
		return &Error{Kind: KindSystem, Agent: x.st.Agent, Err: fmt.Errorf("checkpoint step %d: %w", x.st.Step, err)}
	}
	return nil
}

// begin stores a new run before anything of it is shown: unless an input
// guardrail refused it, its first checkpoint (the input, status running) is
// written, then the run's first events are emitted, numbered as that
// checkpoint says. An error means the run did not start: nothing of it was
// emitted.
func (x *run) begin(ctx context.Context) error {
	evs := x.startEvents
	x.startEvents = [2]Event{}
	if x.preErr == nil && x.ck != nil && !x.sub {
		seq := x.st.Seq
		if x.streaming() {
			x.st.Seq += len(evs)
		}
		if err := x.checkpoint(ctx); err != nil {
			return err
		}
		x.st.Seq = seq
	}
	for _, e := range evs {
		if e != nil {
			x.emit(e)
		}
	}
	return nil
}

// deferBegin begins a new run, or, for a streamed run with a checkpointer,
// defers its begin to its first model call (see [run.begun]), so that the
// first checkpoint commits while the model works on its first token. Its
// contract stays: nothing of the run is emitted before that checkpoint.
func (x *run) deferBegin(ctx context.Context) error {
	if x.preErr == nil && x.ck != nil && !x.sub && x.streaming() {
		x.lazy, x.beginCtx = true, ctx
		return nil
	}
	return x.begin(ctx)
}

// begun begins the run if its begin was deferred and has not happened yet,
// and returns the error that kept it from starting (nil once it started).
// After that error nothing of the run is emitted nor written.
func (x *run) begun() error {
	if x.lazy {
		ctx := x.beginCtx
		x.lazy, x.beginCtx = false, nil
		if err := x.begin(ctx); err != nil {
			x.beginErr, x.stopped = err, true
		}
	}
	return x.beginErr
}

// exec runs the loop under the run's timeout and observer.
func (x *run) exec(ctx context.Context) error {
	if x.preErr != nil {
		return x.preErr
	}
	ctx, x.end.observe = x.r.cfg.Observer.StartRun(ctx, RunInfo{RunID: x.st.RunID, ThreadID: x.st.ThreadID, Network: x.st.Network, Agent: x.st.Agent, Resumed: x.resumed})
	if t := x.r.limits.Timeout; t > 0 && !x.sub {
		remaining := t - x.st.Elapsed
		if remaining <= 0 {
			return &LimitError{Limit: LimitTimeout, Max: t.Milliseconds(), Agent: x.st.Agent}
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, remaining, errTimeout)
		defer cancel()
	}
	err := x.loop(agent.WithMemoScope(ctx, x))
	if err != nil && context.Cause(ctx) == errTimeout && !errors.Is(err, errStopped) {
		return &LimitError{Limit: LimitTimeout, Max: x.r.limits.Timeout.Milliseconds(), Agent: x.st.Agent}
	}
	return err
}

// loop is the agent loop: the pending calls of the last turn run, else the
// active agent takes a turn. It returns nil when the run completed or
// stopped to wait (interrupted, suspended).
func (x *run) loop(ctx context.Context) error {
	st := x.st
	if x.decided != "" && !x.wrote {
		// The decisions of a resumed run are checkpointed before anything
		// they allow runs: of two resumes answering the same interrupt,
		// the fence lets one through before any tool is called, and the
		// extensions record the decision (Boundary.Answered) with it.
		if err := x.checkpoint(ctx); err != nil {
			return err
		}
	}
	for {
		if st.Status != runstate.StatusRunning {
			return nil // completed, or stopped to wait
		}
		if x.stopped {
			return errStopped
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if x.stopRequested() {
			return x.stopNow(ctx, "")
		}
		var done bool
		var err error
		if len(st.Pending) > 0 {
			done, err = x.runPending(ctx)
		} else {
			done, err = x.takeTurn(ctx)
		}
		if done || err != nil {
			return err
		}
	}
}

// finish records the outcome in the state, emits the closing events, runs
// the extensions' AfterRun and builds the result.
func (x *run) finish(ctx context.Context, err error) (*Result, error) {
	if errors.Is(err, errStopped) {
		err = &Error{Kind: KindSystem, Agent: x.st.Agent, Err: errStopped}
	}
	cancelled := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	switch {
	case cancelled:
		// Nothing is recorded: the run keeps the status of its last
		// checkpoint and can be resumed from it.
		x.emit(&ErrorEvent{Header: Header{Type: TypeError}, Kind: KindSystem, Message: err.Error(), Agent: x.st.Agent})
	case err != nil:
		x.fail(ctx, err)
	}
	res := x.result(cancelled)
	x.emitEnd(res)
	if x.end.observe != nil {
		x.end.observe(res, err)
	}
	x.afterRun(ctx, err)
	return res, err
}

// fail records the failure err in the state, emits it and writes it.
func (x *run) fail(ctx context.Context, err error) {
	st := x.st
	st.Status = runstate.StatusFailed
	st.Failure = &runstate.Failure{Kind: string(KindOf(err)), Message: err.Error(), Limit: LimitOf(err), RequestID: requestIDOf(err)}
	x.emit(failureEvent(st))
	if x.ck != nil && !x.sub {
		// Best effort: record the failure; a transient failure stays resumable
		// from the previous checkpoint by the caller's choice.
		x.end.seq = 0
		x.reserveEnd()
		st.Step++
		_ = x.write(context.WithoutCancel(ctx))
	}
}

// result is the run's result; a cancelled run's status is failed.
func (x *run) result(cancelled bool) *Result {
	st := x.st
	res := x.res // zeroed, with the run
	if res == nil {
		res = new(Result)
	}
	res.RunID, res.ThreadID, res.Status, res.LastAgent, res.Output = st.RunID, st.ThreadID, st.Status, st.Agent, st.FinalOutput
	res.Messages, res.Turns, res.Transfers, res.Usage = st.Transcript, st.Turns, st.Transfers, st.Usage
	res.Interrupt, res.Limit, res.State = st.Interrupt, x.end.limit, st
	if cancelled {
		res.Status = runstate.StatusFailed
	}
	return res
}

// emitEnd emits run_end, with the seq the last checkpoint reserved for it
// when there is one.
func (x *run) emitEnd(res *Result) {
	if !x.streaming() {
		return
	}
	end := runEndEvent(x.st, res.Status, x.end.limit)
	if x.end.seq == 0 {
		x.emit(end)
		return
	}
	end.Seq = x.end.seq
	x.stopped = !x.sink(end)
}
