package store

import (
	"errors"
	"fmt"

	"github.com/batonhq/baton/runstate"
)

// Sentinel errors. Every error a [Store] returns for one of these conditions
// wraps the sentinel, so callers branch with [errors.Is]; the typed errors
// below carry detail and unwrap to a sentinel.
var (
	// ErrNotFound: the row does not exist or belongs to another owner. The
	// two cases are indistinguishable on purpose.
	ErrNotFound = errors.New("store: not found")

	// ErrConflict: the write lost a race or broke a uniqueness rule; nothing
	// was written. See [StaleWriteError], [VersionConflictError] and
	// [TransitionError] for the cases callers usually branch on.
	ErrConflict = errors.New("store: conflict")

	// ErrIncompatible is [runstate.ErrIncompatible] itself, so that
	// errors.Is(err, store.ErrIncompatible) and
	// errors.Is(err, runstate.ErrIncompatible) agree. The store returns a
	// *[runstate.IncompatibleError] when a checkpoint is read with a
	// fingerprint other than the one it was written under.
	ErrIncompatible = runstate.ErrIncompatible

	// ErrUnavailable: the database could not be reached or is locked past the
	// busy timeout. The driver's error is wrapped too. The operation may be
	// retried later; nothing is known to have been written.
	ErrUnavailable = errors.New("store: database unavailable")

	// ErrDiskFull: the database's disk is full (SQLite's SQLITE_FULL,
	// PostgreSQL's SQLSTATE 53100). It is an [ErrUnavailable]: nothing of
	// the failed write was committed, and the same write succeeds once
	// space is freed.
	ErrDiskFull = fmt.Errorf("store: the database's disk is full: %w", ErrUnavailable)

	// ErrCorrupt: a stored row could not be decoded. See [CorruptError].
	ErrCorrupt = errors.New("store: corrupt row")

	// ErrInvalid: the parameters of a call are invalid (a required field is
	// empty, an enum value is unknown), or hold a value the store does not
	// keep, on every backend alike: text that is not UTF-8 or holds NUL, an
	// id or key longer than 1024 bytes, JSON (metadata, summaries,
	// interrupts) with a \u0000 escape, a lone UTF-16 surrogate or a number
	// beyond PostgreSQL's numeric range. The error names the field. On
	// PostgreSQL, any other value the database refuses (SQLSTATE classes 22
	// and 54) is ErrInvalid too. Nothing was written.
	ErrInvalid = errors.New("store: invalid argument")

	// ErrSchemaVersion: the database schema is older than this build and the
	// store was opened with [Options.NoMigrate]. See [SchemaVersionError].
	ErrSchemaVersion = errors.New("store: database schema is out of date")
)

// StaleWriteError is returned by SaveCheckpoint when the run already has a
// checkpoint at or beyond the step being written, or when its newest
// checkpoint is not the parent the writer named: another writer got there
// first. Nothing was written. It unwraps to [ErrConflict].
type StaleWriteError struct {
	RunID string
	// Step and ParentID are what the stale writer tried to write.
	Step     int
	ParentID string
	// LatestID and LatestStep describe the run's newest checkpoint.
	LatestID   string
	LatestStep int
}

func (e *StaleWriteError) Error() string {
	return fmt.Sprintf("store: stale checkpoint write for run %s: step %d (parent %q) but the newest checkpoint is %s at step %d",
		e.RunID, e.Step, e.ParentID, e.LatestID, e.LatestStep)
}

// Unwrap returns [ErrConflict].
func (e *StaleWriteError) Unwrap() error { return ErrConflict }

// Superseded reports true: another writer has taken the run's place. The
// runner stops such a run rather than finishing it inline (see
// runner.WithBackgroundFallback).
func (e *StaleWriteError) Superseded() bool { return true }

// VersionConflictError is returned by a compare-and-swap write (thread
// metadata, memory documents) whose expected version is not the stored one.
// Nothing was written. It unwraps to [ErrConflict].
type VersionConflictError struct {
	// Kind is what was written: "thread" or "memory document".
	Kind string
	ID   string
	// Expected is the version the writer named; Actual is the stored one,
	// 0 when the row does not exist.
	Expected int64
	Actual   int64
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("store: %s %s: expected version %d, found %d", e.Kind, e.ID, e.Expected, e.Actual)
}

// Unwrap returns [ErrConflict].
func (e *VersionConflictError) Unwrap() error { return ErrConflict }

// TransitionError is returned when a status change is not allowed from the
// row's current status (a finished job run started again, a message whose
// status is not the expected one), or when the attempt the writer named is
// not the current one. Nothing was written. It unwraps to [ErrConflict].
type TransitionError struct {
	// Kind is "job run" or "message".
	Kind string
	ID   string
	From string
	To   string
	// Reason says why, e.g. "attempt 2 is not the current attempt 3".
	Reason string
}

func (e *TransitionError) Error() string {
	s := fmt.Sprintf("store: %s %s: cannot change status from %s to %s", e.Kind, e.ID, e.From, e.To)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Unwrap returns [ErrConflict].
func (e *TransitionError) Unwrap() error { return ErrConflict }

// CorruptError is returned when a stored row cannot be decoded. The row is
// left as it is: the store never overwrites a row it cannot read. It unwraps
// to both [ErrCorrupt] and the decoding error; for checkpoint state that is a
// [runstate] error wrapping [runstate.ErrCorrupt] or
// [runstate.ErrUnknownVersion].
type CorruptError struct {
	Table  string
	ID     string
	Column string
	Err    error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: %s %s: cannot decode %s: %v", e.Table, e.ID, e.Column, e.Err)
}

// Unwrap returns [ErrCorrupt] and the decoding error.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// SchemaVersionError reports a database schema older than this build when
// migrations are not applied on open. It unwraps to [ErrSchemaVersion].
type SchemaVersionError struct {
	// Current is the newest migration applied to the database (0: none).
	Current int
	// Required is the newest migration this build knows.
	Required int
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("store: database schema is at version %d, this build needs %d: run `baton migrate` or open without NoMigrate",
		e.Current, e.Required)
}

// Unwrap returns [ErrSchemaVersion].
func (e *SchemaVersionError) Unwrap() error { return ErrSchemaVersion }
