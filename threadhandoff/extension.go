package threadhandoff

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// ErrNoOwner is wrapped by the errors of [Service.Extension] and
// [Service.Picker] when the run's context carries no owner
// ([store.ContextWithOwner]). Package threads puts the owner into the
// context of every turn and resume; a runner used without it must do so.
var ErrNoOwner = errors.New("threadhandoff: the run's context has no owner (store.ContextWithOwner)")

// SystemText returns the memory document of agent for owner as it is to be
// injected into the system prompt of a call on thread threadID: "" when
// there is none. The block holds one seed per pending handoff to the agent,
// keyed by its child thread: on a child thread it shows that thread's
// summary alone, everywhere else the placeholder, so that no thread sees
// another's summary; the seeds' bookkeeping header lines are not shown. A malformed document is injected as it is (and logged). It
// reads the memory store once and writes nothing.
func (s *Service) SystemText(ctx context.Context, owner, agentName, threadID string) (string, error) {
	doc, err := s.mem.Get(ctx, owner, agentName)
	if err != nil {
		return "", fmt.Errorf("memory of agent %s: %w", agentName, err)
	}
	b, err := memory.Parse(doc.Content)
	if err != nil {
		s.log.WarnContext(ctx, "agent memory is malformed: injected as it is", "assistant_id", agentName, "error", err)
		return doc.Content, nil
	}
	if b == nil {
		return doc.Content, nil
	}
	seeds := parseSeeds(b.Content)
	if len(seeds) == 0 {
		return doc.Content, nil
	}
	body := memory.Placeholder
	if sd, ok := seedOf(seeds, threadID); ok {
		body = sd.markdown
	}
	return doc.Content[:b.Start] + memory.Render(body) + doc.Content[b.End:], nil
}

// cleanupTimeout bounds the clean-up of [Service.Extension] after a run.
const cleanupTimeout = 10 * time.Second

// Extension returns the runner extension of thread → thread handoffs. Give
// it to the runner of every process that runs the network's turns (the
// request handlers and the background workers alike), in
// runner.Config.Extensions:
//
//   - BeforeTurn adds the running agent's memory ([Service.SystemText] for
//     the owner of ctx, the turn's agent and its thread) to the system
//     prompt of every model call, agent-tool sub-runs included. A run whose
//     ctx carries no owner fails with an error wrapping [ErrNoOwner] rather
//     than run without memory.
//   - AfterRun, once a run on a thread has completed, calls
//     [Service.Cleanup] for that thread: the seed of a child thread is
//     cleared after its first complete turn, exactly once, whichever process
//     ran it. The call is bounded by 10 seconds; a failure is logged at warn
//     level with thread_id and run_id, and the summary then stays in memory
//     until the thread's next completed run.
//
// The extension is safe for concurrent use.
func (s *Service) Extension() runner.Extension { return extension{s: s} }

type extension struct {
	runner.NopExtension
	s *Service
}

// BeforeTurn implements runner.Extension.
func (e extension) BeforeTurn(ctx context.Context, t *runner.Turn) error {
	owner, ok := store.OwnerFromContext(ctx)
	if !ok {
		return fmt.Errorf("memory of agent %s: %w", t.Run.Agent, ErrNoOwner)
	}
	text, err := e.s.SystemText(ctx, owner, t.Run.Agent, t.Run.ThreadID)
	if err != nil {
		return err
	}
	t.AddSystem(text)
	return nil
}

// AfterRun implements runner.Extension.
func (e extension) AfterRun(ctx context.Context, o *runner.Outcome) {
	st := o.State
	if o.Err != nil || st == nil || st.Status != runstate.StatusCompleted || st.ThreadID == "" {
		return
	}
	const msg = "thread handoff cleanup failed: the summary stays in memory until the next completed run"
	owner, ok := store.OwnerFromContext(ctx)
	if !ok {
		e.s.log.WarnContext(ctx, msg, "thread_id", st.ThreadID, "run_id", st.RunID, "error", ErrNoOwner)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if _, err := e.s.Cleanup(ctx, owner, st.ThreadID); err != nil {
		e.s.log.WarnContext(ctx, msg, "thread_id", st.ThreadID, "run_id", st.RunID, "error", err)
	}
}

// PickReason is the reason [Service.Picker] gives for starting a child
// thread's first turn with the handoff's assistant.
const PickReason = "thread handoff"

// Picker returns a picker for runner.Config.Picker that starts the first
// turn of a child thread at the agent whose memory holds its summary: on a
// thread whose handoff seed is pending (its "handoff" metadata names it as
// the child and asks for a cleanup), it picks the handoff's assistant_id
// with reason [PickReason], when [Config].Network has that agent (or no
// Network is set). Memory is per agent, so any other first agent would
// never see the summary before the cleanup clears it. Everywhere else next
// decides; a nil next has no opinion, and the runner then starts at the
// network's entry agent.
//
// The owner is the one ctx carries (store.ContextWithOwner): a turn on a
// thread without one fails with an error wrapping [ErrNoOwner]. A thread
// that is not in the store is left to next. The picker reads the thread
// once per new turn, writes nothing and is safe for concurrent use.
func (s *Service) Picker(next policy.Picker) policy.Picker { return picker{s: s, next: next} }

type picker struct {
	s    *Service
	next policy.Picker
}

// Pick implements policy.Picker.
func (p picker) Pick(ctx context.Context, in policy.PickInput) (string, string, error) {
	if in.ThreadID != "" {
		a, err := p.s.pendingAssistant(ctx, in.ThreadID)
		if err != nil {
			return "", "", err
		}
		if a != "" {
			if net := p.s.cfg.Network; net == nil {
				return a, PickReason, nil
			} else if _, ok := net.Agent(a); ok {
				return a, PickReason, nil
			}
		}
	}
	if p.next == nil {
		return "", "", nil
	}
	return p.next.Pick(ctx, in)
}

// pendingAssistant returns the assistant of the handoff whose seed waits
// for the first complete turn of child thread threadID, or "".
func (s *Service) pendingAssistant(ctx context.Context, threadID string) (string, error) {
	owner, ok := store.OwnerFromContext(ctx)
	if !ok {
		return "", fmt.Errorf("thread handoff of thread %s: %w", threadID, ErrNoOwner)
	}
	th, err := s.cfg.Store.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("thread handoff of thread %s: %w", threadID, err)
	}
	if h := HandoffOf(th); due(h, threadID) {
		return h.AssistantID, nil
	}
	return "", nil
}
