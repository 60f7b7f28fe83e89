package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// SQL runs statements behind a store's back, as the database's owner, with
// $1… parameters: Exec one that returns no rows, Int one that returns one
// integer.
type SQL struct {
	Exec func(ctx context.Context, s store.Store, query string, args ...any) error
	Int  func(ctx context.Context, s store.Store, query string, args ...any) (int64, error)
}

// WithSQL gives the suite SQL behind the store's back: the fork tests
// count the rows a fork writes and delete threads (which the store does
// not). Without it those parts are skipped.
func WithSQL(sql SQL) Option {
	return func(c *config) { c.sql = &sql }
}

// texts returns the stored messages of list as "seq:text" lines.
func texts(list []*store.Message) string {
	var sb strings.Builder
	for _, m := range list {
		fmt.Fprintf(&sb, "%d:%s\n", m.Seq, m.Text())
	}
	return sb.String()
}

func userMessages(texts ...string) []store.NewMessage {
	out := make([]store.NewMessage, len(texts))
	for i, x := range texts {
		out[i] = store.NewMessage{Message: message.User(x)}
	}
	return out
}

// forkFixture holds what the fork tests share: the store, the bundle and
// SQL behind the store's back (nil: none).
type forkFixture struct {
	t   *testing.T
	s   store.Store
	b   *bundle
	sql *SQL
}

// count returns the owner's message rows (0 without SQL).
func (f *forkFixture) count() int64 {
	f.t.Helper()
	if f.sql == nil {
		return 0
	}
	return Must(f.sql.Int(f.b.ctx, f.s, `SELECT count(*) FROM messages WHERE owner_id = $1`, f.b.owner))(f.t)
}

// list returns a thread's messages.
func (f *forkFixture) list(thread string) []*store.Message {
	f.t.Helper()
	return Must(f.s.ListMessages(f.b.ctx, &store.ListMessagesParams{OwnerID: f.b.owner, ThreadID: thread}))(f.t)
}

// create creates a thread of the owner.
func (f *forkFixture) create(p store.CreateThreadParams) *store.Thread {
	f.t.Helper()
	p.OwnerID = f.b.owner
	return Must(f.s.CreateThread(f.b.ctx, &p))(f.t)
}

// add appends user messages to a thread.
func (f *forkFixture) add(thread string, texts ...string) {
	f.t.Helper()
	Must(f.s.AppendMessages(f.b.ctx, &store.AppendMessagesParams{OwnerID: f.b.owner, ThreadID: thread, Messages: userMessages(texts...)}))(f.t)
}

// del deletes a thread in SQL.
func (f *forkFixture) del(id string) {
	f.t.Helper()
	if err := f.sql.Exec(f.b.ctx, f.s, `DELETE FROM threads WHERE owner_id = $1 AND id = $2`, f.b.owner, id); err != nil {
		f.t.Fatalf("delete thread %s: %v", id, err)
	}
}

