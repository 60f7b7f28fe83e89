package draft

import (
	"context"
	"errors"
	"iter"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// Event says that a message's draft or status changed. It carries ids only:
// subscribers read the data from the store.
type Event struct {
	OwnerID   string `json:"o"`
	ThreadID  string `json:"t"`
	MessageID string `json:"m"`
}

// Filter selects what a subscription receives: the messages of one thread,
// or one message, of one owner. OwnerID and exactly one of ThreadID and
// MessageID are required.
type Filter struct {
	OwnerID   string
	ThreadID  string
	MessageID string
}

// Update is what a subscriber receives about a message.
type Update struct {
	ThreadID  string
	MessageID string
	// Status is the message's status: queued or streaming while it has a
	// draft, completed or error once final.
	Status message.Status
	// Text is the draft text so far, or the message's text once final.
	Text string
	// Version is the draft's version (0 without a draft): it grows with
	// every flush.
	Version int64
	// Final is set once the message is completed or in error; no update
	// about it follows.
	Final bool
}

// Broker fans draft events out to subscribers. Implementations are safe for
// concurrent use.
type Broker interface {
	// Publish announces that ev's message changed. It is called after the
	// change is committed; an event that arrives early or twice is harmless.
	Publish(ctx context.Context, ev Event) error
	// Subscribe yields the updates that match f until ctx ends or, for a
	// message subscription, until the message is final. It first yields the
	// current state (a message's draft; each unfinished message of a
	// thread), then changes as they are published. A slow consumer skips
	// intermediate drafts: it always gets the latest. Data is read from the
	// store as f.OwnerID, so another owner's messages are never seen. A
	// store error ends the sequence with that error.
	Subscribe(ctx context.Context, f Filter) iter.Seq2[Update, error]
}

// TxPublisher is a [Broker] that can publish inside a store transaction:
// the event goes out only if the transaction commits (PostgreSQL NOTIFY).
type TxPublisher interface {
	PublishTx(ctx context.Context, tx store.Tx, ev Event) error
}

// ErrInvalidFilter is returned by Subscribe for a filter without an owner or
// without exactly one of thread and message.
var ErrInvalidFilter = errors.New("draft: filter needs an owner and one of thread or message")

// Valid reports whether f has an owner and exactly one of thread and
// message.
func (f Filter) Valid() bool {
	return f.OwnerID != "" && (f.ThreadID == "") != (f.MessageID == "")
}

// final reports whether s is a final message status.
func final(s message.Status) bool {
	return s == message.StatusCompleted || s == message.StatusError || s == ""
}
