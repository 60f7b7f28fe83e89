package runner

import (
	"time"

	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// This file is who acts next: an answer's checks and the end of the run,
// transfer calls (validation, limits, hook), the move of control (transfer,
// return to the caller, a policy's transfer) and the limits that end a run,
// with a final answer when the network asks for one.

// answered handles an answer without tool calls: output checks, return to
// a caller, policy transfers, or the end of the run.
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
		return false, x.policyTransfer(ctx, d)
	}
	st.Status = runstate.StatusCompleted
	st.FinalOutput = text
	return true, x.checkpoint(ctx)
}

// view is the run as the policy sees it at pt, valid during the policy's
// call (as policy.View says): the run's one view, set again for each call.
func (x *run) view(pt policy.Point, answer string) *policy.View {
	st := x.st
	x.pview = policy.View{Point: pt, Agent: st.Agent, Messages: st.Messages, Answer: answer, Turns: st.Turns,
		Transfers: st.Transfers, Trail: st.Trail, Usage: st.Usage, Input: x.input}
	return &x.pview
}

// limit ends the run at a limit: with the error, or with one more call of the
// active agent without tools when the network says on_limit: final_answer.
func (x *run) limit(ctx context.Context, le *LimitError) error {
	if x.r.limits.OnLimit != "final_answer" {
		return le
	}
	st := x.st
	x.end.limit = le.Limit
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

// pendingMove is a validated transfer about to happen.
type pendingMove struct {
	h     *transfer.Transfer
	tc    *transfer.Context
	limit *LimitError
}

// prepareTransfer validates the winning transfer call and records its
// result. ok is false when the call was refused: nothing moves.
func (x *run) prepareTransfer(ctx context.Context, p *plan, pc *runstate.PendingCall) (move pendingMove, ok bool, err error) {
	st := x.st
	h := p.byName[pc.Call.Name].transfer
	reject := func(msg string) {
		pc.Result = &runstate.Result{Output: msg, IsError: true}
		x.emit(&TransferRejectedEvent{Header: Header{Type: TypeTransferRejected}, From: st.Agent, To: h.To, Tool: h.Tool(), Error: msg})
	}
	if h.Enabled != nil && !h.Enabled(ctx, transfer.Info{RunID: st.RunID, ThreadID: st.ThreadID, Agent: st.Agent, Turns: st.Turns, Transfers: st.Transfers, Messages: st.Messages}) {
		reject("transfer to " + h.To + " is not available now")
		return move, false, nil
	}
	tc, err := h.BuildContext(st.Agent, pc.Call.Arguments)
	if err != nil {
		reject(err.Error())
		x.r.cfg.Observer.Transfer(ctx, &transfer.Context{From: st.Agent, To: h.To, Type: transfer.TypeTransfer, Tool: h.Tool(), History: h.Policy()}, "rejected")
		return move, false, nil
	}
	tc.ID = runstate.TransferID(st.RunID, st.Transfers+1)
	if le := x.transferLimit(h.To); le != nil {
		pc.Result = &runstate.Result{Output: "not taken: the run reached its " + le.Limit + " limit", IsError: true}
		x.r.cfg.Observer.Transfer(ctx, tc, "limit")
		return pendingMove{limit: le}, true, nil
	}
	if h.OnTransfer != nil {
		if err := h.OnTransfer(ctx, tc); err != nil {
			reject("transfer to " + h.To + " refused: " + err.Error())
			x.r.cfg.Observer.Transfer(ctx, tc, "rejected")
			return move, false, nil
		}
	}
	pc.Result = &runstate.Result{Output: p.byName[pc.Call.Name].done}
	return pendingMove{h: h, tc: tc}, true, nil
}

// transferLimit checks max_transfers and ping-pong for a transfer to `to`.
func (x *run) transferLimit(to string) *LimitError {
	st := x.st
	lim := x.r.limits
	if st.Transfers >= lim.MaxTransfers {
		return &LimitError{Limit: LimitMaxTransfers, Max: int64(lim.MaxTransfers), Agent: st.Agent}
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

// transfer moves control for a validated transfer call.
func (x *run) transfer(ctx context.Context, m *pendingMove) {
	st := x.st
	sys := ""
	if m.h.SystemMessage {
		sys, _ = x.system(ctx, x.r.plans[st.Agent])
	}
	prep := m.h.Prepare(ctx, x.r.log, st.Messages, sys, m.tc)
	m.tc.Transforms = prep.Applied
	if m.h.Return {
		st.Stack = append(st.Stack, runstate.Frame{Agent: st.Agent, Messages: slices.Clip(st.Messages), Transfer: st.Transfer, TransferID: m.tc.ID})
	}
	x.move(ctx, m.tc, prep.Messages)
}

// move hands control to tc.To with history msgs.
func (x *run) move(ctx context.Context, tc *transfer.Context, msgs []message.Message) {
	st := x.st
	if tc.Type != transfer.TypeReturned {
		st.Transfers++
		st.Trail = append(st.Trail, tc.To)
	}
	st.Agent = tc.To
	st.Messages = msgs
	if tc.Type == transfer.TypeReturned {
		// The caller gets its own context back (set by returnToCaller).
	} else {
		st.Transfer = tc
	}
	if x.r.log.Enabled(ctx, slog.LevelInfo) {
		// Typed attributes: the strings are not boxed one by one.
		x.r.log.LogAttrs(ctx, slog.LevelInfo, "transfer", slog.String("run_id", st.RunID), slog.String("thread_id", st.ThreadID),
			slog.String("transfer_id", tc.ID), slog.String("from", tc.From), slog.String("to", tc.To), slog.String("type", string(tc.Type)),
			slog.String("history", string(tc.History)), slog.Any("transforms", tc.Transforms), slog.String("model_run_id", x.turn.requestID),
			slog.Int64("tokens_used", st.Usage.Total()))
	}
	x.r.cfg.Observer.Transfer(ctx, tc, "ok")
	if x.rec != nil {
		x.rec.add(CallRecord{Kind: CallTransfer, Agent: tc.From, Sub: x.sub, Name: tc.To, CallID: tc.ID, Output: string(tc.Type), Start: time.Now()})
	}
	if x.streaming() {
		var buf [2]Event
		for _, e := range appendMoveEvents(buf[:0], tc) {
			x.emit(e)
		}
	}
}

// returnToCaller gives control back to the caller of a return transfer, with
// the target's answer in its history.
func (x *run) returnToCaller(ctx context.Context, answer message.Message) error {
	st := x.st
	f := st.Stack[len(st.Stack)-1]
	st.Stack = st.Stack[:len(st.Stack)-1]
	tc := returnContext(&f, st.Agent)
	msgs := append(f.Messages, answer)
	st.Transfer = f.Transfer
	x.move(ctx, tc, msgs)
	return x.checkpoint(ctx)
}

// returnContext is the transfer context of the return of control from agent
// from to the caller waiting in frame f.
func returnContext(f *runstate.Frame, from string) *transfer.Context {
	return &transfer.Context{ID: runstate.ReturnID(f.TransferID), From: from, To: f.Agent, Type: transfer.TypeReturned, History: transfer.HistoryFull}
}

// policyTransfer moves control as a policy decided.
func (x *run) policyTransfer(ctx context.Context, d policy.Decision) error {
	st := x.st
	if _, ok := x.r.net.Agent(d.To); !ok {
		return &Error{Kind: KindSystem, Agent: st.Agent, Err: fmt.Errorf("policy %s hands off to unknown agent %q", x.r.cfg.Policy.Name(), d.To)}
	}
	if le := x.transferLimit(d.To); le != nil {
		return x.limit(ctx, le)
	}
	typ := d.Type
	if typ == "" {
		typ = transfer.TypeRule
	}
	h := &transfer.Transfer{To: d.To, History: d.History}
	tc := &transfer.Context{ID: runstate.TransferID(st.RunID, st.Transfers+1), From: st.Agent, To: d.To, Type: typ, Reason: d.Reason, History: h.Policy()}
	var msgs []message.Message
	if d.Input != "" {
		in := message.User(d.Input)
		in.ID = x.msgID()
		msgs = []message.Message{in}
		tc.History = transfer.HistoryNone
	} else {
		msgs = h.Prepare(ctx, x.r.log, st.Messages, "", tc).Messages
	}
	x.move(ctx, tc, msgs)
	return x.checkpoint(ctx)
}
