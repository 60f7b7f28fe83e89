package agui

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/server"
)

// stream yields the SSE events of the AG-UI run that starts after start:
// the run's events from its first are folded, those after start and after
// from are sent, until the AG-UI run finishes or errs.
func (f *aguiFold) stream(ctx context.Context, s server.Core, run *server.Run, start server.Cursor, from aguiCursor) iter.Seq2[sse.Event, error] {
	return func(yield func(sse.Event, error) bool) {
		reconciled := !from.set
		done := false
		seq, ord := -1, 0
		err := s.Events(ctx, run, server.Cursor{}, func(e server.Entry) bool {
			// The events a run did not number (N.M) are numbered by the
			// order of the stored ones among them: a followed worker's
			// events come after its drafts in a live log (N.2 after the
			// draft N.1) and without them when rebuilt (N.1), the same
			// event either way. A draft stands where the event before it
			// does.
			if e.At.Seq != seq {
				seq, ord = e.At.Seq, 0
			}
			if e.Type != "draft" && e.At.Sub > 0 {
				ord++
			}
			if e.At.Sub > 0 {
				e.At.Sub = ord
			}
			if from.set && !reconciled && from.At.Less(e.At) {
				// The client is past every event before this one: what it
				// holds of an open text message is in its id (the deltas
				// it got may not be stored: rebuilt events fold them).
				reconciled = true
				if from.text && !f.textOpen && f.inRun {
					f.textOpen, f.textSent = true, from.B
					f.textN = max(f.textN, from.N)
				}
			}
			if from.set && e.At == from.At {
				reconciled = true
			}
			evs := f.add(e)
			if !start.Less(e.At) {
				return true // before the AG-UI run
			}
			for i, ev := range evs {
				k := len(evs) - 1 - i
				if !from.before(e.At, k) {
					if ev.settle {
						// The client has the end of this AG-UI run.
						done = true
						return false
					}
					continue
				}
				id := aguiCursor{At: e.At, K: k, set: true, text: ev.open, N: ev.n, B: ev.b}.String()
				if e.Type == "draft" {
					// A worker's progress is not stored: it has no place
					// a reconnect could resume from, so no id (the
					// client's Last-Event-ID stays the event before).
					id = ""
				}
				data, err := json.Marshal(ev.v)
				if err != nil {
					continue
				}
				if !yield(sse.Event{ID: id, Type: ev.v["type"].(string), Data: data}, nil) {
					done = true
					return false
				}
				if ev.settle {
					done = true
					return false
				}
			}
			return true
		})
		if err != nil && !done {
			yield(sse.Event{}, err)
		}
	}
}
