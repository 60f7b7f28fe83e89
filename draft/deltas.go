package draft

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// This file carries the text and reasoning deltas of a run across
// processes: the process that executes the run (a `baton serve` replica,
// or a `baton worker` working a continuation) sends them, in batches, to
// the processes that stream its thread, which put them in the run's and
// the thread's streams with the ids they have where the run executes
// (package server: onDeltas). Deltas are not stored: a batch that finds its
// place taken or not yet there is dropped by its receiver, and the
// message's event, which carries the whole text, follows either way.

// DeltaKind is the signal kind of a batch of deltas ([Signal]: Key the
// thread, Data a [DeltaBatch]'s JSON).
const DeltaKind = "baton.deltas"

// Bounds of a batch: sent DeltaFlush after its first delta, or as soon as
// its deltas' JSON reaches DeltaBytes (a PostgreSQL NOTIFY payload holds
// under 8000 bytes); a delta larger than that alone is not sent.
const (
	DeltaFlush = 20 * time.Millisecond
	DeltaBytes = 5000
)

// DeltaBatch is deltas of a run that follow one stored event of it, Base.
type DeltaBatch struct {
	Run string `json:"r"`
	// Pos is the run's position on its thread.
	Pos int `json:"p"`
	// Base is the id of the run's stored event the deltas follow, in the
	// run's stream.
	Base   string      `json:"b"`
	Deltas []WireDelta `json:"d"`
	// Follow: the deltas have no ids of their own (a worker's run, which
	// no client streams where it executes): the receiver places them
	// after what it has of the run once it has read the run's checkpoint
	// whose seq is Base (decimal; empty: at once), At and Ver unset.
	Follow bool `json:"f,omitempty"`
}

// WireDelta is a delta: its ids in the run's stream (At) and in the
// thread's (Ver, after Base there), its event type and JSON.
type WireDelta struct {
	At   string          `json:"a"`
	Ver  int             `json:"v"`
	Type string          `json:"t"`
	Data json.RawMessage `json:"j"`
}

// DeltaSender batches the deltas of the runs a process executes for the
// threads other processes stream. A nil *DeltaSender sends nothing.
type DeltaSender struct {
	// Follow marks every batch Follow (a worker's sender); set before
	// the first Add.
	Follow bool

	sg   Signaller
	in   *Interest
	self string // this process's name in its announcements (WantFrom)
	// q is the batches to send, in order, by one goroutine: a receiver
	// places a batch only after the one before it.
	q chan Signal

	mu      sync.Mutex
	pending map[string]*pendingBatch // by owner and run
}

type pendingBatch struct {
	owner, thread string
	b             DeltaBatch
	size          int
	timer         *time.Timer
}

// NewDeltaSender returns the sender of a process named self (its name in
// the thread interests it announces, if any), nil when sg reaches no other
// process (SQLite's in-process Hub) or is nil. interestTTL is how long an
// announcement of interest in a thread lasts. It stops when ctx ends.
func NewDeltaSender(ctx context.Context, sg Signaller, self string, interestTTL time.Duration) *DeltaSender {
	if sg == nil {
		return nil
	}
	if _, local := sg.(*Hub); local {
		return nil
	}
	d := &DeltaSender{sg: sg, in: NewInterest(sg, KindThread, interestTTL), self: self,
		q: make(chan Signal, 256), pending: map[string]*pendingBatch{}}
	go d.send(ctx)
	return d
}

// send sends the queued batches, one at a time, until ctx ends.
func (d *DeltaSender) send(ctx context.Context) {
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

// Wanted reports whether another process streams thread of owner: only
// then are its runs' deltas sent.
func (d *DeltaSender) Wanted(owner, thread string) bool {
	return d != nil && d.in.WantedElsewhere(owner, thread, d.self)
}

// Announced reports whether another process has announced that it streams
// thread of owner ([Interest.AnnouncedElsewhere]): not merely may.
func (d *DeltaSender) Announced(owner, thread string) bool {
	return d != nil && d.in.AnnouncedElsewhere(owner, thread, d.self)
}

// Add queues a delta of run (of owner, on thread, at position pos), with
// id at in the run's stream and ver after its stored event base there, if
// another process streams the thread.
func (d *DeltaSender) Add(owner, thread, run string, pos int, base, at string, ver int, typ string, data []byte) {
	if d == nil || len(data) > DeltaBytes || !d.Wanted(owner, thread) {
		return
	}
	w := WireDelta{At: at, Ver: ver, Type: typ, Data: data}
	k := owner + "\x00" + run
	d.mu.Lock()
	p := d.pending[k]
	if p != nil && (p.b.Base != base || p.size+len(data) > DeltaBytes) {
		d.sendLocked(k, p)
		p = nil
	}
	if p == nil {
		p = &pendingBatch{owner: owner, thread: thread, b: DeltaBatch{Run: run, Pos: pos, Base: base, Follow: d.Follow}}
		d.pending[k] = p
		p.timer = time.AfterFunc(DeltaFlush, func() { d.Flush(owner, run) })
	}
	p.b.Deltas = append(p.b.Deltas, w)
	p.size += len(data) + 32
	d.mu.Unlock()
}

// Flush sends run's pending deltas, if any: before its next stored event,
// and when the batch's time is up.
func (d *DeltaSender) Flush(owner, run string) {
	if d == nil {
		return
	}
	k := owner + "\x00" + run
	d.mu.Lock()
	if p := d.pending[k]; p != nil {
		d.sendLocked(k, p)
	}
	d.mu.Unlock()
}

// sendLocked sends p, the batch of k, and forgets it; d.mu is held.
func (d *DeltaSender) sendLocked(k string, p *pendingBatch) {
	delete(d.pending, k)
	p.timer.Stop()
	data, err := json.Marshal(p.b)
	if err != nil {
		return
	}
	select {
	case d.q <- Signal{Kind: DeltaKind, OwnerID: p.owner, Key: p.thread, Data: string(data)}:
	default: // the database does not keep up: the messages' events follow
	}
}
