package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/batonhq/baton/runner"
)

type printer interface {
	print(runner.Event)
	done()
}

type jsonPrinter struct{ enc *json.Encoder }

func (p *jsonPrinter) print(e runner.Event) { _ = p.enc.Encode(e) }
func (p *jsonPrinter) done()                {}

// textPrinter writes a readable transcript.
type textPrinter struct {
	w         io.Writer
	file      string // network file, for hints
	database  string // --database, for hints
	runID     string
	streaming string // agent whose text is being streamed
}

func (p *textPrinter) endLine() {
	if p.streaming != "" {
		fmt.Fprintln(p.w)
		p.streaming = ""
	}
}

func (p *textPrinter) print(ev runner.Event) {
	switch e := ev.(type) {
	case *runner.RunStartEvent:
		p.runID = e.RunID
		verb := "run"
		if e.Resumed {
			verb = "resumed run"
		}
		fmt.Fprintf(p.w, "── %s %s · thread %s · network %s (%s)\n", verb, e.RunID, e.ThreadID, e.Network, e.Fingerprint)
	case *runner.AgentStartEvent:
		p.endLine()
		fmt.Fprintf(p.w, "▶ %s is active", e.Agent)
		if e.Reason != "" {
			fmt.Fprintf(p.w, " (%s)", e.Reason)
		}
		fmt.Fprintln(p.w)
	case *runner.TextDeltaEvent:
		if p.streaming != e.Agent {
			p.endLine()
			fmt.Fprintf(p.w, "%s: ", e.Agent)
			p.streaming = e.Agent
		}
		fmt.Fprint(p.w, e.Delta)
	case *runner.ReasoningEvent:
		p.endLine()
		if e.Hidden {
			fmt.Fprintf(p.w, "  … %s reasoned (not shown by the provider)\n", e.Agent)
		} else {
			fmt.Fprintf(p.w, "  … %s thinks: %s\n", e.Agent, oneLine(e.Text))
		}
	case *runner.MessageEvent:
		p.message(e)
	case *runner.ToolCallEvent:
		p.endLine()
		fmt.Fprintf(p.w, "  → %s calls %s %s\n", e.Agent, e.Name, compact(e.Arguments))
	case *runner.ToolResultEvent:
		if e.Error != "" {
			fmt.Fprintf(p.w, "  ← %s failed: %s\n", e.Name, oneLine(e.Error))
		} else {
			fmt.Fprintf(p.w, "  ← %s: %s\n", e.Name, oneLine(e.Output))
		}
	case *runner.TransferEvent:
		p.transfer(e)
	case *runner.TransferRejectedEvent:
		fmt.Fprintf(p.w, "✗ transfer %s → %s rejected: %s\n", e.From, e.To, e.Error)
	case *runner.InterruptEvent:
		p.interrupt(e)
	case *runner.SuspendedEvent:
		p.endLine()
		fmt.Fprintf(p.w, "⏸ handed to a background worker before %s\n", strings.Join(e.Calls, ", "))
	case *runner.ErrorEvent:
		p.endLine()
		fmt.Fprintf(p.w, "✗ error (%s", e.Kind)
		if e.Limit != "" {
			fmt.Fprintf(p.w, ", limit %s", e.Limit)
		}
		fmt.Fprintf(p.w, "): %s\n", e.Message)
	case *runner.RunEndEvent:
		p.endLine()
		fmt.Fprintf(p.w, "── %s · last agent %s · %d turns · %d transfers · %d tokens\n", e.Status, e.LastAgent, e.Turns, e.Transfers, e.Usage.Total())
	}
}

// message ends an answer: its text unless it was streamed, and how it
// ended unless it ended as usual.
func (p *textPrinter) message(e *runner.MessageEvent) {
	if p.streaming != e.Agent {
		p.endLine()
		fmt.Fprintf(p.w, "%s: %s\n", e.Agent, e.Text)
	}
	p.endLine()
	switch e.FinishReason {
	case "", "stop", "tool_calls":
	default:
		fmt.Fprintf(p.w, "  (the answer ended with %s)\n", e.FinishReason)
	}
}

// transfer shows a transfer with its reason and its typed context.
func (p *textPrinter) transfer(e *runner.TransferEvent) {
	p.endLine()
	fmt.Fprintf(p.w, "⇒ transfer %s → %s (%s, history %s)", e.From, e.To, e.TransferType, e.HistoryPolicy)
	if e.Reason != "" {
		fmt.Fprintf(p.w, ": %s", e.Reason)
	}
	fmt.Fprintln(p.w)
	if len(e.Context) > 0 {
		fmt.Fprintf(p.w, "  context %s\n", compact(e.Context))
	}
}

// interrupt shows the calls that wait for approval and the command that
// decides them.
func (p *textPrinter) interrupt(e *runner.InterruptEvent) {
	p.endLine()
	fmt.Fprintf(p.w, "⏸ waiting for approval (interrupt %s):\n", e.Interrupt.ID)
	for _, ar := range e.Interrupt.ActionRequests {
		fmt.Fprintf(p.w, "  - %s %s\n", ar.Name, compact(ar.Args))
	}
	db := ""
	if p.database != "" {
		db = " --database " + p.database
	}
	fmt.Fprintf(p.w, "  decide with: baton resume %s --run %s%s --decision approve|reject|edit\n", p.file, p.runID, db)
}

func (p *textPrinter) done() { p.endLine() }

func compact(b json.RawMessage) string {
	if len(b) == 0 {
		return "{}"
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
