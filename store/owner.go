package store

import "context"

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
