package server

import (
	"context"
	"net/http"
	"time"

	"github.com/batonhq/baton/internal/hangup"
	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/store"
)

// hangups watches the connections of the parked streams of every Server
// of the process (one goroutine for all).
var hangups = hangup.New()

// threadStream is one subscriber of a thread's events (GET
// /v1/threads/{id}/events) after its first event.
//
// An idle stream costs no goroutine: its handler hijacks the connection
// (sse.Writer.Hijack: HTTP/1.x) and returns, and the stream waits
// parked on its thread entry. A change of the thread (an event added to
// its log, its from moved: threadEntry.changed), its heartbeat
// (time.AfterFunc) or the server's drain hands it to a new goroutine,
// which sends what is new and parks it again. Who takes a stream off the
// parked list (under the thread entry's mu) runs it, so one goroutine at
// a time writes it. A client gone is seen at the next heartbeat (a read
// that waits a millisecond) or write. Where the connection cannot be
// hijacked (HTTP/2, a test recorder) the handler's goroutine waits for
// the same wakes.
type threadStream struct {
	s    *Server
	te   *threadEntry
	sw   *sse.Writer
	cur  runlog.Cursor // the last event sent
	need runlog.Cursor // what the store had of the thread when the stream started
	gen  uint64        // the thread's gen its last round read
	// replay is set on a stream asked from the thread's start (after=0):
	// the store's events are read in pages, never skipped with a resync.
	replay bool
	buf    []runlog.Entry
	// hb is the heartbeat: time.AfterFunc(beat) once hijacked, a plain
	// timer for the handler's wait before.
	hb *time.Timer
	// wake wakes the handler's wait of a stream that is not hijacked.
	wake    chan struct{}
	release func() // frees the stream's slot and subscription, once
	unwatch func() // stops watching a hijacked stream's connection for its client's hang-up

	// Under te.mu:
	parkedAt int  // its index in te.parked, -1 when not parked
	ping     bool // the heartbeat is due
	ended    bool
}

// ctx is the context of a hijacked stream's store reads: its request's
// is gone with the handler.
func (ts *threadStream) ctx() context.Context {
	return store.ContextWithOwner(ts.s.runCtx, ts.te.owner)
}

// serve runs the stream from the handler: what is new is sent, then the
// connection is hijacked and the stream parked; where it cannot be
// hijacked, the handler waits.
func (ts *threadStream) serve(r *http.Request) {
	ctx := r.Context()
	ts.hb = time.NewTimer(ts.s.cfg.Heartbeat)
	if !ts.round(ctx) {
		ts.end()
		return
	}
	ts.hb.Stop()
	ts.s.hijacked.add() // before the hijack: Shutdown waits for it
	if err := ts.sw.Hijack(r); err == nil {
		ts.buf = nil
		ts.hb = time.AfterFunc(ts.s.cfg.Heartbeat, ts.beat)
		// A client that hangs up is seen at once (where the OS tells:
		// Linux), else at the next heartbeat.
		ts.unwatch, _ = hangups.Watch(ts.sw.Conn(), ts.beat)
		ts.run()
		return
	}
	ts.s.hijacked.done()
	ts.hb.Reset(ts.s.cfg.Heartbeat)
	defer ts.hb.Stop()
	ts.wake = make(chan struct{}, 1)
	for {
		if ts.park() {
			select {
			case <-ts.wake:
			case <-ts.hb.C:
				ts.te.mu.Lock()
				ts.te.unpark(ts)
				ts.ping = true
				ts.te.mu.Unlock()
			case <-ctx.Done():
				ts.te.mu.Lock()
				ts.te.unpark(ts)
				ts.te.mu.Unlock()
				ts.end()
				return
			}
		}
		if !ts.round(ctx) {
			ts.end()
			return
		}
	}
}

// run sends what is new until nothing is, then parks: the goroutine of a
// hijacked stream, from serve or a wake (dispatch).
func (ts *threadStream) run() {
	ctx := ts.ctx()
	for {
		if !ts.round(ctx) {
			ts.end()
			return
		}
		if ts.park() {
			return
		}
	}
}