// testForks: a fork (CreateThreadParams.ForkOf) reads its source's rows up
// to its position, then its own, numbered after it; a fork of a fork reads
// through the chain; every variant of ListMessages (after, limit, last)
// pages over the boundary; a checkpoint of the fork refers to the shared
// rows by position and reads them back; the fork writes only its own rows;
// another owner sees nothing and cannot fork; and deleting the source, or
// a fork in the middle of a chain, in SQL leaves every fork whole.
func testForks(t *testing.T, s store.Store, b *bundle, sql *SQL) {
	f := &forkFixture{t: t, s: s, b: b, sql: sql}
	src := f.create(store.CreateThreadParams{Name: "source", Messages: userMessages("s1", "s2", "s3", "s4", "s5", "s6")})
	before := f.count()

	// A fork at position 4 with its last message edited: three rows read,
	// one its own.
	fork := f.create(store.CreateThreadParams{ParentID: src.ID, Name: "fork",
		ForkOf: src.ID, ForkSeq: 3, Messages: userMessages("s4 edited")})
	if sql != nil {
		if n := f.count() - before; n != 1 {
			t.Fatalf("the fork wrote %d message rows, want 1 (its own)", n)
		}
	}
	f.add(fork.ID, "f5")
	f.add(src.ID, "s7")
	wantFork := "1:s1\n2:s2\n3:s3\n4:s4 edited\n5:f5\n"
	got := f.list(fork.ID)
	if texts(got) != wantFork {
		t.Fatalf("the fork's messages:\n%swant\n%s", texts(got), wantFork)
	}
	for _, m := range got {
		if m.ThreadID != fork.ID || m.OwnerID != b.owner {
			t.Fatalf("message %d of the fork: thread %s, owner %s", m.Seq, m.ThreadID, m.OwnerID)
		}
	}
	if got[0].ID != f.list(src.ID)[0].ID {
		t.Fatalf("the fork's first message %s, not the source's row", got[0].ID)
	}

	// A fork of the fork, at its position 5: through the chain.
	ff := f.create(store.CreateThreadParams{ParentID: fork.ID, Name: "fork of fork",
		ForkOf: fork.ID, ForkSeq: 5, Messages: userMessages("g6")})
	f.add(ff.ID, "g7", "g8")
	f.add(fork.ID, "f6")
	wantFF := "1:s1\n2:s2\n3:s3\n4:s4 edited\n5:f5\n6:g6\n7:g7\n8:g8\n"
	all := f.list(ff.ID)
	if texts(all) != wantFF {
		t.Fatalf("the fork of the fork's messages:\n%swant\n%s", texts(all), wantFF)
	}
	if sql != nil {
		if n := f.count() - before; n != 7 {
			t.Fatalf("the forks wrote %d message rows, want 7 (their own)", n)
		}
	}

	// Every page, over every boundary.
	f.checkPages(ff.ID, all)

	// A checkpoint of a run on the fork refers to its history by position.
	checkState := f.checkpoint(ff.ID, all, wantFF)
	checkState("the checkpoint")

	f.otherOwner(src.ID, fork.ID)

	if sql == nil {
		t.Log("no SQL behind the store's back: deletes not tested")
		return
	}
	// The source deleted: the fork and the fork of the fork stay whole;
	// so does the fork of the fork when the fork is deleted next.
	f.del(src.ID)
	if got := texts(f.list(fork.ID)); got != wantFork+"6:f6\n" {
		t.Fatalf("the fork after its source's delete:\n%s", got)
	}
	if got := f.list(ff.ID); texts(got) != wantFF {
		t.Fatalf("the fork of the fork after the source's delete:\n%s", texts(got))
	}
	checkState("the checkpoint after the source's delete")
	f.del(fork.ID)
	all = f.list(ff.ID)
	if texts(all) != wantFF {
		t.Fatalf("the fork of the fork after the middle's delete:\n%s", texts(all))
	}
	f.checkPages(ff.ID, all)
	checkState("the checkpoint after the middle's delete")
	th := Must(s.GetThread(b.ctx, &store.GetThreadParams{OwnerID: b.owner, ID: ff.ID}))(t)
	if th.ParentID != "" {
		t.Fatalf("the last fork's parent %q after its sources' deletes", th.ParentID)
	}
	f.add(ff.ID, "g9")
	if got := texts(f.list(ff.ID)); got != wantFF+"9:g9\n" {
		t.Fatalf("the last fork appended to:\n%s", got)
	}

	f.middleOfChain()
}

