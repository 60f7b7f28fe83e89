package runner_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// remoteModel saves a memo ("started") on its first call and hangs until
// its context ends, as a process that dies while remote work runs; a call
// that finds the memo answers with it.
type remoteModel struct {
	saved chan string // the memo key, once saved
}

func (m *remoteModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		memo, ok := agent.MemoFromContext(ctx)
		if !ok {
			yield(model.Chunk{}, context.Canceled)
			return
		}
		if v := memo.Load(); v != nil {
			msg := message.Assistant("", "picked up "+string(v))
			yield(model.Chunk{Type: model.ChunkDone, Message: &msg}, nil)
			return
		}
		if err := memo.Save(ctx, json.RawMessage(`"task-1"`)); err != nil {
			yield(model.Chunk{}, err)
			return
		}
		m.saved <- memo.Key()
		<-ctx.Done()
		yield(model.Chunk{}, ctx.Err())
	}
}

// crashAfterSave runs a new run until the memo is saved, then cancels it
// (the process dies) and returns the key and the last checkpoint.
func crashAfterSave(t *testing.T, r *runner.Runner, ck *memCheckpoints, saved chan string, input string) (string, *runstate.State) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Run(ctx, input)
	}()
	key := <-saved
	cancel()
	<-done
	return key, ck.Latest(t)
}

func TestMemoOfATurnIsCheckpointedAndPickedUp(t *testing.T) {
	t.Parallel()
	rm := &remoteModel{saved: make(chan string, 1)}
	remote := &agent.Agent{Name: "remote", Model: rm, ModelName: "test"}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, remote), Checkpointer: ck})
	key, st := crashAfterSave(t, r, ck, rm.saved, "hello")
	if !strings.HasSuffix(key, "/turn/1") || !strings.HasPrefix(key, st.RunID+"/") {
		t.Errorf("memo key %q, want %s/turn/1", key, st.RunID)
	}
	if got := string(st.Memos[key]); got != `"task-1"` {
		t.Fatalf("checkpointed memos %v, want %s = \"task-1\"", st.Memos, key)
	}
	res, err := r.Resume(t.Context(), roundTrip(t, st))
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != `picked up "task-1"` {
		t.Errorf("output %q", res.Output)
	}
	if len(ck.Latest(t).Memos) != 0 {
		t.Errorf("memos kept after the turn was recorded: %v", ck.Latest(t).Memos)
	}
}

func TestMemoOfAToolCall(t *testing.T) {
	t.Parallel()
	saved := make(chan string, 1)
	n := 0
	tool := &agent.Tool{Name: "send", Func: func(ctx context.Context, _ json.RawMessage) (string, error) {
		n++
		memo, _ := agent.MemoFromContext(ctx)
		if v := memo.Load(); v != nil {
			return "already sent: " + string(v), nil
		}
		if err := memo.Save(ctx, json.RawMessage(`"sent"`)); err != nil {
			return "", err
		}
		saved <- memo.Key()
		<-ctx.Done()
		return "", ctx.Err()
	}}
	a, _ := ag("a", calls("send", `{}`), text("done"))
	a.Tools = []*agent.Tool{tool}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
	key, st := crashAfterSave(t, r, ck, saved, "go")
	if want := st.RunID + "/call/" + st.Pending[0].Call.ID; key != want {
		t.Errorf("memo key %q, want %q", key, want)
	}
	res, err := r.Resume(t.Context(), roundTrip(t, st))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResults(res.Messages)[st.Pending[0].Call.ID].Text; got != `already sent: "sent"` {
		t.Errorf("tool result %q", got)
	}
	if n != 2 {
		t.Errorf("%d calls", n)
	}
	if len(ck.Latest(t).Memos) != 0 {
		t.Errorf("memos kept after the result was recorded: %v", ck.Latest(t).Memos)
	}
}

func TestMemoOfAnAgentToolSubRunIsKeptByTheTopRun(t *testing.T) {
	t.Parallel()
	rm := &remoteModel{saved: make(chan string, 1)}
	remote := &agent.Agent{Name: "remote", Description: "remote", Model: rm, ModelName: "test"}
	boss, _ := ag("boss", calls("ask_remote", `{"input":"do it"}`), text("ok"))
	boss.AgentTools = []*agent.AgentTool{{Agent: "remote"}}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, boss, remote), Checkpointer: ck})
	key, st := crashAfterSave(t, r, ck, rm.saved, "go")
	if want := runstate.SubRunID(st.RunID, st.Pending[0].Call.ID) + "/turn/1"; key != want {
		t.Errorf("memo key %q, want %q", key, want)
	}
	if _, ok := st.Memos[key]; !ok {
		t.Fatalf("top run's checkpoint lacks the sub-run's memo: %v", st.Memos)
	}
	res, err := r.Resume(t.Context(), roundTrip(t, st))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolResults(res.Messages)[st.Pending[0].Call.ID].Text; got != `picked up "task-1"` {
		t.Errorf("agent tool result %q", got)
	}
	if len(ck.Latest(t).Memos) != 0 {
		t.Errorf("memos kept after the agent tool's result was recorded: %v", ck.Latest(t).Memos)
	}
}