// dispatch runs a stream taken off the parked list. te.mu is held.
func (ts *threadStream) dispatch() {
	if ts.sw.Hijacked() {
		go ts.run()
		return
	}
	select {
	case ts.wake <- struct{}{}:
	default:
	}
}

// beat is a hijacked stream's heartbeat, and what its client's hang-up
// calls: a parked stream is run to check its client and send it, a
// running one does so before it parks.
func (ts *threadStream) beat() {
	te := ts.te
	te.mu.Lock()
	defer te.mu.Unlock()
	ts.ping = true
	if te.unpark(ts) {
		ts.dispatch()
	}
}

// park puts the stream on its thread's parked list, unless something came
// since its last round (then it reports false: run another). te.mu makes
// it atomic with the wakes: a change after the round's read bumped gen.
func (ts *threadStream) park() bool {
	te, s := ts.te, ts.s
	te.mu.Lock()
	defer te.mu.Unlock()
	if ts.ping || te.gen != ts.gen || closed(s.drain) || s.runCtx.Err() != nil {
		return false
	}
	ts.parkedAt = len(te.parked)
	te.parked = append(te.parked, ts)
	return true
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// end closes the stream and frees what it holds, once.
func (ts *threadStream) end() {
	te := ts.te
	te.mu.Lock()
	if ts.ended {
		te.mu.Unlock()
		return
	}
	ts.ended = true
	te.unpark(ts)
	te.mu.Unlock()
	ts.hb.Stop()
	if ts.unwatch != nil {
		ts.unwatch()
	}
	if ts.sw.Hijacked() {
		_ = ts.sw.Close()
		ts.s.hijacked.done()
	}
	ts.release()
}

// round sends the thread's events after cur — those of its log, and
// those the log lacks rebuilt from the store — and a heartbeat when due.
// It reports false when the stream is over: its client failed or left,
// or the server drains or stops.
func (ts *threadStream) round(ctx context.Context) bool {
	s, te, sw := ts.s, ts.te, ts.sw
	for {
		if closed(s.drain) {
			_ = sw.Send(shutdownEvent)
			return false
		}
		if ctx.Err() != nil {
			return false
		}
		te.mu.Lock()
		ping := ts.ping
		ts.ping = false
		te.mu.Unlock()
		if ping {
			if sw.Gone() || sw.Comment("ping") != nil {
				return false
			}
			resetTimer(ts.hb, s.cfg.Heartbeat)
		}
		// from is read with the log: an event added past a gap moved it
		// first.
		rd, from, gen := te.read(ts.cur, 256, ts.buf[:0])
		ts.gen = gen
		if d, lost := te.log.Dropped(); lost && from.Less(d) {
			from = d
		}
		if from.Less(ts.need) && te.log.Last().Less(ts.need) {
			from = ts.need // the store has events the log never had
		}
		if ts.cur.Less(from) {
			// The log lacks events after cur: the store has them.
			next, far, err := s.catchUp(ctx, sw, te, ts.cur, from, ts.replay)
			if err != nil {
				return false
			}
			if far {
				next = later(te.log.Last(), s.storeTail(ctx, te))
				if sw.Send(resyncEvent(next)) != nil {
					return false
				}
			}
			ts.cur = next
			ts.buf = rd.Entries
			continue
		}
		var err error
		if ts.cur, err = s.sendEntries(sw, ts.hb, rd.Entries, ts.cur); err != nil {
			return false
		}
		ts.buf = rd.Entries[:0]
		if len(rd.Entries) < 256 {
			if cap(ts.buf) > 16 {
				ts.buf = nil // an idle stream keeps no buffer
			}
			return true
		}
	}
}

func resyncEvent(at runlog.Cursor) sse.Event {
	return sse.Event{ID: at.Thread(), Type: "resync", Data: []byte(`{"reason":"too many events were missed: reload the thread"}`)}
}

// wakeStreams hands every parked thread stream to a goroutine: the drain
// and the server's stop end them.
func (s *Server) wakeStreams() {
	s.reg.eachThread(func(te *threadEntry) {
		te.mu.Lock()
		te.wakeParked(false)
		te.mu.Unlock()
	})
}
