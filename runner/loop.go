package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runstate"
)

// run is one execution of the loop over a state.
type run struct {
	r     *Runner
	st    *runstate.State
	o     runOpts
	ck    Checkpointer
	sink  func(Event) bool
	sub   bool // an agent-tool sub-run: no events, no checkpoints, no waiting
	input string
	began time.Time
	// resumed is set for a run continued from a state.
	resumed bool
	preErr  error
	// stopped is set when the consumer of a stream stopped iterating.
	stopped bool
	// limitHit names the limit that ended the run with a final answer.
	limitHit string
	endObs   func(*Result, error)
	// modelRunID is the provider request id of the last model call.
	modelRunID string
	// block caches the rendering of the active handoff context.
	block   block
	onChunk func(model.Chunk, error) bool
	cs      chunkState
	// endSeq is the seq reserved for run_end by the last checkpoint, so that
	// a resumed run's events continue after it.
	endSeq int
	// callsChecked is set when loop has run stopForCalls on the pending
	// calls of the turn just made, so that runPending does not ask again
	// (a tool's RequireApproval is called once per call).
	callsChecked bool
	// wrote is set once this execution has written a checkpoint.
	wrote bool
	// startEvents are the events of a new run, emitted by begin once the
	// run is stored.
	startEvents []Event
	// mu guards st while the calls of a turn run concurrently.
	mu sync.Mutex
}

var errStopped = errors.New("runner: stream consumer stopped")

// errTimeout is the cause of the run's timeout context.
var errTimeout = errors.New("runner: run timeout")

func (r *Runner) newRun(st *runstate.State, o runOpts, sink func(Event) bool) *run {
	x := &run{r: r, st: st, o: o, ck: r.cfg.Checkpointer, sink: sink, began: time.Now()}
	if o.checkpointer != nil {
		x.ck = o.checkpointer
	}
	return x
}

// emit numbers and delivers e. It returns false once the consumer stopped.
func (x *run) emit(e Event) bool {
	if x.sink == nil || x.stopped {
		return !x.stopped
	}
	x.st.Seq++
	setSeq(e, x.st.Seq)
	if !x.sink(e) {
		x.stopped = true
		return false
	}
	return true
}

// reserveEnd reserves the seq of run_end in the state when the run is about
// to stop, so that the state written now numbers a resumed run's events
// after it.
func (x *run) reserveEnd() {
	if x.sink == nil || x.stopped || x.st.Status == runstate.StatusRunning || x.endSeq != 0 {
		return
	}
	x.st.Seq++
	x.endSeq = x.st.Seq
}

func setSeq(e Event, seq int) {
	type header interface{ hdr() *Header }
	if h, ok := e.(header); ok {
		h.hdr().Seq = seq
	}
}

func (h *Header) hdr() *Header { return h }

// streaming reports whether events are wanted.
func (x *run) streaming() bool { return x.sink != nil && !x.stopped }

