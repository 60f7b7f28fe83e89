package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/continuation"
	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/eval/replay"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// ExportOptions select the stored threads [Export] turns into cases.
type ExportOptions struct {
	// Owner owns the threads.
	Owner string
	// Threads are the threads to export, by id; with Since, the threads
	// updated since then are added.
	Threads []string
	// Since, if not zero, exports every thread of Owner updated at or
	// after it (of Network's name, when Network is set).
	Since time.Time
	// Network, if set, is the network the threads ran on, loaded: its
	// transfer tools tell transfers from tools, and when the threads ran
	// under its version (their checkpoints' fingerprint is its) its agents'
	// fingerprints are recorded, so that `baton eval` answers the agents
	// that did not change since from the recording. Without it no agent is
	// answered from the recording (its tools still are).
	Network *netspec.Spec
	// Model is the live model the threads ran on (--model), if any: it is
	// part of the agents' fingerprints.
	Model string
	// Name names the set; defaults to "export".
	Name string
}

// ExportResult is an exported set and what the export could not do.
type ExportResult struct {
	Set *evalset.Set
	// Warnings say what was left out (a thread of another network
	// version: its agents are not recorded).
	Warnings []string
}

// Export turns stored threads into cases, one per thread: its user
// messages are the turns; what each turn's run did (its model answers with
// their agents, tool calls and results, transfers with their context, its
// status and answer, its approval decisions) is the case's recording; and
// the expectations are what it did — the first agent, the transfers, the
// tool calls (exactly), the status, and the answer by ROUGE-1 at
// evalset.DefaultROUGE1Threshold — so that the case fails when the network
// starts doing something else. It reads the store only.
func Export(ctx context.Context, st store.Store, o ExportOptions) (*ExportResult, error) {
	if o.Owner == "" {
		return nil, errors.New("eval: export: no owner")
	}
	ctx = store.ContextWithOwner(ctx, o.Owner)
	ids, err := threadsToExport(ctx, st, &o)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errors.New("eval: export: no thread to export (give threads, or a time they were updated since)")
	}
	name := o.Name
	if name == "" {
		name = "export"
	}
	res := &ExportResult{Set: &evalset.Set{Version: evalset.Version, Name: name}}
	x := exporter{st: st, o: &o}
	if o.Network != nil {
		x.transfers = transferTools(o.Network.Network)
		x.fingerprints = replay.Fingerprints(o.Network.Network, o.Network.File, o.Model)
	}
	for _, id := range ids {
		c, warn, err := x.thread(ctx, id)
		if err != nil {
			return nil, err
		}
		if warn != "" {
			res.Warnings = append(res.Warnings, warn)
		}
		if c != nil {
			res.Set.Cases = append(res.Set.Cases, *c)
		}
	}
	if len(res.Set.Cases) == 0 {
		return nil, errors.New("eval: export: the threads have no user message")
	}
	return res, nil
}

