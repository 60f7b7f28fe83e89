package server

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/service"
)

// This file carries the text and reasoning deltas of a run across
// processes: the process that executes the run sends them, in batches, to
// the processes that stream its thread (replicas behind a load balancer),
// which put them in the run's and the thread's logs with the ids they have
// where the run executes. Deltas are not stored: a batch that finds its
// place taken (the message it streams is already there) or not yet there
// (the follower has not read the step before it) is dropped, and the
// message's event, which carries the whole text, follows either way.

// deltaKind is the signal kind of a batch of deltas (draft.Signal: Key the
// thread, Data a deltaBatch's JSON).
const deltaKind = "baton.deltas"

// Bounds of a batch: sent deltaFlush after its first delta, or as soon as
// its deltas' JSON reaches deltaBytes (a PostgreSQL NOTIFY payload holds
// under 8000 bytes); a delta larger than that alone is not sent.
const (
	deltaFlush = 20 * time.Millisecond
	deltaBytes = 5000
)

// deltaBatch is deltas of a run that follow one stored event of it, Base.
type deltaBatch struct {
	Run string `json:"r"`
	// Pos is the run's position on its thread.
	Pos int `json:"p"`
	// Base is the cursor of the run's stored event the deltas follow, in
	// the run's stream.
	Base   string      `json:"b"`
	Deltas []wireDelta `json:"d"`
}

// wireDelta is a delta: its ids in the run's stream (At) and in the
// thread's (Ver, after Base there), its type and JSON.
type wireDelta struct {
	At   string          `json:"a"`
	Ver  int             `json:"v"`
	Type string          `json:"t"`
	Data json.RawMessage `json:"j"`
}

// deltaSender batches the deltas of the runs this process executes for the
// threads other processes stream.
type deltaSender struct {
	sg   draft.Signaller
	in   *draft.Interest
	self string // this server's name in its announcements (Server.id)
	// q is the batches to send, in order, by one goroutine: a receiver
	// places a batch only after the one before it.
	q chan draft.Signal

	mu      sync.Mutex
	pending map[*Run]*pendingBatch
}

type pendingBatch struct {
	owner, thread string
	b             deltaBatch
	size          int
	timer         *time.Timer
}

// newDeltaSender returns the sender of s's deltas, nil when its broker
// reaches no other process (SQLite's in-process hub) or carries no signals.
func newDeltaSender(ctx context.Context, sg draft.Signaller, self string) *deltaSender {
	if sg == nil {
		return nil
	}
	if _, local := sg.(*draft.Hub); local {
		return nil
	}
	d := &deltaSender{sg: sg, in: draft.NewInterest(sg, draft.KindThread, service.ThreadInterestTTL), self: self,
		q: make(chan draft.Signal, 256), pending: map[*Run]*pendingBatch{}}
	go d.send(ctx)
	return d
}

// send sends the queued batches, one at a time, until ctx ends.
func (d *deltaSender) send(ctx context.Context) {
	defer d.in.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-d.q:
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_ = d.sg.Signal(sctx, sig) // lost, the message's event follows
			cancel()
		}
	}
}

// add queues a delta of run, at runAt in its stream and Ver ver after its
// stored event base, if another process streams its thread (this one's
// own streams have it already).
func (d *deltaSender) add(run *Run, pos int, base, runAt runlog.Cursor, ver int, typ string, data []byte) {
	if d == nil || len(data) > deltaBytes || !d.in.WantedElsewhere(run.owner, run.threadID, d.self) {
		return
	}
	w := wireDelta{At: runAt.String(), Ver: ver, Type: typ, Data: data}
	b := base.String()
	d.mu.Lock()
	p := d.pending[run]
	if p != nil && (p.b.Base != b || p.size+len(data) > deltaBytes) {
		d.sendLocked(run, p)
		p = nil
	}
	if p == nil {
		p = &pendingBatch{owner: run.owner, thread: run.threadID, b: deltaBatch{Run: run.id, Pos: pos, Base: b}}
		d.pending[run] = p
		p.timer = time.AfterFunc(deltaFlush, func() { d.flush(run) })
	}
	p.b.Deltas = append(p.b.Deltas, w)
	p.size += len(data) + 32
	d.mu.Unlock()
}

// flush sends run's pending deltas, if any: before its next stored event,
// and when the batch's time is up.
func (d *deltaSender) flush(run *Run) {
	if d == nil {
		return
	}
	d.mu.Lock()
	if p := d.pending[run]; p != nil {
		d.sendLocked(run, p)
	}
	d.mu.Unlock()
}

// sendLocked sends p, run's batch, and forgets it; d.mu is held.
func (d *deltaSender) sendLocked(run *Run, p *pendingBatch) {
	delete(d.pending, run)
	p.timer.Stop()
	data, err := json.Marshal(p.b)
	if err != nil {
		return
	}
	select {
	case d.q <- draft.Signal{Kind: deltaKind, OwnerID: p.owner, Key: p.thread, Data: string(data)}:
	default: // the database does not keep up: the messages' events follow
	}
}

// onDeltas puts a batch of deltas of a run another process executes in the
// logs of the run and its thread, where this process follows them. A batch
// that comes before this process has read the step it follows (the signal
// of the step's checkpoint and the batch race) waits, briefly, for the
// follower's next read (placeEarly), which it asks for at once.
func (s *Server) onDeltas(sig draft.Signal) {
	if sig.Key == "" {
		return
	}
	var b deltaBatch
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
	if run == nil || !s.placeDeltas(run, te, &b, base) {
		s.early.add(sig.OwnerID, &b, base)
		s.poke(te)
	}
}

// placeDeltas puts b in run's and te's logs if run is followed here and its
// last stored event is b's base; it reports whether b is done with (placed,
// or too late to be: the run is past its base).
func (s *Server) placeDeltas(run *Run, te *threadEntry, b *deltaBatch, base runlog.Cursor) bool {
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
	b    *deltaBatch
	base runlog.Cursor
	at   time.Time
}

// earlyTTL bounds how long a batch waits for its base; earlyMax bounds the
// batches kept per run.
const (
	earlyTTL = 2 * time.Second
	earlyMax = 64
)

func (e *earlyDeltas) add(owner string, b *deltaBatch, base runlog.Cursor) {
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
