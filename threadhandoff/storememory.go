package threadhandoff

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/store"
)

// StoreMemory adapts the memory documents of a baton store (or of one of
// its transactions: pass the store.Tx) to [memory.Store]. Versions are the
// store's version counters as decimal strings. A missing document reads as
// version ""; a version mismatch is a *[memory.ConflictError] that also
// unwraps to the store's *[store.VersionConflictError]; invalid params wrap
// both [memory.ErrInvalid] and [store.ErrInvalid]. The owner must exist in
// the store. It is safe for concurrent use when ops is.
func StoreMemory(ops store.Ops) memory.Store { return storeMemory{ops} }

type storeMemory struct{ ops store.Ops }

func (s storeMemory) Get(ctx context.Context, owner, agent string) (memory.Document, error) {
	if owner == "" || agent == "" {
		return memory.Document{}, fmt.Errorf("%w: owner and agent are required", memory.ErrInvalid)
	}
	d, err := s.ops.GetMemoryDocument(ctx, &store.GetMemoryDocumentParams{OwnerID: owner, AgentID: agent})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return memory.Document{}, nil
	case errors.Is(err, store.ErrInvalid):
		return memory.Document{}, fmt.Errorf("%w: %w", memory.ErrInvalid, err)
	case err != nil:
		return memory.Document{}, err
	}
	return memory.Document{Content: d.Content, Version: strconv.FormatInt(d.Version, 10)}, nil
}

func (s storeMemory) Put(ctx context.Context, owner, agent, content, expected string) (string, error) {
	if owner == "" || agent == "" {
		return "", fmt.Errorf("%w: owner and agent are required", memory.ErrInvalid)
	}
	var v int64
	if expected != "" {
		var err error
		if v, err = strconv.ParseInt(expected, 10, 64); err != nil || v <= 0 {
			return "", &memory.ConflictError{Owner: owner, Agent: agent, Expected: expected}
		}
	}
	d, err := s.ops.PutMemoryDocument(ctx, &store.PutMemoryDocumentParams{OwnerID: owner, AgentID: agent, Content: content, ExpectedVersion: v})
	var vc *store.VersionConflictError
	switch {
	case errors.As(err, &vc):
		ce := &memory.ConflictError{Owner: owner, Agent: agent, Expected: expected, Err: err}
		if vc.Actual > 0 {
			ce.Actual = strconv.FormatInt(vc.Actual, 10)
		}
		return "", ce
	case errors.Is(err, store.ErrInvalid):
		return "", fmt.Errorf("%w: %w", memory.ErrInvalid, err)
	case err != nil:
		return "", err
	}
	return strconv.FormatInt(d.Version, 10), nil
}
