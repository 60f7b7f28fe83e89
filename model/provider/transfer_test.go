package provider_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/internal/providertest"
	"github.com/batonhq/baton/model/provider"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/transfer"
)

// TestTransferEndToEnd runs a triage → billing transfer with typed context
// against a fake server of each provider: the triage model's stream calls
// the transfer tool, the billing model's stream answers, and the runner,
// adapters and SDKs do everything in between for real.
func TestTransferEndToEnd(t *testing.T) { // not parallel: it sets API key variables
	args := `{"order_id":"1234","reason":"charged twice"}`
	call := []message.ToolCall{{ID: "call_1", Name: "transfer_to_billing", Arguments: json.RawMessage(args)}}
	tests := []struct {
		model string
		wire  providertest.Wire
		env   string
	}{
		{"openai:gpt-4o-mini", providertest.ChatWire{Model: "gpt-4o-mini"}, "OPENAI_API_KEY"},
		{"openai-responses:gpt-4o-mini", providertest.ResponsesWire{Model: "gpt-4o-mini"}, "OPENAI_API_KEY"},
		{"openai-compatible:llama3", providertest.ChatWire{Model: "llama3"}, ""},
		{"anthropic:claude-sonnet-4-5", providertest.AnthropicWire{Model: "claude-sonnet-4-5"}, "ANTHROPIC_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(strings.SplitN(tt.model, ":", 2)[0], func(t *testing.T) {
			srv := providertest.NewServer(t,
				providertest.SSE(tt.wire.Stream("Routing you to billing.", call)),
				providertest.SSE(tt.wire.Stream("The duplicate charge will be reversed.", nil)))
			if tt.env != "" {
				t.Setenv(tt.env, "test-key")
			}
			base := srv.URL
			if !strings.HasPrefix(tt.model, "anthropic") {
				base += "/v1"
			}
			m, err := provider.New(provider.Spec{Model: tt.model, BaseURL: base})
			if err != nil {
				t.Fatal(err)
			}
			schema := json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"},"reason":{"type":"string"}},"required":["order_id","reason"]}`)
			triage := &agent.Agent{Name: "triage", Instructions: "Route.", Model: m, ModelName: tt.model,
				Transfers: []*transfer.Transfer{{To: "billing", ContextSchema: schema}}}
			billing := &agent.Agent{Name: "billing", Description: "charges", Instructions: "Fix charges.", Model: m, ModelName: tt.model}
			net, err := agent.NewNetwork(agent.NetworkConfig{Name: "support", Agents: []*agent.Agent{triage, billing}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := runner.New(runner.Config{Network: net, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(t.Context(), "I was charged twice for order 1234")
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != runstate.StatusCompleted || res.LastAgent != "billing" || res.Transfers != 1 || res.Output != "The duplicate charge will be reversed." {
				t.Fatalf("result = %+v", res)
			}
			if res.Usage.IsZero() && tt.env != "" {
				t.Error("usage not captured")
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("requests = %d, want 2", len(reqs))
			}
			first, second := string(reqs[0].Body), string(reqs[1].Body)
			if !strings.Contains(first, "transfer_to_billing") || !strings.Contains(first, `order_id`) {
				t.Errorf("triage request lacks the transfer tool:\n%s", first)
			}
			// The target gets the typed context in its system prompt and the
			// whole history, with the transfer call answered.
			for _, want := range []string{"transfer_context", `order_id: \"1234\"`, "call_1", "Transferred to billing."} {
				if !strings.Contains(second, want) {
					t.Errorf("billing request lacks %q:\n%s", want, second)
				}
			}
			if err := message.Validate(res.State.Messages); err != nil {
				t.Error(err)
			}
		})
	}
}
