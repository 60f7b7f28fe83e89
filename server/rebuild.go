package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/store"
)

// maxChain bounds the checkpoints read to rebuild a run's events.
const maxChain = 2000

// chain reads a run's checkpoints back from the newest until stop accepts
// one, which is the baseline, or the run's first. It returns the newest
// checkpoint, the baseline's state (nil when the chain reaches the run's
// start) and the states after the baseline, oldest first.
func (s *Server) chain(ctx context.Context, owner, runID string, stop func(*store.Checkpoint) bool) (*store.Checkpoint, *runstate.State, []*runstate.State, error) {
	latest, err := s.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: runID})
	if err != nil {
		return nil, nil, nil, err
	}
	var states []*runstate.State
	cp := latest
	for n := 0; ; n++ {
		if stop(cp) {
			slices.Reverse(states)
			return latest, cp.State, states, nil
		}
		states = append(states, cp.State)
		if cp.ParentID == "" || n >= maxChain {
			slices.Reverse(states)
			return latest, nil, states, nil
		}
		if cp, err = s.st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ParentID}); err != nil {
			return nil, nil, nil, err
		}
	}
}

// spillK spaces the ids of the events that a checkpoint's seqs do not
// number (see eventIDs): those of a step take Sub step*spillK+1, +2, ….
const spillK = 1000

// eventIDs returns the cursors, in the run's numbering, of the n events
// that took a run from state prev (nil: its start) to cur
// ([runner.EventsBetween]). A runner that streams numbers the events of a
// step up to the seq it checkpoints: the events take the last n seqs up to
// cur.Seq, as they had live. The events of a checkpoint written by another
// writer (a worker's claim, the failure a continuation records, a run
// settled or cancelled by another) were not numbered: those that do not fit
// after prev.Seq take Sub ids after it, cur.Step*spillK+1, +2, … — ids that
// depend on the two checkpoints only, so that a stream that followed the
// run live and one rebuilt from any checkpoint give them the same, and
// that come after the Sub ids of the checkpoints before (a lower step).
// Drafts and deltas, which are not stored, take Ver ids after the event
// they follow: no stored event's id is ever one of theirs.
func eventIDs(prev, cur *runstate.State, n int) []runlog.Cursor {
	from := 0
	if prev != nil {
		from = prev.Seq
	}
	fit := min(n, max(cur.Seq-from, 0))
	out := make([]runlog.Cursor, n)
	for j := range n - fit {
		out[j] = runlog.Cursor{Seq: from, Sub: cur.Step*spillK + j + 1}
	}
	for j := n - fit; j < n; j++ {
		out[j] = runlog.Cursor{Seq: cur.Seq - (n - 1 - j)}
	}
	return out
}

// entriesOf returns the events that took a run from state base (nil: its
// start) through states, encoded, with their ids (see eventIDs). An id that
// would not come after the one before (states no writer makes) takes a Sub
// after it.
func entriesOf(base *runstate.State, states []*runstate.State) ([]runlog.Entry, error) {
	var out []runlog.Entry
	var last runlog.Cursor
	prevState := base
	for _, st := range states {
		evs := runner.EventsBetween(prevState, st)
		ids := eventIDs(prevState, st, len(evs))
		for j, ev := range evs {
			at := ids[j]
			if len(out) > 0 && !last.Less(at) {
				at = runlog.Cursor{Seq: last.Seq, Sub: last.Sub + 1}
			}
			runner.SetSeq(ev, at.Seq)
			data, err := json.Marshal(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, runlog.Entry{At: at, Type: string(ev.EventType()), Data: data})
			last = at
		}
		prevState = st
	}
	return out, nil
}

// lastOf returns the cursor of the last event of a run through checkpoint
// cp, in the run's numbering: cp's seq, or the Sub id of an event of cp
// that the seq does not number (which needs cp's parent, and its own when
// cp has no event). Best effort: cp's seq if the store fails.
func (s *Server) lastOf(ctx context.Context, owner string, cp *store.Checkpoint) runlog.Cursor {
	at := runlog.Cursor{Seq: cp.State.Seq}
	for range 8 {
		var prev *runstate.State
		var parent *store.Checkpoint
		if cp.ParentID != "" {
			var err error
			if parent, err = s.st.GetCheckpoint(ctx, &store.GetCheckpointParams{OwnerID: owner, ID: cp.ParentID}); err != nil {
				return at
			}
			prev = parent.State
		}
		if n := len(runner.EventsBetween(prev, cp.State)); n > 0 {
			if last := eventIDs(prev, cp.State, n)[n-1]; at.Less(last) {
				at = last
			}
			return at
		}
		if parent == nil {
			return at
		}
		cp = parent
	}
	return at
}

// rebuild returns the events of a run after cursor from, made from its
// stored checkpoints (see [runner.EventsBetween]): text deltas are folded
// into their message events.
func (s *Server) rebuild(ctx context.Context, owner, runID string, from runlog.Cursor) ([]runlog.Entry, error) {
	entries, _, err := s.rebuildRun(ctx, owner, runID, from)
	return entries, err
}

// rebuildRun is rebuild that also returns the run's latest checkpoint.
func (s *Server) rebuildRun(ctx context.Context, owner, runID string, from runlog.Cursor) ([]runlog.Entry, *store.Checkpoint, error) {
	// From the newest checkpoint whose seq is before from's: every event
	// of the checkpoints after it is after its seq (a run that numbered
	// no events, not streamed, has checkpoints at seq 0: the whole chain).
	latest, base, states, err := s.chain(ctx, owner, runID, func(cp *store.Checkpoint) bool { return cp.State.Seq < from.Seq })
	if err != nil {
		return nil, nil, err
	}
	all, err := entriesOf(base, states)
	if err != nil {
		return nil, nil, err
	}
	out := all[:0]
	for _, e := range all {
		if from.Less(e.At) {
			out = append(out, e)
		}
	}
	return out, latest, nil
}

