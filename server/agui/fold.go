package agui

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/runlog"
)

// aguiFold turns a baton run's events into AG-UI events. It is fed every
// event of the run from its start, live or rebuilt from checkpoints, and
// keeps what an AG-UI stream needs across them: the open text message, the
// open step (the active agent), whether an AG-UI run is open.
type aguiFold struct {
	runID, threadID, aguiRunID, network string
	state                               map[string]json.RawMessage

	inRun    bool   // RUN_STARTED sent, not yet finished
	step     string // the open step: the active agent
	agent    string
	status   string
	textOpen bool
	textN    int // text messages opened so far
	textSent int // bytes of the open message's text sent
	lastText string
	reasonN  int
	// failure is the error event that ends a failed run; interrupt the
	// interrupt that stops one.
	failure   *runner.ErrorEvent
	interrupt *runstate.Interrupt

	// settled is set by the RUN_FINISHED or RUN_ERROR of the last event.
	settled bool
	out     []aguiEvent
}

// aguiEvent is an AG-UI event and the text state after it.
type aguiEvent struct {
	v      map[string]any
	open   bool
	n, b   int
	settle bool
}

func newAGUIFold(runID, threadID, aguiRunID, network string, state map[string]json.RawMessage) *aguiFold {
	return &aguiFold{runID: runID, threadID: threadID, aguiRunID: aguiRunID, network: network, state: state}
}

func (f *aguiFold) emit(typ string, kv ...any) {
	v := map[string]any{"type": typ}
	for i := 0; i+1 < len(kv); i += 2 {
		v[kv[i].(string)] = kv[i+1]
	}
	f.out = append(f.out, aguiEvent{v: v, open: f.textOpen, n: f.textN, b: f.textSent})
}

func (f *aguiFold) textID(n int) string       { return f.runID + ":t" + strconv.Itoa(n) }
func (f *aguiFold) toolID(call string) string { return f.runID + ":" + call }

func (f *aguiFold) batonState() map[string]any {
	return map[string]any{"thread_id": f.threadID, "run_id": f.runID, "network": f.network, "agent": f.agent, "status": f.status}
}

func (f *aguiFold) snapshot() map[string]any {
	out := map[string]any{}
	for k, v := range f.state {
		out[k] = v
	}
	out["baton"] = f.batonState()
	return out
}

func (f *aguiFold) delta(path string, value any) {
	f.emit("STATE_DELTA", "delta", []any{map[string]any{"op": "add", "path": "/baton/" + path, "value": value}})
}

func (f *aguiFold) openRun(agent string) {
	f.inRun, f.settled, f.failure, f.interrupt = true, false, nil, nil
	f.agent, f.status = agent, "running"
	f.emit("RUN_STARTED", "threadId", f.threadID, "runId", f.aguiRunID)
	f.emit("STATE_SNAPSHOT", "snapshot", f.snapshot())
	f.setStep(agent)
}

func (f *aguiFold) setStep(agent string) {
	if agent == f.step {
		return
	}
	f.closeStep()
	if agent != "" {
		f.step = agent
		f.emit("STEP_STARTED", "stepName", agent)
	}
}

func (f *aguiFold) closeStep() {
	if f.step != "" {
		f.emit("STEP_FINISHED", "stepName", f.step)
		f.step = ""
	}
}

func (f *aguiFold) openText(agent string) {
	if f.textOpen {
		return
	}
	f.textN++
	f.textOpen, f.textSent = true, 0
	f.emit("TEXT_MESSAGE_START", "messageId", f.textID(f.textN), "role", "assistant", "name", agent)
}

func (f *aguiFold) closeText() {
	if !f.textOpen {
		return
	}
	f.textOpen = false
	f.lastText = f.textID(f.textN)
	f.emit("TEXT_MESSAGE_END", "messageId", f.lastText)
}

// add folds a baton event and returns the AG-UI events it makes.
func (f *aguiFold) add(e server.Entry) []aguiEvent {
	f.out = f.out[:0]
	f.addEntry(e)
	return f.out
}

func (f *aguiFold) addEntry(e server.Entry) {
	if h := folds[runner.EventType(e.Type)]; h != nil {
		h(f, e)
	}
}

// folds translate the baton events of a type; the events of the types not
// here make no AG-UI event.
var folds = map[runner.EventType]func(f *aguiFold, e server.Entry){
	runner.TypeRunStart:         (*aguiFold).runStart,
	runner.TypeAgentStart:       (*aguiFold).agentStart,
	runner.TypeTextDelta:        (*aguiFold).textDelta,
	runner.TypeMessage:          (*aguiFold).message,
	runner.TypeReasoning:        (*aguiFold).reasoning,
	runner.TypeToolCall:         (*aguiFold).toolCall,
	runner.TypeToolResult:       (*aguiFold).toolResult,
	runner.TypeTransfer:         (*aguiFold).transfer,
	runner.TypeTransferRejected: customFold("baton.transfer_rejected"),
	runner.TypeInterrupt:        (*aguiFold).interruptEvent,
	runner.TypeSuspended:        (*aguiFold).suspended,
	runner.TypeError:            (*aguiFold).errorEvent,
	runner.TypeRunEnd:           (*aguiFold).runEndEvent,
	"draft":                     customFold("baton.draft"),
}

