package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/server/internal/runlog"
)

// This file receives the text and reasoning deltas of runs other processes
// execute (replicas behind a load balancer, `baton worker`s): their
// batches (draft.DeltaSender, draft.DeltaBatch) go in the run's and the
// thread's logs with the ids they have where the run executes (a worker's,
// which have none, after what this process has read of the run). A batch
// that comes before the follower has read the step before it waits for
// that read, up to earlyTTL; one that finds its place taken (the message
// it streams is already there) or waits too long is dropped, and the
// message's event, which carries the whole text, follows either way. This
// process's own runs' deltas are sent by publishThread.

// onDeltas puts a batch of deltas of a run another process executes in the
// logs of the run and its thread, where this process follows them. A batch
// that comes before this process has read the step it follows (the signal
// of the step's checkpoint and the batch race) waits, briefly, for the
// follower's next read (placeEarly), which it asks for at once (for a
// worker's batches, the first that waits asks: the checkpoint's own
// signal wakes the follower too).
func (s *Server) onDeltas(sig draft.Signal) {
	if sig.Key == "" {
		return
	}
	var b draft.DeltaBatch
	if json.Unmarshal([]byte(sig.Data), &b) != nil || b.Pos <= 0 || len(b.Deltas) == 0 {
		return
	}
	base, err := batchBase(&b)
	if err != nil {
		return
	}
	te := s.reg.lookup(sig.OwnerID, sig.Key)
	if te == nil {
		return // nobody streams the thread here
	}
	run := s.reg.run(sig.OwnerID, b.Run)
	if run != nil && run.threadID != sig.Key {
		return
	}
	if (run == nil || !s.place(run, te, &b, base)) && (s.early.add(sig.OwnerID, &b, base) || !b.Follow) {
		s.poke(te)
	}
}

// place puts b in run's and te's logs (a worker's batch, Follow, after
// what this process has of the run); it reports whether b is done with.
func (s *Server) place(run *Run, te *threadEntry, b *draft.DeltaBatch, base runlog.Cursor) bool {
	if b.Follow {
		return s.placeFollowing(run, te, b, base)
	}
	return s.placeDeltas(run, te, b, base)
}

// placeDeltas puts b in run's and te's logs if run is followed here and its
// last stored event is b's base; it reports whether b is done with (placed,
// or too late to be: the run is past its base).
func (s *Server) placeDeltas(run *Run, te *threadEntry, b *draft.DeltaBatch, base runlog.Cursor) bool {
	run.mu.Lock()
	durable, following, producing := run.durable, run.following, run.producing
	if durable.Less(run.base) {
		durable = run.base // the events up to base are the store's
	}
	run.mu.Unlock()
	switch {
	case producing || base.Less(durable):
		return true // executed here, or the batch is late: drop it
	case !following || durable != base:
		return false // not yet at its base
	}
	for _, w := range b.Deltas {
		at, err := runlog.ParseCursor(w.At)
		if err != nil || !base.Less(at) || w.Ver <= 0 {
			return true
		}
		if last := run.log.Last(); !last.Less(at) || !run.log.Append(runlog.Entry{At: at, Type: w.Type, Data: w.Data}) {
			continue
		}
		// In the thread's log as where it executes (publishThread).
		te.addRun(b.Pos, b.Run, runlog.Cursor{Seq: base.Seq, Sub: base.Sub, Ver: w.Ver}, base, w.Type, w.Data)
	}
	return true
}

// batchBase returns the base of b: the cursor of the stored event its
// deltas follow or, for a worker's (Follow), the seq of the checkpoint
// they follow (zero: none named, placed at once).
func batchBase(b *draft.DeltaBatch) (runlog.Cursor, error) {
	if !b.Follow {
		return runlog.ParseCursor(b.Base)
	}
	if b.Base == "" {
		return runlog.Cursor{}, nil
	}
	seq, err := strconv.Atoi(b.Base)
	if err != nil || seq < 0 {
		return runlog.Cursor{}, fmt.Errorf("server: delta batch base %q", b.Base)
	}
	return runlog.Cursor{Seq: seq}, nil
}

