package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// tool is a network's tool.
type tool struct {
	c      server.Core
	nw     *server.Network
	caller *server.Caller
}

// approvalInput is the id of the input request that asks for a decision.
const approvalInput = "approval"

func instructions(nw *server.Network) string {
	return "The tool " + nw.Name() + " asks the baton network " + nw.Name() + " (agents: " + strings.Join(nw.Agents().Names(), ", ") +
		"). Pass the thread_id of its result to continue the same conversation."
}

func (t *tool) definition() *mcp.Tool {
	desc := "Ask the baton network " + t.nw.Name() + " (agents: " + strings.Join(t.nw.Agents().Names(), ", ") + ")."
	if entry, ok := t.nw.Agents().Agent(t.nw.Agents().Entry()); ok && entry.Description != "" {
		desc = entry.Description + " " + desc
	}
	desc += " The result is the answer and a thread_id: pass it back to continue the conversation."
	return &mcp.Tool{Name: t.nw.Name(), Title: "baton: " + t.nw.Name(), Description: desc, InputSchema: inputSchema}
}

// result is the structured content of a call's result.
type result struct {
	Answer    string     `json:"answer"`
	ThreadID  string     `json:"thread_id"`
	RunID     string     `json:"run_id"`
	Status    string     `json:"status"`
	LastAgent string     `json:"last_agent,omitempty"`
	Interrupt *interrupt `json:"interrupt,omitempty"`
}

// interrupt is an approval a run waits for.
type interrupt struct {
	ID      string                   `json:"id"`
	Actions []runstate.ActionRequest `json:"actions"`
}

// call runs a call: a turn, or the decision on a run's approval (from the
// arguments, or from the client's answer to the elicitation of an earlier
// attempt), and follows the run until it ends or waits for a decision.
func (t *tool) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c := t.caller
	if c == nil {
		if ti := req.Extra.TokenInfo; ti != nil {
			c, _ = ti.Extra[callerKey].(*server.Caller)
		}
		if c == nil {
			return nil, errors.New("mcp: the call has no caller")
		}
	}
	var (
		run *server.Run
		err error
	)
	// ask is cleared when the client cancelled the question: the result
	// then holds the pending interrupt rather than asking again.
	ask := true
	if resp, ok := req.Params.InputResponses[approvalInput]; ok {
		run, ask, err = t.elicited(ctx, c, req.Params.RequestState, resp)
	} else {
		var a *args
		if a, err = parseArgs(req.Params.Arguments); err == nil {
			run, err = t.start(ctx, c, a)
		}
	}
	if err != nil {
		return failed(err), nil
	}
	f, err := t.follow(ctx, req, run)
	if err != nil {
		return failed(err), nil
	}
	return t.answer(req, f, ask), nil
}