// checkPages checks every page of thread's messages (after, limit, last)
// against all, the whole list.
func (f *forkFixture) checkPages(thread string, all []*store.Message) {
	t, s, b := f.t, f.s, f.b
	t.Helper()
	for after := range int64(len(all) + 1) {
		for limit := 0; limit <= len(all)+1; limit++ {
			for _, last := range []bool{false, true} {
				page := Must(s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.owner, ThreadID: thread, AfterSeq: after, Limit: limit, Last: last}))(t)
				want := all[after:]
				if limit > 0 && limit < len(want) {
					if last {
						want = want[len(want)-limit:]
					} else {
						want = want[:limit]
					}
				}
				if texts(page) != texts(want) {
					t.Fatalf("after %d limit %d last %v:\n%swant\n%s", after, limit, last, texts(page), texts(want))
				}
			}
		}
	}
}

// checkpoint saves a checkpoint of a run on thread whose history is all,
// referred to by position, and returns the check that it reads back whole
// (want: its history as "n:text" lines).
func (f *forkFixture) checkpoint(thread string, all []*store.Message, want string) func(what string) {
	t, s, b := f.t, f.s, f.b
	run := "run-" + uuid.NewString()
	st := newState(run, thread, 1)
	st.Messages = nil
	rows := make([]runstate.Row, 0, len(all))
	for _, m := range all {
		st.Messages = append(st.Messages, m.Message)
		rows = append(rows, runstate.Row{Seq: m.Seq, Message: m.Message})
	}
	cp := Must(s.SaveCheckpoint(b.ctx, &store.SaveCheckpointParams{OwnerID: b.owner, State: st, Rows: runstate.NewRows(0, rows)}))(t)
	return func(what string) {
		t.Helper()
		read := Must(s.GetCheckpoint(b.ctx, &store.GetCheckpointParams{OwnerID: b.owner, ID: cp.ID}))(t)
		if read.Rows == nil || len(read.Rows.History) != len(all) {
			t.Fatalf("%s: the checkpoint does not refer to the fork's rows: %+v", what, read.Rows)
		}
		var sb strings.Builder
		for i, m := range read.State.Messages {
			fmt.Fprintf(&sb, "%d:%s\n", i+1, m.Text())
		}
		if sb.String() != want {
			t.Fatalf("%s: the checkpoint's history:\n%swant\n%s", what, sb.String(), want)
		}
	}
}

// otherOwner: another owner can neither fork src nor read fork; a fork
// past the source's end or without a source is invalid.
func (f *forkFixture) otherOwner(src, fork string) {
	t, s, b := f.t, f.s, f.b
	_, err := s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.other, ForkOf: src, ForkSeq: 2})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ListMessages(b.ctx, &store.ListMessagesParams{OwnerID: b.other, ThreadID: fork})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ForkOf: src, ForkSeq: 99})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, ForkSeq: 2})
	wantErr(t, err, store.ErrInvalid)
}

// middleOfChain: deleting the middle fork of a chain leaves the last one
// reading the first source.
func (f *forkFixture) middleOfChain() {
	t := f.t
	a := f.create(store.CreateThreadParams{Messages: userMessages("a1", "a2", "a3")})
	m := f.create(store.CreateThreadParams{ParentID: a.ID, ForkOf: a.ID, ForkSeq: 2, Messages: userMessages("m3", "m4")})
	l := f.create(store.CreateThreadParams{ParentID: m.ID, ForkOf: m.ID, ForkSeq: 3, Messages: userMessages("l4")})
	rowsBefore := f.count()
	f.del(m.ID)
	if got := texts(f.list(l.ID)); got != "1:a1\n2:a2\n3:m3\n4:l4\n" {
		t.Fatalf("the last fork after the middle's delete:\n%s", got)
	}
	// m's two rows went, one (m3) was copied into l: a1 and a2 are still a's.
	if n := f.count() - rowsBefore; n != -1 {
		t.Fatalf("the middle's delete changed the rows by %d, want -1", n)
	}
	if th := Must(f.s.GetThread(f.b.ctx, &store.GetThreadParams{OwnerID: f.b.owner, ID: l.ID}))(t); th.ParentID != a.ID {
		t.Fatalf("the last fork's parent %q, want the first source %s", th.ParentID, a.ID)
	}
}
