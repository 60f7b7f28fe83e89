package continuation

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// deltaStream sends the text and reasoning deltas of the run a delivery
// resumes to the processes that stream its thread (a draft.DeltaSender
// whose batches are Follow: no client streams the run where a worker
// executes it, so its deltas have no ids of their own; a `baton serve`
// replica places them after what it has of the run, server/deltas.go).
//
// A batch's Base is the seq of the run's last checkpoint the delivery
// wrote: the replica places it once it has read that checkpoint, not
// before (its signal can come first), and drops it once it has read a
// later one (the message's event carries the whole text). Deltas that
// follow an event no checkpoint holds yet (a deferred tool result,
// runner.WithDeferredResults) are not sent: no replica could place them
// after it: the worker defers no result while another process streams
// the thread when the run resumes.
type deltaStream struct {
	s    *Service
	a    Args
	jc   *jobCtx
	pos  int // the run's position on its thread; 0 unread, -1 unreadable
	last int // the seq of the last event that is not a delta
}

// deltas returns the delta stream of delivery jc of a, nil when no other
// process can hear it (SQLite, or a broker without signals).
func (s *Service) deltas(a Args, jc *jobCtx) *deltaStream {
	if s.deltaSender == nil {
		return nil
	}
	return &deltaStream{s: s, a: a, jc: jc}
}

// wanted reports whether another process has announced that it streams
// the run's thread (not merely may: see draft.Interest.AnnouncedElsewhere).
func (d *deltaStream) wanted() bool {
	return d != nil && d.s.deltaSender.Announced(d.a.OwnerID, d.a.ThreadID)
}

// event takes the next event of the resumed run.
func (d *deltaStream) event(ctx context.Context, ev runner.Event) {
	if d == nil {
		return
	}
	a, ds := d.a, d.s.deltaSender
	switch typ := ev.EventType(); typ {
	case runner.TypeTextDelta, runner.TypeReasoningDelta:
		saved := int(d.jc.saved.Load())
		if d.last > saved || !ds.Wanted(a.OwnerID, a.ThreadID) {
			return
		}
		if d.pos == 0 {
			d.pos = d.readPos(ctx)
		}
		if d.pos < 0 {
			return
		}
		data, err := json.Marshal(ev)
		if err != nil {
			return
		}
		ds.Add(a.OwnerID, a.ThreadID, a.RunID, d.pos, strconv.Itoa(saved), "", 0, string(typ), data)
	default:
		d.last = max(d.last, ev.Sequence())
		ds.Flush(a.OwnerID, a.RunID)
	}
}

// end sends what is pending.
func (d *deltaStream) end() {
	if d != nil {
		d.s.deltaSender.Flush(d.a.OwnerID, d.a.RunID)
	}
}

// readPos reads the run's position on its thread: the seq of its first
// message (the input), as the server orders a thread's runs.
func (d *deltaStream) readPos(ctx context.Context) int {
	m, err := d.s.st.GetMessage(ctx, &store.GetMessageParams{OwnerID: d.a.OwnerID, ID: runstate.MessageID(d.a.RunID, 1)})
	if err != nil || m.ThreadID != d.a.ThreadID {
		return -1
	}
	return int(m.Seq)
}
