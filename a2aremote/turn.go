package a2aremote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// ref is what a turn saves in its memo: the remote task it started.
type ref struct {
	TaskID    a2a.TaskID `json:"a2a_task_id"`
	ContextID string     `json:"a2a_context_id,omitempty"`
}

// turn is one model call of a remote agent.
type turn struct {
	a     *Agent
	yield func(model.Chunk, error) bool
	memo  *agent.Memo

	taskID    a2a.TaskID
	contextID string
	saved     bool
	state     a2a.TaskState
	// order and texts are the task's artifacts' text; status is its
	// status message's.
	order  []a2a.ArtifactID
	texts  map[a2a.ArtifactID]string
	status string
	// reply is the answer when the remote answered with a message.
	reply *string
	// emitted is the text yielded as deltas so far.
	emitted string
	usage   message.Usage
	stopped bool
}

func (t *turn) run(ctx context.Context, req *model.Request) (*message.Message, error) {
	a := t.a
	t.memo, _ = agent.MemoFromContext(ctx)
	card, tr, err := a.client(ctx)
	if err != nil {
		return nil, err
	}
	defer t.cancelRemote(ctx, tr)
	if r := t.loadRef(); r != nil {
		t.taskID, t.contextID, t.saved = r.TaskID, r.ContextID, true
		a.log.InfoContext(ctx, "picking up the remote agent's task", "agent", a.name, "a2a_task_id", r.TaskID)
		if err := t.follow(ctx, tr); err != nil {
			return nil, err
		}
		return t.answer()
	}
	params, err := a.message(req)
	if err != nil {
		return nil, a.permanent(err)
	}
	if card.Capabilities.Streaming {
		done, err := t.consume(ctx, tr.SendStreamingMessage(ctx, params))
		if err != nil || t.stopped {
			return nil, err
		}
		if !done {
			if t.taskID == "" {
				return nil, a.transient(errors.New("the remote agent's stream ended before it named its task"))
			}
			if err := t.follow(ctx, tr); err != nil {
				return nil, err
			}
		}
		return t.answer()
	}
	res, err := tr.SendMessage(ctx, params)
	if err != nil {
		return nil, t.callError(ctx, err)
	}
	done, err := t.apply(ctx, res)
	if err != nil || t.stopped {
		return nil, err
	}
	if !done {
		if err := t.follow(ctx, tr); err != nil {
			return nil, err
		}
	}
	return t.answer()
}

// cancelRemote cancels the remote task when the run was asked to stop
// (cancelled, or stopped by a newer turn) before the task settled: the
// remote stops working for a run that will not use its answer. A call cut
// for another reason (a shutdown handing the run to another process, which
// picks the task up) leaves it going.
func (t *turn) cancelRemote(ctx context.Context, tr a2aclient.Transport) {
	if t.taskID == "" || t.settled() || !errors.Is(context.Cause(ctx), model.ErrStopRequested) {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := tr.CancelTask(cctx, &a2a.TaskIDParams{ID: t.taskID}); err != nil {
		t.a.log.WarnContext(ctx, "cancelling the remote agent's task", "agent", t.a.name, "a2a_task_id", t.taskID, "error", err)
		return
	}
	t.a.log.InfoContext(ctx, "cancelled the remote agent's task: the run was stopped", "agent", t.a.name, "a2a_task_id", t.taskID)
}

// cancelTimeout bounds the cancel of a remote task.
const cancelTimeout = 10 * time.Second

func (t *turn) loadRef() *ref {
	if t.memo == nil {
		return nil
	}
	raw := t.memo.Load()
	if raw == nil {
		return nil
	}
	var r ref
	if json.Unmarshal(raw, &r) != nil || r.TaskID == "" {
		return nil
	}
	return &r
}

// consume applies a stream's events until the task is done or waits for
// input; it reports done, and false when the stream ended before.
func (t *turn) consume(ctx context.Context, events iter.Seq2[a2a.Event, error]) (done bool, err error) {
	for ev, err := range events {
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if isProtocol(err) {
				return false, t.callError(ctx, err)
			}
			t.a.log.WarnContext(ctx, "remote agent's stream broke", "agent", t.a.name, "a2a_task_id", t.taskID, "error", err)
			return false, nil
		}
		done, err := t.apply(ctx, ev)
		if err != nil || done || t.stopped {
			return done, err
		}
	}
	return false, ctx.Err()
}

