package server

import (
	"container/heap"
	"errors"
	"sync"
	"time"

	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/store"
)

// maxChecks bounds the threads the watcher reads at once.
const maxChecks = 8

// threadWatcher watches, for every thread with subscribers in this
// process, for runs that this process neither executes nor follows
// (started by another process: a `baton serve` replica, a worker that
// took a queued or suspended run) and for thread handoffs any process
// proposed or decided: it moves the thread's log forward so that its
// streams fetch the rest from the store, and follows a run that is not
// final. One goroutine schedules all the threads (a heap by due time) and
// reads at most maxChecks of them at once, so an idle subscribed thread
// costs no goroutine.
//
// With a broker that carries signals a thread is read at each
// draft.KindThread signal of it — the process that runs a run on it
// signals each checkpoint, once this process has announced its interest
// (Server.want) — and, in case signals are lost, every 8×FollowInterval;
// without signals every FollowInterval, backing off to eight times that
// while nothing changes.
type threadWatcher struct {
	s     *Server
	start sync.Once
	kick  chan struct{}

	mu      sync.Mutex
	due     watchHeap
	running int
}

// watchState is a thread's place in the watcher. The fields but seen and
// seenHandoff are under threadWatcher.mu; those two are the checking
// goroutine's (one at a time).
type watchState struct {
	idx      int // index in the heap + 1; 0 when not in it
	at       time.Time
	every    time.Duration
	checking bool
	poked    bool // a signal came while checking: due again at once

	seen        string
	seenHandoff runlog.Cursor
}

func newThreadWatcher(s *Server) *threadWatcher {
	return &threadWatcher{s: s, kick: make(chan struct{}, 1)}
}

// add watches a thread that got a subscriber, if it is not watched: its
// first read is a poll interval away (the stream read the store when it
// started).
func (w *threadWatcher) add(te *threadEntry) {
	w.start.Do(func() { go w.loop() })
	sg := w.s.signaller()
	if sg != nil {
		w.s.want(sg, te)
	}
	base := w.s.pollEvery(sg)
	w.mu.Lock()
	defer w.mu.Unlock()
	if te.w.idx > 0 || te.w.checking {
		return
	}
	te.w.seen, te.w.seenHandoff = "", runlog.Cursor{}
	te.w.every, te.w.at = base, time.Now().Add(base)
	heap.Push(&w.due, te)
	w.wake()
}

// poke makes a watched thread due at once (a signal of it came).
func (w *threadWatcher) poke(te *threadEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case te.w.checking:
		te.w.poked = true
	case te.w.idx > 0:
		te.w.at = time.Now()
		heap.Fix(&w.due, te.w.idx-1)
		w.wake()
	}
}

// wake wakes the loop. w.mu is held.
func (w *threadWatcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *threadWatcher) loop() {
	s := w.s
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		w.mu.Lock()
		now := time.Now()
		for len(w.due) > 0 && w.running < maxChecks && !w.due[0].w.at.After(now) {
			te := heap.Pop(&w.due).(*threadEntry)
			te.w.checking = true
			w.running++
			go w.check(te)
		}
		wait := time.Hour
		if len(w.due) > 0 && w.running < maxChecks {
			wait = w.due[0].w.at.Sub(now)
		}
		w.mu.Unlock()
		resetTimer(t, wait)
		select {
		case <-t.C:
		case <-w.kick:
		case <-s.drain:
			return
		case <-s.runCtx.Done():
			return
		}
	}
}

// check reads a thread, then schedules its next read while it has
// subscribers.
func (w *threadWatcher) check(te *threadEntry) {
	te.mu.Lock()
	subs := te.subs
	te.mu.Unlock()
	changed := false
	if subs > 0 {
		changed = w.s.checkThread(te)
	}
	te.mu.Lock()
	subs = te.subs
	te.mu.Unlock()
	base := w.s.pollEvery(w.s.signaller())
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running--
	te.w.checking = false
	if subs > 0 {
		if changed {
			te.w.every = base
		} else {
			te.w.every = min(te.w.every*2, 8*w.s.cfg.FollowInterval)
		}
		te.w.at = time.Now().Add(te.w.every)
		if te.w.poked {
			te.w.at = time.Now()
		}
		heap.Push(&w.due, te)
	}
	te.w.poked = false
	w.wake()
}

// checkThread reads what other processes did on a thread: a thread
// handoff, or a run this process neither executes nor follows. It
// reports whether something changed.
func (s *Server) checkThread(te *threadEntry) bool {
	ctx := store.ContextWithOwner(s.runCtx, te.owner)
	if sg := s.signaller(); sg != nil {
		s.want(sg, te)
	}
	changed := false
	if h := s.handoffTail(ctx, te); te.w.seenHandoff.Less(h) {
		te.w.seenHandoff, changed = h, true
		te.advance(h)
	}
	te.mu.Lock()
	active := te.active
	te.mu.Unlock()
	if active != nil {
		return true // this process runs it: read again soon
	}
	cp, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: te.owner, ThreadID: te.id})
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) && ctx.Err() == nil {
			s.log.Debug("thread watcher: the thread's latest run", "thread_id", te.id, "error", err)
		}
		return changed
	}
	if cp.ID == te.w.seen {
		return changed
	}
	te.w.seen = cp.ID
	run := s.reg.run(te.owner, cp.RunID)
	busy := false
	if run != nil {
		run.mu.Lock()
		busy = run.producing || run.following
		run.mu.Unlock()
	}
	if !busy {
		run = s.follows(te.owner, cp)
		if pos := s.runPos(ctx, run); pos > 0 {
			at := s.lastOf(ctx, te.owner, cp)
			at.Pos = pos
			te.advance(at)
		}
	}
	return true
}

// poke wakes what waits for a thread's signals: its followers and the
// watcher.
func (s *Server) poke(te *threadEntry) {
	te.poke()
	s.watch.poke(te)
}

// watchHeap orders watched threads by when they are due.
type watchHeap []*threadEntry

func (h watchHeap) Len() int           { return len(h) }
func (h watchHeap) Less(i, j int) bool { return h[i].w.at.Before(h[j].w.at) }
func (h watchHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].w.idx, h[j].w.idx = i+1, j+1
}
func (h *watchHeap) Push(x any) {
	te := x.(*threadEntry)
	te.w.idx = len(*h) + 1
	*h = append(*h, te)
}
func (h *watchHeap) Pop() any {
	old := *h
	te := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	te.w.idx = 0
	return te
}
