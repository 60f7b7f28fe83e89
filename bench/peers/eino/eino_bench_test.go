package eino

import (
	"context"
	"testing"
)

func check(tb testing.TB, ctx context.Context, s *Scenario) {
	tb.Helper()
	o, err := s.Run(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if o.LastAgent != s.LastAgent || o.Text != Answer || o.Transfers != s.Transfers {
		tb.Fatalf("run ended with %s saying %q after %d transfers (%d events); want %s saying %q after %d",
			o.LastAgent, o.Text, o.Transfers, o.Events, s.LastAgent, Answer, s.Transfers)
	}
}

func bench(b *testing.B, build func(context.Context) (*Scenario, error)) {
	ctx := b.Context()
	s, err := build(ctx)
	if err != nil {
		b.Fatal(err)
	}
	check(b, ctx, s) // warm up and check the outcome once
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Run(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEinoTransfer is one triage → billing transfer with instant
// models through eino's adk.Runner, draining its event iterator.
func BenchmarkEinoTransfer(b *testing.B) { bench(b, Transfer) }

// BenchmarkEinoTransferChain10 is a0 → … → a10 (10 transfers), then a10 answers.
func BenchmarkEinoTransferChain10(b *testing.B) { bench(b, Chain) }

func TestScenarios(t *testing.T) {
	for name, build := range map[string]func(context.Context) (*Scenario, error){"Transfer": Transfer, "TransferChain10": Chain} {
		t.Run(name, func(t *testing.T) {
			s, err := build(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				check(t, t.Context(), s)
			}
		})
	}
}
