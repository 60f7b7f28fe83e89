package threads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// RunInterruptOutcome is the outcome recorded with a decided run interrupt
// (store.InterruptRun): the run that resumed past it and the checkpoint
// that did.
type RunInterruptOutcome struct {
	RunID        string `json:"run_id"`
	CheckpointID string `json:"checkpoint_id"`
}

// RunInterruptDecision is the decision recorded with a decided run
// interrupt.
type RunInterruptDecision struct {
	Decisions []runner.Decision `json:"decisions"`
}

// InterruptExtension returns the runner extension that stores the
// interrupts of runs, so that runs' approvals and thread handoff proposals
// are one surface in storage too (store.Interrupt):
//
//   - at a boundary whose checkpoint stops the run for approvals, it
//     stores the run's runstate.Interrupt as a pending interrupt of kind
//     store.InterruptRun, in the checkpoint's transaction;
//   - at the first boundary of a run resumed with decisions, it marks that
//     interrupt decided, with the decisions, compare-and-swap in the same
//     transaction: the interrupt is decided exactly when the run moves past
//     it, and a second resume loses (a *store.NotPendingError fails its
//     checkpoint, as the fence would).
//
// It needs the checkpoints of package threads (a store.Tx in
// runner.Boundary.Tx, the owner in the run's context) and does nothing for
// other checkpointers. Package service registers it in every network's
// runner. It is safe for concurrent use.
func InterruptExtension() runner.Extension { return interruptExtension{} }

type interruptExtension struct{ runner.NopExtension }

// AtBoundary implements runner.Extension.
func (interruptExtension) AtBoundary(ctx context.Context, b *runner.Boundary) error {
	st := b.State
	if b.Answered == "" && (st.Status != runstate.StatusInterrupted || st.Interrupt == nil) {
		return nil
	}
	tx, owner, ok, err := store.CheckpointTxIf(ctx, b.Tx, "threads: interrupt", st.RunID)
	if !ok {
		return err
	}
	if b.Answered != "" {
		decision, _ := json.Marshal(RunInterruptDecision{Decisions: b.Decisions})
		outcome, _ := json.Marshal(RunInterruptOutcome{RunID: st.RunID, CheckpointID: b.CheckpointID})
		dp := &store.DecideInterruptParams{OwnerID: owner, ID: b.Answered, Status: store.InterruptDecided,
			Decision: decision, Outcome: outcome}
		if a, ok := store.ActorFromContext(ctx); ok {
			// Who decided: named in the outcome, and audited with it.
			dp.DecidedBy, dp.AuditKind = &a, store.AuditRunDecision
		}
		_, err := tx.DecideInterrupt(ctx, dp)
		// An interrupt that was never stored (a run stopped by a runner
		// without this extension) has nothing to decide.
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("threads: decide interrupt %s: %w", b.Answered, err)
		}
	}
	if st.Status == runstate.StatusInterrupted && st.Interrupt != nil {
		payload, err := json.Marshal(st.Interrupt)
		if err != nil {
			return fmt.Errorf("threads: interrupt %s: %w", st.Interrupt.ID, err)
		}
		_, err = tx.CreateInterrupt(ctx, &store.CreateInterruptParams{OwnerID: owner, ID: st.Interrupt.ID, Kind: store.InterruptRun,
			ThreadID: st.ThreadID, RunID: st.RunID, Network: st.Network, Agent: st.Agent, Payload: payload})
		if err != nil {
			return fmt.Errorf("threads: store interrupt %s: %w", st.Interrupt.ID, err)
		}
	}
	return nil
}