// follow streams the progress of a run that a worker of another process
// (or River's) executes: it reads the run's new checkpoints (at each draft
// update, at each signal of its thread, and every FollowInterval) and
// appends
// the events they imply, and the drafts, to the run's log, until the run is
// final or waits for a decision, or nobody has read it for a minute.
func (s *Server) follow(run *Run) {
	run.mu.Lock()
	if run.following || run.producing {
		run.mu.Unlock()
		return
	}
	run.following = true
	run.lastRead = time.Now()
	if run.followCP == "" {
		run.followFrom = run.log.Last()
		if run.followFrom.Less(run.base) {
			run.followFrom = run.base
		}
	}
	run.mu.Unlock()
	te := s.reg.thread(run.owner, run.threadID)
	s.followers.add()
	go func() {
		defer s.followers.done()
		defer func() {
			run.mu.Lock()
			run.following = false
			run.mu.Unlock()
		}()
		ctx, cancel := context.WithCancel(s.runCtx)
		defer cancel()
		wake := make(chan DraftUpdate, 1)
		go func() {
			for u, err := range s.drafts.SubscribeThread(ctx, run.owner, run.threadID) {
				if err != nil {
					return
				}
				select {
				case wake <- u:
				default:
					// The follower is busy: keep the newest update only.
					select {
					case <-wake:
					default:
					}
					wake <- u
				}
			}
		}()
		// With signals, a checkpoint of the run (or of a run after it on
		// the thread) wakes the follower at once. It still polls every
		// FollowInterval: the checkpoints that writers other than the
		// runner make (a claim, a settle, a recorded failure) are not
		// signalled.
		sg := s.signaller()
		t := time.NewTicker(s.cfg.FollowInterval)
		defer t.Stop()
		for {
			var poked <-chan struct{}
			if sg != nil {
				s.want(sg, te)
				poked = te.signalled() // before the read: a signal during it wakes the wait
			}
			done, err := s.followOnce(ctx, run, te)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("follow run", "run_id", run.id, "error", err)
			}
			if done {
				return
			}
			if unread(run, te) {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-poked:
			case u := <-wake:
				if !u.Final {
					s.followDraft(ctx, run, te, u)
				}
			}
		}
	}()
}

// unread reports whether nobody has read the run for a minute and nobody
// follows its thread: its follower may stop.
func unread(run *Run, te *threadEntry) bool {
	run.mu.Lock()
	idle := run.readers == 0 && time.Since(run.lastRead) > time.Minute
	run.mu.Unlock()
	if !idle {
		return false
	}
	te.mu.Lock()
	defer te.mu.Unlock()
	return te.subs == 0
}

// followDraft appends draft update u of a followed run to the run's log
// and, when u is a message of the run, to its thread's stream. A draft's id
// is the run's last event's with its version plus one (Ver; version 0 is a
// message streaming without a draft yet): the same in the run's and the
// thread's streams, never an id a stored event takes.
func (s *Server) followDraft(ctx context.Context, run *Run, te *threadEntry, u DraftUpdate) {
	data, _ := json.Marshal(u)
	run.mu.Lock()
	after := run.durable
	if after.Less(run.base) {
		after = run.base
	}
	run.mu.Unlock()
	at := runlog.Cursor{Seq: after.Seq, Sub: after.Sub, Ver: int(u.Version) + 1}
	if run.log.Append(runlog.Entry{At: at, Type: "draft", Data: data}) {
		run.mu.Lock()
		run.draftAt = at
		run.mu.Unlock()
	}
	if pos := s.runPos(ctx, run); pos > 0 && strings.HasPrefix(u.MessageID, run.id+"-") {
		te.addDraft(pos, at, data)
	}
}

// followOnce appends the events of the run's checkpoints written since the
// last one followed. It reports whether the run stopped.
func (s *Server) followOnce(ctx context.Context, run *Run, te *threadEntry) (bool, error) {
	run.mu.Lock()
	seen, from := run.followCP, run.followFrom
	run.mu.Unlock()
	latest, base, states, err := s.chain(ctx, run.owner, run.id, func(cp *store.Checkpoint) bool {
		if seen != "" {
			return cp.ID == seen
		}
		return cp.State.Seq < from.Seq && cp.State.Status != runstate.StatusRunning
	})
	if err != nil {
		return false, err
	}
	if len(states) > 0 {
		run.mu.Lock()
		last := run.lastEv
		if last.Less(run.base) {
			last = run.base
		}
		run.mu.Unlock()
		entries, err := entriesOf(base, states)
		if err != nil {
			return false, err
		}
		pos := s.runPos(ctx, run)
		for _, e := range entries {
			if !last.Less(e.At) {
				continue // the log has it (or it is before the log)
			}
			at, prev := s.appendRun(run, e.Type, e.At, e.Data)
			if pos > 0 {
				te.addRun(pos, run.id, at, prev, e.Type, e.Data)
			}
		}
	}
	run.mu.Lock()
	run.followCP, run.followSeq = latest.ID, latest.State.Seq
	run.res = runFromState(latest.State)
	run.mu.Unlock()
	s.placeEarly(run, te)
	switch latest.State.Status {
	case runstate.StatusCompleted, runstate.StatusFailed, runstate.StatusCancelled, runstate.StatusInterrupted:
		run.log.Close(string(latest.State.Status))
		return true, nil
	}
	return false, nil
}