// customFold returns the fold of an event that is a CUSTOM event of a name
// (its value the baton event) within the AG-UI run.
func customFold(name string) func(f *aguiFold, e server.Entry) {
	return func(f *aguiFold, e server.Entry) {
		if f.inRun {
			f.emitCustom(name, e)
		}
	}
}

// emitCustom emits a CUSTOM event of a name whose value is e's JSON.
func (f *aguiFold) emitCustom(name string, e server.Entry) {
	var v map[string]any
	_ = json.Unmarshal(e.Data, &v)
	f.emit("CUSTOM", "name", name, "value", v)
}

func (f *aguiFold) runStart(e server.Entry) {
	ev, ok := runlog.Decode[runner.RunStartEvent](e)
	if !ok {
		return
	}
	if !f.inRun {
		f.openRun(ev.Agent)
		return
	}
	// A worker took the run over (or adopted it after a crash).
	f.status = "running"
	f.emitCustom("baton.resumed", e)
	f.delta("status", "running")
}

func (f *aguiFold) agentStart(e server.Entry) {
	ev, ok := runlog.Decode[runner.AgentStartEvent](e)
	if !ok || !f.inRun {
		return
	}
	f.lastText = ""
	if ev.Agent != f.agent {
		f.agent = ev.Agent
		f.delta("agent", ev.Agent)
	}
	f.setStep(ev.Agent)
}

func (f *aguiFold) textDelta(e server.Entry) {
	ev, ok := runlog.Decode[runner.TextDeltaEvent](e)
	if !ok || ev.Delta == "" || !f.inRun {
		return
	}
	f.openText(ev.Agent)
	f.textSent += len(ev.Delta)
	f.emit("TEXT_MESSAGE_CONTENT", "messageId", f.textID(f.textN), "delta", ev.Delta)
}

// message ends a text message: the part of its text that its deltas did
// not bring (all of it, when rebuilt from a checkpoint) is sent first.
func (f *aguiFold) message(e server.Entry) {
	ev, ok := runlog.Decode[runner.MessageEvent](e)
	if !ok || !f.inRun || ev.Text == "" && !f.textOpen {
		return
	}
	f.openText(ev.Agent)
	if n := f.textSent; n < len(ev.Text) && utf8.RuneStart(ev.Text[n]) {
		f.textSent = len(ev.Text)
		f.emit("TEXT_MESSAGE_CONTENT", "messageId", f.textID(f.textN), "delta", ev.Text[n:])
	}
	f.closeText()
}

func (f *aguiFold) reasoning(e server.Entry) {
	ev, ok := runlog.Decode[runner.ReasoningEvent](e)
	if !ok || !f.inRun || ev.Text == "" {
		return
	}
	f.reasonN++
	id := f.runID + ":r" + strconv.Itoa(f.reasonN)
	f.emit("REASONING_START", "messageId", id)
	f.emit("REASONING_MESSAGE_START", "messageId", id, "role", "reasoning")
	f.emit("REASONING_MESSAGE_CONTENT", "messageId", id, "delta", ev.Text)
	f.emit("REASONING_MESSAGE_END", "messageId", id)
	f.emit("REASONING_END", "messageId", id)
}

func (f *aguiFold) toolCall(e server.Entry) {
	ev, ok := endingText[runner.ToolCallEvent](f, e)
	if !ok {
		return
	}
	id := f.toolID(ev.ID)
	start := []any{"toolCallId", id, "toolCallName", ev.Name}
	if f.lastText != "" {
		start = append(start, "parentMessageId", f.lastText)
	}
	f.emit("TOOL_CALL_START", start...)
	args := string(ev.Arguments)
	if args == "" {
		args = "{}"
	}
	f.emit("TOOL_CALL_ARGS", "toolCallId", id, "delta", args)
	f.emit("TOOL_CALL_END", "toolCallId", id)
}

func (f *aguiFold) toolResult(e server.Entry) {
	ev, ok := endingText[runner.ToolResultEvent](f, e)
	if !ok {
		return
	}
	f.lastText = ""
	id := f.toolID(ev.ID)
	content := ev.Output
	kv := []any{"messageId", id + ":result", "toolCallId", id, "role", "tool"}
	if ev.Error != "" {
		content = ev.Error
		kv = append(kv, "metadata", map[string]any{"baton": map[string]any{"error": true}})
	}
	f.emit("TOOL_CALL_RESULT", append(kv, "content", content)...)
}

