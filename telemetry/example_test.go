package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/transfer"
)

// Example observes a triage → billing transfer. A server would use
// telemetry.FromEnv instead of an in-memory exporter, and mount
// MetricsHandler at /metrics.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(telemetry.Config{
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)),
		Metrics:        true,
	})
	if err != nil {
		panic(err)
	}
	defer tel.Shutdown(context.Background())

	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support", Agents: []*agent.Agent{
		{
			Name: "triage", Instructions: "Route the customer.", ModelName: "scripted",
			Model:     scripted.New("triage", []scripted.Step{{ToolCalls: []scripted.Call{{Name: "transfer_to_billing"}}}}, scripted.Options{}),
			Transfers: []*transfer.Transfer{{To: "billing"}},
		},
		{
			Name: "billing", Instructions: "Resolve billing questions.", ModelName: "openai:gpt-4o",
			Model: scripted.New("billing", []scripted.Step{{Text: "Refunded."}}, scripted.Options{}),
		},
	}})
	if err != nil {
		panic(err)
	}
	log, err := telemetry.NewLogger(os.Stderr, "json", slog.LevelWarn)
	if err != nil {
		panic(err)
	}
	r, err := runner.New(runner.Config{Network: net, Observer: tel.Observer(), Logger: log})
	if err != nil {
		panic(err)
	}
	if _, err := r.Run(context.Background(), "I was charged twice."); err != nil {
		panic(err)
	}
	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name)
	}
	// Output:
	// chat scripted
	// baton.transfer
	// chat gpt-4o
	// invoke_agent triage
}