// apply takes one event (or a send's result) into the turn; it reports
// whether the answer is complete.
func (t *turn) apply(ctx context.Context, ev a2a.Event) (done bool, err error) {
	switch e := ev.(type) {
	case *a2a.Message:
		text := partsText(e.Parts)
		t.reply = &text
		if e.ContextID != "" {
			t.contextID = e.ContextID
		}
		t.emit(text)
		return true, nil
	case *a2a.Task:
		if err := t.named(ctx, e.ID, e.ContextID); err != nil {
			return false, err
		}
		t.order, t.texts = nil, map[a2a.ArtifactID]string{}
		for _, art := range e.Artifacts {
			if art != nil {
				t.artifact(art.ID, partsText(art.Parts), false)
			}
		}
		t.setStatus(e.Status, e.Metadata)
	case *a2a.TaskArtifactUpdateEvent:
		if err := t.named(ctx, e.TaskID, e.ContextID); err != nil {
			return false, err
		}
		if e.Artifact != nil {
			t.artifact(e.Artifact.ID, partsText(e.Artifact.Parts), e.Append)
		}
	case *a2a.TaskStatusUpdateEvent:
		if err := t.named(ctx, e.TaskID, e.ContextID); err != nil {
			return false, err
		}
		t.setStatus(e.Status, e.Metadata)
		if e.Final && !t.settled() {
			// A final event in a working state: the stream ends, the task
			// goes on (followed with tasks/get).
			return false, nil
		}
	default:
		return false, nil
	}
	t.emit(t.text())
	return t.settled(), nil
}

// named records the task's ids; the first time, it saves them in the
// turn's memo before anything of the answer is shown.
func (t *turn) named(ctx context.Context, id a2a.TaskID, contextID string) error {
	if id == "" {
		return nil
	}
	if contextID != "" {
		t.contextID = contextID
	}
	if t.taskID == "" {
		t.taskID = id
	}
	if t.saved || t.memo == nil {
		t.saved = true
		return nil
	}
	b, _ := json.Marshal(ref{TaskID: t.taskID, ContextID: t.contextID})
	if err := t.memo.Save(ctx, b); err != nil {
		return t.a.permanent(fmt.Errorf("save the remote task %s in the run's state: %w", t.taskID, err))
	}
	t.saved = true
	return nil
}

func (t *turn) artifact(id a2a.ArtifactID, text string, appended bool) {
	if _, ok := t.texts[id]; !ok {
		t.order = append(t.order, id)
	} else if appended {
		text = t.texts[id] + text
	}
	t.texts[id] = text
}

func (t *turn) setStatus(s a2a.TaskStatus, meta map[string]any) {
	if s.State != "" {
		t.state = s.State
	}
	if s.Message != nil {
		t.status = partsText(s.Message.Parts)
	}
	if u, ok := usageOf(meta); ok {
		t.usage = u
	}
}

// settled reports whether the task is done or waits for its client.
func (t *turn) settled() bool {
	return t.state.Terminal() || t.state == a2a.TaskStateInputRequired || t.state == a2a.TaskStateAuthRequired
}