func (f *aguiFold) transfer(e server.Entry) {
	if _, ok := endingText[runner.TransferEvent](f, e); ok {
		f.emitCustom("baton.transfer", e)
	}
}

// endingText decodes e as a T of the open run, which ends the text message
// open, if any; ok is false, and nothing is ended, when e is not a T or no
// run is open.
func endingText[T any](f *aguiFold, e server.Entry) (*T, bool) {
	ev, ok := runlog.Decode[T](e)
	if !ok || !f.inRun {
		return nil, false
	}
	f.closeText()
	return ev, true
}

func (f *aguiFold) interruptEvent(e server.Entry) {
	if ev, ok := runlog.Decode[runner.InterruptEvent](e); ok {
		f.interrupt = ev.Interrupt
	}
}

func (f *aguiFold) suspended(e server.Entry) {
	if !f.inRun {
		return
	}
	f.closeText()
	f.status = "background"
	f.emitCustom("baton.suspended", e)
	f.delta("status", "background")
}

func (f *aguiFold) errorEvent(e server.Entry) {
	if ev, ok := runlog.Decode[runner.ErrorEvent](e); ok {
		f.failure = ev
	}
}

func (f *aguiFold) runEndEvent(e server.Entry) {
	if ev, ok := runlog.Decode[runner.RunEndEvent](e); ok && f.inRun {
		f.runEnd(ev)
	}
}

// runEnd ends the AG-UI run when the baton run is final or waits for a
// decision; a run handed to a worker goes on.
func (f *aguiFold) runEnd(ev *runner.RunEndEvent) {
	if ev.Status == runstate.StatusSuspended || ev.Status == runstate.StatusRunning {
		return
	}
	f.closeText()
	f.status = string(ev.Status)
	f.delta("status", f.status)
	f.closeStep()
	f.inRun, f.settled = false, true
	if ev.LastAgent != "" {
		f.agent = ev.LastAgent
	}
	usage := []any{map[string]any{"inputTokens": ev.Usage.InputTokens, "outputTokens": ev.Usage.OutputTokens, "totalTokens": ev.Usage.InputTokens + ev.Usage.OutputTokens}}
	if ev.Status == runstate.StatusFailed {
		msg, code := "the run failed", string(runner.KindSystem)
		if f.failure != nil {
			msg, code = f.failure.Message, string(f.failure.Kind)
		}
		f.emit("RUN_ERROR", "message", msg, "code", code, "usage", usage)
		f.out[len(f.out)-1].settle = true
		return
	}
	result := map[string]any{"status": string(ev.Status), "output": ev.Output, "last_agent": ev.LastAgent, "turns": ev.Turns,
		"transfers": ev.Transfers, "run_id": f.runID, "thread_id": f.threadID}
	outcome := map[string]any{"type": "success"}
	if ev.Status == runstate.StatusInterrupted && f.interrupt != nil {
		outcome = map[string]any{"type": "interrupt", "interrupts": f.interrupts(f.interrupt)}
	}
	f.emit("RUN_FINISHED", "threadId", f.threadID, "runId", f.aguiRunID, "outcome", outcome, "result", result, "usage", usage)
	f.out[len(f.out)-1].settle = true
}

// aguiDecisionSchema is the responseSchema of an approval: the payload of
// a resume entry that answers it.
var aguiDecisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"type":    map[string]any{"type": "string", "enum": []string{"approve", "edit", "reject"}},
		"args":    map[string]any{"type": "object", "description": "the edited arguments (type edit)"},
		"message": map[string]any{"type": "string", "description": "why (type reject)"},
	},
	"required": []string{"type"},
}

// interrupts are the AG-UI interrupts of a baton interrupt: one per call
// that waits for approval, id "INTERRUPT/CALL".
func (f *aguiFold) interrupts(in *runstate.Interrupt) []any {
	var out []any
	for _, ar := range in.ActionRequests {
		var args any
		_ = json.Unmarshal(ar.Args, &args)
		out = append(out, map[string]any{
			"id": in.ID + "/" + ar.CallID, "reason": in.Source, "message": ar.Description, "toolCallId": f.toolID(ar.CallID),
			"responseSchema": aguiDecisionSchema,
			"metadata": map[string]any{"baton": map[string]any{"interrupt_id": in.ID, "call_id": ar.CallID, "tool": ar.Name, "args": args,
				"decision_url": server.DecisionURL(in.ID)}},
		})
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"id": in.ID, "reason": in.Source, "responseSchema": aguiDecisionSchema,
			"metadata": map[string]any{"baton": map[string]any{"interrupt_id": in.ID, "decision_url": server.DecisionURL(in.ID)}}})
	}
	return out
}