func (x *run) checkpoint(ctx context.Context) error {
	if x.ck == nil || x.sub {
		return nil
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

// exec runs the loop under the run's timeout and observer.
func (x *run) exec(ctx context.Context) error {
	if x.preErr != nil {
		return x.preErr
	}
	ctx, end := x.r.cfg.Observer.StartRun(ctx, RunInfo{RunID: x.st.RunID, ThreadID: x.st.ThreadID, Network: x.st.Network, Agent: x.st.Agent, Resumed: x.resumed})
	x.endObs = end
	if t := x.r.limits.Timeout; t > 0 && !x.sub {
		remaining := t - x.st.Elapsed
		if remaining <= 0 {
			return &LimitError{Limit: LimitTimeout, Max: t.Milliseconds(), Agent: x.st.Agent}
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, remaining, errTimeout)
		defer cancel()
	}
	err := x.loop(ctx)
	if err != nil && context.Cause(ctx) == errTimeout && !errors.Is(err, errStopped) {
		return &LimitError{Limit: LimitTimeout, Max: x.r.limits.Timeout.Milliseconds(), Agent: x.st.Agent}
	}
	return err
}

// begin stores a new run before anything of it is shown: unless an input
// guardrail refused it, its first checkpoint (the input, status running) is
// written, then the run's first events are emitted, numbered as that
// checkpoint says. An error means the run did not start: nothing of it was
// emitted.
func (x *run) begin(ctx context.Context) error {
	evs := x.startEvents
	x.startEvents = nil
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
		x.emit(e)
	}
	return nil
}

// finish records the outcome in the state, emits the closing events, runs
// the extensions' AfterRun and builds the result.
func (x *run) finish(ctx context.Context, err error) (*Result, error) {
	st := x.st
	if errors.Is(err, errStopped) {
		err = &Error{Kind: KindSystem, Agent: st.Agent, Err: errStopped}
	}
	ctxErr := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if err != nil && !ctxErr {
		st.Status = runstate.StatusFailed
		st.Failure = &runstate.Failure{Kind: string(KindOf(err)), Message: err.Error(), Limit: LimitOf(err)}
		x.emit(&ErrorEvent{Header: Header{Type: TypeError}, Kind: KindOf(err), Message: err.Error(), Limit: LimitOf(err), Agent: st.Agent})
		if x.ck != nil && !x.sub {
			// Best effort: record the failure; a transient failure stays resumable
			// from the previous checkpoint by the caller's choice.
			x.endSeq = 0
			x.reserveEnd()
			st.Step++
			_ = x.write(context.WithoutCancel(ctx))
		}
	}
	if ctxErr {
		x.emit(&ErrorEvent{Header: Header{Type: TypeError}, Kind: KindSystem, Message: err.Error(), Agent: st.Agent})
	}
	res := &Result{RunID: st.RunID, ThreadID: st.ThreadID, Status: st.Status, LastAgent: st.Agent, Output: st.FinalOutput,
		Messages: st.Transcript, Turns: st.Turns, Handoffs: st.Handoffs, Usage: st.Usage, Interrupt: st.Interrupt, Limit: x.limitHit, State: st}
	if ctxErr {
		res.Status = runstate.StatusFailed
	}
	if x.streaming() {
		end := &RunEndEvent{Header: Header{Type: TypeRunEnd}, Status: res.Status, LastAgent: st.Agent, Turns: st.Turns, Handoffs: st.Handoffs, Usage: st.Usage, Output: st.FinalOutput, Limit: x.limitHit}
		if x.endSeq != 0 {
			end.Seq = x.endSeq
			x.stopped = !x.sink(end)
		} else {
			x.emit(end)
		}
	}
	if x.endObs != nil {
		x.endObs(res, err)
	}
	x.afterRun(context.WithoutCancel(ctx), err)
	if err != nil {
		return res, err
	}
	return res, nil
}

// loop is the agent loop. It returns nil when the run completed or stopped
// to wait (interrupted, suspended).
func (x *run) loop(ctx context.Context) error {
	st := x.st
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
		if len(st.Pending) > 0 {
			wait, err := x.runPending(ctx)
			if err != nil || wait {
				return err
			}
			continue
		}
		p := x.r.plans[st.Agent]
		if st.Turns >= x.r.limits.MaxTurns {
			return x.limit(ctx, &LimitError{Limit: LimitMaxTurns, Max: int64(x.r.limits.MaxTurns), Agent: st.Agent})
		}
		msg, err := x.callModel(ctx, p, true)
		if err != nil {
			return err
		}
		if b := x.r.limits.TokenBudget; b > 0 && st.Usage.Total() > b {
			if msg.HasToolCalls() {
				// The calls will not run: answer them so the history stays valid.
				x.joinResults("not run: the run's token budget is spent")
			}
			return x.limit(ctx, &LimitError{Limit: LimitTokenBudget, Max: b, Agent: st.Agent})
		}
		if msg.HasToolCalls() {
			// Calls that stop the run (for a human decision or a background
			// worker) are checkpointed once, with the stop, rather than
			// after the turn and again at the stop.
			if stopped, err := x.stopForCalls(ctx, p); stopped || err != nil {
				return err
			}
			if err := x.checkpoint(ctx); err != nil {
				return err
			}
			x.callsChecked = true
			continue
		}
		done, err := x.answered(ctx, p, msg)
		if err != nil || done {
			return err
		}
	}
}

