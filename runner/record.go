package runner

import (
	"sync"
	"time"

	"github.com/batonhq/baton/model"
)

// This file records a run's calls for an inspector ([Config].RecordCalls):
// each model call with its request as sent and its answer, each tool call,
// each transfer, handed to the extensions at the next step boundary
// ([Boundary].Calls) so that they are written in the checkpoint's
// transaction.

// CallKind is what a [CallRecord] records.
type CallKind string

// Call kinds.
const (
	CallModel     CallKind = "model"
	CallTool      CallKind = "tool"
	CallAgentTool CallKind = "agent_tool"
	CallTransfer  CallKind = "transfer"
)

// CallRecord is one call of a run as the runner made it. A record shares
// the run's values (its Request's messages are the run's history as it was
// sent): an extension given it in [Boundary].Calls must encode what it keeps
// before AtBoundary returns, and must not change it.
type CallRecord struct {
	Kind CallKind
	// Agent is the agent that made the call (the agent transferring, for a
	// transfer). Sub is set for a call of an agent-tool sub-run.
	Agent string
	Sub   bool
	// Model is the agent's model spec ("openai:gpt-4.1"), for a model call.
	Model string
	// Name is the tool's name, or the target agent of a transfer; CallID
	// the tool call's id.
	Name, CallID string
	// Request is the model request as sent: history after the transfer's
	// history policy and transforms, system prompt, tools offered,
	// settings, output schema.
	Request *model.Request
	// Response is the model's answer; nil when the call failed.
	Response *model.Response
	// Arguments and Output are a tool call's; IsError marks an error result.
	Arguments []byte
	Output    string
	IsError   bool
	// Err is the error that ended the call, "" when it succeeded.
	Err string
	// Attempts are the failed attempts that came before the last one
	// (retries), each with its error.
	Attempts []Attempt
	// Start is when the call (its first attempt) started; FirstToken is
	// the time from the last attempt's start to its first chunk (0 when
	// none came); Latency is from Start to the end of the last attempt.
	Start      time.Time
	FirstToken time.Duration
	Latency    time.Duration
}

// Attempt is a failed attempt of a call that was retried.
type Attempt struct {
	Attempt  int
	Err      string
	Start    time.Time
	Duration time.Duration
}

// recorder keeps the calls of a run made since its last boundary. The
// sub-runs of agent tools, which may run concurrently, share their
// top-level run's.
type recorder struct {
	mu    sync.Mutex
	calls []CallRecord
}

func (r *recorder) add(c CallRecord) {
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// take returns the calls recorded since the last take.
func (r *recorder) take() []CallRecord {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// modelCall tracks one model call of a recording run: its attempts.
type modelCall struct {
	start    time.Time
	attempt  time.Time
	attempts []Attempt
}

func (x *run) recordTool(pcKind string, name, callID string, args []byte, start time.Time, out string, isErr bool, err error) {
	if x.rec == nil {
		return
	}
	c := CallRecord{Kind: CallTool, Agent: x.st.Agent, Sub: x.sub, Name: name, CallID: callID, Arguments: args, Output: out, IsError: isErr,
		Start: start, Latency: time.Since(start)}
	if pcKind == string(CallAgentTool) {
		c.Kind = CallAgentTool
	}
	if err != nil {
		c.Err = err.Error()
	}
	x.rec.add(c)
}

func (x *run) recordModel(agentName, spec string, mc *modelCall, req *model.Request, resp *model.Response, err error) {
	c := CallRecord{Kind: CallModel, Agent: agentName, Sub: x.sub, Model: spec, Request: req, Response: resp, Attempts: mc.attempts,
		Start: mc.start, Latency: time.Since(mc.start)}
	if f := x.turn.cs.first; !f.IsZero() && !mc.attempt.IsZero() {
		c.FirstToken = f.Sub(mc.attempt)
	}
	if err != nil {
		c.Err = err.Error()
	}
	x.rec.add(c)
}
