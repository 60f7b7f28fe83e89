package threadhandoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/batonhq/baton/store"
)

// DecideParams are the params of [Service.Decide].
type DecideParams struct {
	Owner string
	// InterruptID is the stored proposal's id (its handoff id).
	InterruptID string
	Decision    Decision
}

// ErrDecided is wrapped by the *[DecidedError] of a decision on a proposal
// that is no longer pending.
var ErrDecided = errors.New("threadhandoff: the proposal was already decided")

// DecidedError is returned by [Service.Decide] for a proposal that is no
// longer pending. Outcome is what the first decision did — the same child
// thread for an approval — or, for a proposal superseded by a newer one,
// names it (Outcome.SupersededBy). Nothing was written. It unwraps to
// [ErrDecided].
type DecidedError struct {
	InterruptID string
	// Status is store.InterruptDecided or store.InterruptSuperseded.
	Status  string
	Outcome *Outcome
}

func (e *DecidedError) Error() string {
	if e.Outcome != nil && e.Outcome.SupersededBy != "" {
		return fmt.Sprintf("threadhandoff: proposal %s was superseded by %s", e.InterruptID, e.Outcome.SupersededBy)
	}
	d := DecisionType("")
	if e.Outcome != nil {
		d = e.Outcome.Decision
	}
	return fmt.Sprintf("threadhandoff: proposal %s was already decided (%s)", e.InterruptID, d)
}

// Unwrap returns [ErrDecided].
func (e *DecidedError) Unwrap() error { return ErrDecided }

// ErrStale is wrapped by the *[StaleError] of an approval of a proposal
// that its thread has outgrown.
var ErrStale = errors.New("threadhandoff: stale proposal")

// StaleError is returned by [Service.Decide] for an approval (or edit) of
// a proposal whose parent thread has gained messages since it was made:
// the summary no longer covers the conversation. Nothing was written and
// the proposal stays pending: propose again (ProposeParams.Replace), or
// decide with Decision.Force. It unwraps to [ErrStale].
type StaleError struct {
	InterruptID string
	ThreadID    string
	// ThroughSeq is the last message the summary covers, LastSeq the
	// thread's last message now.
	ThroughSeq int64
	LastSeq    int64
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("threadhandoff: proposal %s is stale: thread %s has %d new message(s) since the summary (through seq %d)",
		e.InterruptID, e.ThreadID, e.LastSeq-e.ThroughSeq, e.ThroughSeq)
}

// Unwrap returns [ErrStale].
func (e *StaleError) Unwrap() error { return ErrStale }

