// Package drafttest is the conformance suite of [draft.Broker]
// implementations.
package drafttest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// Setup returns a broker under test and the store its subscribers read.
// Each call gets a fresh one; closing them is the setup's business
// (t.Cleanup).
type Setup func(t *testing.T) (draft.Broker, store.Store)

// wait bounds how long an expected update may take.
const wait = 10 * time.Second

var seq atomic.Int64

// Run checks b's behaviour as a [draft.Broker]: late subscribers get the
// current draft first, then live updates; thread and message filters; owner
// scoping; slow subscribers get the latest draft without blocking
// publishers; a message subscription ends when the message is final; a
// broker that is a [draft.Signaller] delivers signals by kind.
func Run(t *testing.T, setup Setup) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, Setup)
	}{
		{"LateSubscriberGetsCurrentDraft", testLateSubscriberGetsCurrentDraft},
		{"FinalMessageEndsAtOnce", testFinalMessageEndsAtOnce},
		{"ThreadSubscription", testThreadSubscription},
		{"OtherOwnerSeesNothing", testOtherOwnerSeesNothing},
		{"SlowSubscriberGetsLatest", testSlowSubscriberGetsLatest},
		{"Signals", testSignals},
		{"InvalidFilter", testInvalidFilter},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, setup) })
	}
}

// testLateSubscriberGetsCurrentDraft: a subscriber that comes late gets the
// current draft first, then the live updates, then the final message, and
// its subscription ends.
func testLateSubscriberGetsCurrentDraft(t *testing.T, setup Setup) {
	f, m := start(t, setup)
	f.draft(t, m, "Looking up")
	sub := f.watch(t, m)
	u := sub.next(t)
	if u.Text != "Looking up" || u.Version != 1 || u.Status != message.StatusStreaming || u.Final || u.ThreadID != f.thread {
		t.Fatalf("first update = %+v, want the current draft", u)
	}
	f.draft(t, m, "Looking up your order")
	if u := sub.next(t); u.Text != "Looking up your order" || u.Version != 2 {
		t.Fatalf("live update = %+v", u)
	}
	f.finish(t, m, "Your order ships today.")
	if u := sub.next(t); !u.Final || u.Status != message.StatusCompleted || u.Text != "Your order ships today." {
		t.Fatalf("final update = %+v", u)
	}
	sub.ended(t)
}

// testFinalMessageEndsAtOnce: a subscription to a final message gets it and
// ends at once.
func testFinalMessageEndsAtOnce(t *testing.T, setup Setup) {
	f, m := start(t, setup)
	f.finish(t, m, "done")
	sub := f.watch(t, m)
	if u := sub.next(t); !u.Final || u.Text != "done" {
		t.Fatalf("update = %+v, want the final message", u)
	}
	sub.ended(t)
}

// testThreadSubscription: a thread subscription catches up with the
// thread's draft, follows its messages and none of another thread's, and
// ends when cancelled.
func testThreadSubscription(t *testing.T, setup Setup) {
	f, old := start(t, setup)
	f.draft(t, old, "earlier draft")
	other := f.newThread(t)
	sub := subscribe(t, f.b, draft.Filter{OwnerID: f.owner, ThreadID: f.thread})
	if u := sub.next(t); u.MessageID != old || u.Text != "earlier draft" {
		t.Fatalf("catch-up update = %+v", u)
	}
	f.finish(t, old, "earlier answer")
	if u := sub.next(t); u.MessageID != old || !u.Final {
		t.Fatalf("final update = %+v", u)
	}
	elsewhere := f.message(t, other)
	f.draft(t, elsewhere, "not for this thread")
	m := f.message(t, f.thread)
	f.draft(t, m, "new draft")
	if u := sub.next(t); u.MessageID != m || u.Text != "new draft" {
		t.Fatalf("update = %+v, want the new message of the thread only", u)
	}
	sub.cancel()
	sub.ended(t)
}

// testOtherOwnerSeesNothing: another owner's subscriptions, to the message
// or its thread, get nothing of it, even from a forged event.
func testOtherOwnerSeesNothing(t *testing.T, setup Setup) {
	f, m := start(t, setup)
	intruder := newFixture(t, f.st)
	sub := subscribe(t, f.b, draft.Filter{OwnerID: intruder.owner, MessageID: m})
	f.draft(t, m, "secret")
	// A forged event naming the intruder does not help: data is read as
	// the intruder.
	if err := f.b.Publish(t.Context(), draft.Event{OwnerID: intruder.owner, ThreadID: f.thread, MessageID: m}); err != nil {
		t.Fatal(err)
	}
	sub.none(t, 500*time.Millisecond)
	tsub := subscribe(t, f.b, draft.Filter{OwnerID: intruder.owner, ThreadID: f.thread})
	if u, err, ok := tsub.poll(t, 500*time.Millisecond); ok && (err == nil || !errors.Is(err, store.ErrNotFound)) {
		t.Fatalf("intruder's thread subscription got %+v, %v", u, err)
	}
}