// callModel makes one model call for the active agent (with tools when
// withTools), records the answer in the state and, if it has tool calls,
// makes them pending. It returns the recorded message.
func (x *run) callModel(ctx context.Context, p *plan, withTools bool) (*message.Message, error) {
	st := x.st
	a := p.a
	req := &model.Request{Agent: a.Name, Messages: st.Messages, Settings: a.Settings}
	sys, err := x.system(ctx, p)
	if err != nil {
		return nil, err
	}
	extra, err := x.beforeTurn(ctx)
	if err != nil {
		return nil, err
	}
	req.System = joinPrompt(sys, extra)
	if withTools {
		req.Tools = x.tools(ctx, p)
	} else {
		req.Settings.ToolChoice = ""
	}
	if len(a.OutputSchema) > 0 {
		req.Output = &model.OutputSchema{Name: a.Name + "_output", Schema: a.OutputSchema, Strict: true}
	}
	var resp *model.Response
	err = retry.Do(ctx, x.r.retry, x.r.sleep, nil, func(attempt int, err error, d time.Duration) {
		x.r.log.WarnContext(ctx, "model call failed; retrying", "run_id", st.RunID, "agent", a.Name, "attempt", attempt, "delay", d, "error", err)
	}, func(attempt int) error {
		mctx, end := x.r.cfg.Observer.StartModel(ctx, ModelInfo{RunID: st.RunID, Agent: a.Name, Model: a.ModelName, Attempt: attempt})
		var err error
		resp, err = x.stream(mctx, a, req)
		end(resp, err)
		return err
	})
	if err != nil {
		return nil, modelError(a.Name, err)
	}
	st.Turns++
	st.Usage.Add(resp.Usage)
	x.modelRunID = resp.RequestID
	m := resp.Message
	m.Role = message.RoleAssistant
	m.Agent = a.Name
	m.ID = x.msgID()
	if m.Usage == nil && !resp.Usage.IsZero() {
		u := resp.Usage
		m.Usage = &u
	}
	st.Messages = append(st.Messages, m)
	st.Transcript = append(st.Transcript, m)
	if text := m.Text(); text != "" && x.streaming() {
		x.emit(&MessageEvent{Header: Header{Type: TypeMessage}, Agent: a.Name, Text: text, MessageID: m.ID, Usage: m.Usage})
	}
	calls := 0
	for i := range m.Parts {
		if m.Parts[i].Type == message.PartToolCall {
			calls++
		}
	}
	if calls > 0 {
		st.Pending = make([]runstate.PendingCall, 0, calls)
		for i := range m.Parts {
			pt := &m.Parts[i]
			if pt.Type != message.PartToolCall {
				continue
			}
			call := message.ToolCall{ID: pt.CallID, Name: pt.Name, Arguments: pt.Arguments}
			st.Pending = append(st.Pending, runstate.PendingCall{Call: call, Kind: p.byName[pt.Name].kind})
			if x.streaming() {
				x.emit(&ToolCallEvent{Header: Header{Type: TypeToolCall}, Agent: a.Name, Name: call.Name, ID: call.ID, Arguments: call.Arguments})
			}
		}
	}
	return &st.Messages[len(st.Messages)-1], nil
}

