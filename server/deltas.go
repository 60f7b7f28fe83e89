package server

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/server/internal/runlog"
)

// This file receives the text and reasoning deltas of runs other processes
// execute (replicas behind a load balancer, `baton worker`s): their
// batches (draft.DeltaSender, draft.DeltaBatch) go in the run's and the
// thread's logs with the ids they have where the run executes. A batch
// that finds its place taken (the message it streams is already there) or
// not yet there (the follower has not read the step before it) is dropped,
// and the message's event, which carries the whole text, follows either
// way. This process's own runs' deltas are sent by publishThread.

// onDeltas puts a batch of deltas of a run another process executes in the
// logs of the run and its thread, where this process follows them. A batch
// that comes before this process has read the step it follows (the signal
// of the step's checkpoint and the batch race) waits, briefly, for the
// follower's next read (placeEarly), which it asks for at once.
func (s *Server) onDeltas(sig draft.Signal) {
	if sig.Key == "" {
		return
	}
	var b draft.DeltaBatch
	if json.Unmarshal([]byte(sig.Data), &b) != nil || b.Pos <= 0 || len(b.Deltas) == 0 {
		return
	}
	base, err := runlog.ParseCursor(b.Base)
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
	if b.Follow {
		if run != nil {
			s.placeFollowing(run, te, &b)
		}
		return
	}
	if run == nil || !s.placeDeltas(run, te, &b, base) {
		s.early.add(sig.OwnerID, &b, base)
		s.poke(te)
	}
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

// placeFollowing puts the deltas of b, of a run a worker executes (they
// have no ids of their own), in the run's and the thread's logs after what
// this process has of the run: its last stored event, then its last draft,
// then (Ext) their count — "Seq.Sub.Ver.Ext" in the run's stream, the
// same with Pos before it in the thread's. They are dropped unless the run
// is followed here, and when they no longer fit (a draft or an event came
// in between).
func (s *Server) placeFollowing(run *Run, te *threadEntry, b *draft.DeltaBatch) {
	run.mu.Lock()
	after := run.durable
	if after.Less(run.base) {
		after = run.base
	}
	if !run.following || run.producing {
		run.mu.Unlock()
		return
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
}

// placeEarly places the batches of run that came before this process had
// read their base, now that it read more of the run.
func (s *Server) placeEarly(run *Run, te *threadEntry) {
	for _, e := range s.early.take(run.owner, run.id) {
		if !s.placeDeltas(run, te, e.b, e.base) {
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

func (e *earlyDeltas) add(owner string, b *draft.DeltaBatch, base runlog.Cursor) {
	e.put(owner, earlyBatch{b: b, base: base, at: time.Now()})
}

func (e *earlyDeltas) put(owner string, b earlyBatch) {
	if time.Since(b.at) > earlyTTL {
		return
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
	if bs := e.runs[k]; len(bs) < earlyMax {
		e.runs[k] = append(bs, b)
	}
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
