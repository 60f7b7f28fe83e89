package bench

import (
	"context"
	"slices"
	"testing"

	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// runOnce runs s once and fails unless it completed as expected.
func runOnce(tb testing.TB, ctx context.Context, s scenario) *runner.Result {
	res, err := s.r.Run(ctx, input)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Status != runstate.StatusCompleted || res.LastAgent != s.lastAgent || res.Transfers != s.transfers {
		tb.Fatalf("run ended %s with %s after %d transfers; want completed with %s after %d", res.Status, res.LastAgent, res.Transfers, s.lastAgent, s.transfers)
	}
	return res
}

// benchRun measures one full runner.Run of s per iteration.
func benchRun(b *testing.B, s scenario) {
	ctx := b.Context()
	runOnce(b, ctx, s) // warm up and check the outcome once
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.r.Run(ctx, input); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransfer is one triage → billing transfer with instant models:
// input, triage's model call (a transfer_to_billing call with a typed
// context), the transfer, billing's model call and its answer.
func BenchmarkTransfer(b *testing.B) { benchRun(b, transferNetwork(b, false)) }

// BenchmarkTransferScripted is BenchmarkTransfer with the scripted model
// (script lookup, usage, request ids) instead of the instant one.
func BenchmarkTransferScripted(b *testing.B) { benchRun(b, transferNetwork(b, true)) }

// BenchmarkTransferChain10 is a0 → a1 → … → a10 (10 transfers), then a10
// answers: 11 model calls per iteration.
func BenchmarkTransferChain10(b *testing.B) { benchRun(b, chainNetwork(b)) }

// BenchmarkTurn is a single agent answering at once: the per-run and
// per-turn overhead without transfers.
func BenchmarkTurn(b *testing.B) { benchRun(b, turnNetwork(b)) }

// BenchmarkTransferStream is BenchmarkTransfer through runner.Stream,
// consuming every event (run start, agent start, tool call, tool result,
// transfer, agent start, text delta, message, run end).
func BenchmarkTransferStream(b *testing.B) {
	s := transferNetwork(b, false)
	ctx := b.Context()
	if n, last := drain(b, ctx, s); n == 0 || last != s.lastAgent {
		b.Fatalf("stream yielded %d events ending with %q", n, last)
	}
	b.ReportAllocs()
	for b.Loop() {
		drain(b, ctx, s)
	}
}

// drain consumes a streamed run of s and returns the number of events and
// the last agent the run-end event reports.
func drain(tb testing.TB, ctx context.Context, s scenario) (n int, last string) {
	for ev, err := range s.r.Stream(ctx, input) {
		if err != nil {
			tb.Fatal(err)
		}
		n++
		if end, ok := ev.(*runner.RunEndEvent); ok {
			last = end.LastAgent
		}
	}
	return n, last
}

// TestScenarios runs every benchmarked scenario once and checks its outcome,
// so that CI keeps the benchmarks honest without running them.
func TestScenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    func(testing.TB) scenario
	}{
		{"Transfer", func(tb testing.TB) scenario { return transferNetwork(tb, false) }},
		{"TransferScripted", func(tb testing.TB) scenario { return transferNetwork(tb, true) }},
		{"TransferChain10", chainNetwork},
		{"Turn", turnNetwork},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.s(t)
			for range 2 { // a runner serves run after run
				res := runOnce(t, t.Context(), s)
				if res.Turns != s.turns {
					t.Errorf("turns = %d, want %d", res.Turns, s.turns)
				}
				if res.Output != answer {
					t.Errorf("output = %q, want %q", res.Output, answer)
				}
			}
		})
	}
}

// TestTransferContext checks that the typed context reaches billing.
func TestTransferContext(t *testing.T) {
	t.Parallel()
	res := runOnce(t, t.Context(), transferNetwork(t, false))
	tc := res.State.Transfer
	if tc == nil || tc.From != "triage" || tc.To != "billing" {
		t.Fatalf("transfer context = %+v, want triage → billing", tc)
	}
	got, err := transfer.Decode[billingContext](tc)
	if err != nil {
		t.Fatal(err)
	}
	if want := (billingContext{Reason: "duplicate charge on the March invoice", AccountID: "acct_42", Priority: 2}); got != want {
		t.Errorf("context = %+v, want %+v", got, want)
	}
}

// TestTransferStream checks the events of a streamed transfer.
func TestTransferStream(t *testing.T) {
	t.Parallel()
	s := transferNetwork(t, false)
	var types []runner.EventType
	for ev, err := range s.r.Stream(t.Context(), input) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.EventType())
	}
	want := []runner.EventType{runner.TypeRunStart, runner.TypeAgentStart, runner.TypeToolCall, runner.TypeToolResult,
		runner.TypeTransfer, runner.TypeAgentStart, runner.TypeTextDelta, runner.TypeMessage, runner.TypeRunEnd}
	if !slices.Equal(types, want) {
		t.Errorf("events = %v, want %v", types, want)
	}
}