// stream drains one model stream, emitting text deltas.
func (x *run) stream(ctx context.Context, a *agent.Agent, req *model.Request) (*model.Response, error) {
	if x.onChunk == nil {
		x.onChunk = x.chunk // one closure per run, reused by every model call
	}
	x.cs = chunkState{a: a}
	a.Model.Stream(ctx, req)(x.onChunk)
	cs := &x.cs
	switch {
	case cs.err != nil:
		return nil, cs.err
	case cs.done:
		return &cs.resp, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, model.ErrNoDone
}

// chunkState is the state of the model stream being drained.
type chunkState struct {
	a    *agent.Agent
	resp model.Response
	done bool
	err  error
}

func (x *run) chunk(c model.Chunk, err error) bool {
	cs := &x.cs
	if err != nil {
		cs.err = err
		return false
	}
	switch c.Type {
	case model.ChunkText:
		if x.streaming() && c.Text != "" {
			if !x.emit(&TextDeltaEvent{Header: Header{Type: TypeTextDelta}, Agent: cs.a.Name, Delta: c.Text}) {
				cs.err = errStopped
				return false
			}
		}
	case model.ChunkDone:
		if c.Message == nil {
			cs.err = model.ErrNoDone
			return false
		}
		cs.resp = model.Response{Message: *c.Message, Usage: c.Usage, FinishReason: c.FinishReason, RequestID: c.RequestID, Model: c.Model}
		cs.done = true
		return false
	}
	return true
}

func (x *run) msgID() string {
	return x.st.RunID + "-m" + strconv.Itoa(len(x.st.Transcript)+1)
}

// system builds the active agent's system prompt.
func (x *run) system(ctx context.Context, p *plan) (string, error) {
	st := x.st
	a := p.a
	sys := a.Instructions
	if a.InstructionsFunc != nil {
		s, err := a.InstructionsFunc(ctx, x.runContext())
		if err != nil {
			return "", &Error{Kind: KindSystem, Agent: a.Name, Err: fmt.Errorf("instructions: %w", err)}
		}
		sys = s
	}
	if hc := st.Handoff; hc != nil && hc.To == a.Name {
		sys = joinPrompt(sys, x.handoffBlock(hc).text)
	}
	return sys, nil
}

// block is a rendered handoff context, cached for the run: rendering parses
// the context data, and the block goes into every call of the target.
type block struct {
	hc   *handoff.Context
	text string
	refs bool
}

func (x *run) handoffBlock(hc *handoff.Context) *block {
	if x.block.hc != hc {
		text, refs := hc.RenderRefs()
		x.block = block{hc: hc, text: text, refs: refs}
	}
	return &x.block
}

func joinPrompt(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n\n" + b
}

// tools returns the tools offered to the active agent's model.
func (x *run) tools(ctx context.Context, p *plan) []model.Tool {
	hc := x.st.Handoff
	refs := hc != nil && hc.To == p.a.Name && x.handoffBlock(hc).refs
	if !p.dynamic && !refs {
		return p.tools
	}
	out := make([]model.Tool, 0, len(p.tools)+1)
	var info *handoff.Info
	for _, t := range p.tools {
		if e := p.byName[t.Name]; e.kind == runstate.CallHandoff && e.handoff.Enabled != nil {
			if info == nil {
				info = &handoff.Info{RunID: x.st.RunID, ThreadID: x.st.ThreadID, Agent: p.a.Name, Turns: x.st.Turns, Handoffs: x.st.Handoffs, Messages: x.st.Messages}
			}
			if !e.handoff.Enabled(ctx, *info) {
				continue
			}
		}
		out = append(out, t)
	}
	if refs {
		out = append(out, model.Tool{Name: HandoffContextTool, Description: "Read the full value of a handoff context field delivered by reference.", Parameters: handoffContextParams})
	}
	return out
}

func (x *run) runContext() *agent.RunContext {
	st := x.st
	return &agent.RunContext{RunID: st.RunID, ThreadID: st.ThreadID, Agent: st.Agent, Handoff: st.Handoff,
		Messages: st.Messages, Turns: st.Turns, Handoffs: st.Handoffs, Values: st.Values}
}

// answered handles an answer without tool calls: output checks, return to
// a caller, policy handoffs, or the end of the run.
func (x *run) answered(ctx context.Context, p *plan, msg *message.Message) (done bool, err error) {
	st := x.st
	a := p.a
	text := msg.Text()
	for _, g := range a.OutputGuardrails {
		if err := g.Check(ctx, agent.GuardrailInput{Agent: a.Name, Text: text, Messages: st.Messages}); err != nil {
			return true, &Error{Kind: KindSystem, Agent: a.Name, Err: &GuardrailError{Guardrail: g.Name, Agent: a.Name, Phase: "output", Err: err}}
		}
	}
	if v := a.OutputValidator(); v != nil {
		if err := v.Validate(json.RawMessage(text)); err != nil {
			// Ask again; bounded by max_turns.
			fix := message.User("Your answer does not match the required JSON schema (" + err.Error() + "). Answer again with JSON only.")
			fix.ID = x.msgID()
			st.Messages = append(st.Messages, fix)
			st.Transcript = append(st.Transcript, fix)
			return false, x.checkpoint(ctx)
		}
	}
	if n := len(st.Stack); n > 0 {
		return false, x.returnToCaller(ctx, *msg)
	}
	d, ok, err := x.r.cfg.Policy.Next(ctx, x.view(policy.AfterAnswer, text))
	if err != nil {
		return true, &Error{Kind: KindSystem, Agent: a.Name, Err: fmt.Errorf("policy %s: %w", x.r.cfg.Policy.Name(), err)}
	}
	if ok {
		return false, x.policyHandoff(ctx, d)
	}
	st.Status = runstate.StatusCompleted
	st.FinalOutput = text
	return true, x.checkpoint(ctx)
}

func (x *run) view(pt policy.Point, answer string) *policy.View {
	st := x.st
	return &policy.View{Point: pt, Agent: st.Agent, Messages: st.Messages, Answer: answer, Turns: st.Turns,
		Handoffs: st.Handoffs, Trail: st.Trail, Usage: st.Usage, Input: x.input}
}

// limit ends the run at a limit: with the error, or with one more call of the
// active agent without tools when the network says on_limit: final_answer.
func (x *run) limit(ctx context.Context, le *LimitError) error {
	if x.r.limits.OnLimit != "final_answer" {
		return le
	}
	st := x.st
	x.limitHit = le.Limit
	x.r.log.InfoContext(ctx, "limit reached; asking for a final answer", "run_id", st.RunID, "agent", st.Agent, "limit", le.Limit)
	msg, err := x.callModel(ctx, x.r.plans[st.Agent], false)
	if err != nil {
		return err
	}
	if msg.HasToolCalls() {
		x.joinResults("not run: the run reached its " + le.Limit + " limit")
	}
	st.Status = runstate.StatusCompleted
	st.FinalOutput = msg.Text()
	return x.checkpoint(ctx)
}

// joinResults appends the results of the pending calls to the history in
// call order, emits them, and clears the pending calls. A call without a
// recorded result is answered with missing as an error result.
func (x *run) joinResults(missing string) {
	st := x.st
	for i := range st.Pending {
		pc := &st.Pending[i]
		if pc.Result == nil {
			pc.Result = &runstate.Result{Output: missing, IsError: true}
		}
		tm := message.ToolResult(st.Agent, pc.Call.ID, pc.Call.Name, pc.Result.Output, pc.Result.IsError)
		tm.ID = x.msgID()
		st.Messages = append(st.Messages, tm)
		st.Transcript = append(st.Transcript, tm)
		if x.streaming() {
			ev := &ToolResultEvent{Header: Header{Type: TypeToolResult}, Agent: st.Agent, Name: pc.Call.Name, ID: pc.Call.ID}
			if pc.Result.IsError {
				ev.Error = pc.Result.Output
			} else {
				ev.Output = pc.Result.Output
			}
			x.emit(ev)
		}
	}
	st.Pending = nil
}

// runPending executes the pending calls of the last turn. It returns
// wait=true when the run stopped for a human decision or a background worker.
func (x *run) runPending(ctx context.Context) (wait bool, err error) {
	st := x.st
	p := x.r.plans[st.Agent]

	// 1, 2. Calls that need a decision or a worker stop the run (checked
	// here for calls resumed from a checkpoint; loop checked the others).
	if !x.callsChecked {
		if stopped, err := x.stopForCalls(ctx, p); stopped || err != nil {
			return true, err
		}
	}
	x.callsChecked = false
	// 3. Tools and agent tools run (concurrently when several); the first
	// handoff call wins and the others are answered "not taken".
	if err := x.execTools(ctx, p); err != nil {
		return false, err
	}
	return x.afterTools(ctx, p)
}

// stopForCalls stops the run before its pending calls run when one needs a
// human decision (interrupted) or, inline with a background boundary, a
// worker (suspended), and writes the checkpoint of the stop. It reports
// stopped when the run no longer continues here: it waits, or the failed
// hand-over's fallback answered without tools. Calling it again for the
// same calls changes nothing.
func (x *run) stopForCalls(ctx context.Context, p *plan) (stopped bool, err error) {
	st := x.st
	// 1. Calls that need a human decision stop the run.
	if ir := x.approvals(ctx, p); ir != nil {
		if x.sub {
			for i := range st.Pending {
				if st.Pending[i].Result == nil && !st.Pending[i].Approved {
					st.Pending[i].Result = &runstate.Result{Output: "this tool needs human approval, which is not available when an agent is called as a tool", IsError: true}
				}
			}
		} else {
			st.Status = runstate.StatusInterrupted
			st.Interrupt = ir
			x.emit(&InterruptEvent{Header: Header{Type: TypeInterrupt}, Interrupt: ir})
			return true, x.checkpoint(ctx)
		}
	}
	// 2. Slow calls go to a background worker when the run is inline.
	if x.o.background && !x.sub {
		var slow []string
		for _, pc := range st.Pending {
			if pc.Result == nil && pc.Kind == runstate.CallTool {
				if e := p.byName[pc.Call.Name]; e.tool != nil && (e.tool.Slow || p.a.Background) {
					slow = append(slow, pc.Call.ID)
				}
			}
		}
		if len(slow) > 0 {
			st.Status = runstate.StatusSuspended
			x.emit(&SuspendedEvent{Header: Header{Type: TypeSuspended}, Agent: st.Agent, Calls: slow})
			err := x.checkpoint(ctx)
			if err == nil || x.o.fallback == nil || ctx.Err() != nil {
				return true, err
			}
			return true, x.inlineFallback(ctx, p, err)
		}
	}
	return false, nil
}

// afterTools finishes a turn whose calls ran: the winning handoff, the
// results joined to the history, the checkpoint, the policy.
func (x *run) afterTools(ctx context.Context, p *plan) (wait bool, err error) {
	st := x.st
	win := -1
	for i := range st.Pending {
		pc := &st.Pending[i]
		if pc.Kind != runstate.CallHandoff || pc.Result != nil {
			continue
		}
		if win < 0 {
			win = i
			continue
		}
		first := p.byName[st.Pending[win].Call.Name].handoff.To
		pc.Result = &runstate.Result{Output: "not taken: this turn already hands off to " + first + "; only the first handoff of a turn is taken", IsError: true}
		x.emit(&HandoffRejectedEvent{Header: Header{Type: TypeHandoffRejected}, From: st.Agent, To: p.byName[pc.Call.Name].handoff.To, Tool: pc.Call.Name, Error: pc.Result.Output})
	}
	var move *pendingMove
	if win >= 0 {
		move, err = x.prepareHandoff(ctx, p, &st.Pending[win])
		if err != nil {
			return false, err
		}
	}
	// 4. The results join the history in call order.
	x.joinResults("")
	if move != nil {
		if move.limit != nil {
			return false, x.limit(ctx, move.limit)
		}
		x.transfer(ctx, move)
		return false, x.checkpoint(ctx)
	}
	if err := x.checkpoint(ctx); err != nil {
		return false, err
	}
	d, ok, err := x.r.cfg.Policy.Next(ctx, x.view(policy.AfterTools, ""))
	if err != nil {
		return false, &Error{Kind: KindSystem, Agent: st.Agent, Err: fmt.Errorf("policy %s: %w", x.r.cfg.Policy.Name(), err)}
	}
	if ok {
		return false, x.policyHandoff(ctx, d)
	}
	return false, nil
}

// inlineFallback finishes a run whose hand-over to a background worker
// failed (the checkpoint of the suspension was refused): the calls without a
// result get the notice as an error result, and the agent answers once
// without tools.
func (x *run) inlineFallback(ctx context.Context, p *plan, cause error) error {
	st := x.st
	st.Status = runstate.StatusRunning
	if x.endSeq != 0 {
		// The refused checkpoint reserved run_end's seq; give it back.
		if st.Seq == x.endSeq {
			st.Seq--
		}
		x.endSeq = 0
	}
	notice := x.o.fallback(ctx, cause)
	if notice == "" {
		notice = DefaultFallbackNotice
	}
	x.r.log.WarnContext(ctx, "background hand-over failed; answering without tools", "run_id", st.RunID, "thread_id", st.ThreadID, "agent", st.Agent, "error", cause)
	x.joinResults(notice)
	msg, err := x.callModel(ctx, p, false)
	if err != nil {
		return err
	}
	if msg.HasToolCalls() {
		x.joinResults(notice)
	}
	st.Status = runstate.StatusCompleted
	st.FinalOutput = msg.Text()
	return x.checkpoint(ctx)
}

// approvals returns an interrupt for the pending calls that need a decision.
func (x *run) approvals(ctx context.Context, p *plan) *runstate.Interrupt {
	st := x.st
	var ir *runstate.Interrupt
	for i := range st.Pending {
		pc := &st.Pending[i]
		if pc.Result != nil || pc.Approved || pc.Kind != runstate.CallTool {
			continue
		}
		e := p.byName[pc.Call.Name]
		if e.tool == nil || e.tool.RequireApproval == nil || !e.tool.RequireApproval(ctx, pc.Call.Arguments) {
			continue
		}
		if ir == nil {
			ir = &runstate.Interrupt{SchemaVersion: 1, ID: st.RunID + "-i" + strconv.Itoa(st.Step+1), Source: "tool_approval"}
		}
		ir.ActionRequests = append(ir.ActionRequests, runstate.ActionRequest{Name: pc.Call.Name, Args: pc.Call.Arguments, CallID: pc.Call.ID,
			Description: "Approve the call of " + pc.Call.Name + " by " + st.Agent})
	}
	return ir
}

// execTools runs every pending non-handoff call that has no result yet and
// records each result the moment it returns.
func (x *run) execTools(ctx context.Context, p *plan) error {
	st := x.st
	var todo []int
	for i := range st.Pending {
		if st.Pending[i].Result == nil && st.Pending[i].Kind != runstate.CallHandoff {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if len(todo) == 1 {
		return x.execOne(ctx, p, todo[0])
	}
	return x.execParallel(ctx, p, todo)
}

func (x *run) execParallel(ctx context.Context, p *plan, todo []int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, x.r.cfg.MaxParallelTools)
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for k, i := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := x.execOne(ctx, p, i); err != nil {
				errs[k] = err
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// execOne runs pending call i and records its result.
func (x *run) execOne(ctx context.Context, p *plan, i int) error {
	st := x.st
	x.mu.Lock()
	pc := st.Pending[i]
	x.mu.Unlock()
	e := p.byName[pc.Call.Name]
	tctx, end := x.r.cfg.Observer.StartTool(ctx, ToolInfo{RunID: st.RunID, Agent: st.Agent, Tool: pc.Call.Name, CallID: pc.Call.ID, Kind: string(pc.Kind)})
	out, isErr, err := x.callTool(tctx, p, e, pc.Call)
	end(out, isErr, err)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	st.Pending[i].Result = &runstate.Result{Output: out, IsError: isErr}
	if x.joinFollows() {
		// The turn's last result, and no handoff to prepare: afterTools
		// joins the results and checkpoints them right away, with nothing
		// in between, so this checkpoint would be written twice.
		return nil
	}
	return x.checkpoint(ctx)
}

// joinFollows reports whether every pending call has its result and none
// is a handoff (whose preparation, with its hook, comes before the join):
// what afterTools checkpoints next is then this state, joined.
func (x *run) joinFollows() bool {
	for _, pc := range x.st.Pending {
		if pc.Result == nil || pc.Kind == runstate.CallHandoff {
			return false
		}
	}
	return true
}

// callTool executes one call. Failures the model should see come back as
// isErr results; err is for failures that end the run.
func (x *run) callTool(ctx context.Context, p *plan, e toolEntry, call message.ToolCall) (out string, isErr bool, err error) {
	st := x.st
	switch {
	case e.kind == runstate.CallAgentTool:
		return x.callAgentTool(ctx, e.agentTool, call)
	case e.tool == nil && call.Name == HandoffContextTool && st.Handoff != nil:
		var in struct {
			Ref string `json:"ref"`
		}
		if json.Unmarshal(call.Arguments, &in) != nil {
			return "invalid arguments: want {\"ref\": string}", true, nil
		}
		v, ok := st.Handoff.Lookup(in.Ref)
		if !ok {
			return "unknown reference " + strconv.Quote(in.Ref), true, nil
		}
		return string(v), false, nil
	case e.tool == nil:
		return "unknown tool " + strconv.Quote(call.Name) + " for agent " + p.a.Name, true, nil
	}
	tool := e.tool
	args, perr := agent.ParseArguments(tool.Name, call.Arguments, tool.Validator())
	if perr != nil {
		return perr.Error(), true, nil
	}
	ci := &agent.CallInfo{RunID: st.RunID, ThreadID: st.ThreadID, Agent: st.Agent, CallID: call.ID,
		IdempotencyKey: st.RunID + ":" + call.ID}
	cctx := agent.WithCall(ctx, ci)
	err = retry.Do(ctx, x.r.retry, x.r.sleep, nil, func(attempt int, err error, d time.Duration) {
		x.r.log.WarnContext(ctx, "tool failed; retrying", "run_id", st.RunID, "tool", tool.Name, "attempt", attempt, "delay", d, "error", err)
	}, func(int) error {
		out, err = invoke(cctx, tool, args)
		return err
	})
	switch {
	case err == nil:
		return out, false, nil
	case retry.Transient(err):
		return "", false, &Error{Kind: KindToolTransient, Agent: st.Agent, Err: fmt.Errorf("tool %s: %w", tool.Name, err)}
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return "", false, ctx.Err()
	}
	return "error: " + err.Error(), true, nil
}

// invoke calls a tool, turning a panic into an error and applying its timeout.
func invoke(ctx context.Context, t *agent.Tool, args json.RawMessage) (out string, err error) {
	if t.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Timeout)
		defer cancel()
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("tool %s panicked: %v\n%s", t.Name, v, debug.Stack())
		}
	}()
	return t.Func(ctx, args)
}

// callAgentTool runs a specialist on its own history and returns its answer.
func (x *run) callAgentTool(ctx context.Context, at *agent.AgentTool, call message.ToolCall) (string, bool, error) {
	var in struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal(call.Arguments, &in); err != nil || in.Input == "" {
		return "invalid arguments: want {\"input\": non-empty string}", true, nil
	}
	parent := x.st
	child := &runstate.State{SchemaVersion: runstate.SchemaVersion, RunID: parent.RunID + "/" + call.ID, ThreadID: parent.ThreadID,
		Network: parent.Network, Fingerprint: parent.Fingerprint, Agent: at.Agent,
		Messages: []message.Message{message.User(in.Input)}, Trail: []string{at.Agent}, Status: runstate.StatusRunning, Values: parent.Values}
	sub := &run{r: x.r, st: child, sub: true, input: in.Input, began: time.Now()}
	err := sub.loop(ctx)
	x.mu.Lock()
	parent.Usage.Add(child.Usage)
	x.mu.Unlock()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return "", false, err
		}
		var re *Error
		if errors.As(err, &re) && (re.Kind == KindModelTransient || re.Kind == KindToolTransient) {
			return "", false, err
		}
		return "error: " + at.Agent + " failed: " + err.Error(), true, nil
	}
	return child.FinalOutput, false, nil
}