// placeFollowing puts the deltas of b, of a run a worker executes (they
// have no ids of their own), in the run's and the thread's logs after what
// this process has of the run: its last stored event, then its last draft,
// then (Ext) their count — "Seq.Sub.Ver.Ext" in the run's stream, the
// same with Pos before it in the thread's. It reports whether b is done
// with: placed, or dropped — the run is executed here or no longer
// followed, or this process has read a checkpoint of the run after base
// (the checkpoint b follows, whose seq is base's), so that b would come
// after the message it streams. It reports false while the checkpoint is
// not read yet (or the run not followed yet).
func (s *Server) placeFollowing(run *Run, te *threadEntry, b *draft.DeltaBatch, base runlog.Cursor) bool {
	run.mu.Lock()
	after := run.durable
	if after.Less(run.base) {
		after = run.base
	}
	switch {
	case run.producing || base.Seq > 0 && run.followSeq > base.Seq:
		run.mu.Unlock()
		return true
	case !run.following || run.followSeq < base.Seq:
		run.mu.Unlock()
		return false
	}
	at := runlog.Cursor{Seq: after.Seq, Sub: after.Sub}
	if d := run.draftAt; d.Seq == at.Seq && d.Sub == at.Sub {
		at.Ver = d.Ver
	}
	n := run.followed
	run.followed += len(b.Deltas)
	run.mu.Unlock()
	for i, w := range b.Deltas {
		c := at
		c.Ext = n + i + 1
		run.log.Append(runlog.Entry{At: c, Type: w.Type, Data: w.Data})
		te.addFollowing(b.Pos, b.Run, c, w.Type, w.Data)
	}
	return true
}

// placeEarly places the batches of run that came before this process had
// read their base, now that it read more of the run.
func (s *Server) placeEarly(run *Run, te *threadEntry) {
	for _, e := range s.early.take(run.owner, run.id) {
		if !s.place(run, te, e.b, e.base) {
			s.early.put(run.owner, e)
		}
	}
}

// earlyDeltas are batches of deltas that came before their base, by run,
// each kept for earlyTTL at most.
type earlyDeltas struct {
	mu   sync.Mutex
	runs map[string][]earlyBatch
}

type earlyBatch struct {
	b    *draft.DeltaBatch
	base runlog.Cursor
	at   time.Time
}

// earlyTTL bounds how long a batch waits for its base; earlyMax bounds the
// batches kept per run.
const (
	earlyTTL = 2 * time.Second
	earlyMax = 64
)

// add keeps b and reports whether it is the first batch of its run kept
// since the run's last read (placeEarly takes them all): the one whose
// arrival asks the follower to read now.
func (e *earlyDeltas) add(owner string, b *draft.DeltaBatch, base runlog.Cursor) bool {
	return e.put(owner, earlyBatch{b: b, base: base, at: time.Now()})
}

func (e *earlyDeltas) put(owner string, b earlyBatch) bool {
	if time.Since(b.at) > earlyTTL {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runs == nil {
		e.runs = map[string][]earlyBatch{}
	}
	if len(e.runs) > 256 {
		for k, bs := range e.runs {
			if len(bs) == 0 || time.Since(bs[len(bs)-1].at) > earlyTTL {
				delete(e.runs, k)
			}
		}
	}
	k := owner + "\x00" + b.b.Run
	bs := e.runs[k]
	if len(bs) < earlyMax {
		e.runs[k] = append(bs, b)
	}
	return len(bs) == 0
}

// take returns and forgets run's batches that have not expired.
func (e *earlyDeltas) take(owner, runID string) []earlyBatch {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := owner + "\x00" + runID
	bs := e.runs[k]
	delete(e.runs, k)
	out := bs[:0]
	for _, b := range bs {
		if time.Since(b.at) <= earlyTTL {
			out = append(out, b)
		}
	}
	return out
}
