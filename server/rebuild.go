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

// entriesOf returns the events that took a run from state base (nil: its
// start) through states, encoded, with ids after after: each step's events
// end at its checkpoint's seq when that is free, so that they line up with
// the ids of the live events.
func entriesOf(base *runstate.State, states []*runstate.State, after runlog.Cursor) ([]runlog.Entry, error) {
	var out []runlog.Entry
	last := after
	prevState := base
	for _, st := range states {
		evs := runner.EventsBetween(prevState, st)
		n := len(evs)
		for j, ev := range evs {
			at := runlog.Cursor{Seq: st.Seq - (n - 1 - j)}
			if !last.Less(at) {
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

// rebuild returns the events of a run after cursor from, made from its
// stored checkpoints (see [runner.EventsBetween]): text deltas are folded
// into their message events.
func (s *Server) rebuild(ctx context.Context, owner, runID string, from runlog.Cursor) ([]runlog.Entry, error) {
	entries, _, err := s.rebuildRun(ctx, owner, runID, from)
	return entries, err
}

// rebuildRun is rebuild that also returns the run's latest checkpoint.
func (s *Server) rebuildRun(ctx context.Context, owner, runID string, from runlog.Cursor) ([]runlog.Entry, *store.Checkpoint, error) {
	// From the start, the whole chain: a run that numbered no events (not
	// streamed) has checkpoints at seq 0.
	start := from == (runlog.Cursor{})
	latest, base, states, err := s.chain(ctx, owner, runID, func(cp *store.Checkpoint) bool { return !start && cp.State.Seq <= from.Seq })
	if err != nil {
		return nil, nil, err
	}
	var first runlog.Cursor
	if base != nil {
		first = runlog.Cursor{Seq: base.Seq}
	}
	all, err := entriesOf(base, states, first)
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
// update when Config.Drafts is set, else every FollowInterval) and appends
// the events they imply, and the drafts, to the run's log, until the run is
// final or waits for a decision, or nobody has read it for a minute.
func (s *Server) follow(run *runEntry) {
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
		t := time.NewTicker(s.cfg.FollowInterval)
		defer t.Stop()
		for {
			done, err := s.followOnce(ctx, run, te)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("follow run", "run_id", run.id, "error", err)
			}
			if done {
				return
			}
			run.mu.Lock()
			idle := run.readers == 0 && time.Since(run.lastRead) > time.Minute
			run.mu.Unlock()
			if idle {
				te.mu.Lock()
				idle = te.subs == 0
				te.mu.Unlock()
			}
			if idle {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case u := <-wake:
				if !u.Final {
					data, _ := json.Marshal(u)
					last := run.log.Last()
					run.log.Append(runlog.Entry{At: runlog.Cursor{Seq: last.Seq, Sub: last.Sub + 1}, Type: "draft", Data: data})
					if pos := s.runPos(ctx, run); pos > 0 && strings.HasPrefix(u.MessageID, run.id+"-") {
						run.mu.Lock()
						after := run.lastEv
						if after.Less(run.base) {
							after = run.base
						}
						run.mu.Unlock()
						te.addDraft(pos, after.Seq, u.Version, data)
					}
				}
			}
		}
	}()
}

// followOnce appends the events of the run's checkpoints written since the
// last one followed. It reports whether the run stopped.
func (s *Server) followOnce(ctx context.Context, run *runEntry, te *threadEntry) (bool, error) {
	run.mu.Lock()
	seen, from := run.followCP, run.followFrom
	run.mu.Unlock()
	latest, base, states, err := s.chain(ctx, run.owner, run.id, func(cp *store.Checkpoint) bool {
		if seen != "" {
			return cp.ID == seen
		}
		return cp.State.Seq <= from.Seq && cp.State.Status != runstate.StatusRunning
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
		entries, err := entriesOf(base, states, last)
		if err != nil {
			return false, err
		}
		pos := s.runPos(ctx, run)
		for _, e := range entries {
			at, prev := s.appendRun(run, e.Type, e.At.Seq, e.Data)
			if pos > 0 {
				te.addRun(pos, run.id, at, prev, e.Type, e.Data)
			}
		}
	}
	run.mu.Lock()
	run.followCP = latest.ID
	run.res = runFromState(latest.State)
	run.mu.Unlock()
	switch latest.State.Status {
	case runstate.StatusCompleted, runstate.StatusFailed, runstate.StatusCancelled, runstate.StatusInterrupted:
		run.log.Close(string(latest.State.Status))
		return true, nil
	}
	return false, nil
}
