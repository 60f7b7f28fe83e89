package server

import (
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
)

// registry holds the event logs of the runs and threads this process knows.
type registry struct {
	lim runlog.Limits
	ttl time.Duration
	// retain bounds the finished runs kept (maxRetained).
	retain int

	mu      sync.Mutex
	runs    map[string]*Run
	threads map[string]*threadEntry

	// listen starts listening for thread signals, once.
	listen sync.Once
}

func newRegistry(lim runlog.Limits, ttl time.Duration) *registry {
	return &registry{lim: lim, ttl: ttl, retain: maxRetained, runs: map[string]*Run{}, threads: map[string]*threadEntry{}}
}

// Run is a run known to this process: its event log and what its events
// said so far. Adapters read it through its methods and [Core.Events].
type Run struct {
	id, owner, threadID, network string
	log                          *runlog.Log

	// started is closed when the run's first event, or the error that kept
	// it from starting, is known.
	started  chan struct{}
	startErr error

	mu sync.Mutex
	// pos is the run's position on its thread (the seq of its first
	// message), once read: its thread events' ids start with it.
	pos int
	// base: the events at or before it are not in log (the log was made
	// after them, for a resumed or adopted run); they are rebuilt from the
	// store for readers that need them.
	base runlog.Cursor
	// lastEv is the cursor of the run's last event (drafts aside) in its
	// log, in the numbering of its thread events (see appendRun).
	lastEv runlog.Cursor
	// durable is the cursor of its last event that is not a delta, and
	// deltas counts the deltas since: a delta's thread id is durable's
	// followed by its count.
	durable runlog.Cursor
	deltas  int
	// draftAt is the cursor of the last draft placed in its log, and
	// followed counts the deltas of a worker's run placed after it
	// (placeFollowing).
	draftAt   runlog.Cursor
	followed  int
	res       wire.Run
	producing bool // a goroutine of this process executes the run
	// ended: the run's run_end is in its log and its goroutine is
	// finishing (extensions after the end); set at run_end, cleared when
	// it starts again (a resumed run).
	ended     bool
	queued    bool // the run waits in its thread's queue (or did): its readers wait for it to start
	following bool // a goroutine follows the run through the store
	// followCP is the last checkpoint followed; until there is one,
	// followFrom is the cursor of the last event the log got live.
	followCP   string
	followFrom runlog.Cursor
	// followSeq is the seq of the last checkpoint followed: a worker's
	// deltas that follow a checkpoint are placed once it is read
	// (placeFollowing).
	followSeq int
	readers   int
	lastRead  time.Time
}

func (r *Run) addReader(d int) {
	r.mu.Lock()
	r.readers += d
	r.lastRead = time.Now()
	r.mu.Unlock()
}

// observe records what an event says about the run.
func (r *Run) observe(ev runner.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *runner.RunStartEvent:
		r.ended = false
		r.res.Status = string(runstate.StatusRunning)
		r.res.Interrupt, r.res.Error = nil, nil
		if e.Agent != "" {
			r.res.LastAgent = e.Agent
		}
	case *runner.AgentStartEvent:
		r.res.LastAgent = e.Agent
	case *runner.InterruptEvent:
		r.res.Interrupt = e.Interrupt
	case *runner.ErrorEvent:
		r.res.Error = &wire.RunError{Kind: string(e.Kind), Message: e.Message, Limit: e.Limit}
	case *runner.RunEndEvent:
		r.ended = true
		r.res.Status = string(e.Status)
		r.res.LastAgent = e.LastAgent
		r.res.Turns, r.res.Transfers, r.res.Usage = e.Turns, e.Transfers, e.Usage
		r.res.Output, r.res.Limit = e.Output, e.Limit
		r.res.Stopped = stopView(e.Stopped)
	}
}

func (r *Run) result() wire.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.res
	out.ID, out.Object, out.ThreadID, out.Network = r.id, "thread.run", r.threadID, r.network
	out.EventsURL = EventsURL(r.threadID, r.id)
	if out.Status == "" {
		out.Status = string(runstate.StatusRunning)
	}
	return out
}

func EventsURL(threadID, runID string) string {
	return "/v1/threads/" + threadID + "/runs/" + runID + "/events"
}

