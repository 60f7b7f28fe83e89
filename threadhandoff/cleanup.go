package threadhandoff

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/store"
)

// Cleanup ends the seed of a handoff once its child thread has had its
// first complete assistant turn. [Service.Extension] calls it after every
// completed run on a thread (it is cheap and does nothing unless the
// thread is a child whose cleanup is due). It removes this handoff's seed
// from the memory block (the seeds of other handoffs to the same agent are
// left alone; the block returns to its placeholder when none is left), and
// clears pending and
// cleanup_required and sets last_cleanup_at in the "handoff" metadata of
// the child and of the parent.
//
// It reports whether this call did the cleanup. Exactly one of any number
// of concurrent callers, in any number of processes sharing the store,
// gets true: the flags are cleared compare-and-swap on the thread version,
// and the memory write compare-and-swap on the document version. With the
// memory in the store everything is one transaction; with a separate
// memory store the block is reset first, so a crash in between leaves the
// flags set and the next call finishes.
func (s *Service) Cleanup(ctx context.Context, owner, threadID string) (bool, error) {
	// A plain read first: most runs are not a child's first turn, and a
	// transaction would take SQLite's write lock for nothing.
	child, err := s.cfg.Store.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
	if err != nil {
		return false, fmt.Errorf("thread handoff cleanup of thread %s: %w", threadID, err)
	}
	h := HandoffOf(child)
	if !due(h, threadID) {
		return false, nil
	}
	if s.memInStore {
		var done bool
		err := s.withTx(ctx, func(tx store.Tx) error {
			var err error
			done, h, err = s.cleanupTx(ctx, tx, StoreMemory(tx), owner, threadID)
			return err
		})
		return s.cleaned(ctx, threadID, done, h, err)
	}
	if err := s.clearBlock(ctx, s.mem, owner, h); err != nil {
		return false, fmt.Errorf("thread handoff cleanup of thread %s: %w", threadID, err)
	}
	var done bool
	err = s.withTx(ctx, func(tx store.Tx) error {
		var err error
		done, h, err = s.cleanupTx(ctx, tx, nil, owner, threadID)
		return err
	})
	return s.cleaned(ctx, threadID, done, h, err)
}

func (s *Service) cleaned(ctx context.Context, threadID string, done bool, h *Handoff, err error) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("thread handoff cleanup of thread %s: %w", threadID, err)
	}
	if done {
		s.log.InfoContext(ctx, "thread handoff cleanup: summary cleared from memory", "handoff_id", h.HandoffID, "thread_id", threadID,
			"source_thread_id", h.SourceThreadID, "assistant_id", h.AssistantID)
	}
	return done, nil
}

// due reports whether h asks the child thread threadID for a cleanup.
func due(h *Handoff, threadID string) bool {
	return h != nil && h.CleanupRequired && h.ChildThreadID == threadID
}

// cleanupTx clears the flags (and, when mem is not nil, the block) in tx.
func (s *Service) cleanupTx(ctx context.Context, tx store.Tx, mem memory.Store, owner, threadID string) (bool, *Handoff, error) {
	child, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: threadID})
	if err != nil {
		return false, nil, err
	}
	h := HandoffOf(child)
	if !due(h, threadID) {
		return false, h, nil
	}
	// Locks in the order of approvals: parent, child, memory.
	at := s.now().UTC().Truncate(time.Microsecond)
	parent, err := tx.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: h.SourceThreadID})
	switch {
	case err == nil:
		if ph := HandoffOf(parent); ph != nil && ph.HandoffID == h.HandoffID && ph.CleanupRequired {
			if _, err := tx.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: owner, ThreadID: parent.ID,
				Namespace: store.MetadataThreadHandoff, Patch: cleanedPatch(at), ExpectedVersion: parent.Version}); err != nil {
				return false, h, err
			}
		}
	case !errors.Is(err, store.ErrNotFound):
		return false, h, err
	}
	if _, err := tx.UpdateThreadMetadata(ctx, &store.UpdateThreadMetadataParams{OwnerID: owner, ThreadID: threadID,
		Namespace: store.MetadataThreadHandoff, Patch: cleanedPatch(at), ExpectedVersion: child.Version}); err != nil {
		return false, h, err
	}
	if mem != nil {
		if err := s.clearBlock(ctx, mem, owner, h); err != nil {
			return false, h, err
		}
	}
	return true, h, nil
}

// clearBlock removes h's seed from the memory block of h's assistant, if it
// is there, leaving the seeds of other handoffs as they are; the block
// returns to the placeholder when it was the last. It is idempotent.
func (s *Service) clearBlock(ctx context.Context, mem memory.Store, owner string, h *Handoff) error {
	_, _, err := memory.Update(ctx, mem, owner, h.AssistantID, 0, func(doc string) (string, bool, error) {
		b, err := memory.Parse(doc)
		if err != nil {
			var fixes []memory.Fix
			if doc, fixes, err = s.wellFormed(doc); err != nil {
				return "", false, err
			}
			if b, _ = memory.Parse(doc); b == nil {
				return "", false, nil
			}
			for _, f := range fixes {
				s.log.WarnContext(ctx, "agent memory was malformed and has been repaired", "assistant_id", h.AssistantID, "repair", f.String())
			}
		}
		if b == nil {
			return "", false, nil
		}
		seeds := parseSeeds(b.Content)
		rest := withoutHandoff(seeds, h.HandoffID, "")
		if len(rest) == len(seeds) {
			return "", false, nil
		}
		next, err := memory.Set(doc, renderSeeds(rest))
		return next, err == nil, err
	})
	if err != nil {
		return fmt.Errorf("memory of agent %s: %w", h.AssistantID, err)
	}
	return nil
}