// pendingMove is a validated handoff about to happen.
type pendingMove struct {
	h     *handoff.Handoff
	hc    *handoff.Context
	limit *LimitError
}

// prepareHandoff validates the winning handoff call and records its result.
func (x *run) prepareHandoff(ctx context.Context, p *plan, pc *runstate.PendingCall) (*pendingMove, error) {
	st := x.st
	h := p.byName[pc.Call.Name].handoff
	reject := func(msg string) {
		pc.Result = &runstate.Result{Output: msg, IsError: true}
		x.emit(&HandoffRejectedEvent{Header: Header{Type: TypeHandoffRejected}, From: st.Agent, To: h.To, Tool: h.Tool(), Error: msg})
	}
	if h.Enabled != nil && !h.Enabled(ctx, handoff.Info{RunID: st.RunID, ThreadID: st.ThreadID, Agent: st.Agent, Turns: st.Turns, Handoffs: st.Handoffs, Messages: st.Messages}) {
		reject("handoff to " + h.To + " is not available now")
		return nil, nil
	}
	hc, err := h.BuildContext(st.Agent, pc.Call.Arguments)
	if err != nil {
		reject(err.Error())
		x.r.cfg.Observer.Handoff(ctx, &handoff.Context{From: st.Agent, To: h.To, Type: handoff.TypeTransfer, Tool: h.Tool(), History: h.Policy()}, "rejected")
		return nil, nil
	}
	hc.ID = st.RunID + "-h" + strconv.Itoa(st.Handoffs+1)
	if le := x.handoffLimit(h.To); le != nil {
		pc.Result = &runstate.Result{Output: "not taken: the run reached its " + le.Limit + " limit", IsError: true}
		x.r.cfg.Observer.Handoff(ctx, hc, "limit")
		return &pendingMove{limit: le}, nil
	}
	if h.OnHandoff != nil {
		if err := h.OnHandoff(ctx, hc); err != nil {
			reject("handoff to " + h.To + " refused: " + err.Error())
			x.r.cfg.Observer.Handoff(ctx, hc, "rejected")
			return nil, nil
		}
	}
	pc.Result = &runstate.Result{Output: p.byName[pc.Call.Name].done}
	return &pendingMove{h: h, hc: hc}, nil
}