// threadsToExport returns o.Threads, then the threads updated since
// o.Since, each once.
func threadsToExport(ctx context.Context, st store.Store, o *ExportOptions) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	for _, id := range o.Threads {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if o.Since.IsZero() {
		return ids, nil
	}
	var found []*store.Thread
	cursor := ""
	for {
		page, err := st.ListThreads(ctx, &store.ListThreadsParams{OwnerID: o.Owner, Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("eval: export: list threads: %w", err)
		}
		for _, th := range page.Threads {
			if seen[th.ID] || th.UpdatedAt.Before(o.Since) || (o.Network != nil && th.Network != o.Network.Network.Name()) {
				continue
			}
			seen[th.ID] = true
			found = append(found, th)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	// Oldest first, as the conversations happened.
	slices.SortStableFunc(found, func(a, b *store.Thread) int { return a.CreatedAt.Compare(b.CreatedAt) })
	for _, th := range found {
		ids = append(ids, th.ID)
	}
	return ids, nil
}

type exporter struct {
	st           store.Store
	o            *ExportOptions
	transfers    map[string]map[string]bool
	fingerprints map[string]string
}

// thread exports one thread; nil when it has no user message.
func (x *exporter) thread(ctx context.Context, id string) (*evalset.Case, string, error) {
	th, err := x.st.GetThread(ctx, &store.GetThreadParams{OwnerID: x.o.Owner, ID: id})
	if err != nil {
		return nil, "", fmt.Errorf("eval: export: thread %s: %w", id, err)
	}
	if n := x.o.Network; n != nil && th.Network != "" && th.Network != n.Network.Name() {
		return nil, "", fmt.Errorf("eval: export: thread %s ran on network %q, not %q", id, th.Network, n.Network.Name())
	}
	msgs, err := x.st.ListMessages(ctx, &store.ListMessagesParams{OwnerID: x.o.Owner, ThreadID: id})
	if err != nil {
		return nil, "", fmt.Errorf("eval: export: thread %s: %w", id, err)
	}
	decisions, err := x.decisions(ctx, id)
	if err != nil {
		return nil, "", err
	}
	rec := &evalset.Recording{Version: evalset.RecordingVersion, Source: "thread " + id, Network: th.Network}
	c := &evalset.Case{ID: "thread-" + id, Description: th.Name, Recording: rec}
	for _, turn := range splitTurns(msgs) {
		o := x.outcome(turn[1:])
		if err := x.status(ctx, &o, id, runOfMessage(turn[0].ID), rec); err != nil {
			return nil, "", err
		}
		t := evalset.Turn{User: turn[0].Text(), Decisions: decisions[o.RunID], Expect: expectOf(&o)}
		c.Turns = append(c.Turns, t)
		rec.Turns = append(rec.Turns, o)
	}
	if len(c.Turns) == 0 {
		return nil, "", nil
	}
	warn := ""
	switch n := x.o.Network; {
	case n == nil:
	case rec.Fingerprint == n.Network.Fingerprint():
		rec.Agents = x.fingerprints
	default:
		warn = fmt.Sprintf("thread %s ran under network version %s, not %s (the file given): its agents are not recorded, and baton eval calls their models", id, orUnknown(rec.Fingerprint), n.Network.Fingerprint())
	}
	return c, warn, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// splitTurns splits a thread's messages into turns, each a user message
// and what answered it; messages before the first user message are left
// out.
func splitTurns(msgs []*store.Message) [][]*store.Message {
	var out [][]*store.Message
	for _, m := range msgs {
		switch {
		case m.Role == message.RoleUser:
			out = append(out, []*store.Message{m})
		case len(out) > 0:
			out[len(out)-1] = append(out[len(out)-1], m)
		}
	}
	return out
}

// outcome derives a turn's recording from its messages: model answers,
// tool calls paired with their results, transfers, usage, the answer.
func (x *exporter) outcome(msgs []*store.Message) evalset.Outcome {
	var o evalset.Outcome
	results := map[string]*message.Part{}
	for _, m := range msgs {
		if m.Role != message.RoleTool {
			continue
		}
		for i := range m.Parts {
			if p := &m.Parts[i]; p.Type == message.PartToolResult {
				results[p.CallID] = p
			}
		}
	}
	for i, m := range msgs {
		if m.Role != message.RoleAssistant || continuation.IsPlaceholder(m) {
			// A background run's placeholder repeats its answer: no
			// model gave it.
			continue
		}
		if o.FirstAgent == "" {
			o.FirstAgent = m.Agent
		}
		o.ModelCalls = append(o.ModelCalls, evalset.ModelCall{Agent: m.Agent, Message: answerOf(&m.Message)})
		o.Usage.Add(usageOf(&m.Message))
		if text := m.Text(); text != "" {
			o.Answer = text
		}
		for _, call := range m.ToolCalls() {
			r := results[call.ID]
			if to, ok := x.transferTo(m.Agent, call.Name, msgs[i+1:]); ok {
				if r == nil || !r.IsError {
					o.Transfers = append(o.Transfers, evalset.Transfer{From: m.Agent, To: to, CallID: call.ID, Context: call.Arguments})
				}
				continue
			}
			tc := evalset.ToolCall{Agent: m.Agent, ID: call.ID, Name: call.Name, Arguments: call.Arguments}
			if r != nil {
				tc.Output, tc.IsError = r.Text, r.IsError
			}
			o.Tools = append(o.Tools, tc)
		}
	}
	return o
}

// answerOf is an assistant message as its model answered it: no id, no
// status.
func answerOf(m *message.Message) message.Message {
	a := *m
	a.ID, a.Status = "", ""
	return a
}

// transferTo tells whether a call of agent is a transfer, and to whom: a
// transfer tool of the agent in the network given, else a call named
// transfer_to_<agent> (the default name) followed by that agent's answer.
func (x *exporter) transferTo(agentName, tool string, after []*store.Message) (string, bool) {
	if x.o.Network != nil {
		if !x.transfers[agentName][tool] {
			return "", false
		}
		a, _ := x.o.Network.Network.Agent(agentName)
		for _, t := range a.Transfers {
			if t.Tool() == tool {
				return t.To, true
			}
		}
		return "", false
	}
	to, ok := strings.CutPrefix(tool, "transfer_to_")
	if !ok {
		return "", false
	}
	for _, m := range after {
		if m.Role == message.RoleAssistant {
			return to, m.Agent == to
		}
	}
	return to, true
}

// status sets the turn's run, status and error from its run's latest
// checkpoint (the thread's messages only say whether a message failed), and
// the recording's network version from it. A run of another thread (a
// fork's source, whose messages the fork shares) is not the turn's: the
// source's run may have gone on past the fork's point.
func (x *exporter) status(ctx context.Context, o *evalset.Outcome, thread, runID string, rec *evalset.Recording) error {
	o.RunID = runID
	o.Status = string(runstate.StatusCompleted)
	if runID == "" {
		return nil
	}
	cp, err := x.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: x.o.Owner, RunID: runID})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("eval: export: run %s: %w", runID, err)
	}
	if cp.ThreadID != thread {
		o.RunID = ""
		return nil
	}
	o.Status = string(cp.Status)
	if rec.Fingerprint == "" {
		rec.Fingerprint = cp.Fingerprint
	}
	if s := cp.State; s != nil {
		if len(s.Trail) > 0 {
			o.FirstAgent = s.Trail[0]
			o.Transfers = alongTrail(s.Trail, o.Transfers)
		}
		if s.Status == runstate.StatusCompleted && s.FinalOutput != "" {
			o.Answer = s.FinalOutput
		}
		if s.Failure != nil {
			o.Error = s.Failure.Message
		}
	}
	return nil
}

// alongTrail returns the transfers of a run whose agents held control in
// the order of trail: the transfers its messages show (made by a transfer
// tool, with their context) where they are, and those a policy made (a
// sequential pipeline, a rule), which no message shows, between.
func alongTrail(trail []string, byTool []evalset.Transfer) []evalset.Transfer {
	var out []evalset.Transfer
	next := 0
	for i := 1; i < len(trail); i++ {
		from, to := trail[i-1], trail[i]
		if next < len(byTool) && byTool[next].From == from && byTool[next].To == to {
			out = append(out, byTool[next])
			next++
			continue
		}
		out = append(out, evalset.Transfer{From: from, To: to})
	}
	if next < len(byTool) {
		return byTool // the trail does not explain them: keep what the messages say
	}
	return out
}

// decisions returns the decisions of the thread's decided run interrupts,
// by run, one per interrupt in order (an interrupt decided call by call in
// different ways is exported with its first decision).
func (x *exporter) decisions(ctx context.Context, thread string) (map[string][]evalset.Decision, error) {
	out := map[string][]evalset.Decision{}
	its, err := x.st.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: x.o.Owner, ThreadID: thread, Kind: store.InterruptRun, Status: store.InterruptDecided, Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("eval: export: thread %s: interrupts: %w", thread, err)
	}
	for _, it := range its {
		var d threads.RunInterruptDecision
		if json.Unmarshal(it.Decision, &d) != nil || len(d.Decisions) == 0 {
			continue
		}
		first := d.Decisions[0]
		out[it.RunID] = append(out[it.RunID], evalset.Decision{Type: string(first.Type), Args: first.Args, Message: first.Message})
	}
	return out, nil
}

