package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runstate"
)

// This file is the calls of a turn: the stops before they run (approval
// interrupts, the background boundary and its inline fallback), tools and
// agent tools with their results recorded as they return, and the results
// joined to the history.

// runPending executes the pending calls of the last turn. It returns
// wait=true when the run stopped for a human decision or a background worker.
func (x *run) runPending(ctx context.Context) (wait bool, err error) {
	p := x.r.plans[x.st.Agent]

	// 1, 2. Calls that need a decision or a worker stop the run (checked
	// here for calls resumed from a checkpoint; takeTurn checked the others).
	if !x.callsChecked {
		if stopped, err := x.stopForCalls(ctx, p); stopped || err != nil {
			return true, err
		}
	}
	x.callsChecked = false
	// 3. Tools and agent tools run (concurrently when several); the first
	// transfer call wins and the others are answered "not taken".
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
	// 1. Calls that need a human decision stop the run.
	if ir := x.approvals(ctx, p); ir != nil {
		if !x.sub {
			return true, x.interrupt(ctx, ir)
		}
		x.refuseApprovals()
	}
	// 2. Slow calls go to a background worker when the run is inline.
	if x.o.background && !x.sub {
		if slow := x.slowCalls(p); len(slow) > 0 {
			return true, x.suspend(ctx, p, slow)
		}
	}
	return false, nil
}

// slowCalls returns the ids of the pending tool calls without a result that
// a background worker runs: slow tools, or any tool of a background agent.
func (x *run) slowCalls(p *plan) []string {
	var slow []string
	for _, pc := range x.st.Pending {
		if pc.Result == nil && pc.Kind == runstate.CallTool {
			if e := p.byName[pc.Call.Name]; e.tool != nil && (e.tool.Slow || p.a.Background) {
				slow = append(slow, pc.Call.ID)
			}
		}
	}
	return slow
}

// suspend stops the run for a background worker before the slow calls run.
// When the checkpoint of the suspension is refused and the run has a
// fallback, the run finishes inline instead — unless another writer has
// superseded the run: it stops, as at any other checkpoint.
func (x *run) suspend(ctx context.Context, p *plan, slow []string) error {
	x.st.Status = runstate.StatusSuspended
	x.emit(suspendedEvent(x.st.Agent, slow))
	err := x.checkpoint(ctx)
	if err == nil || x.o.fallback == nil || ctx.Err() != nil || superseded(err) {
		return err
	}
	return x.inlineFallback(ctx, p, err)
}

// superseded reports whether err says that another writer has taken the
// run's place: an error in its chain has a method Superseded() bool that
// returns true (package store's *StaleWriteError does).
func superseded(err error) bool {
	var s interface{ Superseded() bool }
	return errors.As(err, &s) && s.Superseded()
}

