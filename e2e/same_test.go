package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
)

// conversation takes every path of testdata/shop.yaml on one thread: an
// inline-only turn (the lookup tool), a transfer to shipping with a typed
// context whose slow ship call goes to the background in serve, and a slow
// call of triage's own.
var conversation = []string{
	"[inline] Where is my order 1234?",
	"[transfer] My parcel of order 1234 arrived damaged.",
	"[background] The replacement did not come; please ship another one.",
}

// outcome is what one way of running the conversation produced.
type outcome struct {
	runs   []string         // run ids, by turn
	raw    [][]runner.Event // each turn's events
	events [][]string       // their substance
	calls  []string         // the tool service's deliveries, in order
	// callers are the processes that called each tool.
	callers    map[string][]string
	transcript []string
	// handovers are the completed placeholders of background hand-overs.
	handovers int
}

// TestSameBehaviourEverywhere runs one conversation through `baton run
// --json`, through `baton serve` with its own workers (SSE), and through
// `baton serve --workers 0` with a separate `baton worker`, on SQLite and
// on PostgreSQL, and checks that users see the same thing everywhere: the
// substance of the events (see substance for what differs by mode and is
// left out), the calls the HTTP tool service got, and the stored thread
// (without the placeholders of background hand-overs, which only serve
// writes: they are checked to be completed with the run's answer). In
// serve, the slow calls must have gone to the background: made by serve's
// workers, or by the separate worker.
func TestSameBehaviourEverywhere(t *testing.T) {
	batonBin(t)
	t.Parallel()
	modes := []struct {
		name string
		run  func(t *testing.T, db *database, fx *effects) *outcome
		// shipper is the process that must make the slow calls.
		shipper string
	}{
		{"run", runByCLI, "cli"},
		{"serve", func(t *testing.T, db *database, fx *effects) *outcome {
			return runByServe(t, startCluster(t, db, fx, clusterConfig{serveWorkers: 2}))
		}, "serve"},
		{"serve+worker", func(t *testing.T, db *database, fx *effects) *outcome {
			return runByServe(t, startCluster(t, db, fx, clusterConfig{serveWorkers: 0, workers: 1, workerSlots: 2}))
		}, "worker-0"},
	}
	for _, be := range backends(t, "") {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			out := make([]*outcome, len(modes))
			var wg sync.WaitGroup
			for i, m := range modes {
				wg.Go(func() {
					t.Run(m.name, func(t *testing.T) {
						fx := newEffects(t, nil)
						o := m.run(t, be.open(t), fx)
						checkOutcome(t, fx, o, m.shipper)
						out[i] = o
					})
				})
			}
			wg.Wait()
			want := out[0]
			if want == nil {
				return
			}
			for i, got := range out[1:] {
				if got == nil {
					continue
				}
				name := modes[i+1].name
				for turn := range conversation {
					if d := diff(got.events[turn], want.events[turn]); d != "" {
						t.Errorf("%s: events of turn %d differ from baton run's: %s", name, turn+1, d)
					}
				}
				if d := diff(got.calls, want.calls); d != "" {
					t.Errorf("%s: tool calls differ from baton run's: %s", name, d)
				}
				if d := diff(got.transcript, want.transcript); d != "" {
					t.Errorf("%s: stored thread differs from baton run's: %s", name, d)
				}
			}
			if !t.Failed() {
				t.Logf("%d turns, %d events, %d tool calls and %d messages the same in %d modes; %d hand-overs to workers in serve",
					len(conversation), len(want.events[0])+len(want.events[1])+len(want.events[2]), len(want.calls), len(want.transcript), len(modes), out[1].handovers)
			}
		})
	}
}

// runByCLI runs the conversation with one `baton run --json` per turn.
func runByCLI(t *testing.T, db *database, fx *effects) *outcome {
	c := newCluster(t, db, fx)
	o := &outcome{}
	thread := ""
	for i, input := range conversation {
		evs := c.runCLI(t, "cli", input, thread)
		start, ok := first(evs)
		if !ok {
			t.Fatalf("turn %d printed no run_start first: %+v", i+1, evs)
		}
		thread = start.ThreadID
		o.runs = append(o.runs, start.RunID)
		o.raw = append(o.raw, evs)
		o.events = append(o.events, substance(start.RunID, evs))
	}
	return collect(t, db, fx, o, thread)
}

// runByServe runs the conversation through c's API, each turn an SSE
// stream followed to the run's end.
func runByServe(t *testing.T, c *cluster) *outcome {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	thread, err := c.api.createThread(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := &outcome{}
	for i, input := range conversation {
		run, evs, err := c.api.stream(ctx, thread, input, nil, nil)
		if err != nil {
			t.Fatalf("turn %d: %v (events %+v)", i+1, err, evs)
		}
		o.runs = append(o.runs, run)
		o.raw = append(o.raw, evs)
		o.events = append(o.events, substance(run, evs))
	}
	return collect(t, c.db, c.fx, o, thread)
}

// collect completes o with the tool calls and the stored thread.
func collect(t *testing.T, db *database, fx *effects, o *outcome, thread string) *outcome {
	o.callers = map[string][]string{}
	for _, d := range fx.all() {
		turn := -1
		for i, r := range o.runs {
			if d.run == r {
				turn = i + 1
			}
		}
		o.calls = append(o.calls, fmt.Sprintf("turn %d: %s %s %s repeat=%t", turn, d.tool, d.call, d.args, d.repeat))
		o.callers[d.tool] = append(o.callers[d.tool], d.caller)
	}
	msgs, placeholders := db.messages(t, thread)
	o.transcript = transcript(msgs)
	finals := map[string]bool{}
	for _, m := range msgs {
		if m.Role == message.RoleAssistant {
			finals[m.Text()] = true
		}
	}
	for _, p := range placeholders {
		if p.Status != message.StatusCompleted || !finals[p.Text()] {
			t.Errorf("placeholder %s is %s with %q, want completed with a run's answer", p.ID, p.Status, p.Text())
		}
		o.handovers++
	}
	return o
}

// checkOutcome checks one mode on its own: every turn completed, every
// tool result came from the effect of its call's key, and the slow calls
// were made by shipper (in serve: in the background).
func checkOutcome(t *testing.T, fx *effects, o *outcome, shipper string) {
	t.Helper()
	for i, evs := range o.raw {
		if !completed(evs) {
			t.Errorf("turn %d did not end with a completed run_end: %s", i+1, strings.Join(o.events[i], "\n"))
		}
	}
	for i, evs := range o.raw {
		for _, res := range effectResults(evs) {
			if err := fx.checkResult(o.runs[i], res.ID, res.Output); err != nil {
				t.Error(err)
			}
		}
	}
	for _, d := range fx.all() {
		if d.repeat {
			t.Errorf("call %s delivered twice without a kill", d.key)
		}
	}
	for _, c := range o.callers["ship"] {
		if c != shipper {
			t.Errorf("ship was called by %s, want %s", c, shipper)
		}
	}
	if len(o.callers["ship"]) != 2 || len(o.callers["lookup"]) != 2 {
		t.Errorf("tool calls by tool and process: %v, want lookup twice and ship twice", o.callers)
	}
	want := 2 // the turns with a slow call
	if shipper == "cli" {
		want = 0 // baton run runs slow tools inline
	}
	if o.handovers != want {
		t.Errorf("%d hand-overs to a worker, want %d", o.handovers, want)
	}
}
