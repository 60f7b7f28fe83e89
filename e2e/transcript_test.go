package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// substance renders the events of one run (run is its id) as lines that do
// not depend on where the run executed. Left out:
//
//   - text_delta: a run's events after a hand-over to a worker reach
//     `baton serve`'s stream rebuilt from the stored checkpoints, where
//     deltas are folded into their message events (the message's text is
//     compared);
//   - draft (never decoded: not a runner event): the progress of a
//     worker's placeholder message, which only a run handed to the
//     background has;
//   - the hand-over itself: suspended, the run_end with status suspended
//     and the worker's run_start with resumed set, present only where the
//     run went to the background;
//   - seq: the hand-over takes two seqs (suspended, run_end), so later
//     events are numbered two higher; and the ids of runs and threads,
//     which differ by run (a message id keeps its part after the run id);
//   - the reason of the run's first agent_start (the picker's): it is not
//     stored, so the events of a run that the server no longer holds in
//     memory (it restarted), rebuilt from the run's checkpoints, lack it
//     (runner.EventsBetween).
//
// Tool results are compared with their receipt masked (it is made from the
// call's key, which holds the run id); [effects.checkResult] checks it.
func substance(run string, evs []runner.Event) []string {
	var out []string
	add := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	started := false
	for _, ev := range evs {
		switch e := ev.(type) {
		case *runner.TextDeltaEvent, *runner.SuspendedEvent:
		case *runner.RunStartEvent:
			if !e.Resumed {
				add("run_start %s %s own-id=%t agent=%s", e.Network, e.Fingerprint, e.RunID == run, e.Agent)
			}
		case *runner.AgentStartEvent:
			if !started {
				add("agent_start %s", e.Agent)
				started = true
				continue
			}
			add("agent_start %s reason=%s", e.Agent, e.Reason)
		case *runner.MessageEvent:
			add("message %s %q id=%s usage=%+v", e.Agent, e.Text, strings.TrimPrefix(e.MessageID, run), e.Usage)
		case *runner.ToolCallEvent:
			add("tool_call %s %s %s %s", e.Agent, e.Name, e.ID, e.Arguments)
		case *runner.ToolResultEvent:
			add("tool_result %s %s %s %s error=%q", e.Agent, e.Name, e.ID, maskReceipt(e.Output), e.Error)
		case *runner.TransferEvent:
			add("transfer %s -> %s %s tool=%s reason=%q context=%s history=%s", e.From, e.To, e.TransferType, e.Tool, e.Reason, e.Context, e.HistoryPolicy)
		case *runner.TransferRejectedEvent:
			add("transfer_rejected %s -> %s %s %q", e.From, e.To, e.Tool, e.Error)
		case *runner.ErrorEvent:
			add("error %s %q", e.Kind, e.Message)
		case *runner.RunEndEvent:
			if e.Status != runstate.StatusSuspended {
				add("run_end %s last=%s turns=%d transfers=%d usage=%+v output=%q", e.Status, e.LastAgent, e.Turns, e.Transfers, e.Usage, e.Output)
			}
		default:
			add("%s", ev.EventType())
		}
	}
	return out
}

// transcript renders a thread's messages (placeholders left out) as lines
// without ids, tool results with their receipt masked.
func transcript(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s/%s/%s: %q", m.Role, m.Agent, m.Status, m.Text())
		for _, p := range m.Parts {
			switch p.Type {
			case message.PartToolCall:
				fmt.Fprintf(&b, " [call %s %s %s]", p.Name, p.CallID, p.Arguments)
			case message.PartToolResult:
				fmt.Fprintf(&b, " [result %s %s %s error=%t]", p.Name, p.CallID, maskReceipt(p.Text), p.IsError)
			}
		}
		if m.Usage != nil {
			fmt.Fprintf(&b, " usage=%d/%d", m.Usage.InputTokens, m.Usage.OutputTokens)
		}
		if len(m.Metadata) > 0 {
			md, _ := json.Marshal(m.Metadata)
			fmt.Fprintf(&b, " metadata=%s", md)
		}
		out = append(out, b.String())
	}
	return out
}

// diff returns the lines of got and want side by side from the first
// difference, or "" when they are equal.
func diff(got, want []string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	if i == len(got) && i == len(want) {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d (got %d lines, want %d)\n", i+1, len(got), len(want))
	for j := max(0, i-2); j < max(len(got), len(want)) && j < i+6; j++ {
		g, w := "(none)", "(none)"
		if j < len(got) {
			g = got[j]
		}
		if j < len(want) {
			w = want[j]
		}
		mark := "  "
		if g != w {
			mark = "! "
		}
		fmt.Fprintf(&b, "%s%3d got:  %s\n%s    want: %s\n", mark, j+1, g, mark, w)
	}
	return b.String()
}
