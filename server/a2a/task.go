package a2a

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/webhook/a2apush"
)

func historyLength(c *a2a.MessageSendConfig) *int {
	if c == nil {
		return nil
	}
	return c.HistoryLength
}

// taskState is the A2A state of a run's status.
func taskState(st runstate.Status) a2a.TaskState { return a2apush.TaskState(st) }

// taskFold folds a run's events into its A2A task and the updates that
// stream it.
type taskFold struct {
	info    a2a.TaskInfo
	state   a2a.TaskState
	answer  strings.Builder
	started bool // the answer artifact has text
	// deltas is set when the current message's text came as deltas.
	deltas    bool
	history   []*a2a.Message
	status    *a2a.Message
	lastAgent string
	usage     *message.Usage
	failure   string
	final     bool
}

func newTaskFold(run *server.Run) *taskFold {
	return &taskFold{info: a2a.TaskInfo{TaskID: a2a.TaskID(run.ID()), ContextID: run.ThreadID()}, state: a2a.TaskStateSubmitted}
}

// request puts the message that started the task's latest execution in
// its history.
func (f *taskFold) request(m *a2a.Message) {
	if m == nil {
		return
	}
	c := *m
	c.TaskID, c.ContextID = f.info.TaskID, f.info.ContextID
	f.history = append(f.history, &c)
}

// settled reports whether the task is final or waits for input.
func (f *taskFold) settled() bool { return f.final }

func (f *taskFold) agentMessage(text string) *a2a.Message {
	m := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleAgent, TaskID: f.info.TaskID, ContextID: f.info.ContextID, Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}
	if f.lastAgent != "" {
		m.Metadata = map[string]any{"baton": map[string]any{"agent": f.lastAgent}}
	}
	return m
}

func (f *taskFold) metadata() map[string]any {
	b := map[string]any{"run_id": string(f.info.TaskID), "thread_id": f.info.ContextID}
	if f.lastAgent != "" {
		b["last_agent"] = f.lastAgent
	}
	if f.usage != nil {
		b["usage"] = map[string]any{"input_tokens": f.usage.InputTokens, "output_tokens": f.usage.OutputTokens}
	}
	return map[string]any{"baton": b}
}

// appendText adds text to the answer and returns its artifact update.
func (f *taskFold) appendText(text string, sep bool) a2a.Event {
	if sep && f.answer.Len() > 0 {
		text = "\n\n" + text
	}
	f.answer.WriteString(text)
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: f.info.TaskID, ContextID: f.info.ContextID, Append: f.started,
		Artifact: &a2a.Artifact{ID: answerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}}
	f.started = true
	return ev
}

func (f *taskFold) statusEvent(final bool, meta map[string]any) a2a.Event {
	now := time.Now().UTC()
	return &a2a.TaskStatusUpdateEvent{TaskID: f.info.TaskID, ContextID: f.info.ContextID, Final: final,
		Status: a2a.TaskStatus{State: f.state, Message: f.status, Timestamp: &now}, Metadata: meta}
}

// add folds an event and returns the A2A events that stream it.
func (f *taskFold) add(e server.Entry) []a2a.Event {
	batonEvent := func() map[string]any {
		var v map[string]any
		_ = json.Unmarshal(e.Data, &v)
		return map[string]any{"baton": map[string]any{"event": v}}
	}
	switch runner.EventType(e.Type) {
	case runner.TypeRunStart:
		var ev runner.RunStartEvent
		if json.Unmarshal(e.Data, &ev) != nil {
			return nil
		}
		f.state, f.status, f.final, f.failure = a2a.TaskStateWorking, nil, false, ""
		if ev.Agent != "" {
			f.lastAgent = ev.Agent
		}
		return []a2a.Event{f.statusEvent(false, batonEvent())}
	case runner.TypeAgentStart:
		var ev runner.AgentStartEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			f.lastAgent = ev.Agent
		}
		return []a2a.Event{f.statusEvent(false, batonEvent())}
	case runner.TypeTextDelta:
		var ev runner.TextDeltaEvent
		if json.Unmarshal(e.Data, &ev) != nil || ev.Delta == "" {
			return nil
		}
		sep := !f.deltas
		f.deltas = true
		return []a2a.Event{f.appendText(ev.Delta, sep)}
	case runner.TypeMessage:
		return f.message(e)
	case runner.TypeToolCall, runner.TypeToolResult, runner.TypeTransfer, runner.TypeTransferRejected, runner.TypeSuspended:
		return []a2a.Event{f.statusEvent(false, batonEvent())}
	case runner.TypeInterrupt:
		f.interrupted(e)
		return nil
	case runner.TypeError:
		var ev runner.ErrorEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			f.failure = ev.Message
		}
		return nil
	case runner.TypeRunEnd:
		return f.runEnd(e)
	}
	return nil
}

