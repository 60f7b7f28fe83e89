package telemetry_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/telemetry"
	"github.com/batonhq/baton/transfer"
)

const (
	input  = "I was charged twice for my March invoice, please refund one of the charges."
	answer = "I have refunded the duplicate charge of 42.00 EUR."
	// billingModel is billing's ModelName: the provider comes from its prefix.
	billingModel = "anthropic:claude-sonnet-4-5"
)

// billingContext is the typed transfer context triage fills in.
type billingContext struct {
	Reason    string `json:"reason"`
	AccountID string `json:"account_id"`
}

// Usage of each scripted answer, so that usage attributes can be checked.
var (
	usageLookup   = message.Usage{InputTokens: 100, OutputTokens: 10}
	usageTransfer = message.Usage{InputTokens: 150, OutputTokens: 20}
	usageAnswer   = message.Usage{InputTokens: 200, OutputTokens: 30}
)

// network is a triage → billing support network with scripted models:
// triage calls lookup_account, then hands off to billing with a typed
// context (dropping tool traffic), and billing answers. Options change it.
type network struct {
	triageSteps, billingSteps []scripted.Step
	slowLookup                bool
}

func (n network) build(tb testing.TB) *agent.Network {
	tb.Helper()
	lookup := agent.FuncTool("lookup_account", "Looks up a customer account.",
		func(_ context.Context, in struct {
			AccountID string `json:"account_id"`
		}) (string, error) {
			return `{"account_id":"` + in.AccountID + `","plan":"pro"}`, nil
		})
	lookup.Slow = n.slowLookup
	billingSteps := n.billingSteps
	if billingSteps == nil {
		billingSteps = []scripted.Step{{Text: answer, Usage: &usageAnswer}}
	}
	triageSteps := n.triageSteps
	if triageSteps == nil {
		triageSteps = []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "lookup_account", Arguments: json.RawMessage(`{"account_id":"acct_42"}`)}}, Usage: &usageLookup},
			{ToolCalls: []scripted.Call{{Name: "transfer_to_billing", Arguments: json.RawMessage(`{"reason":"duplicate charge","account_id":"acct_42"}`)}}, Usage: &usageTransfer},
		}
	}
	triage := &agent.Agent{
		Name:         "triage",
		Description:  "Routes customer requests.",
		Instructions: "You are the triage agent. Hand billing questions to billing.",
		Model:        scripted.New("triage", triageSteps, scripted.Options{}),
		ModelName:    "scripted",
		Tools:        []*agent.Tool{lookup},
		Transfers: []*transfer.Transfer{{
			To:            "billing",
			ContextSchema: transfer.ContextSchemaFor[billingContext](),
			Transforms:    []transfer.Transform{transfer.DropToolTraffic{}},
		}},
	}
	billing := &agent.Agent{
		Name:         "billing",
		Description:  "Handles invoices and refunds.",
		Instructions: "You are the billing specialist.",
		Model:        scripted.New("billing", billingSteps, scripted.Options{}),
		ModelName:    billingModel,
	}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support", Agents: []*agent.Agent{triage, billing}})
	if err != nil {
		tb.Fatal(err)
	}
	return net
}

// testBundle is what setup returns besides the telemetry.
type testBundle struct {
	spans  *tracetest.InMemoryExporter
	runner *runner.Runner
	logs   *logtest.Buffer
}

// setup builds telemetry from cfg, recording spans in memory when
// cfg.Traces is set and no exporter is given, with its run log and the
// runner's log going to bundle.logs as JSON, and a runner of net observed
// by it.
func setup(tb testing.TB, cfg telemetry.Config, net network) (*telemetry.Telemetry, *testBundle) {
	tb.Helper()
	b := &testBundle{logs: &logtest.Buffer{}}
	if cfg.Traces && cfg.TracerProvider == nil && cfg.SpanExporter == nil {
		b.spans = tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(b.spans))
		tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		cfg.TracerProvider = tp
	}
	log, err := telemetry.NewLogger(b.logs, "json", slog.LevelInfo)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.RunLog = log
	tel, err := telemetry.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	b.runner, err = runner.New(runner.Config{Network: net.build(tb), Observer: tel.Observer(), Logger: log,
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if err != nil {
		tb.Fatal(err)
	}
	return tel, b
}