// threadEntry is the event log of a thread: the events of its runs (with
// their run id) at cursors {Pos: the run's position, Seq: the event's seq,
// Sub} (drafts and deltas {Pos, Seq, Sub, Ver: the draft's version, the
// delta's count}). Thread handoff events ({Pos, Ext}, see handoffEntries)
// are not in the log: they are read from the store (advance moves from to
// the last one). Its ids are durable: the store rebuilds what the log
// lacks.
type threadEntry struct {
	owner, id string
	log       *runlog.Log

	mu sync.Mutex
	// from: every event of the thread after from that this process has
	// seen is in log (unless the log dropped it for its bound). A reader
	// behind from fetches what it lacks from the store: from moves when an
	// event comes whose run's earlier events the log does not hold (a new
	// run — others may have run in between on other processes —, a run
	// followed from a checkpoint).
	from runlog.Cursor
	// gen counts the changes of log and from: a stream that read the
	// thread at gen and finds it unchanged parks (see threadStream).
	gen uint64
	// parked are the thread's streams waiting for its next change, with
	// no goroutine of their own (threadStream.park); a change wakes them.
	parked  []*threadStream
	network string // the thread's network, once read
	active  *Run   // the run this process executes on the thread
	// freed is closed when active is cleared (see setActive).
	freed   chan struct{}
	subs    int
	touched time.Time
	// poked is closed when a signal says a checkpoint of a run on the
	// thread committed (see Server.signaller).
	poked chan struct{}
	// wanted is when this process last announced that it wants the
	// thread's signals.
	wanted time.Time

	// w is the thread's place in the server's watcher (under its mu).
	w watchState
}

// signalled returns a channel closed at the thread's next signal.
func (t *threadEntry) signalled() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.poked == nil {
		t.poked = make(chan struct{})
	}
	return t.poked
}

// poke wakes the goroutines that wait for the thread's signals.
func (t *threadEntry) poke() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.poked != nil {
		close(t.poked)
		t.poked = nil
	}
}

// withRunID returns data, a JSON object, with runID spliced in first.
func withRunID(runID string, data []byte) []byte {
	if runID == "" || len(data) < 2 || data[0] != '{' {
		return data
	}
	id, _ := json.Marshal(runID)
	b := make([]byte, 0, len(data)+len(id)+12)
	b = append(b, `{"run_id":`...)
	b = append(b, id...)
	if data[1] != '}' {
		b = append(b, ',')
	}
	return append(b, data[1:]...)
}

// addRun adds an event of the run at pos to the thread's log, at the run's
// cursor at; prev is the cursor of the run's event before it as its
// producer knows it (zero for the run's first). If the log does not hold
// the run's events through prev, from moves to prev: readers get the
// events in between from the store. It reports whether the event was added
// (it is not when it is not after the log's last: an event of a run that a
// later run has stopped, or one seen twice).
func (t *threadEntry) addRun(pos int, runID string, at, prev runlog.Cursor, typ string, data []byte) bool {
	data = withRunID(runID, data)
	c := runlog.Cursor{Pos: pos, Seq: at.Seq, Sub: at.Sub, Ver: at.Ver}
	p := runlog.Cursor{Pos: pos, Seq: prev.Seq, Sub: prev.Sub}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.touched = time.Now()
	if !t.log.Last().Less(c) {
		return false
	}
	if t.log.Last().Less(p) && t.from.Less(p) {
		t.from = p
		t.changed()
	}
	if !t.log.Append(runlog.Entry{At: c, Type: typ, Data: data}) {
		return false
	}
	t.changed()
	return true
}

// addFollowing adds a delta of a worker's run at pos at its cursor at (the
// run's last stored event, its last draft's Ver, the delta's count Ext),
// if it comes after the log's last event.
func (t *threadEntry) addFollowing(pos int, runID string, at runlog.Cursor, typ string, data []byte) bool {
	data = withRunID(runID, data)
	c := at
	c.Pos = pos
	t.mu.Lock()
	defer t.mu.Unlock()
	t.touched = time.Now()
	if !t.log.Last().Less(c) || !t.log.Append(runlog.Entry{At: c, Type: typ, Data: data}) {
		return false
	}
	t.changed()
	return true
}

// addDraft adds a draft update of a message of the run at pos at its
// cursor at in the run (the run's event it follows, Ver its version): a
// draft is the whole text so far, coalesced like deltas (an older version
// is never added after a newer one).
func (t *threadEntry) addDraft(pos int, at runlog.Cursor, data []byte) bool {
	c := runlog.Cursor{Pos: pos, Seq: at.Seq, Sub: at.Sub, Ver: at.Ver}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.touched = time.Now()
	if !t.log.Append(runlog.Entry{At: c, Type: "draft", Data: data}) {
		return false
	}
	t.changed()
	return true
}

// advance records that the thread's events reach c (read from the store):
// if the log is behind c, from moves to c and readers fetch the events
// from the store.
func (t *threadEntry) advance(c runlog.Cursor) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.log.Last().Less(c) && t.from.Less(c) {
		t.from = c
		t.changed()
	}
}

// changed records a change of the log or of from and wakes the parked
// streams. t.mu is held.
func (t *threadEntry) changed() {
	t.gen++
	t.wakeParked(false)
}

// wakeParked hands every parked stream of the thread to a goroutine (or
// its handler), with a heartbeat due if ping. t.mu is held.
func (t *threadEntry) wakeParked(ping bool) {
	for i, ts := range t.parked {
		t.parked[i] = nil
		ts.parkedAt = -1
		ts.ping = ts.ping || ping
		ts.dispatch()
	}
	t.parked = t.parked[:0]
	if cap(t.parked) > 64 {
		t.parked = nil
	}
}