// Decide applies a person's decision to a stored proposal (see
// [Service.Propose]): the one implementation behind every surface — the
// HTTP API's POST /v1/interrupts/{id}/decision, the web UI and baton
// chat's /handoff.
//
// The decision is checked first ([Decision.Validate]): an invalid one
// (unknown type, an edit with an empty or oversized summary, a bad title)
// wraps [ErrInvalidDecision] and leaves the proposal pending.
//
// A rejection marks the proposal decided and writes nothing else. An
// approval, or an edit (a new title and/or Markdown), does in one
// transaction when the memory is in the store:
//
//   - checks that the proposal is still pending (else a *[DecidedError]
//     with the first outcome) and, unless Decision.Force, that its thread
//     has no message after the ones summarised (else a *[StaleError]);
//   - writes the Markdown into the <current_thread_summary> block of the
//     memory document of the assistant, as the seed of the child thread
//     beside the seeds of other pending handoffs to the same assistant,
//     creating the document or the block when missing and keeping
//     everything outside the block byte for byte;
//   - creates the child thread, with ParentID, the parent's network and the
//     assistant as its active agent;
//   - sets the "handoff" metadata ([Handoff]) of both threads, with pending
//     and cleanup_required true, and the [MetadataLastHandoff] metadata of
//     the parent;
//   - with the default mirror (the Store itself), upserts the summary
//     into thread_summaries;
//   - marks the proposal decided, compare-and-swap on its status, with the
//     decision and the outcome.
//
// then, with a separate [Config].Mirror, mirrors the summary there, and
// logs handoff_id,
// thread_id, child_thread_id, model_run_id, tokens_used and
// handoff_store_status. The caller switches to Outcome.ChildThreadID.
//
// Of any number of concurrent decisions on one proposal, in any number of
// processes, exactly one is applied: the others get a *[DecidedError] with
// its outcome, and one child thread exists. With a separate memory store
// (memory.Dir) the threads and the proposal's status are committed first
// and the memory written after; if that write fails, Decide returns the
// error, and deciding again completes the memory (and answers the
// *DecidedError).
func (s *Service) Decide(ctx context.Context, p *DecideParams) (*Outcome, error) {
	d, err := p.Decision.normalise(s.cfg.Summarise.MaxChars)
	if err != nil {
		return nil, err
	}
	pend, err := s.Get(ctx, p.Owner, p.InterruptID)
	if err != nil {
		return nil, err
	}
	if pend.Interrupt.Status != store.InterruptPending {
		return nil, s.decided(ctx, pend.Interrupt)
	}
	prop := pend.Proposal
	log := s.log.With("handoff_id", prop.HandoffID, "thread_id", prop.ParentThreadID, "model_run_id", prop.ModelRunID, "tokens_used", prop.TokensUsed)
	if d.Type == DecisionReject {
		return s.reject(ctx, p.Owner, prop, d, log)
	}
	summ, md, edited, truncated := d.apply(prop)
	a := &approval{p: prop, summary: summ, md: md, edited: edited, truncated: truncated, at: s.now().UTC()}
	var out *Outcome
	err = s.withTx(ctx, func(tx store.Tx) error {
		in, err := tx.GetInterrupt(ctx, &store.GetInterruptParams{OwnerID: p.Owner, ID: prop.HandoffID})
		if err != nil {
			return err
		}
		if in.Status != store.InterruptPending {
			return &store.NotPendingError{Interrupt: in}
		}
		var mem = StoreMemory(tx)
		if !s.memInStore {
			mem = nil
		}
		if out, err = s.approveTx(ctx, tx, mem, a); err != nil {
			return err
		}
		// The parent thread is locked by now (its metadata was written),
		// so no message lands on it between this check and the commit.
		last, err := lastSeq(ctx, tx, p.Owner, prop.ParentThreadID)
		if err != nil {
			return err
		}
		if !d.Force && prop.ThroughSeq > 0 && last > prop.ThroughSeq {
			return &StaleError{InterruptID: prop.HandoffID, ThreadID: prop.ParentThreadID, ThroughSeq: prop.ThroughSeq, LastSeq: last}
		}
		out.LastSeq = last
		out.InterruptID, out.Decision, out.Truncated = prop.HandoffID, d.Type, a.truncated || out.Truncated
		out.Message = "Thread handoff approved: continue in thread " + out.ChildThreadID + "."
		if s.mirrorInTx {
			// The mirror row commits with the decision: no crash can
			// leave an approved summary unmirrored.
			if _, err := tx.UpsertThreadSummary(ctx, summaryParams(p.Owner, prop, out)); err != nil {
				return fmt.Errorf("thread summary: %w", err)
			}
			out.MirrorStatus = MirrorOK
		}
		return s.markDecided(ctx, tx, prop, d, out)
	})
	if err == nil && !s.memInStore {
		err = s.seedSeparateMemory(ctx, out)
	}
	if err != nil {
		var se *StaleError
		if errors.As(err, &se) {
			log.InfoContext(ctx, "thread handoff approval refused: the proposal is stale", "through_seq", se.ThroughSeq, "last_seq", se.LastSeq)
			return nil, err
		}
		return nil, s.failed(ctx, err, "approve")
	}
	for _, f := range out.MemoryRepairs {
		log.WarnContext(ctx, "agent memory was malformed and has been repaired", "assistant_id", prop.AssistantID, "repair", f.String())
	}
	s.mirrorApproved(ctx, p.Owner, prop, out)
	log.InfoContext(ctx, "thread handoff approved", "child_thread_id", out.ChildThreadID, "assistant_id", out.AssistantID, "edited", out.Edited,
		"truncated", out.Truncated, "handoff_store_status", out.MirrorStatus, "forced", d.Force)
	if out.MirrorStatus == MirrorDegraded {
		out.Message += " (The summary could not be mirrored to the summary store; it will be retried.)"
	}
	return out, nil
}

// reject records the rejection d of prop: nothing else is written.
func (s *Service) reject(ctx context.Context, owner string, prop *Proposal, d Decision, log *slog.Logger) (*Outcome, error) {
	out := &Outcome{owner: owner, InterruptID: prop.HandoffID, HandoffID: prop.HandoffID, Decision: DecisionReject,
		ParentThreadID: prop.ParentThreadID, AssistantID: prop.AssistantID, Summary: prop.Summary, Markdown: prop.Markdown,
		Message: "Thread handoff rejected: nothing was written."}
	err := s.withTx(ctx, func(tx store.Tx) error {
		last, err := lastSeq(ctx, tx, owner, prop.ParentThreadID)
		if err != nil {
			return err
		}
		out.LastSeq = last
		return s.markDecided(ctx, tx, prop, d, out)
	})
	if err != nil {
		return nil, s.failed(ctx, err, "reject")
	}
	log.InfoContext(ctx, "thread handoff rejected: nothing written", "reason", d.Reason)
	return out, nil
}

