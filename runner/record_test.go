package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/transfer"
)

// TestRecordCalls: with RecordCalls, each boundary carries the calls made
// since the previous one — a model call with its request as sent (the
// history after the transfer's policy), its answer, usage and timing, its
// retries with their errors; a tool call with its arguments and output; a
// transfer — and without it none.
func TestRecordCalls(t *testing.T) {
	t.Parallel()
	for _, record := range []bool{true, false} {
		t.Run(fmt.Sprint(record), func(t *testing.T) {
			t.Parallel()
			first := calls("lookup", `{"q":"x"}`, "transfer_to_b", `{}`)
			first.Fail = &scripted.Fail{Status: 503, Transient: true, Times: 1}
			a, _ := ag("a", first)
			a.Tools = []*agent.Tool{{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) { return "found", nil }}}
			a.Transfers = []*transfer.Transfer{{To: "b", History: transfer.HistoryLastUser}}
			b, _ := ag("b", text("b here"))
			var mu sync.Mutex
			var got []string
			var model *runner.CallRecord
			ext := runner.ExtensionFuncs{Boundary: func(_ context.Context, bd *runner.Boundary) error {
				mu.Lock()
				defer mu.Unlock()
				for i := range bd.Calls {
					c := &bd.Calls[i]
					got = append(got, fmt.Sprintf("%d %s %s %s", bd.State.Step, c.Kind, c.Agent, c.Name))
					if c.Kind == runner.CallModel && c.Agent == "b" {
						cp := *c
						model = &cp
					}
					if c.Kind == runner.CallModel && c.Agent == "a" && (len(c.Attempts) != 1 || !strings.Contains(c.Attempts[0].Err, "503")) {
						t.Errorf("a's call attempts %+v, want one failed attempt with its error", c.Attempts)
					}
					if c.Kind == runner.CallTool && (c.Output != "found" || string(c.Arguments) != `{"q":"x"}`) {
						t.Errorf("tool record %+v", c)
					}
				}
				return nil
			}}
			r, _ := newRunner(t, runner.Config{Network: network(t, agent.Limits{}, a, b), Checkpointer: &txCheckpoints{},
				Extensions: []runner.Extension{ext}, RecordCalls: record})
			before := time.Now()
			if _, err := r.Run(t.Context(), "go"); err != nil {
				t.Fatal(err)
			}
			if !record {
				if len(got) != 0 {
					t.Fatalf("calls recorded without RecordCalls: %v", got)
				}
				return
			}
			want := []string{"2 model a ", "3 tool a lookup", "4 transfer a b", "5 model b "}
			if !slices.Equal(got, want) {
				t.Fatalf("calls by boundary %q, want %q", got, want)
			}
			if model.Model != "scripted" || model.Response == nil || model.Response.Message.Text() != "b here" || model.Err != "" {
				t.Fatalf("b's call %+v", model)
			}
			if n := len(model.Request.Messages); n != 1 || model.Request.Messages[0].Text() != "go" || !strings.HasPrefix(model.Request.System, "You are b.") {
				t.Errorf("b's request as sent: %d messages, system %q; want the last user message only (history policy)", n, model.Request.System)
			}
			if model.Start.Before(before) || model.Latency <= 0 || model.FirstToken <= 0 || model.FirstToken > model.Latency {
				t.Errorf("timing start %v latency %v first token %v", model.Start, model.Latency, model.FirstToken)
			}
		})
	}
}