// unpark takes ts off the parked streams, reporting whether it was there
// (whoever takes it runs it). t.mu is held.
func (t *threadEntry) unpark(ts *threadStream) bool {
	i := ts.parkedAt
	if i < 0 {
		return false
	}
	last := len(t.parked) - 1
	t.parked[i] = t.parked[last]
	t.parked[i].parkedAt = i
	t.parked[last] = nil
	t.parked = t.parked[:last]
	ts.parkedAt = -1
	return true
}

// read returns, as of one moment, up to max of the log's events after
// cur (appended to buf), from, and gen.
func (t *threadEntry) read(cur runlog.Cursor, max int, buf []runlog.Entry) (runlog.Read, runlog.Cursor, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.log.Since(cur, max, buf), t.from, t.gen
}

func (t *threadEntry) setNetwork(n string) {
	t.mu.Lock()
	t.network = n
	t.mu.Unlock()
}

func threadKey(owner, id string) string { return owner + "\x00" + id }

// network returns the network of a thread of owner this process has read,
// or "".
func (g *registry) network(owner, id string) string {
	g.mu.Lock()
	t := g.threads[threadKey(owner, id)]
	g.mu.Unlock()
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.network
}

// thread returns the entry of a thread, made if needed.
func (g *registry) thread(owner, id string) *threadEntry {
	k := threadKey(owner, id)
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.threads[k]
	if t == nil {
		t = &threadEntry{owner: owner, id: id, log: runlog.New(runlog.Limits{MaxEvents: 1024, MaxBytes: 512 << 10}), touched: time.Now()}
		g.threads[k] = t
	}
	return t
}

// lookup returns the entry of a thread this process has, or nil.
func (g *registry) lookup(owner, id string) *threadEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.threads[threadKey(owner, id)]
}

// eachThread calls f with every thread entry.
func (g *registry) eachThread(f func(*threadEntry)) {
	g.mu.Lock()
	all := make([]*threadEntry, 0, len(g.threads))
	for _, t := range g.threads {
		all = append(all, t)
	}
	g.mu.Unlock()
	for _, t := range all {
		f(t)
	}
}

// run returns the entry of a run of owner, or nil.
func (g *registry) run(owner, id string) *Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.runs[id]
	if r == nil || r.owner != owner {
		return nil
	}
	return r
}

// newRun registers a run, or returns the entry it has.
func (g *registry) newRun(owner, threadID, runID, net string) *Run {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.runs[runID]; r != nil && r.owner == owner {
		return r
	}
	r := &Run{id: runID, owner: owner, threadID: threadID, network: net, log: runlog.New(g.lim), started: make(chan struct{})}
	g.runs[runID] = r
	return r
}

// forget drops a run that never started.
func (g *registry) forget(r *Run) {
	g.mu.Lock()
	if g.runs[r.id] == r {
		delete(g.runs, r.id)
	}
	g.mu.Unlock()
}

// maxRetained bounds the finished runs whose logs are kept for reconnects;
// beyond it the oldest are forgotten first (their events are rebuilt from
// the store if a client asks).
const maxRetained = 20000

// sweepOnce forgets runs finished more than ttl ago with no reader (and
// the oldest finished ones beyond maxRetained), and idle threads.
func (g *registry) sweepOnce(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	type done struct {
		id string
		at time.Time
	}
	var finished []done
	for id, r := range g.runs {
		closed, _, at := r.log.Closed()
		r.mu.Lock()
		idle := r.readers == 0 && !r.producing && !r.following
		stale := idle && (closed && now.Sub(at) > g.ttl || !closed && now.Sub(r.lastRead) > g.ttl && r.lastRead != time.Time{})
		r.mu.Unlock()
		if stale {
			delete(g.runs, id)
		} else if idle && closed {
			finished = append(finished, done{id, at})
		}
	}
	if extra := len(finished) - g.retain; extra > 0 {
		slices.SortFunc(finished, func(a, b done) int { return a.at.Compare(b.at) })
		for _, d := range finished[:extra] {
			delete(g.runs, d.id)
		}
	}
	for k, t := range g.threads {
		t.mu.Lock()
		idle := t.active == nil && t.subs == 0 && now.Sub(t.touched) > g.ttl
		t.mu.Unlock()
		if idle {
			delete(g.threads, k)
		}
	}
}

func (s *Server) sweep() {
	every := min(s.cfg.LogTTL/4, 10*time.Second)
	t := time.NewTicker(max(every, time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.janitor:
			return
		case now := <-t.C:
			s.reg.sweepOnce(now)
		}
	}
}

// setActive makes run the thread's active run; t.mu is held.
func (t *threadEntry) setActive(run *Run) {
	t.active = run
	t.freed = make(chan struct{})
}

// clearActive frees the thread if run is its active run; t.mu is held.
func (t *threadEntry) clearActive(run *Run) {
	if t.active == run && run != nil {
		t.active = nil
		close(t.freed)
	}
}
