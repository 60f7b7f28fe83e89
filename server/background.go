package server

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
)

// Background continues runs that stopped at the background boundary
// (runner.WithBackgroundBoundary: a slow tool is next). Implementations are
// safe for concurrent use.
//
// The default is an in-process worker pool. A durable queue (package
// continuation, on River) enqueues its job in the checkpoint transaction
// through [Config].Hook and implements Continue as a no-op that returns
// false; the server then follows the run through the store.
type Background interface {
	// Continue is called once a run of this server has stopped suspended
	// and its checkpoint is committed. A worker in this process calls
	// job.Resume (now or later, from a goroutine of its own, with a context
	// that ends when the worker stops) and returns true. A worker elsewhere
	// returns false: the server then follows the run through the store
	// (checkpoints, and drafts when [Config].Drafts is set) to stream its
	// progress. An error leaves the run suspended for another worker; the
	// server follows it too.
	Continue(ctx context.Context, job Job) (inProcess bool, err error)
}

// Job is a suspended run to continue.
type Job struct {
	Owner    string
	ThreadID string
	RunID    string
	Network  string
	// Resume resumes the run from its latest checkpoint in this process,
	// with its events going to the run's streams, and returns when the run
	// stops again (completed, failed, interrupted). Call it at most once.
	Resume func(ctx context.Context) error
}

// ErrQueueFull is returned by the in-process worker pool when more runs
// wait for a worker than it queues.
var ErrQueueFull = errors.New("server: background queue is full")

// maxQueued bounds the jobs that wait for a worker of the pool.
const maxQueued = 10000

// workerPool is the default Background: at most n resumed runs at once in
// this process; more wait.
type workerPool struct {
	sem    chan struct{}
	queued atomic.Int64
	t      *tracker
}

func newWorkerPool(n int, t *tracker) *workerPool {
	return &workerPool{sem: make(chan struct{}, n), t: t}
}

func (p *workerPool) Continue(ctx context.Context, job Job) (bool, error) {
	if p.queued.Add(1) > maxQueued {
		p.queued.Add(-1)
		return false, ErrQueueFull
	}
	p.t.add()
	go func() {
		defer p.t.done()
		defer p.queued.Add(-1)
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return // left suspended: resumed later from its checkpoint
		}
		defer func() { <-p.sem }()
		_ = job.Resume(ctx) // the run's outcome is in its events and checkpoints
	}()
	return true, nil
}

// tracker counts work in flight and waits for none to be left.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (t *tracker) add() {
	t.mu.Lock()
	if t.n == 0 {
		t.idle = make(chan struct{})
	}
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	t.n--
	if t.n == 0 {
		close(t.idle)
		t.idle = nil
	}
	t.mu.Unlock()
}

// wait returns when nothing is in flight, or ctx's error.
func (t *tracker) wait(ctx context.Context) error {
	for {
		t.mu.Lock()
		idle := t.idle
		t.mu.Unlock()
		if idle == nil {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// DraftSource reports the progress of messages that workers of other
// processes write: their draft text and status. Package draft's brokers
// provide it (a thin adapter over draft.Broker.Subscribe with a thread
// filter).
type DraftSource interface {
	// SubscribeThread yields the draft updates of the owner's thread
	// until ctx ends: first the current state of its unfinished messages,
	// then changes. Another owner's messages are never yielded.
	SubscribeThread(ctx context.Context, owner, threadID string) iter.Seq2[DraftUpdate, error]
}

// DraftUpdate is the state of a message that a worker is writing.
type DraftUpdate struct {
	MessageID string `json:"message_id"`
	// Status is queued or streaming while the message has a draft,
	// completed or error once final.
	Status string `json:"status"`
	// Text is the draft so far, or the final text.
	Text string `json:"text"`
	// Version grows with every flush of the draft.
	Version int64 `json:"version"`
	Final   bool  `json:"final,omitempty"`
}
