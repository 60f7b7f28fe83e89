package memory

import (
	"context"
	"errors"
	"fmt"
)

// Document is an agent's memory document as read from a [Store].
type Document struct {
	// Content is the document's text, injected into the agent's system prompt.
	Content string
	// Version identifies this content for compare-and-swap writes. It is
	// opaque: compare it for equality only. "" means the document does not
	// exist.
	Version string
}

// Store keeps one memory document per owner and agent, written
// compare-and-swap.
//
// Get returns the document; a missing document is not an error: it is a
// zero [Document] (Version ""). Put replaces the document whose version is
// expected with content and returns the new version; expected "" creates
// the document and fails if it exists. When the stored version is not
// expected, Put writes nothing and returns an error wrapping [ErrConflict]
// (a *[ConflictError] from the backends of this module), so that of several
// writers that read the same version exactly one succeeds. A write is
// atomic: a reader sees the old content or the new, never a mix.
//
// Owner and agent are required; an empty one, or one a backend cannot
// store, is an error wrapping [ErrInvalid]. Implementations are safe for
// concurrent use by multiple goroutines, and [Dir] by several processes.
// Every implementation passes memorytest.Run.
type Store interface {
	Get(ctx context.Context, owner, agent string) (Document, error)
	Put(ctx context.Context, owner, agent, content, expected string) (version string, err error)
}

// Sentinel errors of [Store] implementations.
var (
	// ErrConflict: a compare-and-swap write named a version that is not the
	// stored one. Nothing was written.
	ErrConflict = errors.New("memory: version conflict")
	// ErrInvalid: the owner or agent is empty or cannot be stored.
	ErrInvalid = errors.New("memory: invalid argument")
)

// ConflictError is returned by Put when the expected version is not the
// stored one. It unwraps to [ErrConflict] and, when the backend reported
// one, to the backend's own error.
type ConflictError struct {
	Owner, Agent string
	// Expected is the version the writer named; Actual the stored one ("" if
	// the document does not exist, or when the backend did not say).
	Expected, Actual string
	// Err is the backend's error, if any.
	Err error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("memory: document of agent %s (owner %s): expected version %q, found %q", e.Agent, e.Owner, e.Expected, e.Actual)
}

// Unwrap returns [ErrConflict] and the backend's error.
func (e *ConflictError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrConflict, e.Err}
	}
	return []error{ErrConflict}
}

// Update applies fn to the document of owner and agent and writes the result
// compare-and-swap, reading again and calling fn again when another writer
// got there first, up to attempts times (at least 1; defaults to 8 when 0).
// fn receives the current content ("" for a missing document) and returns
// the new content and whether to write it at all; returning false, or the
// content unchanged, writes nothing. Update returns the document as it is
// after the call and whether it wrote. An error from fn stops the loop and
// is returned as it is.
func Update(ctx context.Context, s Store, owner, agent string, attempts int, fn func(content string) (string, bool, error)) (Document, bool, error) {
	if attempts <= 0 {
		attempts = 8
	}
	var err error
	for range attempts {
		var doc Document
		doc, err = s.Get(ctx, owner, agent)
		if err != nil {
			return Document{}, false, err
		}
		next, write, ferr := fn(doc.Content)
		if ferr != nil {
			return doc, false, ferr
		}
		if !write || (next == doc.Content && doc.Version != "") {
			return doc, false, nil
		}
		var v string
		v, err = s.Put(ctx, owner, agent, next, doc.Version)
		if err == nil {
			return Document{Content: next, Version: v}, true, nil
		}
		if !errors.Is(err, ErrConflict) {
			return Document{}, false, err
		}
		if cerr := ctx.Err(); cerr != nil {
			return Document{}, false, cerr
		}
	}
	return Document{}, false, fmt.Errorf("memory: update of agent %s gave up after %d conflicts: %w", agent, attempts, err)
}
