package runner_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// TestStopperKeepsPartialAnswer: a run stopped while its answer streams
// keeps the text so far as a partial answer and completes, its last
// checkpoint written.
func TestStopperKeepsPartialAnswer(t *testing.T) {
	m := scripted.New("a", []scripted.Step{{Text: "one two three four five six seven eight"}}, scripted.Options{ChunkWords: 1, ChunkDelay: 20 * time.Millisecond})
	a := &agent.Agent{Name: "a", Instructions: "x", Model: m, ModelName: "scripted"}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
	stop := runner.NewStopper()
	deltas := 0
	var end *runner.RunEndEvent
	for ev, err := range r.Stream(t.Context(), "hi", runner.WithStopper(stop)) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *runner.TextDeltaEvent:
			if deltas++; deltas == 2 {
				stop.Stop("interrupt")
			}
		case *runner.RunEndEvent:
			end = e
		}
	}
	if end == nil || end.Status != runstate.StatusCancelled || end.Output == "" || end.Output == "one two three four five six seven eight" ||
		end.Stopped == nil || end.Stopped.Reason != "interrupt" {
		t.Fatalf("run_end = %+v, want cancelled (stopped for interrupt) with a partial output", end)
	}
	st := ck.Latest(t)
	if runner.Stopped(st) != "interrupt" || st.Status != runstate.StatusCancelled {
		t.Fatalf("latest checkpoint: stopped %q, status %s", runner.Stopped(st), st.Status)
	}
	last := st.Transcript[len(st.Transcript)-1]
	if last.Metadata[runner.PartialMetadata] != true || last.Text() != end.Output {
		t.Fatalf("last message %+v, want the partial answer %q", last, end.Output)
	}
}

// TestStopperAnswersPendingCalls: a run stopped between a turn and its
// calls answers the calls "not run" and ends cancelled, naming the run
// whose start stopped it.
func TestStopperAnswersPendingCalls(t *testing.T) {
	stop := runner.NewStopper()
	lookup := &agent.Tool{Name: "lookup", Description: "d", Func: func(context.Context, json.RawMessage) (string, error) {
		stop.StopBy("interrupt", "run_next")
		return "found", nil
	}}
	a, _ := ag("a", calls("lookup", `{}`), text("never"))
	a.Tools = []*agent.Tool{lookup}
	ck := &memCheckpoints{}
	r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a), Checkpointer: ck})
	res, err := r.Run(t.Context(), "hi", runner.WithStopper(stop))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != runstate.StatusCancelled || runner.Stopped(res.State) != "interrupt" || runner.StoppedBy(res.State) != "run_next" {
		t.Fatalf("result %s stopped %q by %q", res.Status, runner.Stopped(res.State), runner.StoppedBy(res.State))
	}
	last := res.Messages[len(res.Messages)-1]
	if last.Role != "tool" || last.Parts[0].Text != "found" {
		t.Fatalf("last message %+v: the tool that ran keeps its result", last)
	}
}