// message folds an agent's message into the history, and its text into
// the answer if its deltas did not bring it.
func (f *taskFold) message(e server.Entry) []a2a.Event {
	var ev runner.MessageEvent
	if json.Unmarshal(e.Data, &ev) != nil {
		return nil
	}
	deltas := f.deltas
	f.deltas = false
	if ev.Text != "" {
		f.history = append(f.history, f.agentMessage(ev.Text))
	}
	if !deltas && ev.Text != "" {
		return []a2a.Event{f.appendText(ev.Text, true)}
	}
	return nil
}

// interrupted makes the task wait for input: the decision on the
// interrupt.
func (f *taskFold) interrupted(e server.Entry) {
	var ev runner.InterruptEvent
	if json.Unmarshal(e.Data, &ev) != nil || ev.Interrupt == nil {
		return
	}
	f.state = a2a.TaskStateInputRequired
	f.status = f.agentMessage(a2apush.WaitingText(ev.Interrupt))
	f.status.Metadata = map[string]any{"baton": map[string]any{"interrupt": ev.Interrupt}}
}

// runEnd settles the task at the run's end; a run handed to a background
// worker goes on.
func (f *taskFold) runEnd(e server.Entry) []a2a.Event {
	var ev runner.RunEndEvent
	if json.Unmarshal(e.Data, &ev) != nil {
		return nil
	}
	u := ev.Usage
	f.usage = &u
	if ev.LastAgent != "" {
		f.lastAgent = ev.LastAgent
	}
	switch ev.Status {
	case runstate.StatusCompleted:
		f.state, f.final = a2a.TaskStateCompleted, true
		if ev.Output != "" {
			f.status = f.agentMessage(ev.Output)
		}
	case runstate.StatusCancelled:
		f.state, f.final = a2a.TaskStateCanceled, true
		if ev.Output != "" {
			f.status = f.agentMessage(ev.Output)
		}
	case runstate.StatusFailed:
		f.state, f.final = a2a.TaskStateFailed, true
		why := f.failure
		if why == "" {
			why = "the run failed"
		}
		f.status = f.agentMessage(why)
	case runstate.StatusInterrupted:
		f.state, f.final = a2a.TaskStateInputRequired, true
	default:
		// suspended: a background worker goes on with the run.
		return []a2a.Event{f.statusEvent(false, f.metadata())}
	}
	return []a2a.Event{f.statusEvent(true, f.metadata())}
}

// task is the task as folded so far; history, if not nil, bounds the
// messages of its history (the latest kept).
func (f *taskFold) task(history *int) *a2a.Task {
	now := time.Now().UTC()
	t := &a2a.Task{ID: f.info.TaskID, ContextID: f.info.ContextID, Status: a2a.TaskStatus{State: f.state, Message: f.status, Timestamp: &now},
		History: f.history, Metadata: f.metadata()}
	if f.answer.Len() > 0 {
		t.Artifacts = []*a2a.Artifact{{ID: answerArtifact, Name: "answer", Parts: a2a.ContentParts{a2a.TextPart{Text: f.answer.String()}}}}
	}
	if history != nil {
		switch n := *history; {
		case n <= 0:
			t.History = []*a2a.Message{}
		case n < len(t.History):
			t.History = t.History[len(t.History)-n:]
		}
	}
	if t.History == nil {
		t.History = []*a2a.Message{}
	}
	return t
}
