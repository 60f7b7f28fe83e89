package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/retry"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// This file is the model turn: the request (system prompt, tools offered),
// the model stream with its retries and text deltas, and the answer
// recorded in the state.

// takeTurn makes one model turn of the active agent and handles its answer:
// its calls become pending (checkpointed, or stopping the run), an answer
// without calls goes to answered. It reports done when the loop ends here.
func (x *run) takeTurn(ctx context.Context) (done bool, err error) {
	st := x.st
	p := x.r.plans[st.Agent]
	if st.Turns >= x.r.limits.MaxTurns {
		return true, x.limit(ctx, &LimitError{Limit: LimitMaxTurns, Max: int64(x.r.limits.MaxTurns), Agent: st.Agent})
	}
	mctx, release := x.stopCtx(ctx)
	msg, err := x.callModel(mctx, p, true)
	release()
	if err != nil {
		if x.stopRequested() {
			// Cut by a Stopper: the answer so far is kept.
			return true, x.stopNow(ctx, x.turn.cs.partial.String())
		}
		return true, err
	}
	if b := x.r.limits.TokenBudget; b > 0 && st.Usage.Total() > b {
		if msg.HasToolCalls() {
			// The calls will not run: answer them so the history stays valid.
			x.joinResults("not run: the run's token budget is spent")
		}
		return true, x.limit(ctx, &LimitError{Limit: LimitTokenBudget, Max: b, Agent: st.Agent})
	}
	if msg.FinishReason == model.FinishPauseTurn && !msg.HasToolCalls() {
		// The provider paused a long turn (Anthropic's pause_turn): the
		// answer so far is in the history, and the next call continues it.
		return false, x.checkpoint(ctx)
	}
	if msg.HasToolCalls() {
		// Calls that stop the run (for a human decision or a background
		// worker) are checkpointed once, with the stop, rather than after
		// the turn and again at the stop.
		if stopped, err := x.stopForCalls(ctx, p); stopped || err != nil {
			return true, err
		}
		if err := x.checkpoint(ctx); err != nil {
			return true, err
		}
		x.callsChecked = true
		return false, nil
	}
	return x.answered(ctx, p, msg)
}