// handoffLimit checks max_handoffs and ping-pong for a handoff to `to`.
func (x *run) handoffLimit(to string) *LimitError {
	st := x.st
	lim := x.r.limits
	if st.Handoffs >= lim.MaxHandoffs {
		return &LimitError{Limit: LimitMaxHandoffs, Max: int64(lim.MaxHandoffs), Agent: st.Agent}
	}
	if n := lim.PingPong; n > 0 {
		// The trail would end with to; count how many of its last steps
		// alternate between the same two agents.
		tn := len(st.Trail)
		at := func(i int) string {
			if i == tn {
				return to
			}
			return st.Trail[i]
		}
		k := tn
		alt := 0
		for k >= 2 && at(k) == at(k-2) && at(k) != at(k-1) {
			alt++
			k--
		}
		if alt+1 >= n {
			return &LimitError{Limit: LimitPingPong, Max: int64(n), Agent: st.Agent}
		}
	}
	return nil
}

// transfer moves control for a validated handoff call.
func (x *run) transfer(ctx context.Context, m *pendingMove) {
	st := x.st
	sys := ""
	if m.h.SystemMessage {
		sys, _ = x.system(ctx, x.r.plans[st.Agent])
	}
	prep := m.h.Prepare(ctx, x.r.log, st.Messages, sys, m.hc)
	m.hc.Transforms = prep.Applied
	if m.h.Return {
		st.Stack = append(st.Stack, runstate.Frame{Agent: st.Agent, Messages: slices.Clip(st.Messages), Handoff: st.Handoff, HandoffID: m.hc.ID})
	}
	x.move(ctx, m.hc, prep.Messages)
}

