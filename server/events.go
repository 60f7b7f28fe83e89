package server

import (
	"context"
	"time"

	"github.com/batonhq/baton/server/internal/runlog"
)

// logReader is what [Server.readLog] does with a run's events.
type logReader struct {
	// rebuilt handles the events in (cur, upto] that only the store still
	// has, entries those the log gives (those not after cur are passed
	// over); each returns the cursor reached, and false or an error to end
	// the read with that error.
	rebuilt func(cur, upto runlog.Cursor) (runlog.Cursor, bool, error)
	entries func(es []runlog.Entry, cur runlog.Cursor) (runlog.Cursor, bool, error)
	// stopped is the read's end when ctx ends (shutdown false) or the
	// server shuts down (true).
	stopped func(shutdown bool) error
	// tick, if not nil, calls ticked each time it fires; false ends the
	// read.
	tick   <-chan time.Time
	ticked func() bool
}

// readLog gives f a run's events after cur, those that only the store still
// has rebuilt from it, then live until the run's log closes, f ends it, or
// ctx ends or the server shuts down (f.stopped).
func (s *Server) readLog(ctx context.Context, run *Run, cur runlog.Cursor, f logReader) error {
	run.mu.Lock()
	base := run.base
	run.mu.Unlock()
	var more bool
	var err error
	if cur.Less(base) {
		if cur, more, err = f.rebuilt(cur, base); !more || err != nil {
			return err
		}
	}
	var buf []runlog.Entry
	for {
		rd := run.log.Since(cur, 256, buf[:0])
		if rd.Lost && len(rd.Entries) > 0 {
			if cur, more, err = f.rebuilt(cur, prev(rd.Entries[0].At)); !more || err != nil {
				return err
			}
		}
		if cur, more, err = f.entries(rd.Entries, cur); !more || err != nil {
			return err
		}
		buf = rd.Entries
		if rd.Done {
			return nil
		}
		select {
		case <-rd.Wait:
		case <-ctx.Done():
			return f.stopped(false)
		case <-s.runCtx.Done():
			return f.stopped(true)
		case <-f.tick:
			if !f.ticked() {
				return nil
			}
		}
	}
}

// eachEntry calls fn with a run's events after cur, those that only the
// store still has rebuilt from it, then live until the run's log closes, fn
// returns false, or ctx ends (a context already cancelled reads what there
// is now).
func (s *Server) eachEntry(ctx context.Context, run *Run, cur runlog.Cursor, fn func(runlog.Entry) bool) error {
	return s.readLog(ctx, run, cur, logReader{
		rebuilt: func(cur, upto runlog.Cursor) (runlog.Cursor, bool, error) {
			entries, err := s.rebuild(context.WithoutCancel(ctx), run.owner, run.id, cur)
			if err != nil {
				return cur, true, err
			}
			for _, e := range entries {
				if !cur.Less(e.At) || upto.Less(e.At) {
					continue
				}
				cur = e.At
				if !fn(e) {
					return cur, false, nil
				}
			}
			if cur.Less(upto) {
				cur = upto
			}
			return cur, true, nil
		},
		entries: func(es []runlog.Entry, cur runlog.Cursor) (runlog.Cursor, bool, error) {
			for i := range es {
				e := es[i]
				if !cur.Less(e.At) {
					continue
				}
				cur = e.At
				if !fn(e) {
					return cur, false, nil
				}
			}
			return cur, true, nil
		},
		stopped: func(shutdown bool) error {
			if shutdown {
				return ErrShuttingDown
			}
			return ctx.Err()
		},
	})
}
