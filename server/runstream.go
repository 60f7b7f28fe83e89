package server

import (
	"context"
	"net/http"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
)

// streamRun streams a run's events after from as SSE until the run is
// final, or waits for a decision, or the client goes.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, run *Run, from runlog.Cursor) error {
	if !s.acquireStream(r.Context()) {
		return s.tooManyStreams()
	}
	defer s.releaseStream(r.Context())
	run.addReader(1)
	defer run.addReader(-1)
	sw, err := sse.NewWriter(w, s.sseOptions(http.Header{"Baton-Run-Id": {run.id}, "Baton-Thread-Id": {run.threadID}}))
	if err != nil {
		return nil
	}
	return s.followLog(r, sw, run, from)
}

// followLog writes a run's events after cur from its log (and the store,
// for events no longer in the log) until the log is closed, with a
// heartbeat comment whenever no event was sent for the heartbeat interval.
func (s *Server) followLog(r *http.Request, sw *sse.Writer, run *Run, cur runlog.Cursor) error {
	ctx := r.Context()
	hb := time.NewTimer(s.cfg.Heartbeat)
	defer hb.Stop()
	_ = s.readLog(ctx, run, cur, logReader{
		rebuilt: func(cur, upto runlog.Cursor) (runlog.Cursor, bool, error) {
			// Events before the log, or lost from it: rebuilt from the
			// store. The heartbeat counts from what they sent.
			cur, err := s.sendRebuilt(ctx, sw, run, cur, upto)
			resetTimer(hb, s.cfg.Heartbeat)
			return cur, err == nil, nil
		},
		entries: func(es []runlog.Entry, cur runlog.Cursor) (runlog.Cursor, bool, error) {
			cur, err := s.sendEntries(sw, hb, es, cur)
			return cur, err == nil, nil
		},
		stopped: func(shutdown bool) error {
			if shutdown {
				// Shut down: the run goes on elsewhere (a run cut here was
				// handed to River). The client reconnects with Last-Event-ID.
				_ = sw.Send(shutdownEvent)
			}
			return nil
		},
		tick: hb.C,
		ticked: func() bool {
			if sw.Comment("ping") != nil {
				return false
			}
			hb.Reset(s.cfg.Heartbeat)
			return true
		},
	})
	return nil
}

// prev returns a cursor just before c.
func prev(c runlog.Cursor) runlog.Cursor {
	switch {
	case c.Ext > 0:
		return runlog.Cursor{Seq: c.Seq, Sub: c.Sub, Ver: c.Ver, Ext: c.Ext - 1}
	case c.Ver > 0:
		return runlog.Cursor{Seq: c.Seq, Sub: c.Sub, Ver: c.Ver - 1}
	case c.Sub > 0:
		return runlog.Cursor{Seq: c.Seq, Sub: c.Sub - 1, Ver: 1 << 30}
	}
	return runlog.Cursor{Seq: c.Seq - 1, Sub: 1 << 30, Ver: 1 << 30}
}

// sendEntries writes the entries after cur and, when there are any, flushes
// them and resets the heartbeat timer hb; it returns the cursor reached.
func (s *Server) sendEntries(sw *sse.Writer, hb *time.Timer, entries []runlog.Entry, cur runlog.Cursor) (runlog.Cursor, error) {
	for i := range entries {
		e := &entries[i]
		if !cur.Less(e.At) {
			continue
		}
		if err := sw.Put(sse.Event{ID: e.At.String(), Type: e.Type, Data: e.Data}); err != nil {
			return cur, err
		}
		cur = e.At
	}
	if len(entries) > 0 {
		if err := sw.Flush(); err != nil {
			return cur, err
		}
		resetTimer(hb, s.cfg.Heartbeat)
	}
	return cur, nil
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	t.Reset(d)
}

// sendRebuilt sends the events in (from, upto] rebuilt from the run's
// checkpoints, and returns the cursor reached.
func (s *Server) sendRebuilt(ctx context.Context, sw *sse.Writer, run *Run, from, upto runlog.Cursor) (runlog.Cursor, error) {
	entries, err := s.rebuild(ctx, run.owner, run.id, from)
	if err != nil {
		s.log.Warn("rebuild events from the store", "run_id", run.id, "error", err)
		return upto, nil // the client gets what the log has
	}
	for _, e := range entries {
		if !from.Less(e.At) || upto.Less(e.At) {
			continue
		}
		if err := sw.Put(sse.Event{ID: e.At.String(), Type: e.Type, Data: e.Data}); err != nil {
			return from, err
		}
		from = e.At
	}
	if err := sw.Flush(); err != nil {
		return from, err
	}
	if from.Less(upto) {
		from = upto
	}
	return from, nil
}

func (s *Server) sseOptions(h http.Header) sse.Options {
	return sse.Options{MaxBuffer: s.cfg.StreamBuffer, WriteTimeout: s.cfg.StreamWriteTimeout, Retry: 2 * time.Second, Header: h}
}

func (s *Server) acquireStream(ctx context.Context) bool {
	if s.streams.Add(1) > int64(s.cfg.MaxStreams) {
		s.streams.Add(-1)
		return false
	}
	s.tel.StreamOpened(ctx)
	return true
}

func (s *Server) releaseStream(ctx context.Context) {
	s.streams.Add(-1)
	s.tel.StreamClosed(ctx)
}

func (s *Server) tooManyStreams() error {
	e := Errorf(http.StatusServiceUnavailable, wire.ErrOverloaded, "too many open streams (limit %d); retry shortly", s.cfg.MaxStreams)
	e.RetryAfter = 1
	return e
}

// waitRun answers with the run's result once it is final or waits for a
// decision; past the request timeout, with 202 and its state so far.
func (s *Server) waitRun(w http.ResponseWriter, r *http.Request, run *Run) error {
	var cur runlog.Cursor
	for {
		rd := run.log.Since(cur, 0, nil)
		if n := len(rd.Entries); n > 0 {
			cur = rd.Entries[n-1].At
		}
		if rd.Done {
			WriteJSON(w, http.StatusOK, run.result())
			return nil
		}
		select {
		case <-rd.Wait:
		case <-s.runCtx.Done():
			// Shut down before the run's end: it goes on in another
			// process (a run cut here was handed to River).
			w.Header().Set("Location", EventsURL(run.threadID, run.id))
			WriteJSON(w, http.StatusAccepted, run.result())
			return nil
		case <-r.Context().Done():
			w.Header().Set("Location", EventsURL(run.threadID, run.id))
			WriteJSON(w, http.StatusAccepted, run.result())
			return nil
		}
	}
}
