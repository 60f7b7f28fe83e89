package continuation

import (
	"errors"
	"fmt"
)

// Sentinels.
var (
	// ErrNotSuspended: the run has no hand-over to a worker to enqueue.
	ErrNotSuspended = errors.New("continuation: run is not handed to a worker")
	// ErrNoThread: only runs on stored threads can be continued.
	ErrNoThread = errors.New("continuation: run has no thread")
)

// BusyError refuses a hand-over while another continuation of the same
// thread is queued or running (River's unique jobs allow one per thread).
type BusyError struct {
	ThreadID string
	// EventID is the hand-over refused; Current is the one in the queue.
	EventID, Current string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("continuation: thread %s already has continuation %s in the queue; refusing %s", e.ThreadID, e.Current, e.EventID)
}

// EnqueueError is a failed hand-over: nothing of it was written. The inline
// run answers without tools (see [Service.RunOptions]).
type EnqueueError struct {
	RunID, EventID string
	// Step is what failed: "job run", "placeholder", "river" or "publish".
	Step string
	Err  error
}

func (e *EnqueueError) Error() string {
	return fmt.Sprintf("continuation: enqueue %s of run %s: %s: %v", e.EventID, e.RunID, e.Step, e.Err)
}

// Unwrap returns the cause.
func (e *EnqueueError) Unwrap() error { return e.Err }
