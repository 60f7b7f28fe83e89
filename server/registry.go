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
	// epoch starts the event ids of thread logs (the process's start, in
	// Unix seconds), so that an id of an earlier process is recognised.
	epoch int

	mu      sync.Mutex
	runs    map[string]*runEntry
	threads map[string]*threadEntry
}

func newRegistry(lim runlog.Limits, ttl time.Duration) *registry {
	return &registry{lim: lim, ttl: ttl, retain: maxRetained, epoch: int(time.Now().Unix()), runs: map[string]*runEntry{}, threads: map[string]*threadEntry{}}
}

// runEntry is a run known to this process: its event log and what its
// events said so far.
type runEntry struct {
	id, owner, threadID, network string
	log                          *runlog.Log

	// started is closed when the run's first event, or the error that kept
	// it from starting, is known.
	started  chan struct{}
	startErr error

	mu sync.Mutex
	// base: the events at or before it are not in log (the log was made
	// after them, for a resumed or adopted run); they are rebuilt from the
	// store for readers that need them.
	base      runlog.Cursor
	res       wire.Run
	producing bool // a goroutine of this process executes the run
	queued    bool // the run waits in its thread's queue (or did): its readers wait for it to start
	following bool // a goroutine follows the run through the store
	// followCP is the last checkpoint followed; until there is one,
	// followFrom is the cursor of the last event the log got live.
	followCP   string
	followFrom runlog.Cursor
	readers    int
	lastRead   time.Time
}

func (r *runEntry) addReader(d int) {
	r.mu.Lock()
	r.readers += d
	r.lastRead = time.Now()
	r.mu.Unlock()
}

// observe records what an event says about the run.
func (r *runEntry) observe(ev runner.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := ev.(type) {
	case *runner.RunStartEvent:
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
		r.res.Status = string(e.Status)
		r.res.LastAgent = e.LastAgent
		r.res.Turns, r.res.Transfers, r.res.Usage = e.Turns, e.Transfers, e.Usage
		r.res.Output, r.res.Limit = e.Output, e.Limit
	}
}

func (r *runEntry) result() wire.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.res
	out.ID, out.Object, out.ThreadID, out.Network = r.id, "thread.run", r.threadID, r.network
	out.EventsURL = eventsURL(r.threadID, r.id)
	if out.Status == "" {
		out.Status = string(runstate.StatusRunning)
	}
	return out
}

func eventsURL(threadID, runID string) string {
	return "/v1/threads/" + threadID + "/runs/" + runID + "/events"
}

// threadEntry is the event log of a thread: the events of its runs (with
// their run id) and thread-level events. Its ids start after the
// registry's epoch.
type threadEntry struct {
	owner, id string
	log       *runlog.Log

	mu      sync.Mutex
	n       int
	network string    // the thread's network, once read
	active  *runEntry // the run this process executes on the thread
	subs    int
	touched time.Time
}

// append adds an event to the thread's log. runID, when set, is spliced
// into the event's JSON object.
func (t *threadEntry) append(runID, typ string, data []byte) {
	if runID != "" && len(data) > 1 && data[0] == '{' {
		id, _ := json.Marshal(runID)
		b := make([]byte, 0, len(data)+len(id)+12)
		b = append(b, `{"run_id":`...)
		b = append(b, id...)
		if data[1] != '}' {
			b = append(b, ',')
		}
		data = append(b, data[1:]...)
	}
	t.mu.Lock()
	t.n++
	t.touched = time.Now()
	t.log.Append(runlog.Entry{At: runlog.Cursor{Seq: t.n}, Type: typ, Data: data})
	t.mu.Unlock()
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
		t = &threadEntry{owner: owner, id: id, n: g.epoch, log: runlog.New(runlog.Limits{MaxEvents: 1024, MaxBytes: 512 << 10}), touched: time.Now()}
		g.threads[k] = t
	}
	return t
}

// run returns the entry of a run of owner, or nil.
func (g *registry) run(owner, id string) *runEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.runs[id]
	if r == nil || r.owner != owner {
		return nil
	}
	return r
}

// newRun registers a run, or returns the entry it has.
func (g *registry) newRun(owner, threadID, runID, net string) *runEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.runs[runID]; r != nil && r.owner == owner {
		return r
	}
	r := &runEntry{id: runID, owner: owner, threadID: threadID, network: net, log: runlog.New(g.lim), started: make(chan struct{})}
	g.runs[runID] = r
	return r
}

// forget drops a run that never started.
func (g *registry) forget(r *runEntry) {
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