// testSlowSubscriberGetsLatest: a subscriber that does not read does not
// hold publishers back, and gets the latest draft when it reads.
func testSlowSubscriberGetsLatest(t *testing.T, setup Setup) {
	f, m := start(t, setup)
	f.draft(t, m, "v1")
	sub := f.watch(t, m)
	if u := sub.next(t); u.Version != 1 {
		t.Fatalf("first = %+v", u)
	}
	const n = 30
	began := time.Now()
	for i := 2; i <= n; i++ {
		f.draft(t, m, fmt.Sprintf("v%d", i))
	}
	if d := time.Since(began); d > wait {
		t.Fatalf("publishing took %s", d)
	}
	got := 0
	for {
		u := sub.next(t)
		got++
		if u.Version < 2 || u.Version > n {
			t.Fatalf("update = %+v", u)
		}
		if u.Version == n {
			if u.Text != fmt.Sprintf("v%d", n) {
				t.Fatalf("latest = %+v", u)
			}
			break
		}
	}
	if got > n-1 {
		t.Errorf("got %d updates for %d drafts", got, n-1)
	}
}

// testSignals: a broker that is a draft.Signaller delivers a signal to the
// handlers of its kind, and none to a cancelled handler.
func testSignals(t *testing.T, setup Setup) {
	b, _ := setup(t)
	sg, ok := b.(draft.Signaller)
	if !ok {
		t.Skipf("%T carries no signals", b)
	}
	got := make(chan draft.Signal, 4)
	cancel := sg.OnSignal("stop", func(s draft.Signal) { got <- s })
	other := make(chan draft.Signal, 4)
	defer sg.OnSignal("other", func(s draft.Signal) { other <- s })()
	want := draft.Signal{Kind: "stop", OwnerID: "o1", Key: "run-1", Data: "cancel"}
	if err := sg.Signal(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != want {
			t.Fatalf("signal = %+v, want %+v", s, want)
		}
	case <-time.After(wait):
		t.Fatal("no signal")
	}
	cancel()
	if err := sg.Signal(t.Context(), want); err != nil {
		t.Fatal(err)
	}
	// A signal of its own kind reaches the other handler; the cancelled
	// one hears nothing more.
	if err := sg.Signal(t.Context(), draft.Signal{Kind: "other", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-other:
		if s.Key != "k" {
			t.Fatalf("other = %+v", s)
		}
	case <-time.After(wait):
		t.Fatal("no signal of the other kind")
	}
	select {
	case s := <-got:
		t.Fatalf("cancelled handler got %+v", s)
	default:
	}
}

// testInvalidFilter: a subscription with an invalid filter fails with
// ErrInvalidFilter.
func testInvalidFilter(t *testing.T, setup Setup) {
	t.Parallel()
	b, _ := setup(t)
	for _, f := range []draft.Filter{{}, {OwnerID: "o"}, {OwnerID: "o", ThreadID: "t", MessageID: "m"}, {ThreadID: "t"}} {
		for _, err := range b.Subscribe(t.Context(), f) {
			if !errors.Is(err, draft.ErrInvalidFilter) {
				t.Errorf("filter %+v: %v", f, err)
			}
			break
		}
	}
}

// Target returns the target of a new streaming assistant message, in a new
// thread of owner (created if need be) in st.
func Target(t *testing.T, st store.Store, owner string) draft.Target {
	t.Helper()
	f := ownerFixture(t, st, nil, owner)
	return draft.Target{OwnerID: owner, ThreadID: f.thread, MessageID: f.message(t, f.thread)}
}

// fixture is one owner's data in a broker's store.
type fixture struct {
	b      draft.Broker
	st     store.Store
	owner  string
	thread string
}

// start is the setup of a subtest: it runs in parallel with the others, on
// a new broker and a new owner, whose thread has a streaming message, m.
func start(t *testing.T, setup Setup) (f *fixture, m string) {
	t.Helper()
	t.Parallel()
	b, st := setup(t)
	f = ownerFixture(t, st, b, fmt.Sprintf("owner-%d-%d", time.Now().UnixNano(), seq.Add(1)))
	return f, f.message(t, f.thread)
}

// newFixture returns a fixture of a new owner in st, without a broker.
func newFixture(t *testing.T, st store.Store) *fixture {
	t.Helper()
	return ownerFixture(t, st, nil, fmt.Sprintf("owner-%d-%d", time.Now().UnixNano(), seq.Add(1)))
}

func ownerFixture(t *testing.T, st store.Store, b draft.Broker, owner string) *fixture {
	t.Helper()
	f := &fixture{b: b, st: st, owner: owner}
	if _, err := st.EnsureOwner(t.Context(), &store.EnsureOwnerParams{ID: f.owner}); err != nil {
		t.Fatal(err)
	}
	f.thread = f.newThread(t)
	return f
}

func (f *fixture) newThread(t *testing.T) string {
	t.Helper()
	th, err := f.st.CreateThread(t.Context(), &store.CreateThreadParams{OwnerID: f.owner, Name: "drafts"})
	if err != nil {
		t.Fatal(err)
	}
	return th.ID
}

// message appends a streaming assistant message to thread.
func (f *fixture) message(t *testing.T, thread string) string {
	t.Helper()
	ms, err := f.st.AppendMessages(t.Context(), &store.AppendMessagesParams{OwnerID: f.owner, ThreadID: thread, Messages: []store.NewMessage{{
		Message: message.Message{Role: message.RoleAssistant, Agent: "a", Status: message.StatusStreaming}}}})
	if err != nil {
		t.Fatal(err)
	}
	return ms[0].ID
}

// draft writes the draft of message id and publishes it.
func (f *fixture) draft(t *testing.T, id, text string) {
	t.Helper()
	if _, err := f.st.UpsertDraft(t.Context(), &store.UpsertDraftParams{OwnerID: f.owner, MessageID: id, Text: text}); err != nil {
		t.Fatal(err)
	}
	f.publish(t, id)
}

func (f *fixture) publish(t *testing.T, id string) {
	t.Helper()
	m, err := f.st.GetMessage(t.Context(), &store.GetMessageParams{OwnerID: f.owner, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.b.Publish(t.Context(), draft.Event{OwnerID: f.owner, ThreadID: m.ThreadID, MessageID: id}); err != nil {
		t.Fatal(err)
	}
}

// finish completes a message with text and clears its draft, in one
// transaction, as a finaliser does.
func (f *fixture) finish(t *testing.T, id, text string) {
	t.Helper()
	err := f.st.Tx(t.Context(), func(tx store.Tx) error {
		if _, err := tx.UpdateMessage(t.Context(), &store.UpdateMessageParams{OwnerID: f.owner, ID: id, Status: message.StatusCompleted,
			Parts: []message.Part{{Type: message.PartText, Text: text}}}); err != nil {
			return err
		}
		return tx.DeleteDraft(t.Context(), &store.DeleteDraftParams{OwnerID: f.owner, MessageID: id})
	})
	if err != nil {
		t.Fatal(err)
	}
	f.publish(t, id)
}

// watch subscribes to message id of f's owner.
func (f *fixture) watch(t *testing.T, id string) *sub {
	t.Helper()
	return subscribe(t, f.b, draft.Filter{OwnerID: f.owner, MessageID: id})
}

type item struct {
	u   draft.Update
	err error
}

// sub consumes a subscription in a goroutine.
type sub struct {
	ch     chan item
	done   chan struct{}
	cancel context.CancelFunc
}

func subscribe(t *testing.T, b draft.Broker, f draft.Filter) *sub {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := &sub{ch: make(chan item), done: make(chan struct{}), cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		defer close(s.done)
		for u, err := range b.Subscribe(ctx, f) {
			select {
			case s.ch <- item{u, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

func (s *sub) poll(t *testing.T, d time.Duration) (draft.Update, error, bool) {
	t.Helper()
	select {
	case it := <-s.ch:
		return it.u, it.err, true
	case <-s.done:
		return draft.Update{}, nil, false
	case <-time.After(d):
		return draft.Update{}, nil, false
	}
}

func (s *sub) next(t *testing.T) draft.Update {
	t.Helper()
	select {
	case it := <-s.ch:
		if it.err != nil {
			t.Fatalf("subscription error: %v", it.err)
		}
		return it.u
	case <-s.done:
		t.Fatal("subscription ended")
	case <-time.After(wait):
		t.Fatal("no update before the deadline")
	}
	return draft.Update{}
}

func (s *sub) none(t *testing.T, d time.Duration) {
	t.Helper()
	if u, err, ok := s.poll(t, d); ok {
		t.Fatalf("unexpected update %+v, %v", u, err)
	}
}

func (s *sub) ended(t *testing.T) {
	t.Helper()
	select {
	case it := <-s.ch:
		t.Fatalf("update after the end: %+v, %v", it.u, it.err)
	case <-s.done:
	case <-time.After(wait):
		t.Fatal("subscription did not end")
	}
}
