package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/runstate"
)

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
			// Its id names the step of the checkpoint that records it.
			ir = &runstate.Interrupt{SchemaVersion: 1, ID: runstate.InterruptID(st.RunID, st.Step+1), Source: "tool_approval"}
		}
		ir.ActionRequests = append(ir.ActionRequests, runstate.ActionRequest{Name: pc.Call.Name, Args: pc.Call.Arguments, CallID: pc.Call.ID,
			Description: "Approve the call of " + pc.Call.Name + " by " + st.Agent})
	}
	return ir
}

// interrupt stops the run until a human decides on ir.
func (x *run) interrupt(ctx context.Context, ir *runstate.Interrupt) error {
	x.st.Status = runstate.StatusInterrupted
	x.st.Interrupt = ir
	x.emit(interruptEvent(ir))
	return x.checkpoint(ctx)
}

// applyDecisions answers the interrupt of st. An edit's arguments must be
// what the call's tool accepts (a JSON object matching its schema): when one
// is not, st is left as it was and the error is an *[EditError].
func applyDecisions(st *runstate.State, ds []Decision, p *plan) error {
	if st.Interrupt == nil {
		return errors.New("resume: interrupted run without an interrupt")
	}
	if len(ds) == 0 {
		return fmt.Errorf("resume: interrupt %s needs a decision (approve, reject or edit)", st.Interrupt.ID)
	}
	decided := map[string]Decision{}
	for _, d := range ds {
		switch d.Type {
		case DecisionApprove, DecisionReject, DecisionEdit:
		default:
			return fmt.Errorf("resume: unknown decision %q (want approve, reject or edit)", d.Type)
		}
		if d.Type == DecisionEdit && len(d.Args) == 0 {
			return errors.New("resume: an edit decision needs args")
		}
		if d.CallID == "" {
			for _, ar := range st.Interrupt.ActionRequests {
				if _, ok := decided[ar.CallID]; !ok {
					decided[ar.CallID] = d
				}
			}
			continue
		}
		decided[d.CallID] = d
	}
	for _, ar := range st.Interrupt.ActionRequests {
		if _, ok := decided[ar.CallID]; !ok {
			return fmt.Errorf("resume: no decision for call %s (%s)", ar.CallID, ar.Name)
		}
	}
	// Every edit is checked before st changes, so that a refused one
	// leaves the interrupt as it was, pending.
	edited := map[string]json.RawMessage{}
	for _, pc := range st.Pending {
		d, ok := decided[pc.Call.ID]
		if !ok || d.Type != DecisionEdit {
			continue
		}
		args, err := checkEdit(p, pc.Call.Name, d.Args)
		if err != nil {
			return &EditError{InterruptID: st.Interrupt.ID, CallID: pc.Call.ID, Tool: pc.Call.Name, Err: err}
		}
		edited[pc.Call.ID] = args
	}
	for i := range st.Pending {
		p := &st.Pending[i]
		d, ok := decided[p.Call.ID]
		if !ok {
			continue
		}
		switch d.Type {
		case DecisionApprove:
			p.Approved = true
		case DecisionEdit:
			p.Call.Arguments = edited[p.Call.ID]
			p.Approved = true
		case DecisionReject:
			msg := "rejected by a human reviewer"
			if d.Message != "" {
				msg += ": " + d.Message
			}
			p.Result = &runstate.Result{Output: msg, IsError: true}
		}
	}
	st.Interrupt = nil
	return nil
}

// checkEdit checks the edited arguments of a call of the tool name as the
// tool's own call would be checked ([agent.ParseArguments]: one JSON
// object, valid UTF-8, at most 1 MiB, matching the tool's JSON Schema) and
// returns them trimmed. A call of a tool the agent no longer has keeps the
// object check only: its call is answered as an unknown tool anyway.
func checkEdit(p *plan, name string, args json.RawMessage) (json.RawMessage, error) {
	var tool *agent.Tool
	if p != nil {
		tool = p.byName[name].tool
	}
	if tool == nil {
		return agent.ParseArguments(name, args, nil)
	}
	return agent.ParseArguments(tool.Name, args, tool.Validator())
}

// refuseApprovals answers, in a sub-run, the calls that would need a
// human's approval: nobody can give it there.
func (x *run) refuseApprovals() {
	st := x.st
	for i := range st.Pending {
		if st.Pending[i].Result == nil && !st.Pending[i].Approved {
			st.Pending[i].Result = &runstate.Result{Output: "this tool needs human approval, which is not available when an agent is called as a tool", IsError: true}
		}
	}
}
