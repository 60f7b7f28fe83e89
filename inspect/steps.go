package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// Step types.
const (
	StepModelCall     = "model_call"
	StepToolCall      = "tool_call"
	StepAgentToolCall = "agent_tool_call"
	StepTransfer      = "transfer"
	// StepApproval is the wait for a person's decision: from the
	// checkpoint that stopped the run (interrupted) to the one that
	// resumed it.
	StepApproval = "approval"
	// StepBackground is the hand-over to a background worker and back:
	// from the checkpoint that suspended the run to the worker's end of
	// it (the next checkpoint that is not running).
	StepBackground = "background"
)

// maxChain bounds the checkpoints of a run read to list its steps.
const maxChain = 5000

// waitPrefix starts the ids of the steps made from checkpoints.
const waitPrefix = "wait_"

// Run is a run's steps, as GET /v1/threads/{id}/runs/{run_id}/steps and
// baton inspect show them.
type Run struct {
	// Object is "list": the steps are Data.
	Object   string `json:"object"`
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	Status   string `json:"status"`
	// Agent is the run's active agent at its latest checkpoint.
	Agent        string    `json:"agent"`
	StartedAt    time.Time `json:"started_at"`
	CheckpointID string    `json:"checkpoint_id"`
	Tokens       Tokens    `json:"tokens"`
	Steps        []*Step   `json:"data"`
}