// runOfMessage returns the run of a message id made by runstate.MessageID
// ("run_x-m3" → "run_x"), or "".
func runOfMessage(id string) string {
	i := strings.LastIndex(id, "-m")
	if i <= 0 || !strings.HasPrefix(id, "run_") {
		return ""
	}
	if _, err := strconv.Atoi(id[i+2:]); err != nil {
		return ""
	}
	return id[:i]
}

// expectOf is what a recorded turn did, as expectations.
func expectOf(o *evalset.Outcome) *evalset.Expect {
	e := &evalset.Expect{Routing: o.FirstAgent, Status: o.Status}
	trs := []evalset.TransferExpect{}
	for _, t := range o.Transfers {
		te := evalset.TransferExpect{From: t.From, To: t.To}
		_ = json.Unmarshal(t.Context, &te.Context)
		trs = append(trs, te)
	}
	e.Transfers = &trs
	calls := []evalset.ToolCallExpect{}
	for _, t := range o.Tools {
		c := evalset.ToolCallExpect{Name: t.Name, Args: map[string]any{}}
		_ = json.Unmarshal(t.Arguments, &c.Args)
		calls = append(calls, c)
	}
	e.Tools = &evalset.ToolsExpect{Match: evalset.MatchExact, Calls: calls}
	if strings.TrimSpace(o.Answer) != "" {
		e.Answer = &evalset.AnswerExpect{ROUGE1: &evalset.ROUGE1{Reference: o.Answer, Threshold: evalset.DefaultROUGE1Threshold}}
	}
	return e
}
