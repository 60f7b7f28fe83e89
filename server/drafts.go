package server

import (
	"context"
	"iter"
	"sync"

	"github.com/batonhq/baton/draft"
)

// DraftSource reports the progress of messages that background workers
// write, in this process or another: their draft text and status. The
// service's draft broker provides it ([BrokerDrafts]).
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

// BrokerDrafts adapts a draft broker to a [DraftSource].
func BrokerDrafts(b draft.Broker) DraftSource { return brokerDrafts{b} }

type brokerDrafts struct{ b draft.Broker }

func (d brokerDrafts) SubscribeThread(ctx context.Context, owner, threadID string) iter.Seq2[DraftUpdate, error] {
	return func(yield func(DraftUpdate, error) bool) {
		for u, err := range d.b.Subscribe(ctx, draft.Filter{OwnerID: owner, ThreadID: threadID}) {
			if err != nil {
				yield(DraftUpdate{}, err)
				return
			}
			if !yield(DraftUpdate{MessageID: u.MessageID, Status: string(u.Status), Text: u.Text, Version: u.Version, Final: u.Final}, nil) {
				return
			}
		}
	}
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