// move hands control to hc.To with history msgs.
func (x *run) move(ctx context.Context, hc *handoff.Context, msgs []message.Message) {
	st := x.st
	if hc.Type != handoff.TypeReturned {
		st.Handoffs++
		st.Trail = append(st.Trail, hc.To)
	}
	st.Agent = hc.To
	st.Messages = msgs
	if hc.Type == handoff.TypeReturned {
		// The caller gets its own context back (set by returnToCaller).
	} else {
		st.Handoff = hc
	}
	if x.r.log.Enabled(ctx, slog.LevelInfo) {
		x.r.log.InfoContext(ctx, "handoff", "run_id", st.RunID, "thread_id", st.ThreadID, "handoff_id", hc.ID, "from", hc.From, "to", hc.To,
			"type", hc.Type, "history", hc.History, "transforms", hc.Transforms, "model_run_id", x.modelRunID, "tokens_used", st.Usage.Total())
	}
	x.r.cfg.Observer.Handoff(ctx, hc, "ok")
	if x.streaming() {
		x.emit(&HandoffEvent{Header: Header{Type: TypeHandoff}, ID: hc.ID, From: hc.From, To: hc.To, HandoffType: hc.Type, Tool: hc.Tool,
			Reason: hc.Reason, Context: hc.Data, HistoryPolicy: hc.History, Transforms: hc.Transforms})
		x.emit(&AgentStartEvent{Header: Header{Type: TypeAgentStart}, Agent: hc.To, Reason: string(hc.Type)})
	}
}

