package draft_test

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/draft"
)

// TestInterest: a key is wanted once announced (and for the TTL only),
// every key for a third of the TTL after the start and after a broker
// says signals may have been lost.
func TestInterest(t *testing.T) {
	t.Parallel()
	h := draft.NewHub(nil)
	in := draft.NewInterest(h, draft.KindThread, 300*time.Millisecond)
	defer in.Close()
	if !in.Wanted("o", "t1") {
		t.Fatal("every key is wanted right after the start")
	}
	time.Sleep(120 * time.Millisecond)
	if in.Wanted("o", "t1") {
		t.Fatal("a key nobody announced is wanted after ttl/3")
	}
	if err := draft.Want(context.Background(), h, draft.KindThread, "o", "t1"); err != nil {
		t.Fatal(err)
	}
	if !in.Wanted("o", "t1") || in.Wanted("o", "t2") || in.Wanted("p", "t1") {
		t.Fatal("only the announced key of its owner is wanted")
	}
	time.Sleep(350 * time.Millisecond)
	if in.Wanted("o", "t1") {
		t.Fatal("an announcement holds for the TTL only")
	}
	h.DeliverSignal(draft.Signal{Kind: draft.KindThread + draft.WantSuffix}) // signals may have been lost
	if !in.Wanted("o", "t2") {
		t.Fatal("every key is wanted after a broker may have missed signals")
	}
}

// TestInterestElsewhere: a process that named itself is not somebody else;
// AnnouncedElsewhere counts announcements only, not the keys every
// process is taken to want after the start.
func TestInterestElsewhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := draft.NewHub(nil)
	in := draft.NewInterest(h, draft.KindThread, 300*time.Millisecond)
	defer in.Close()
	if !in.WantedElsewhere("o", "t1", "me") || in.AnnouncedElsewhere("o", "t1", "me") {
		t.Fatal("right after the start, a key is wanted elsewhere but announced nowhere")
	}
	if err := draft.WantFrom(ctx, h, draft.KindThread, "o", "t1", "me"); err != nil {
		t.Fatal(err)
	}
	if in.AnnouncedElsewhere("o", "t1", "me") || !in.AnnouncedElsewhere("o", "t1", "you") {
		t.Fatal("my own announcement is another process's, not mine")
	}
	if err := draft.WantFrom(ctx, h, draft.KindThread, "o", "t1", "you"); err != nil {
		t.Fatal(err)
	}
	if !in.AnnouncedElsewhere("o", "t1", "me") {
		t.Fatal("another process's announcement is elsewhere")
	}
	if err := draft.Want(ctx, h, draft.KindThread, "o", "t2"); err != nil {
		t.Fatal(err)
	}
	if !in.AnnouncedElsewhere("o", "t2", "me") {
		t.Fatal("an announcement without a name is anybody's")
	}
	time.Sleep(350 * time.Millisecond)
	if in.AnnouncedElsewhere("o", "t1", "me") || in.WantedElsewhere("o", "t1", "me") {
		t.Fatal("an announcement holds for the TTL only")
	}
}
