package store

import (
	"context"
	"fmt"
)

type ownerKey struct{}

// ContextWithOwner returns a context that carries owner: the owner of the
// run or request the context belongs to. Package threads puts the owner of
// every turn and resume in the run's context, so that what runs around the
// run (memory injection, hand-overs, clean-ups) knows whose rows it reads.
func ContextWithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// OwnerFromContext returns the owner ctx carries (see [ContextWithOwner]).
func OwnerFromContext(ctx context.Context) (string, bool) {
	o, ok := ctx.Value(ownerKey{}).(string)
	return o, ok && o != ""
}

// CheckpointTx returns what a runner extension needs of package threads'
// checkpoints at a boundary: the store transaction the checkpointer hands
// over (bt, the boundary's Tx) and the owner in the run's context. For an
// extension that needs both: with another checkpointer (bt is not a [Tx])
// or no owner in ctx it returns an error that names pkg.
func CheckpointTx(ctx context.Context, bt any, pkg string) (Tx, string, error) {
	tx, ok := bt.(Tx)
	if !ok {
		return nil, "", fmt.Errorf("%s: the checkpointer gives no store transaction (use package threads)", pkg)
	}
	owner, ok := OwnerFromContext(ctx)
	if !ok {
		return nil, "", fmt.Errorf("%s: the run's context carries no owner (use package threads)", pkg)
	}
	return tx, owner, nil
}

// CheckpointTxIf is [CheckpointTx] for an extension that does nothing with
// other checkpointers: ok is false and err nil when bt is not a [Tx]. When
// ctx carries no owner, ok is false and err says what (of run runID) it was
// for.
func CheckpointTxIf(ctx context.Context, bt any, what, runID string) (tx Tx, owner string, ok bool, err error) {
	if tx, ok = bt.(Tx); !ok {
		return nil, "", false, nil
	}
	if owner, ok = OwnerFromContext(ctx); !ok {
		return nil, "", false, fmt.Errorf("%s of run %s: the run's context has no owner", what, runID)
	}
	return tx, owner, true, nil
}