// text is the answer so far: the artifacts' text.
func (t *turn) text() string {
	var parts []string
	for _, id := range t.order {
		if s := t.texts[id]; s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

// emit yields what text adds to what was yielded.
func (t *turn) emit(text string) {
	if t.stopped || len(text) <= len(t.emitted) || !strings.HasPrefix(text, t.emitted) {
		return
	}
	delta := text[len(t.emitted):]
	t.emitted = text
	if !t.yield(model.Chunk{Type: model.ChunkText, Text: delta}, nil) {
		t.stopped = true
	}
}

// follow picks the task up until it is settled: tasks/get, then
// tasks/resubscribe, again after each break, for up to the reconnect
// window since the last sign of the remote.
func (t *turn) follow(ctx context.Context, tr a2aclient.Transport) error {
	a := t.a
	deadline := time.Now().Add(a.reconnect)
	wait := a.backoff
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if time.Now().Add(wait).After(deadline) {
				return a.transient(fmt.Errorf("the remote task %s could not be followed for %s: %w; the run can be resumed to pick it up again", t.taskID, a.reconnect, last))
			}
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
			wait = min(2*wait, 2*time.Second)
		}
		task, err := tr.GetTask(ctx, &a2a.TaskQueryParams{ID: t.taskID})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if isProtocol(err) {
				return t.callError(ctx, err)
			}
			last = err
			continue
		}
		wait = a.backoff
		done, err := t.apply(ctx, task)
		if err != nil || done || t.stopped {
			return err
		}
		done, err = t.consume(ctx, tr.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: t.taskID}))
		if err != nil || t.stopped {
			return err
		}
		if done {
			// What happened between tasks/get and the subscription is not
			// replayed by every server: the task as stored is the answer.
			if task, err := tr.GetTask(ctx, &a2a.TaskQueryParams{ID: t.taskID}); err == nil {
				_, _ = t.apply(ctx, task)
			}
			return nil
		}
		last = errors.New("the task's stream ended before the task did")
		deadline = time.Now().Add(a.reconnect)
	}
}

// callError classifies an error of a call to the remote.
func (t *turn) callError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, a2a.ErrTaskNotFound):
		return t.a.permanent(fmt.Errorf("the remote agent does not know the task %s: %w", t.taskID, err))
	case isProtocol(err):
		return t.a.permanent(err)
	}
	return t.a.transient(err)
}

// isProtocol reports whether err is the remote's JSON-RPC answer (rather
// than a broken connection).
func isProtocol(err error) bool {
	// (An internal or server error is the remote's trouble: retried.)
	for _, e := range []error{a2a.ErrParseError, a2a.ErrInvalidRequest, a2a.ErrMethodNotFound, a2a.ErrInvalidParams,
		a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrUnsupportedOperation, a2a.ErrUnsupportedContentType,
		a2a.ErrInvalidAgentResponse} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// answer is the turn's message once the task is settled.
func (t *turn) answer() (*message.Message, error) {
	text := t.text()
	switch {
	case t.reply != nil:
		text = *t.reply
	case t.state == a2a.TaskStateCompleted:
		if text == "" {
			text = t.status
		}
	case t.state == a2a.TaskStateInputRequired || t.state == a2a.TaskStateAuthRequired:
		if t.status != "" && !strings.Contains(text, t.status) {
			text = strings.TrimSpace(text + "\n\n" + t.status)
		}
	case t.state.Terminal():
		why := t.status
		if why == "" {
			why = "no reason given"
		}
		return nil, t.a.permanent(fmt.Errorf("the remote task %s is %s: %s", t.taskID, t.state, why))
	}
	t.emit(text)
	m := message.Assistant("", text)
	meta := map[string]any{"context_id": t.contextID}
	if t.taskID != "" {
		meta["task_id"] = string(t.taskID)
		meta["state"] = string(t.state)
	}
	m.Metadata = map[string]any{MetadataKey: meta}
	return &m, nil
}

// partsText is the text of parts: text parts as is, data parts as JSON,
// files named.
func partsText(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			out = append(out, p.Text)
		case a2a.DataPart:
			b, _ := json.Marshal(p.Data)
			out = append(out, string(b))
		case a2a.FilePart:
			out = append(out, fileText(p))
		}
	}
	return strings.Join(out, "")
}

func fileText(p a2a.FilePart) string {
	switch f := p.File.(type) {
	case a2a.FileURI:
		return "[file " + f.URI + "]"
	case a2a.FileBytes:
		name := f.Name
		if name == "" {
			name = "unnamed"
		}
		return "[file " + name + "]"
	}
	return "[file]"
}

// usageOf reads the usage a baton server puts in its task's metadata:
// {"baton": {"usage": {"input_tokens", "output_tokens"}}}.
func usageOf(meta map[string]any) (message.Usage, bool) {
	b, ok := meta["baton"].(map[string]any)
	if !ok {
		return message.Usage{}, false
	}
	u, ok := b["usage"].(map[string]any)
	if !ok {
		return message.Usage{}, false
	}
	num := func(k string) int64 {
		f, _ := u[k].(float64)
		return int64(f)
	}
	return message.Usage{InputTokens: num("input_tokens"), OutputTokens: num("output_tokens")}, true
}
