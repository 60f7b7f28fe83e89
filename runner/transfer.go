package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/handoff"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runstate"
)

// This file is who acts next: an answer's checks and the end of the run,
// handoff calls (validation, limits, hook), the move of control (transfer,
// return to the caller, a policy's handoff) and the limits that end a run,
// with a final answer when the network asks for one.

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

// view is the run as the policy sees it at pt.
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
	hc.ID = runstate.HandoffID(st.RunID, st.Handoffs+1)
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
			"type", hc.Type, "history", hc.History, "transforms", hc.Transforms, "model_run_id", x.turn.requestID, "tokens_used", st.Usage.Total())
	}
	x.r.cfg.Observer.Handoff(ctx, hc, "ok")
	if x.streaming() {
		for _, e := range appendMoveEvents(nil, hc) {
			x.emit(e)
		}
	}
}

// returnToCaller gives control back to the caller of a return handoff, with
// the target's answer in its history.
func (x *run) returnToCaller(ctx context.Context, answer message.Message) error {
	st := x.st
	f := st.Stack[len(st.Stack)-1]
	st.Stack = st.Stack[:len(st.Stack)-1]
	hc := returnContext(&f, st.Agent)
	msgs := append(f.Messages, answer)
	st.Handoff = f.Handoff
	x.move(ctx, hc, msgs)
	return x.checkpoint(ctx)
}

// returnContext is the handoff context of the return of control from agent
// from to the caller waiting in frame f.
func returnContext(f *runstate.Frame, from string) *handoff.Context {
	return &handoff.Context{ID: runstate.ReturnID(f.HandoffID), From: from, To: f.Agent, Type: handoff.TypeReturned, History: handoff.HistoryFull}
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
	hc := &handoff.Context{ID: runstate.HandoffID(st.RunID, st.Handoffs+1), From: st.Agent, To: d.To, Type: typ, Reason: d.Reason, History: h.Policy()}
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
