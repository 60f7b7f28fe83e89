package threadhandoff

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/store"
)

// ProposeParams are the params of [Service.Propose].
type ProposeParams struct {
	Owner    string
	ThreadID string
	// AssistantID is the agent whose memory will receive the summary.
	// Defaults to the thread's active agent.
	AssistantID string
	// Replace summarises again although the thread has a pending proposal,
	// which is then superseded. Without it, a pending proposal is returned
	// as it is and nothing is summarised.
	Replace bool
}

// Pending is a thread handoff proposal stored as an interrupt of kind
// [store.InterruptThreadHandoff]: what [Service.Propose], [Service.Get] and
// [Service.PendingOf] return, and what [Service.Decide] decides.
type Pending struct {
	// Interrupt is the stored interrupt: its ID (the handoff id), thread,
	// status, payload and, once decided, decision and outcome.
	Interrupt *store.Interrupt
	// Payload is Interrupt.Payload parsed: the versioned approval payload.
	Payload *Interrupt
	// Proposal is the proposal the payload describes.
	Proposal *Proposal
	// Existing is set by Propose when it returned the thread's pending
	// proposal instead of summarising again.
	Existing bool
	// Superseded is the pending proposal a Replace superseded, if any.
	Superseded string
	// Stale is set when the thread has gained messages since the proposal
	// (its last message's seq is above Proposal.ThroughSeq): approving it
	// needs Decision.Force, or a new proposal.
	Stale bool
}

// Propose summarises a thread ([Service.Preview]) and stores the proposal
// as a pending interrupt of the thread (kind [store.InterruptThreadHandoff],
// id the handoff id, [Proposal.Interrupt] as its payload), to be decided
// with [Service.Decide] by whoever sees it — another request, another
// device, another process. A thread has at most one pending proposal: while
// it has one, Propose returns it (Pending.Existing) without calling the
// model, unless p.Replace, which supersedes it (its outcome names the new
// one) in the transaction that stores the new one.
//
// Errors are those of Preview: store.ErrNotFound for a thread of another
// owner, [summary.ErrNothingToSummarise], a *[summary.InvalidSummaryError].
func (s *Service) Propose(ctx context.Context, p *ProposeParams) (*Pending, error) {
	if !p.Replace {
		if cur, err := s.PendingOf(ctx, p.Owner, p.ThreadID); err != nil || cur != nil {
			if cur != nil {
				cur.Existing = true
			}
			return cur, err
		}
	}
	th, prop, err := s.preview(ctx, &PreviewParams{Owner: p.Owner, ThreadID: p.ThreadID, AssistantID: p.AssistantID})
	if err != nil {
		return nil, err
	}
	payload := prop.Interrupt()
	create := &store.CreateInterruptParams{OwnerID: p.Owner, ID: prop.HandoffID, Kind: store.InterruptThreadHandoff, ThreadID: th.ID,
		Network: th.Network, Agent: prop.AssistantID, Payload: mustJSON(payload)}
	out := &Pending{Payload: payload, Proposal: prop}
	proposed := &Event{Type: EventProposed, HandoffID: prop.HandoffID, ThreadID: th.ID, Network: th.Network, AssistantID: prop.AssistantID,
		Status: store.InterruptPending}
	for attempt := 0; ; attempt++ {
		if p.Replace {
			err = s.withTx(ctx, func(tx store.Tx) error {
				var err error
				out.Superseded, err = s.supersede(ctx, tx, p.Owner, th.ID, prop.HandoffID)
				if err != nil {
					return err
				}
				if out.Interrupt, err = tx.CreateInterrupt(ctx, create); err != nil {
					return err
				}
				return s.eventTx(ctx, tx, p.Owner, proposed)
			})
			break
		}
		if s.cfg.EventTx == nil {
			out.Interrupt, err = s.cfg.Store.CreateInterrupt(ctx, create)
		} else {
			// Not withTx: a conflict here is another pending proposal,
			// not a write to retry.
			err = s.cfg.Store.Tx(ctx, func(tx store.Tx) error {
				var err error
				if out.Interrupt, err = tx.CreateInterrupt(ctx, create); err != nil {
					return err
				}
				return s.eventTx(ctx, tx, p.Owner, proposed)
			})
		}
		if !errors.Is(err, store.ErrConflict) || attempt > 0 {
			break
		}
		// Another proposal was stored meanwhile: it is the pending one
		// (unless it has been decided since, then this one is stored).
		cur, err := s.PendingOf(ctx, p.Owner, p.ThreadID)
		if err != nil || cur != nil {
			if cur != nil {
				cur.Existing = true
			}
			return cur, err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("thread handoff proposal of thread %s: %w", p.ThreadID, err)
	}
	s.log.InfoContext(ctx, "thread handoff proposal stored", "handoff_id", prop.HandoffID, "thread_id", th.ID,
		"assistant_id", prop.AssistantID, "through_seq", prop.ThroughSeq, "superseded_handoff_id", out.Superseded)
	return out, nil
}

// supersede marks the thread's pending proposals superseded by the
// proposal by, in tx, and returns the last one's id.
func (s *Service) supersede(ctx context.Context, tx store.Tx, owner, threadID, by string) (string, error) {
	olds, err := tx.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: owner, ThreadID: threadID, Kind: store.InterruptThreadHandoff,
		Status: store.InterruptPending})
	if err != nil {
		return "", err
	}
	last := ""
	for _, old := range olds {
		o := &Outcome{InterruptID: old.ID, HandoffID: old.ID, ParentThreadID: threadID, AssistantID: old.Agent, SupersededBy: by,
			Message: "Thread handoff proposal superseded by " + by + ": nothing was written."}
		_, err := tx.DecideInterrupt(ctx, &store.DecideInterruptParams{OwnerID: owner, ID: old.ID, Status: store.InterruptSuperseded,
			Outcome: mustJSON(o)})
		var np *store.NotPendingError
		switch {
		case errors.As(err, &np):
			continue // decided meanwhile
		case err != nil:
			return "", err
		}
		last = old.ID
	}
	return last, nil
}

