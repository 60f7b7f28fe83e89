package runner

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runstate"
)

// This file is the graceful stop of a run (double-texting's interrupt and
// rollback): a [Stopper] asks a run to stop at its next safe boundary,
// keeping what it did.

// StoppedValue is the key of [runstate.State].Values that marks a run
// stopped by a [Stopper]: its value is the reason given to Stop, a JSON
// string.
const StoppedValue = "baton_stopped"

// PartialMetadata is the key of [message.Message].Metadata that marks an
// answer cut short by a [Stopper]: true.
const PartialMetadata = "partial"

// StoppedByValue is the key of [runstate.State].Values that names the run
// whose start stopped this one (double-texting's interrupt and rollback), a
// JSON string; absent when no run did (a cancel).
const StoppedByValue = "baton_stopped_by"

// StopCancel is the reason of a Stopper's Stop that cancels the run.
const StopCancel = "cancel"

// Stopper asks the runs given it ([WithStopper]) to stop at their next safe
// boundary: a model answer being streamed is cut where it is and kept,
// marked partial ([PartialMetadata]); tools already running finish and
// their results are kept; calls not yet run are answered "not run". The run
// then ends [runstate.StatusCancelled], whatever stopped it, its last
// checkpoint written, with [StoppedValue] (and [StoppedByValue]) in its
// values. A run waiting for a decision or a worker is not executing: a
// Stopper does nothing to it. It is safe for concurrent use.
type Stopper struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	reason string
	by     string
}

// NewStopper returns a Stopper that has not stopped.
func NewStopper() *Stopper {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Stopper{ctx: ctx, cancel: cancel}
}

// Stop asks the runs to stop, for reason (such as "interrupt"). Only the
// first call (of Stop and StopBy) counts.
func (s *Stopper) Stop(reason string) { s.StopBy(reason, "") }

// StopBy asks the runs to stop, for reason, because run by starts (a new
// turn on their thread sent with multitask_strategy interrupt or rollback).
func (s *Stopper) StopBy(reason, by string) {
	s.once.Do(func() {
		s.mu.Lock()
		s.reason, s.by = reason, by
		s.mu.Unlock()
		s.cancel(errStopRequested)
	})
}

// Stopped reports whether Stop was called.
func (s *Stopper) Stopped() bool { return s != nil && s.ctx.Err() != nil }

func (s *Stopper) why() (reason, by string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason, s.by
}

// WithStopper lets s stop the run (see [Stopper]).
func WithStopper(s *Stopper) RunOption { return func(o *runOpts) { o.stopper = s } }

// errStopRequested is the cause of a model call cut by a Stopper
// (model.ErrStopRequested: a model that started work elsewhere, a remote
// agent's task, stops it too).
var errStopRequested = model.ErrStopRequested

// stopRequested reports whether the run's Stopper asks it to stop.
func (x *run) stopRequested() bool { return !x.sub && x.o.stopper.Stopped() }

// stopCtx returns the context of a model call, cancelled when the run's
// Stopper stops; call release when the call is over.
func (x *run) stopCtx(ctx context.Context) (context.Context, func()) {
	if x.sub || x.o.stopper == nil {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	unreg := context.AfterFunc(x.o.stopper.ctx, func() { cancel(errStopRequested) })
	return cctx, func() { unreg(); cancel(nil) }
}

// stopNow ends the run at a safe boundary: partial, the text of a model
// answer being streamed when the stop came, is kept as the active agent's
// answer marked partial; calls not run are answered; the run ends
// cancelled.
func (x *run) stopNow(ctx context.Context, partial string) error {
	st := x.st
	ctx = context.WithoutCancel(ctx)
	if partial != "" {
		m := message.Message{Role: message.RoleAssistant, Agent: st.Agent, ID: x.msgID(), FinishReason: "stopped",
			Parts: []message.Part{{Type: message.PartText, Text: partial}}, Metadata: map[string]any{PartialMetadata: true}}
		st.Messages = append(st.Messages, m)
		st.Transcript = append(st.Transcript, m)
		if x.streaming() {
			var buf [4]Event
			for _, e := range appendAnswerEvents(buf[:0], &m) {
				x.emit(e)
			}
		}
	}
	if len(st.Pending) > 0 {
		x.joinResults("not run: the run was stopped")
	}
	reason, by := x.o.stopper.why()
	MarkStopped(st, reason, by)
	st.Status = runstate.StatusCancelled
	st.FinalOutput = partial
	if partial == "" {
		st.FinalOutput = lastAnswer(st.Transcript)
	}
	return x.checkpoint(ctx)
}

// lastAnswer is the text of the last assistant message of msgs.
func lastAnswer(msgs []message.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.RoleUser {
			return ""
		}
		if msgs[i].Role == message.RoleAssistant {
			if t := strings.TrimSpace(msgs[i].Text()); t != "" {
				return msgs[i].Text()
			}
		}
	}
	return ""
}

// MarkStopped records in st's values that the run was stopped for reason,
// by run by if not "" ([StoppedValue], [StoppedByValue]).
func MarkStopped(st *runstate.State, reason, by string) {
	if st.Values == nil {
		st.Values = map[string]json.RawMessage{}
	}
	st.Values[StoppedValue], _ = json.Marshal(reason)
	if by != "" {
		st.Values[StoppedByValue], _ = json.Marshal(by)
	}
}

// Stop is what stopped a run that ended cancelled: a cancel, or the start
// of another run on its thread (double-texting's interrupt or rollback).
type Stop struct {
	// Reason is "cancel", or the strategy of the run that stopped it:
	// "interrupt" or "rollback".
	Reason string `json:"reason"`
	// RunID is the run whose start stopped it, if one did.
	RunID string `json:"run_id,omitempty"`
}

// StopOf returns what stopped the run of st (see [StoppedValue]), nil if
// nothing did.
func StopOf(st *runstate.State) *Stop {
	if _, ok := st.Values[StoppedValue]; !ok {
		return nil
	}
	return &Stop{Reason: Stopped(st), RunID: StoppedBy(st)}
}

// StoppedBy returns the run whose start stopped this one (see
// [StoppedByValue]), or "".
func StoppedBy(st *runstate.State) string {
	if st == nil {
		return ""
	}
	var s string
	_ = json.Unmarshal(st.Values[StoppedByValue], &s)
	return s
}

// Stopped returns the reason a run was stopped by a [Stopper] (see
// [StoppedValue]), or "".
func Stopped(st *runstate.State) string {
	if st == nil {
		return ""
	}
	raw, ok := st.Values[StoppedValue]
	if !ok {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