// mirrorApproved mirrors an approval's summary to the summary store after
// its transaction, unless the transaction wrote it, and sets
// out.MirrorStatus.
func (s *Service) mirrorApproved(ctx context.Context, owner string, prop *Proposal, out *Outcome) {
	switch {
	case s.mirrorInTx:
		// Written in the decision's transaction.
	case s.mirror != nil:
		out.MirrorStatus = s.mirror.upsert(ctx, summaryParams(owner, prop, out), "handoff_id", prop.HandoffID, "thread_id", out.ParentThreadID,
			"child_thread_id", out.ChildThreadID, "model_run_id", prop.ModelRunID, "tokens_used", prop.TokensUsed)
	default:
		out.MirrorStatus = MirrorDisabled
	}
}

// summaryParams is the thread_summaries row of an approval.
func summaryParams(owner string, prop *Proposal, out *Outcome) *store.UpsertThreadSummaryParams {
	return &store.UpsertThreadSummaryParams{OwnerID: owner, HandoffID: prop.HandoffID, AgentID: out.AssistantID, ThreadID: out.ParentThreadID,
		ChildThreadID: out.ChildThreadID, Summary: mustJSON(out.Summary), Markdown: out.Markdown}
}

// markDecided records d and out on the proposal, compare-and-swap on its
// status, in tx.
func (s *Service) markDecided(ctx context.Context, tx store.Tx, prop *Proposal, d Decision, out *Outcome) error {
	dp := &store.DecideInterruptParams{OwnerID: prop.Owner, ID: prop.HandoffID, Status: store.InterruptDecided,
		Decision: mustJSON(d), Outcome: mustJSON(out)}
	if a, ok := store.ActorFromContext(ctx); ok {
		// Who decided: named in the outcome, and audited with it.
		dp.DecidedBy, dp.AuditKind = &a, store.AuditThreadHandoffDecision
	}
	if _, err := tx.DecideInterrupt(ctx, dp); err != nil {
		return err
	}
	return s.eventTx(ctx, tx, prop.Owner, &Event{Type: EventDecided, HandoffID: prop.HandoffID, ThreadID: prop.ParentThreadID,
		Network: s.networkName(), AssistantID: prop.AssistantID, Status: store.InterruptDecided, Decision: string(d.Type), ChildThreadID: out.ChildThreadID})
}

// Event types of [Event].
const (
	EventProposed = "thread_handoff.proposed"
	EventDecided  = "thread_handoff.decided"
)

// Event is a thread handoff proposed or decided, as [Config].EventTx gets
// it (JSON: a webhook's data).
type Event struct {
	Type          string `json:"-"`
	HandoffID     string `json:"handoff_id"`
	ThreadID      string `json:"thread_id"`
	Network       string `json:"network,omitempty"`
	AssistantID   string `json:"assistant_id,omitempty"`
	Status        string `json:"status"`
	Decision      string `json:"decision,omitempty"`
	ChildThreadID string `json:"child_thread_id,omitempty"`
}

func (s *Service) networkName() string {
	if s.cfg.Network == nil {
		return ""
	}
	return s.cfg.Network.Name()
}

func (s *Service) eventTx(ctx context.Context, tx store.Tx, owner string, ev *Event) error {
	if s.cfg.EventTx == nil {
		return nil
	}
	return s.cfg.EventTx(ctx, tx, owner, ev)
}

// failed turns the error of a decision's transaction into Decide's: a
// *DecidedError when another decision came first, else the error, logged.
func (s *Service) failed(ctx context.Context, err error, what string) error {
	var np *store.NotPendingError
	if errors.As(err, &np) {
		return s.decided(ctx, np.Interrupt)
	}
	s.log.ErrorContext(ctx, "thread handoff "+what+" failed", "error", err)
	return fmt.Errorf("thread handoff %s: %w", what, err)
}

// decided returns the *DecidedError of in, a proposal no longer pending.
// With a separate memory store, it first completes the memory of an
// approval whose memory write failed.
func (s *Service) decided(ctx context.Context, in *store.Interrupt) error {
	e := &DecidedError{InterruptID: in.ID, Status: in.Status}
	if len(in.Outcome) > 0 {
		var o Outcome
		if err := json.Unmarshal(in.Outcome, &o); err != nil {
			return &store.CorruptError{Table: "interrupts", ID: in.ID, Column: "outcome", Err: err}
		}
		o.owner = in.OwnerID
		e.Outcome = &o
		if !s.memInStore && o.Applied {
			// Only while the child still waits for its first turn, and
			// never over another handoff's summary.
			again := o
			again.AlreadyApplied = true
			if err := s.seedSeparateMemory(ctx, &again); err != nil {
				return fmt.Errorf("thread handoff %s: complete the memory: %w", in.ID, err)
			}
		}
	}
	return e
}
