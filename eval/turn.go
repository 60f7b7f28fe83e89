package eval

import (
	"context"
	"iter"
	"time"

	"github.com/batonhq/baton/eval/evalset"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/threads"
)

// StatusError is an outcome's status when the turn could not run at all.
const StatusError = "error"

// turn runs one turn on the thread *threadID (a new thread when ""),
// resuming it with the turn's decisions while it stops for approvals.
func (e *engine) turn(ctx context.Context, n *network, t *evalset.Turn, threadID *string) evalset.Outcome {
	start := time.Now()
	var o evalset.Outcome
	c := collector{o: &o, transfers: n.transfers, calls: map[string]int{}}
	events := n.net.Threads.Turn(ctx, owner, t.User, threads.TurnOptions{ThreadID: *threadID})
	decisions := t.Decisions
	for {
		c.collect(events)
		if c.threadID != "" {
			*threadID = c.threadID
		}
		if o.Status != string(runstate.StatusInterrupted) || len(decisions) == 0 || o.RunID == "" {
			break
		}
		d := decisions[0]
		decisions = decisions[1:]
		events = n.net.Threads.Resume(ctx, owner, o.RunID, runner.WithDecisions(runner.Decision{
			Type: runner.DecisionType(d.Type), CallID: d.CallID, Args: d.Args, Message: d.Message}))
	}
	if o.Answer == "" {
		o.Answer = c.lastText
	}
	o.LatencyMS = time.Since(start).Milliseconds()
	return o
}

// collector builds an outcome from a run's events.
type collector struct {
	o         *evalset.Outcome
	transfers map[string]map[string]bool
	threadID  string
	lastText  string
	// calls are the tool calls awaiting their result, by id: their index
	// in o.Tools, or -1 for a transfer's.
	calls map[string]int
	// transferCalls are the transfer calls awaiting the transfer, by tool.
	transferCalls map[string]string
}

// collect reads one run (or resumed run) to its end.
func (c *collector) collect(events iter.Seq2[runner.Event, error]) {
	o := c.o
	ended := false
	for ev, err := range events {
		if err != nil {
			if !ended {
				o.Status = StatusError
			}
			if o.Error == "" {
				o.Error = err.Error()
			}
			return
		}
		switch ev := ev.(type) {
		case *runner.RunStartEvent:
			o.RunID, c.threadID = ev.RunID, ev.ThreadID
			if o.FirstAgent == "" {
				o.FirstAgent = ev.Agent
			}
		case *runner.MessageEvent:
			if ev.Text != "" {
				c.lastText = ev.Text
			}
		case *runner.ToolCallEvent:
			c.call(ev)
		case *runner.ToolResultEvent:
			c.result(ev)
		case *runner.TransferEvent:
			o.Transfers = append(o.Transfers, evalset.Transfer{From: ev.From, To: ev.To, CallID: c.transferCalls[ev.Tool], Context: ev.Context})
		case *runner.ErrorEvent:
			o.Error = ev.Message
		case *runner.RunEndEvent:
			ended = true
			o.Status = string(ev.Status)
			if ev.Output != "" {
				o.Answer = ev.Output
			}
			o.Usage.Add(ev.Usage)
		}
	}
}

func (c *collector) call(ev *runner.ToolCallEvent) {
	if c.transfers[ev.Agent][ev.Name] {
		if c.transferCalls == nil {
			c.transferCalls = map[string]string{}
		}
		c.transferCalls[ev.Name] = ev.ID
		c.calls[ev.ID] = -1
		return
	}
	c.calls[ev.ID] = len(c.o.Tools)
	c.o.Tools = append(c.o.Tools, evalset.ToolCall{Agent: ev.Agent, ID: ev.ID, Name: ev.Name, Arguments: ev.Arguments})
}

func (c *collector) result(ev *runner.ToolResultEvent) {
	i, ok := c.calls[ev.ID]
	if !ok || i < 0 {
		return
	}
	delete(c.calls, ev.ID)
	t := &c.o.Tools[i]
	t.Output, t.IsError = ev.Output, ev.Error != ""
	if t.IsError {
		t.Output = ev.Error
	}
}

// usageOf returns the usage of a message, zero when it has none.
func usageOf(m *message.Message) message.Usage {
	if m.Usage == nil {
		return message.Usage{}
	}
	return *m.Usage
}