// returnToCaller gives control back to the caller of a return handoff, with
// the target's answer in its history.
func (x *run) returnToCaller(ctx context.Context, answer message.Message) error {
	st := x.st
	f := st.Stack[len(st.Stack)-1]
	st.Stack = st.Stack[:len(st.Stack)-1]
	hc := &handoff.Context{ID: f.HandoffID + "-r", From: st.Agent, To: f.Agent, Type: handoff.TypeReturned, History: handoff.HistoryFull}
	msgs := append(f.Messages, answer)
	st.Handoff = f.Handoff
	x.move(ctx, hc, msgs)
	return x.checkpoint(ctx)
}

// policyHandoff moves control as a policy decided.
func (x *run) policyHandoff(ctx context.Context, d policy.Decision) error {
	st := x.st
	if _, ok := x.r.net.Agent(d.To); !ok {
		return &Error{Kind: KindSystem, Agent: st.Agent, Err: fmt.Errorf("policy %s hands off to unknown agent %q", x.r.cfg.Policy.Name(), d.To)}
	}
	if le := x.handoffLimit(d.To); le != nil {
		return x.limit(ctx, le)
	}
	typ := d.Type
	if typ == "" {
		typ = handoff.TypeRule
	}
	h := &handoff.Handoff{To: d.To, History: d.History}
	hc := &handoff.Context{ID: st.RunID + "-h" + strconv.Itoa(st.Handoffs+1), From: st.Agent, To: d.To, Type: typ, Reason: d.Reason, History: h.Policy()}
	var msgs []message.Message
	if d.Input != "" {
		in := message.User(d.Input)
		in.ID = x.msgID()
		msgs = []message.Message{in}
		hc.History = handoff.HistoryNone
	} else {
		msgs = h.Prepare(ctx, x.r.log, st.Messages, "", hc).Messages
	}
	x.move(ctx, hc, msgs)
	return x.checkpoint(ctx)
}