// failed is the result of a call that could not run: an error the model
// sees (isError), as MCP asks of tool errors.
func failed(err error) *mcp.CallToolResult {
	msg := err.Error()
	if !errors.Is(err, errArgs) {
		msg = server.Classify(err).Message
	}
	msg = strings.TrimPrefix(msg, "mcp: ")
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// start starts what the arguments ask: a turn on a new thread or on the
// caller's thread_id, or the decision on run_id's approval.
func (t *tool) start(ctx context.Context, c *server.Caller, a *args) (*server.Run, error) {
	if a.Decision != "" {
		d := runner.Decision{Type: runner.DecisionApprove}
		if a.Decision == "reject" {
			d = runner.Decision{Type: runner.DecisionReject, Message: a.Message}
		}
		return t.decide(ctx, c, a.RunID, "", d)
	}
	if err := t.c.CheckInput(a.Message); err != nil {
		return nil, err
	}
	threadID := a.ThreadID
	if threadID != "" {
		th, err := t.c.Thread(ctx, c, threadID)
		if err != nil {
			return nil, err
		}
		if th.Network != t.nw.Name() {
			return nil, server.BadParam("thread_id", "thread %s belongs to network %q, not %q", threadID, th.Network, t.nw.Name())
		}
	} else {
		md := map[string]json.RawMessage{"source": json.RawMessage(`"mcp"`)}
		th, err := t.c.CreateThread(ctx, c, &store.CreateThreadParams{Network: t.nw.Name(), Name: threads.Title(a.Message), Metadata: md})
		if err != nil {
			return nil, err
		}
		threadID = th.ID
	}
	return t.c.StartTurn(ctx, c, t.nw, server.Turn{ThreadID: threadID, Input: a.Message})
}

// decide resumes run runID, which waits for a decision (on interrupt
// interruptID, if given), with d.
func (t *tool) decide(ctx context.Context, c *server.Caller, runID, interruptID string, d runner.Decision) (*server.Run, error) {
	cp, err := t.c.LatestCheckpoint(ctx, c, runID)
	if errors.Is(err, store.ErrNotFound) || err == nil && cp.State.Network != t.nw.Name() {
		return nil, server.NotFound("run", runID)
	}
	if err != nil {
		return nil, err
	}
	in := cp.State.Interrupt
	if cp.State.Status != runstate.StatusInterrupted || in == nil || interruptID != "" && in.ID != interruptID {
		return nil, server.Errorf(http.StatusConflict, "conflict", "run %s is %s: it waits for no decision", runID, cp.State.Status)
	}
	return t.c.Resume(ctx, c, t.nw, cp, []runner.Decision{d})
}

// elicited resumes the run that an earlier attempt of the call asked the
// client about (state: "RUN_ID INTERRUPT_ID"), with the client's answer.
// A declined elicitation rejects; a cancelled one leaves the run waiting
// (ask false: the result holds the pending interrupt).
func (t *tool) elicited(ctx context.Context, c *server.Caller, state string, resp mcp.InputResponse) (run *server.Run, ask bool, err error) {
	runID, interruptID, ok := strings.Cut(state, " ")
	if !ok || !idPattern.MatchString(runID) || !idPattern.MatchString(interruptID) {
		return nil, false, fmt.Errorf("%w: requestState %q names no run", errArgs, state)
	}
	er, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, false, fmt.Errorf("%w: the answer to %q is not an elicitation result", errArgs, approvalInput)
	}
	var d runner.Decision
	switch er.Action {
	case "accept":
		decision, _ := er.Content["decision"].(string)
		note, _ := er.Content["note"].(string)
		switch decision {
		case "approve":
			d = runner.Decision{Type: runner.DecisionApprove}
		case "reject":
			d = runner.Decision{Type: runner.DecisionReject, Message: note}
		default:
			return nil, false, fmt.Errorf("%w: decision %q: want approve or reject", errArgs, decision)
		}
	case "decline":
		d = runner.Decision{Type: runner.DecisionReject, Message: "declined"}
	default:
		// Cancelled: the run goes on waiting; its result says so.
		run, err = t.c.Run(ctx, c, runID)
		return run, false, err
	}
	run, err = t.decide(ctx, c, runID, interruptID, d)
	return run, true, err
}

// approvalSchema is the form of an elicitation of a decision.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{"type": "string", "enum": []string{"approve", "reject"}, "title": "Decision"},
		"note":     map[string]any{"type": "string", "title": "Note", "description": "Why you reject (shown to the agents)."},
	},
	"required": []string{"decision"},
}

// answer is the result of a run as followed: its answer and thread id; a
// run waiting for a decision asks the client (elicitation) where it can
// answer, else its result holds the pending interrupt.
func (t *tool) answer(req *mcp.CallToolRequest, f *fold, ask bool) *mcp.CallToolResult {
	res := &result{Answer: f.text.String(), ThreadID: f.run.ThreadID(), RunID: f.run.ID(), Status: string(runstate.StatusSuspended), LastAgent: f.lastAgent}
	if f.end != nil {
		res.Status = string(f.end.Status)
	}
	if f.end != nil && f.end.Status == runstate.StatusFailed {
		msg := "the run failed"
		if f.failure != "" {
			msg += ": " + f.failure
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}, StructuredContent: res}
	}
	text := res.Answer
	if in := f.interrupt; in != nil && res.Status == string(runstate.StatusInterrupted) {
		res.Interrupt = &interrupt{ID: in.ID, Actions: in.ActionRequests}
		q := "The network waits for approval of " + actionList(in) + "."
		if ask && elicits(req) {
			return &mcp.CallToolResult{RequestState: f.run.ID() + " " + in.ID, InputRequests: mcp.InputRequestMap{
				approvalInput: &mcp.ElicitParams{Mode: "form", Message: q + " Approve?", RequestedSchema: approvalSchema},
			}}
		}
		text = strings.TrimSpace(text + "\n\n[" + q + " Call " + t.nw.Name() + " again with run_id " + f.run.ID() +
			" and decision \"approve\" or \"reject\".]")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: res}
}

// elicits reports whether the client of a call answers form elicitations.
func elicits(req *mcp.CallToolRequest) bool {
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	e := ip.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

func actionList(in *runstate.Interrupt) string {
	var parts []string
	for _, ar := range in.ActionRequests {
		p := ar.Name
		if len(ar.Args) > 0 && string(ar.Args) != "null" {
			p += " " + string(ar.Args)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}
