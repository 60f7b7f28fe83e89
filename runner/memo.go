package runner

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/batonhq/baton/agent"
)

// This file is the runs' memos (agent.Memo): small values that a model call
// or a tool call in progress saves in the run's state, so that the same
// turn or call of a resumed run finds them. The memos of an agent-tool
// sub-run are kept in its top-level run's state (a sub-run has no
// checkpoints of its own) and dropped when the agent tool's result is
// recorded there.

// memoOwner is the run whose state keeps x's memos.
func (x *run) memoOwner() *run {
	for x.parent != nil {
		x = x.parent
	}
	return x
}

// memoKey is the full key of a memo of x: the run (or sub-run) id, then key.
func (x *run) memoKey(key string) string { return x.st.RunID + "/" + key }

func turnMemo(turn int) string      { return "turn/" + strconv.Itoa(turn) }
func callMemo(id string) string     { return "call/" + id }
func subRunPrefix(id string) string { return id + "/" }

// MemoFor returns the memo of the tool call ctx runs for when it is one of
// x's calls, else of x's model turn in progress (agent.MemoScope). Saving
// it checkpoints the top-level run.
func (x *run) MemoFor(ctx context.Context) *agent.Memo {
	var key string
	if ci, ok := agent.CallFromContext(ctx); ok && ci.RunID == x.st.RunID {
		key = callMemo(ci.CallID)
	} else {
		x.mu.Lock()
		key = turnMemo(x.st.Turns + 1)
		x.mu.Unlock()
	}
	return x.memo(key)
}

// memo returns the memo of key of x.
func (x *run) memo(key string) *agent.Memo {
	o := x.memoOwner()
	full := x.memoKey(key)
	load := func() json.RawMessage {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.st.Memos[full]
	}
	save := func(ctx context.Context, v json.RawMessage) error {
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.st.Memos == nil {
			o.st.Memos = map[string]json.RawMessage{}
		}
		o.st.Memos[full] = append(json.RawMessage(nil), v...)
		return o.checkpoint(ctx)
	}
	return agent.NewMemo(full, load, save)
}

// dropMemoLocked drops the memo of key of x, whose outcome is being recorded
// in x's state, with x.mu held. A sub-run keeps its memos until its
// agent tool's result is recorded in the top-level run (dropSubRunMemos).
func (x *run) dropMemoLocked(key string) {
	if x.parent != nil || len(x.st.Memos) == 0 {
		return
	}
	delete(x.st.Memos, x.memoKey(key))
}

// dropSubRunMemosLocked drops the memos of the agent-tool sub-run of call
// id (and its own sub-runs), with x.mu held.
func (x *run) dropSubRunMemosLocked(callID string) {
	if x.parent != nil || len(x.st.Memos) == 0 {
		return
	}
	prefix := subRunPrefix(x.memoKey(callID))
	for k := range x.st.Memos {
		if strings.HasPrefix(k, prefix) {
			delete(x.st.Memos, k)
		}
	}
}