// inlineFallback finishes a run whose hand-over to a background worker
// failed (the checkpoint of the suspension was refused): the calls without a
// result get the notice as an error result, and the agent answers once
// without tools.
func (x *run) inlineFallback(ctx context.Context, p *plan, cause error) error {
	st := x.st
	st.Status = runstate.StatusRunning
	if x.end.seq != 0 {
		// The refused checkpoint reserved run_end's seq; give it back.
		if st.Seq == x.end.seq {
			st.Seq--
		}
		x.end.seq = 0
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

// execTools runs every pending non-transfer call that has no result yet and
// records each result the moment it returns.
func (x *run) execTools(ctx context.Context, p *plan) error {
	st := x.st
	var todo []int
	for i := range st.Pending {
		if st.Pending[i].Result == nil && st.Pending[i].Kind != runstate.CallTransfer {
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

// execParallel runs the pending calls todo concurrently, at most
// Config.MaxParallelTools at once; the first error cancels the others.
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
	var start time.Time
	if x.rec != nil {
		start = time.Now()
	}
	out, isErr, err := x.callTool(tctx, p, e, pc.Call)
	end(out, isErr, err)
	if x.rec != nil {
		x.recordTool(string(pc.Kind), pc.Call.Name, pc.Call.ID, pc.Call.Arguments, start, out, isErr, err)
	}
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	st.Pending[i].Result = &runstate.Result{Output: out, IsError: isErr}
	x.dropMemoLocked(callMemo(pc.Call.ID))
	if pc.Kind == runstate.CallAgentTool {
		x.dropSubRunMemosLocked(pc.Call.ID)
	}
	if x.joinFollows() {
		// The turn's last result, and no transfer to prepare: afterTools
		// joins the results and checkpoints them right away, with nothing
		// in between, so this checkpoint would be written twice.
		return nil
	}
	if x.o.deferResults && replayable(p, &pc) {
		// Written with the next checkpoint (WithDeferredResults).
		return nil
	}
	return x.checkpoint(ctx)
}

// replayable reports whether pending call pc may run again after a crash
// without a second effect, so that its result need not be durable before
// the run goes on: a call of an idempotent tool (agent.Tool.Idempotent,
// run again with the same idempotency key), or one answered without a
// tool (an unknown tool, the transfer context's reader: the same answer
// again). Agent tools and transfers are not.
func replayable(p *plan, pc *runstate.PendingCall) bool {
	if pc.Kind != runstate.CallTool {
		return false
	}
	e := p.byName[pc.Call.Name]
	return e.kind != runstate.CallAgentTool && (e.tool == nil || e.tool.Idempotent)
}

// deferJoin reports whether the results of the turn's calls, about to join
// the history, may be written with the run's next checkpoint instead of one
// of their own (WithDeferredResults): every call is replayable.
func (x *run) deferJoin(p *plan) bool {
	if !x.o.deferResults || x.sub {
		return false
	}
	for i := range x.st.Pending {
		if !replayable(p, &x.st.Pending[i]) {
			return false
		}
	}
	return true
}

// joinFollows reports whether every pending call has its result and none
// is a transfer (whose preparation, with its hook, comes before the join):
// what afterTools checkpoints next is then this state, joined.
func (x *run) joinFollows() bool {
	for _, pc := range x.st.Pending {
		if pc.Result == nil || pc.Kind == runstate.CallTransfer {
			return false
		}
	}
	return true
}

// callTool executes one call. Failures the model should see come back as
// isErr results; err is for failures that end the run.
func (x *run) callTool(ctx context.Context, p *plan, e toolEntry, call message.ToolCall) (out string, isErr bool, err error) {
	switch {
	case e.kind == runstate.CallAgentTool:
		return x.callAgentTool(ctx, e.agentTool, call)
	case e.tool == nil && (call.Name == TransferContextTool || call.Name == contextToolV1) && x.st.Transfer != nil:
		out, isErr = x.readTransferContext(call)
		return out, isErr, nil
	case e.tool == nil:
		return unknownTool(p, call.Name), true, nil
	}
	tool := e.tool
	args, perr := agent.ParseArguments(tool.Name, call.Arguments, tool.Validator())
	if perr != nil {
		return perr.Error(), true, nil
	}
	st := x.st
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

// maxToolNames bounds the tools an unknown tool's result names.
const maxToolNames = 40

// unknownTool is the result of a call of a tool the agent does not have, as
// the major SDKs answer it: it names the agent's tools so that the model
// can correct itself, and for a transfer tool (transfer_to_<agent>) the
// agents it can transfer to.
func unknownTool(p *plan, name string) string {
	var b strings.Builder
	b.WriteString("unknown tool ")
	b.WriteString(strconv.Quote(name))
	b.WriteString(" for agent ")
	b.WriteString(p.a.Name)
	if to, ok := strings.CutPrefix(name, "transfer_to_"); ok {
		b.WriteString(": it cannot transfer to ")
		b.WriteString(strconv.Quote(to))
		var targets []string
		for _, h := range p.a.Transfers {
			targets = append(targets, h.To+" (tool "+h.Tool()+")")
		}
		if len(targets) == 0 {
			b.WriteString(" and has no transfers")
		} else {
			b.WriteString("; it can transfer to ")
			b.WriteString(strings.Join(targets, ", "))
		}
	}
	if len(p.tools) == 0 {
		b.WriteString(". It has no tools: answer without calling any.")
		return b.String()
	}
	b.WriteString(". Available tools: ")
	for i, t := range p.tools {
		if i == maxToolNames {
			fmt.Fprintf(&b, " … (%d more)", len(p.tools)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.Name)
	}
	b.WriteString(".")
	return b.String()
}

// readTransferContext answers a call of [TransferContextTool]: the full value
// of a field of the active transfer context delivered by reference.
func (x *run) readTransferContext(call message.ToolCall) (out string, isErr bool) {
	var in struct {
		Ref string `json:"ref"`
	}
	if json.Unmarshal(call.Arguments, &in) != nil {
		return "invalid arguments: want {\"ref\": string}", true
	}
	if rest, ok := strings.CutPrefix(in.Ref, "handoff:"); ok && call.Name == contextToolV1 {
		in.Ref = "transfer:" + rest
	}
	v, ok := x.st.Transfer.Lookup(in.Ref)
	if !ok {
		return "unknown reference " + strconv.Quote(in.Ref), true
	}
	return string(v), false
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
	child := &runstate.State{SchemaVersion: runstate.SchemaVersion, RunID: runstate.SubRunID(parent.RunID, call.ID), ThreadID: parent.ThreadID,
		Network: parent.Network, Fingerprint: parent.Fingerprint, Agent: at.Agent,
		Messages: []message.Message{message.User(in.Input)}, Trail: []string{at.Agent}, Status: runstate.StatusRunning, Values: parent.Values}
	sub := &run{r: x.r, st: child, sub: true, parent: x, input: in.Input, began: time.Now(), rec: x.rec}
	err := sub.loop(agent.WithMemoScope(ctx, sub))
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

// afterTools finishes a turn whose calls ran: the winning transfer, the
// results joined to the history, the checkpoint, the policy.
func (x *run) afterTools(ctx context.Context, p *plan) (wait bool, err error) {
	st := x.st
	var move pendingMove
	moves := false
	if win := x.firstTransfer(p); win >= 0 {
		move, moves, err = x.prepareTransfer(ctx, p, &st.Pending[win])
		if err != nil {
			return false, err
		}
	}
	deferred := !moves && x.deferJoin(p)
	// 4. The results join the history in call order.
	x.joinResults("")
	if moves {
		if move.limit != nil {
			return false, x.limit(ctx, move.limit)
		}
		x.transfer(ctx, &move)
		return false, x.checkpoint(ctx)
	}
	if !deferred {
		if err := x.checkpoint(ctx); err != nil {
			return false, err
		}
	}
	d, ok, err := x.r.cfg.Policy.Next(ctx, x.view(policy.AfterTools, ""))
	if err != nil {
		return false, &Error{Kind: KindSystem, Agent: st.Agent, Err: fmt.Errorf("policy %s: %w", x.r.cfg.Policy.Name(), err)}
	}
	if ok {
		return false, x.policyTransfer(ctx, d)
	}
	return false, nil
}

// firstTransfer returns the index of the turn's first pending transfer call
// without a result, the one taken (-1 if none), and answers the others
// "not taken".
func (x *run) firstTransfer(p *plan) int {
	st := x.st
	win := -1
	for i := range st.Pending {
		pc := &st.Pending[i]
		if pc.Kind != runstate.CallTransfer || pc.Result != nil {
			continue
		}
		if win < 0 {
			win = i
			continue
		}
		first := p.byName[st.Pending[win].Call.Name].transfer.To
		pc.Result = &runstate.Result{Output: "not taken: this turn already transfers to " + first + "; only the first transfer of a turn is taken", IsError: true}
		x.emit(&TransferRejectedEvent{Header: Header{Type: TypeTransferRejected}, From: st.Agent, To: p.byName[pc.Call.Name].transfer.To, Tool: pc.Call.Name, Error: pc.Result.Output})
	}
	return win
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
			x.emit(toolResultEvent(tm.Agent, &tm.Parts[0]))
		}
	}
	st.Pending = nil
}