// Step is one step of a run: a model call, a tool call, a transfer, a wait
// for an approval, a hand-over to a background worker.
type Step struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Type   string `json:"type"`
	Agent  string `json:"agent"`
	// Sub is set for a call of an agent-tool sub-run.
	Sub       bool      `json:"sub,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// DurationMS is the step's duration; an approval or hand-over still
	// waiting has it up to now and Ongoing set.
	DurationMS   float64  `json:"duration_ms"`
	Ongoing      bool     `json:"ongoing,omitempty"`
	FirstTokenMS *float64 `json:"first_token_ms,omitempty"`
	Tokens       *Tokens  `json:"tokens,omitempty"`
	// CheckpointID and CheckpointStep are the checkpoint the step ended in.
	CheckpointID   string `json:"checkpoint_id"`
	CheckpointStep int    `json:"checkpoint_step"`
	// Model is a model call's model spec; Name a tool's name or a
	// transfer's target; CallID the tool call's id.
	Model        string `json:"model,omitempty"`
	Name         string `json:"name,omitempty"`
	CallID       string `json:"call_id,omitempty"`
	Error        string `json:"error,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	RequestID    string `json:"request_id,omitempty"`
	// Retries counts a model call's failed attempts before its last one;
	// set by GetStep only (a list reads no detail).
	Retries   int  `json:"retries,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
	// Detail is the step in full (GetStep only): a model call's request
	// and answer, a tool call's arguments and output, an approval's
	// interrupt.
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Tokens are a step's or a run's token usage.
type Tokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Cached    int64 `json:"cached"`
	Reasoning int64 `json:"reasoning"`
}

// ErrNotFound is returned for a run or step that is not the caller's, or
// not of the thread named.
var ErrNotFound = fmt.Errorf("inspect: %w", store.ErrNotFound)

// Steps returns the steps of a run of owner, in the order they started.
// threadID, when set, must be the run's thread.
func Steps(ctx context.Context, st store.Ops, owner, threadID, runID string) (*Run, error) {
	r, _, err := steps(ctx, st, owner, threadID, runID)
	return r, err
}

func steps(ctx context.Context, st store.Ops, owner, threadID, runID string) (*Run, []*store.Checkpoint, error) {
	latest, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("inspect: run %s: %w", runID, err)
	}
	if threadID != "" && latest.ThreadID != threadID {
		return nil, nil, ErrNotFound
	}
	cps := []*store.Checkpoint{latest}
	for cp := latest; cp.ParentID != "" && len(cps) < maxChain; {
		cp, err = st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ParentID})
		if errors.Is(err, store.ErrNotFound) {
			// Pruned by the checkpoints' retention: the waits before it
			// are not listed (the calls still are).
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("inspect: run %s: %w", runID, err)
		}
		cps = append(cps, cp)
	}
	slices.Reverse(cps)
	recs, err := st.ListCallRecords(ctx, &store.ListCallRecordsParams{OwnerID: owner, RunID: runID})
	if err != nil {
		return nil, nil, fmt.Errorf("inspect: run %s: %w", runID, err)
	}
	s := latest.State
	r := &Run{Object: "list", RunID: runID, ThreadID: latest.ThreadID, Status: string(latest.Status), Agent: s.Agent, StartedAt: s.StartedAt,
		CheckpointID: latest.ID, Steps: make([]*Step, 0, len(recs)+2)}
	for _, c := range recs {
		step := fromRecord(c)
		if step.Tokens != nil {
			r.Tokens.add(step.Tokens)
		}
		r.Steps = append(r.Steps, step)
	}
	r.Steps = append(r.Steps, waits(cps, time.Now())...)
	slices.SortStableFunc(r.Steps, func(a, b *Step) int { return a.StartedAt.Compare(b.StartedAt) })
	return r, cps, nil
}

func (t *Tokens) add(o *Tokens) {
	t.Input += o.Input
	t.Output += o.Output
	t.Cached += o.Cached
	t.Reasoning += o.Reasoning
}

var stepTypes = map[string]string{"model": StepModelCall, "tool": StepToolCall, "agent_tool": StepAgentToolCall, "transfer": StepTransfer}

func fromRecord(c *store.CallRecord) *Step {
	s := &Step{ID: c.ID, Object: "run.step", Type: stepTypes[c.Kind], Agent: c.Agent, Sub: c.Sub, StartedAt: c.StartedAt,
		DurationMS: ms(c.Latency), CheckpointID: c.CheckpointID, CheckpointStep: c.Step, Model: c.Model, Name: c.Name, CallID: c.CallID,
		Error: c.Error, FinishReason: c.FinishReason, RequestID: c.RequestID, Truncated: c.Truncated}
	if c.Kind == "model" {
		s.Tokens = &Tokens{Input: c.Usage.InputTokens, Output: c.Usage.OutputTokens, Cached: c.Usage.CachedTokens, Reasoning: c.Usage.ReasoningTokens}
		if c.FirstToken > 0 {
			f := ms(c.FirstToken)
			s.FirstTokenMS = &f
		}
	}
	return s
}

// waits are the steps of a run's checkpoints: each wait for an approval
// and each hand-over to a worker.
func waits(cps []*store.Checkpoint, now time.Time) []*Step {
	var out []*Step
	for i, cp := range cps {
		typ := ""
		switch cp.Status {
		case runstate.StatusInterrupted:
			typ = StepApproval
		case runstate.StatusSuspended:
			typ = StepBackground
		default:
			continue
		}
		s := &Step{ID: waitPrefix + cp.ID, Object: "run.step", Type: typ, Agent: cp.State.Agent, StartedAt: cp.CreatedAt,
			CheckpointID: cp.ID, CheckpointStep: cp.Step, Ongoing: true}
		if it := cp.State.Interrupt; it != nil && typ == StepApproval {
			names := make([]string, 0, len(it.ActionRequests))
			for _, a := range it.ActionRequests {
				names = append(names, a.Name)
			}
			s.Name = strings.Join(names, ",")
		}
		end := now
		for _, next := range cps[i+1:] {
			// An approval ends when the run moves past it; a hand-over
			// when the worker's run stops.
			if typ == StepApproval || (next.Status != runstate.StatusRunning && next.Status != runstate.StatusSuspended) {
				end, s.Ongoing = next.CreatedAt, false
				s.CheckpointID, s.CheckpointStep = next.ID, next.Step
				break
			}
		}
		if typ == StepBackground && s.Ongoing && len(cps) > i+1 {
			// The worker has taken it and is still at it.
			last := cps[len(cps)-1]
			s.CheckpointID, s.CheckpointStep = last.ID, last.Step
		}
		s.DurationMS = ms(end.Sub(s.StartedAt))
		out = append(out, s)
	}
	return out
}

// GetStep returns one step of a run in full: a model call's request and
// answer, a tool call's arguments and output, a wait's interrupt.
func GetStep(ctx context.Context, st store.Ops, owner, threadID, runID, stepID string) (*Step, error) {
	if id, ok := strings.CutPrefix(stepID, waitPrefix); ok {
		r, cps, err := steps(ctx, st, owner, threadID, runID)
		if err != nil {
			return nil, err
		}
		for _, s := range r.Steps {
			if s.ID != stepID {
				continue
			}
			for _, cp := range cps {
				if cp.ID == id {
					s.Detail, _ = json.Marshal(map[string]any{"status": cp.Status, "interrupt": cp.State.Interrupt, "pending": cp.State.Pending})
				}
			}
			return s, nil
		}
		return nil, ErrNotFound
	}
	c, err := st.GetCallRecord(ctx, &store.GetCallRecordParams{OwnerID: owner, ID: stepID})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("inspect: step %s: %w", stepID, err)
	}
	if c.RunID != runID || (threadID != "" && c.ThreadID != threadID) {
		return nil, ErrNotFound
	}
	s := fromRecord(c)
	s.Detail = c.Detail
	var d struct {
		Attempts []json.RawMessage `json:"attempts"`
	}
	if json.Unmarshal(c.Detail, &d) == nil {
		s.Retries = len(d.Attempts)
	}
	return s, nil
}