// PendingOf returns the thread's pending proposal, or nil when it has none.
// It writes nothing.
func (s *Service) PendingOf(ctx context.Context, owner, threadID string) (*Pending, error) {
	ins, err := s.cfg.Store.ListInterrupts(ctx, &store.ListInterruptsParams{OwnerID: owner, ThreadID: threadID, Kind: store.InterruptThreadHandoff,
		Status: store.InterruptPending, Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("thread handoff proposal of thread %s: %w", threadID, err)
	}
	if len(ins) == 0 {
		return nil, nil
	}
	return s.pending(ctx, s.cfg.Store, ins[0])
}

// Get returns a stored proposal, pending or not. An interrupt that does not
// exist, of another owner, or of another kind is store.ErrNotFound.
func (s *Service) Get(ctx context.Context, owner, interruptID string) (*Pending, error) {
	in, err := s.cfg.Store.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: owner, ID: interruptID})
	if err == nil && in.Kind != store.InterruptThreadHandoff {
		err = fmt.Errorf("interrupt %s is not a thread handoff: %w", interruptID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("thread handoff proposal %s: %w", interruptID, err)
	}
	return s.pending(ctx, s.cfg.Store, in)
}

// Of returns the proposal of in, a stored interrupt of kind
// [store.InterruptThreadHandoff] that the caller has read, with whether its
// thread has outgrown it.
func (s *Service) Of(ctx context.Context, in *store.Interrupt) (*Pending, error) {
	return s.pending(ctx, s.cfg.Store, in)
}

// pending decodes a stored proposal and, while it is pending, checks it
// against its thread's messages.
func (s *Service) pending(ctx context.Context, ops store.Ops, in *store.Interrupt) (*Pending, error) {
	payload, err := ParseInterrupt(in.Payload)
	if err != nil {
		return nil, &store.CorruptError{Table: "interrupts", ID: in.ID, Column: "payload", Err: err}
	}
	prop := proposalOf(payload, in.OwnerID)
	prop.CreatedAt = in.CreatedAt
	out := &Pending{Interrupt: in, Payload: payload, Proposal: prop}
	if in.Status == store.InterruptPending {
		last, err := lastSeq(ctx, ops, in.OwnerID, prop.ParentThreadID)
		if err != nil {
			return nil, fmt.Errorf("thread handoff proposal %s: %w", in.ID, err)
		}
		out.Stale = prop.ThroughSeq > 0 && last > prop.ThroughSeq
	}
	return out, nil
}

// lastSeq returns the seq of the thread's last message, 0 without any.
func lastSeq(ctx context.Context, ops store.Ops, owner, threadID string) (int64, error) {
	msgs, err := ops.ListMessages(ctx, &store.ListMessagesParams{OwnerID: owner, ThreadID: threadID, Limit: 1, Last: true})
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	return msgs[len(msgs)-1].Seq, nil
}
