package server

import (
	"context"

	"github.com/batonhq/baton/server/internal/runlog"
)

// eachEntry calls fn with a run's events after cur, those that only the
// store still has rebuilt from it, then live until the run's log closes, fn
// returns false, or ctx ends (a context already cancelled reads what there
// is now).
func (s *Server) eachEntry(ctx context.Context, run *Run, cur runlog.Cursor, fn func(runlog.Entry) bool) error {
	run.mu.Lock()
	base := run.base
	run.mu.Unlock()
	rebuilt := func(upto runlog.Cursor) (bool, error) {
		entries, err := s.rebuild(context.WithoutCancel(ctx), run.owner, run.id, cur)
		if err != nil {
			return true, err
		}
		for _, e := range entries {
			if !cur.Less(e.At) || upto.Less(e.At) {
				continue
			}
			cur = e.At
			if !fn(e) {
				return false, nil
			}
		}
		if cur.Less(upto) {
			cur = upto
		}
		return true, nil
	}
	if cur.Less(base) {
		if more, err := rebuilt(base); !more || err != nil {
			return err
		}
	}
	var buf []runlog.Entry
	for {
		rd := run.log.Since(cur, 256, buf[:0])
		if rd.Lost && len(rd.Entries) > 0 {
			if more, err := rebuilt(prev(rd.Entries[0].At)); !more || err != nil {
				return err
			}
		}
		for i := range rd.Entries {
			e := rd.Entries[i]
			if !cur.Less(e.At) {
				continue
			}
			cur = e.At
			if !fn(e) {
				return nil
			}
		}
		buf = rd.Entries
		if rd.Done {
			return nil
		}
		select {
		case <-rd.Wait:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.runCtx.Done():
			return ErrShuttingDown
		}
	}
}
