package continuation

import (
	"context"
	"encoding/json"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// deltaStream sends the text and reasoning deltas of the run a delivery
// resumes to the processes that stream its thread (a draft.DeltaSender
// whose batches are Follow: no client streams the run where a worker
// executes it, so its deltas have no ids of their own; a `baton serve`
// replica places them after what it has of the run, server/deltas.go).
type deltaStream struct {
	s   *Service
	a   Args
	pos int // the run's position on its thread; 0 unread, -1 unreadable
}

// deltas returns the delta stream of a delivery of a, nil when no other
// process can hear it (SQLite, or a broker without signals).
func (s *Service) deltas(a Args) *deltaStream {
	if s.deltaSender == nil {
		return nil
	}
	return &deltaStream{s: s, a: a}
}

// event takes the next event of the resumed run.
func (d *deltaStream) event(ctx context.Context, ev runner.Event) {
	if d == nil {
		return
	}
	a, ds := d.a, d.s.deltaSender
	switch typ := ev.EventType(); typ {
	case runner.TypeTextDelta, runner.TypeReasoningDelta:
		if !ds.Wanted(a.OwnerID, a.ThreadID) {
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
		ds.Add(a.OwnerID, a.ThreadID, a.RunID, d.pos, "", "", 0, string(typ), data)
	default:
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