// callModel makes one model call for the active agent (with tools when
// withTools), records the answer in the state and, if it has tool calls,
// makes them pending. It returns the recorded message.
func (x *run) callModel(ctx context.Context, p *plan, withTools bool) (*message.Message, error) {
	req, err := x.request(ctx, p, withTools)
	if err != nil {
		return nil, err
	}
	resp, err := x.call(ctx, p.a, req)
	if err != nil {
		return nil, err
	}
	msg := x.record(p, resp)
	if err := x.finished(p, resp, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// finished returns the error that ends the run when the answer's finish
// does (a refusal, a content-filter stop, an answer without calls cut at
// the token limit; see [FinishError]), after answering the calls the
// answer made without running them. The answer stays recorded.
func (x *run) finished(p *plan, resp *model.Response, msg *message.Message) error {
	kind := finishKind(resp.FinishReason)
	if kind == "" || (kind == KindLength && msg.HasToolCalls()) {
		// Calls whose arguments are whole (the adapters check them) run
		// even when the answer reached the limit after them.
		return nil
	}
	text := resp.Refusal
	if text == "" && kind == KindRefusal {
		text = msg.Text()
	}
	if msg.HasToolCalls() {
		x.joinResults("not run: the answer ended with " + resp.FinishReason)
	}
	return &Error{Kind: kind, Agent: p.a.Name, Err: &FinishError{Agent: p.a.Name, Reason: resp.FinishReason, Text: text, RequestID: resp.RequestID}}
}

// request builds the active agent's model request: its history, its system
// prompt (instructions, transfer context, the extensions' text), the tools
// offered (none unless withTools) and its output schema.
func (x *run) request(ctx context.Context, p *plan, withTools bool) (*model.Request, error) {
	a := p.a
	req := &model.Request{Agent: a.Name, Messages: x.st.Messages, Settings: runSettings(a.Settings, x.st.Values)}
	sys, err := x.system(ctx, p)
	if err != nil {
		return nil, err
	}
	extra, err := x.beforeTurn(ctx)
	if err != nil {
		return nil, err
	}
	req.System = joinPrompt(sys, extra)
	if withTools {
		req.Tools = x.tools(ctx, p)
	} else {
		req.Settings.ToolChoice = ""
	}
	if len(a.OutputSchema) > 0 {
		req.Output = &model.OutputSchema{Name: a.Name + "_output", Schema: a.OutputSchema, Strict: true}
	}
	return req, nil
}

// call streams req to a's model, retrying transient failures, each attempt
// observed.
func (x *run) call(ctx context.Context, a *agent.Agent, req *model.Request) (*model.Response, error) {
	st := x.st
	var resp *model.Response
	// A failed begin (see streamBeginning) is not the model's: no retry.
	transient := func(err error) bool { return x.beginErr == nil && retry.Transient(err) }
	var mc *modelCall
	if x.rec != nil {
		mc = &modelCall{start: time.Now()}
	}
	err := retry.Do(ctx, x.r.retry, x.r.sleep, transient, func(attempt int, err error, d time.Duration) {
		x.r.log.WarnContext(ctx, "model call failed; retrying", "run_id", st.RunID, "agent", a.Name, "attempt", attempt, "delay", d, "error", err)
		if mc != nil {
			mc.attempts = append(mc.attempts, Attempt{Attempt: attempt, Err: err.Error(), Start: mc.attempt, Duration: time.Since(mc.attempt)})
		}
	}, func(attempt int) error {
		mctx, end := x.r.cfg.Observer.StartModel(ctx, ModelInfo{RunID: st.RunID, Agent: a.Name, Model: a.ModelName, Attempt: attempt})
		if mc != nil {
			mc.attempt = time.Now()
		}
		var err error
		resp, err = x.stream(mctx, a, req)
		end(resp, err)
		return err
	})
	if x.beginErr != nil {
		return nil, x.beginErr
	}
	if err != nil {
		err = modelError(a.Name, err)
		if mc != nil {
			x.recordModel(a.Name, a.ModelName, mc, req, nil, err)
		}
		return nil, err
	}
	if mc != nil {
		x.recordModel(a.Name, a.ModelName, mc, req, resp, nil)
	}
	return resp, nil
}

// record appends the model's answer to the history and the transcript,
// counts the turn and its usage, makes its tool calls pending and emits
// the answer's events. It returns the message as recorded in the history.
func (x *run) record(p *plan, resp *model.Response) *message.Message {
	st := x.st
	x.mu.Lock()
	st.Turns++
	x.dropMemoLocked(turnMemo(st.Turns))
	x.mu.Unlock()
	st.Usage.Add(resp.Usage)
	x.turn.requestID = resp.RequestID
	m := resp.Message
	m.Role = message.RoleAssistant
	m.Agent = p.a.Name
	m.ID = x.msgID()
	m.FinishReason = resp.FinishReason
	m.RequestID = resp.RequestID
	if m.Usage == nil && !resp.Usage.IsZero() {
		u := resp.Usage
		m.Usage = &u
	}
	st.Messages = append(st.Messages, m)
	st.Transcript = append(st.Transcript, m)
	x.pend(p, &m)
	if x.streaming() {
		var buf [4]Event
		for _, e := range appendAnswerEvents(buf[:0], &m) {
			x.emit(e)
		}
	}
	return &st.Messages[len(st.Messages)-1]
}

// pend makes the tool calls of m, the active agent's answer, the run's
// pending calls.
func (x *run) pend(p *plan, m *message.Message) {
	calls := 0
	for i := range m.Parts {
		if m.Parts[i].Type == message.PartToolCall {
			calls++
		}
	}
	if calls == 0 {
		return
	}
	st := x.st
	st.Pending = make([]runstate.PendingCall, 0, calls)
	for i := range m.Parts {
		pt := &m.Parts[i]
		if pt.Type != message.PartToolCall {
			continue
		}
		call := message.ToolCall{ID: pt.CallID, Name: pt.Name, Arguments: pt.Arguments}
		kind := p.byName[pt.Name].kind
		if kind == "" {
			// The transfer context tool, or a tool the agent does not have
			// (answered as such): a tool call, which stores accept.
			kind = runstate.CallTool
		}
		st.Pending = append(st.Pending, runstate.PendingCall{Call: call, Kind: kind})
	}
}

// stream drains one model stream, emitting text deltas.
func (x *run) stream(ctx context.Context, a *agent.Agent, req *model.Request) (*model.Response, error) {
	if x.turn.onChunk == nil {
		x.turn.onChunk = x.chunk // one closure per run, reused by every model call
	}
	x.turn.cs = chunkState{a: a, timed: x.rec != nil}
	if x.lazy {
		if err := x.streamBeginning(ctx, a, req); err != nil {
			return nil, err
		}
	} else {
		a.Model.Stream(ctx, req)(x.turn.onChunk)
	}
	cs := &x.turn.cs
	switch {
	case cs.err != nil:
		return nil, cs.err
	case cs.done:
		return &cs.resp, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, model.ErrNoDone
}

// streamBeginning drains the first model stream of a run whose begin was
// deferred (see [run.deferBegin]), while the run begins: the model streams
// in a goroutine of its own into a channel, and its chunks are taken once
// the first checkpoint has committed and the start events are out. The
// model's time to its first token thus covers the checkpoint's commit, and
// no event of the run comes before that commit. x.mu is held while the
// run begins and while each chunk is taken: a memo the model saves
// meanwhile (a checkpoint, from the model's goroutine) waits for them. An
// error is the begin's: the model's context is cancelled and its goroutine
// waited for.
func (x *run) streamBeginning(ctx context.Context, a *agent.Agent, req *model.Request) error {
	type item struct {
		c   model.Chunk
		err error
	}
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan item, 16)
	var panicked any
	go func() {
		defer close(ch)
		defer func() { panicked = recover() }()
		a.Model.Stream(mctx, req)(func(c model.Chunk, err error) bool {
			select {
			case ch <- item{c, err}:
				return true
			case <-mctx.Done():
				return false
			}
		})
	}()
	// wait stops the model's goroutine and re-raises its panic here, where
	// a model called in line would have raised it.
	wait := func() {
		cancel()
		for range ch {
		}
		if panicked != nil {
			panic(panicked)
		}
	}
	x.mu.Lock()
	err := x.begun()
	x.mu.Unlock()
	if err != nil {
		wait()
		return err
	}
	for it := range ch {
		x.mu.Lock()
		more := x.turn.onChunk(it.c, it.err)
		x.mu.Unlock()
		if !more {
			break
		}
	}
	wait()
	return nil
}

// chunkState is the state of the model stream being drained.
type chunkState struct {
	a *agent.Agent
	// partial is the answer's text so far, kept for a run with a Stopper.
	partial strings.Builder
	resp    model.Response
	done    bool
	err     error
	// timed: first is set to when the first chunk came (a recording run).
	timed bool
	first time.Time
}

// chunk takes one chunk of the model stream being drained: a text delta is
// emitted, the done chunk is the response.
func (x *run) chunk(c model.Chunk, err error) bool {
	cs := &x.turn.cs
	if err != nil {
		cs.err = err
		return false
	}
	if cs.timed && cs.first.IsZero() {
		cs.first = time.Now()
	}
	switch c.Type {
	case model.ChunkText:
		if x.o.stopper != nil {
			cs.partial.WriteString(c.Text)
		}
		if x.streaming() && c.Text != "" {
			if !x.emit(&TextDeltaEvent{Header: Header{Type: TypeTextDelta}, Agent: cs.a.Name, Delta: c.Text}) {
				cs.err = errStopped
				return false
			}
		}
	case model.ChunkReasoning:
		if x.streaming() && c.Text != "" {
			if !x.emit(&ReasoningDeltaEvent{Header: Header{Type: TypeReasoningDelta}, Agent: cs.a.Name, Delta: c.Text}) {
				cs.err = errStopped
				return false
			}
		}
	case model.ChunkDone:
		if c.Message == nil {
			cs.err = model.ErrNoDone
			return false
		}
		cs.resp = model.Response{Message: *c.Message, Usage: c.Usage, FinishReason: c.FinishReason, Refusal: c.Refusal, RequestID: c.RequestID, Model: c.Model}
		cs.done = true
		return false
	}
	return true
}

// msgID is the id of the next message of the run's transcript.
func (x *run) msgID() string {
	return runstate.MessageID(x.st.RunID, len(x.st.Transcript)+1)
}

// system builds the active agent's system prompt.
func (x *run) system(ctx context.Context, p *plan) (string, error) {
	st := x.st
	a := p.a
	sys := a.Instructions
	if a.InstructionsFunc != nil {
		s, err := a.InstructionsFunc(ctx, x.runContext())
		if err != nil {
			return "", &Error{Kind: KindSystem, Agent: a.Name, Err: fmt.Errorf("instructions: %w", err)}
		}
		sys = s
	}
	if tc := st.Transfer; tc != nil && tc.To == a.Name {
		sys = x.transferBlock(tc, sys).prompt
	}
	return sys, nil
}

// block is a rendered transfer context joined to the target's instructions,
// cached for the run: rendering reads the context data, and the block goes
// into every call of the target.
type block struct {
	tc   *transfer.Context
	refs bool
	// base is the instructions the block was joined to; prompt is base, a
	// blank line and the block.
	base   string
	prompt string
}

// transferBlock returns the block of tc joined to the instructions sys.
func (x *run) transferBlock(tc *transfer.Context, sys string) *block {
	b := &x.turn.block
	if b.tc != tc || b.base != sys {
		prompt, refs := tc.RenderAfter(sys)
		*b = block{tc: tc, refs: refs, base: sys, prompt: prompt}
	}
	return b
}

// transferRefs reports whether the block of tc delivers fields by reference.
func (x *run) transferRefs(tc *transfer.Context) bool {
	if b := &x.turn.block; b.tc == tc {
		return b.refs // rendered by system for this call
	}
	return x.transferBlock(tc, "").refs
}

func joinPrompt(a, b string) string {
	switch {
	case b == "":
		return a
	case a == "":
		return b
	}
	return a + "\n\n" + b
}

// tools returns the tools offered to the active agent's model.
func (x *run) tools(ctx context.Context, p *plan) []model.Tool {
	tc := x.st.Transfer
	refs := tc != nil && tc.To == p.a.Name && x.transferRefs(tc)
	if !p.dynamic && !refs {
		return p.tools
	}
	out := make([]model.Tool, 0, len(p.tools)+1)
	var info *transfer.Info
	for _, t := range p.tools {
		if e := p.byName[t.Name]; e.kind == runstate.CallTransfer && e.transfer.Enabled != nil {
			if info == nil {
				info = &transfer.Info{RunID: x.st.RunID, ThreadID: x.st.ThreadID, Agent: p.a.Name, Turns: x.st.Turns, Transfers: x.st.Transfers, Messages: x.st.Messages}
			}
			if !e.transfer.Enabled(ctx, *info) {
				continue
			}
		}
		out = append(out, t)
	}
	if refs {
		out = append(out, model.Tool{Name: TransferContextTool, Description: "Read the full value of a transfer context field delivered by reference.", Parameters: transferContextParams})
	}
	return out
}

// runContext is the run as instructions, tools and extensions see it.
func (x *run) runContext() *agent.RunContext {
	st := x.st
	return &agent.RunContext{RunID: st.RunID, ThreadID: st.ThreadID, Agent: st.Agent, Transfer: st.Transfer,
		Messages: st.Messages, Turns: st.Turns, Transfers: st.Transfers, Values: st.Values}
}
