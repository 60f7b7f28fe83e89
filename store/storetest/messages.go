package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

// sampleMessages exercises every part type and field.
func sampleMessages() []store.NewMessage {
	return []store.NewMessage{
		{Message: message.System("Be brief. Ünïcödé ✓")},
		{Message: message.User("what's the weather in 東京?")},
		{Message: message.Message{
			Role: message.RoleAssistant, Agent: "weather",
			Parts: []message.Part{
				{Type: message.PartReasoning, Text: "thinking", Provider: "anthropic", Signature: "sig", ID: "r1"},
				{Type: message.PartText, Text: "Let me check."},
				{Type: message.PartToolCall, CallID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"東京","units":"c"}`)},
			},
			Usage:    &message.Usage{InputTokens: 120, OutputTokens: 30, CachedTokens: 100, ReasoningTokens: 10},
			Metadata: map[string]any{"continuation_id": "evt-1", "score": 0.5},
		}},
		{Message: message.ToolResult("weather", "call_1", "get_weather", `{"temp":21}`, false)},
		{Message: message.Message{Role: message.RoleUser, Parts: []message.Part{
			{Type: message.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0, 1, 2}},
			{Type: message.PartImage, URL: "https://example.com/a.png"},
		}}},
		{Message: message.Message{Role: message.RoleAssistant, Agent: "weather", Status: message.StatusQueued}, ParentID: "parent-msg"},
	}
}

func testMessagesAppendList(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	in := sampleMessages()
	in[1].Message.ID = "msg-" + uuid.NewString()
	out := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID, Messages: in}))(t)
	if len(out) != len(in) {
		t.Fatalf("appended %d, want %d", len(out), len(in))
	}
	for i, m := range out {
		want := in[i].Message.Clone()
		if want.ID == "" {
			want.ID = m.ID
		}
		if want.Status == "" {
			want.Status = message.StatusCompleted
		}
		if want.Parts == nil {
			want.Parts = []message.Part{}
		}
		if m.Seq != int64(i+1) || m.ThreadID != th.ID || m.OwnerID != b.owner || m.ParentID != in[i].ParentID {
			t.Fatalf("message %d = seq %d thread %s owner %s parent %q", i, m.Seq, m.ThreadID, m.OwnerID, m.ParentID)
		}
		checkTime(t, "CreatedAt", m.CreatedAt)
		if !reflect.DeepEqual(m.Message, want) {
			t.Fatalf("message %d:\n got %+v\nwant %+v", i, m.Message, want)
		}
	}
	if out[1].ID != in[1].Message.ID {
		t.Fatalf("given ID not kept")
	}
	list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if !reflect.DeepEqual(list, out) {
		t.Fatalf("ListMessages differs from AppendMessages:\n got %+v\nwant %+v", list, out)
	}
	got := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: out[2].ID}))(t)
	if !reflect.DeepEqual(got, out[2]) {
		t.Fatalf("GetMessage = %+v, want %+v", got, out[2])
	}

	var after store.Thread
	more := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("again")}}, Thread: &after}))(t)
	if more[0].Seq != int64(len(in)+1) {
		t.Fatalf("next seq = %d", more[0].Seq)
	}
	seqs := func(ms []*store.Message) (out []int64) {
		for _, m := range ms {
			out = append(out, m.Seq)
		}
		return out
	}
	for _, tc := range []struct {
		p    store.ListMessagesParams
		want []int64
	}{
		{store.ListMessagesParams{AfterSeq: 4}, []int64{5, 6, 7}},
		{store.ListMessagesParams{Limit: 2}, []int64{1, 2}},
		{store.ListMessagesParams{Limit: 3, Last: true}, []int64{5, 6, 7}},
		{store.ListMessagesParams{AfterSeq: 2, Limit: 2}, []int64{3, 4}},
		{store.ListMessagesParams{AfterSeq: 7}, nil},
	} {
		tc.p.OwnerID, tc.p.ThreadID = b.owner, th.ID
		got := Must(s.ListMessages(b.ctx, &tc.p))(t)
		if !reflect.DeepEqual(seqs(got), tc.want) || got == nil {
			t.Fatalf("ListMessages(%+v) = %v, want %v", tc.p, seqs(got), tc.want)
		}
	}
	updated := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: th.ID}))(t)
	if updated.UpdatedAt.Before(more[0].CreatedAt) || updated.Version != th.Version {
		t.Fatalf("thread after append: updated %v (message %v), version %d", updated.UpdatedAt, more[0].CreatedAt, updated.Version)
	}
	if !reflect.DeepEqual(&after, updated) {
		t.Fatalf("AppendMessages' Thread:\n got %+v\nwant %+v", &after, updated)
	}
	empty := newThread(t, s, b)
	if got := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: empty.ID}))(t); got == nil || len(got) != 0 {
		t.Fatalf("empty thread lists %v", got)
	}
	_, err := s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: "missing"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: "missing", Messages: in[:1]})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: "missing", Messages: in[:1], Thread: &after})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: "robot"}}}})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleUser, Status: "done"}}}})
	wantErr(t, err, store.ErrInvalid)
}

func testMessagesAppendAtomic(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	first := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("one")}}}))(t)
	dup := message.User("dup")
	dup.ID = first[0].ID
	_, err := s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("two")}, {Message: dup}}})
	wantErr(t, err, store.ErrConflict)
	list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if len(list) != 1 {
		t.Fatalf("a failed batch left %d messages, want 1", len(list))
	}
	next := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.User("three")}}}))(t)
	if next[0].Seq != 2 {
		t.Fatalf("seq after a failed batch = %d, want 2", next[0].Seq)
	}
}

func testMessagesConcurrentAppend(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.User(fmt.Sprintf("w%d-%d", w, i))}}})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent append: %v", err)
		}
	}
	list := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: th.ID}))(t)
	if len(list) != writers*each {
		t.Fatalf("%d messages, want %d", len(list), writers*each)
	}
	for i, m := range list {
		if m.Seq != int64(i+1) {
			t.Fatalf("message %d has seq %d", i, m.Seq)
		}
	}
}

func testMessagesUpdate(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	placeholder := message.Message{Role: message.RoleAssistant, Agent: "a", Status: message.StatusQueued,
		Metadata: map[string]any{"keep": "yes", "drop": "x"}}
	m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: placeholder}}}))(t)[0]
	up := Must(s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
		Status: message.StatusStreaming, ExpectedStatus: message.StatusQueued}))(t)
	if up.Status != message.StatusStreaming || len(up.Parts) != 0 {
		t.Fatalf("after streaming: %+v", up)
	}
	usage := &message.Usage{InputTokens: 5, OutputTokens: 7}
	up = Must(s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
		Status: message.StatusCompleted, Parts: []message.Part{{Type: message.PartText, Text: "done ✓"}}, Usage: usage,
		Metadata: map[string]any{"drop": nil, "run_id": "r1"}, ExpectedStatus: message.StatusStreaming}))(t)
	want := map[string]any{"keep": "yes", "run_id": "r1"}
	if up.Status != message.StatusCompleted || up.Text() != "done ✓" || *up.Usage != *usage || !reflect.DeepEqual(up.Metadata, want) {
		t.Fatalf("after completion: %+v", up)
	}
	if up.UpdatedAt.Before(up.CreatedAt) || up.Seq != m.Seq || up.Agent != "a" {
		t.Fatalf("after completion: %+v", up)
	}
	// A second finisher expecting streaming loses and writes nothing.
	_, err := s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
		Status: message.StatusError, ExpectedStatus: message.StatusStreaming})
	te := wantAs[*store.TransitionError](t, err)
	wantErr(t, err, store.ErrConflict)
	if te.From != string(message.StatusCompleted) || te.To != string(message.StatusError) {
		t.Fatalf("TransitionError = %+v", te)
	}
	got := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: m.ID}))(t)
	if !reflect.DeepEqual(got, up) {
		t.Fatalf("a failed update wrote: %+v", got)
	}
	_, err = s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID, Status: "bogus"})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.other, ID: m.ID, Status: message.StatusError})
	wantErr(t, err, store.ErrNotFound)
}

// testMessagesUpdateAwaitsWriter: an update expecting the status that
// another transaction, still open, is moving the message to waits for that
// transaction and is decided by its outcome — made if it commits, refused
// with the status the message kept if it rolls back — immediate or
// deferred (UpdateMessageParams.Deferred) alike. (A continuation's final
// update, expecting the streaming status its draft flush's claim writes,
// races that claim's commit.)
func testMessagesUpdateAwaitsWriter(t *testing.T, s store.Store, b *bundle) {
	boom := errors.New("boom")
	for _, deferred := range []bool{false, true} {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("deferred=%v/commit=%v", deferred, commit), func(t *testing.T) {
				th := newThread(t, s, b)
				m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
					Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusQueued}}}}))(t)[0]
				written, release := make(chan struct{}), make(chan struct{})
				writer := make(chan error, 1)
				go func() {
					writer <- s.Tx(b.ctx, func(tx store.Tx) error {
						if _, err := tx.UpdateMessage(b.ctx, &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID,
							Status: message.StatusStreaming, ExpectedStatus: message.StatusQueued}); err != nil {
							return err
						}
						close(written)
						<-release
						if !commit {
							return boom
						}
						return nil
					})
				}()
				select {
				case <-written:
				case err := <-writer:
					t.Fatalf("writer: %v", err)
				}
				finish := &store.UpdateMessageParams{OwnerID: b.owner, ID: m.ID, Status: message.StatusCompleted,
					Parts: []message.Part{{Type: message.PartText, Text: "done"}}, ExpectedStatus: message.StatusStreaming, Deferred: deferred}
				done := make(chan error, 1)
				go func() {
					done <- s.Tx(b.ctx, func(tx store.Tx) error {
						if _, err := tx.UpdateMessage(b.ctx, finish); err != nil {
							return err
						}
						// A deferred update goes with the next statement.
						_, err := tx.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: m.ID})
						return err
					})
				}()
				awaited(t, "the update", done, writer, release)
				if err := <-writer; commit && err != nil || !commit && !errors.Is(err, boom) {
					t.Fatalf("writer: %v", err)
				}
				err := <-done
				got := Must(s.GetMessage(b.ctx, &store.GetMessageParams{OwnerID: b.owner, ID: m.ID}))(t)
				if commit {
					if err != nil {
						t.Fatalf("update after the writer committed: %v", err)
					}
					if got.Status != message.StatusCompleted || got.Text() != "done" {
						t.Fatalf("after the update: %+v", got)
					}
					return
				}
				te := wantAs[*store.TransitionError](t, err)
				if te.From != string(message.StatusQueued) || te.To != string(message.StatusCompleted) {
					t.Fatalf("TransitionError = %+v", te)
				}
				if got.Status != message.StatusQueued || len(got.Parts) != 0 {
					t.Fatalf("a refused update wrote: %+v", got)
				}
			})
		}
	}
}

// awaited checks that a write racing another transaction, still open
// (release ends it; other reports its end), has not returned (done) in the
// time it takes to reach the row, then releases the other transaction.
func awaited(t *testing.T, what string, done, other <-chan error, release chan struct{}) {
	t.Helper()
	select {
	case err := <-done:
		close(release)
		<-other
		t.Fatalf("%s returned while the other transaction was open: %v", what, err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
}

func testDrafts(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b)
	m := Must(s.AppendMessages(b.ctx, &store.AppendMessagesParams{OwnerID: b.owner, ThreadID: th.ID,
		Messages: []store.NewMessage{{Message: message.Message{Role: message.RoleAssistant, Status: message.StatusStreaming}}}}))(t)[0]
	_, err := s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	d := Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: m.ID, Text: "Hel"}))(t)
	if d.Version != 1 || d.Text != "Hel" || d.MessageID != m.ID || d.OwnerID != b.owner {
		t.Fatalf("first draft = %+v", d)
	}
	checkTime(t, "UpdatedAt", d.UpdatedAt)
	d = Must(s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: m.ID, Text: "Hello, wörld"}))(t)
	if d.Version != 2 || d.Text != "Hello, wörld" {
		t.Fatalf("second draft = %+v", d)
	}
	got := Must(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID}))(t)
	if *got != *d {
		t.Fatalf("GetDraft = %+v, want %+v", got, d)
	}
	_, err = s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.other, MessageID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.other, MessageID: m.ID, Text: "hijack"})
	wantErr(t, err, store.ErrNotFound)
	if err := s.DeleteDraft(b.ctx, &store.DeleteDraftParams{OwnerID: b.other, MessageID: m.ID}); err != nil {
		t.Fatalf("DeleteDraft by another owner: %v", err)
	}
	if got := Must(s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID}))(t); got.Text != "Hello, wörld" {
		t.Fatalf("another owner changed the draft: %+v", got)
	}
	_, err = s.UpsertDraft(b.ctx, &store.UpsertDraftParams{OwnerID: b.owner, MessageID: "missing", Text: "x"})
	wantErr(t, err, store.ErrNotFound)
	if err := s.DeleteDraft(b.ctx, &store.DeleteDraftParams{OwnerID: b.owner, MessageID: m.ID}); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetDraft(b.ctx, &store.GetDraftParams{OwnerID: b.owner, MessageID: m.ID})
	wantErr(t, err, store.ErrNotFound)
	if err := s.DeleteDraft(b.ctx, &store.DeleteDraftParams{OwnerID: b.owner, MessageID: m.ID}); err != nil {
		t.Fatalf("deleting a missing draft: %v", err)
	}
}
