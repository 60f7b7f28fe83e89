package service

import (
	"context"
	"time"

	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/runstate"
)

// ThreadInterestTTL is how long an announcement of interest in a thread's
// signals (draft.Want, sent by the server for each thread it streams, every
// ThreadInterestTTL/3) holds.
const ThreadInterestTTL = 30 * time.Second

// threadSignaller returns the threads.Service.Committed of every network
// of a service whose broker carries signals: after each checkpoint of a run
// on a thread that some process streams (draft.Interest), it sends a
// draft.KindThread signal, so that the process's thread and run streams
// read the store at once instead of at their next poll. In whichever
// process runs it — baton serve, baton worker, the CLI, a library — since
// every run on a thread checkpoints through package threads. Nobody
// streaming the thread, no signal: no statement added to a run's steps.
func threadSignaller(sg draft.Signaller) func(ctx context.Context, owner, threadID string, st *runstate.State) {
	in := draft.NewInterest(sg, draft.KindThread, ThreadInterestTTL)
	return func(ctx context.Context, owner, threadID string, st *runstate.State) {
		if !in.Wanted(owner, threadID) {
			return
		}
		s := draft.Signal{Kind: draft.KindThread, OwnerID: owner, Key: threadID, Data: st.RunID}
		if _, local := sg.(*draft.Hub); local {
			_ = sg.Signal(ctx, s) // this process's handlers, which do not block
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = sg.Signal(ctx, s) // lost, the streams poll
		}()
	}
}
