package agent_test

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/transfer"
)

var nop = model.Func(func(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	return func(func(model.Chunk, error) bool) {}
})

func build() []*agent.Agent {
	return []*agent.Agent{
		{Name: "triage", Instructions: "route", Model: nop, ModelName: "scripted",
			Transfers: []*transfer.Transfer{{To: "billing"}},
			Tools:     []*agent.Tool{agent.StaticTool("lookup", "find", json.RawMessage(`{"type":"object"}`), "x")}},
		{Name: "billing", Description: "charges", Model: nop, ModelName: "scripted"},
	}
}

func TestNewNetworkReportsEveryProblem(t *testing.T) {
	t.Parallel()
	agents := build()
	agents[0].Transfers = append(agents[0].Transfers, &transfer.Transfer{To: "nobody"}, &transfer.Transfer{To: "billing", ContextSchema: json.RawMessage(`{"type":"nope"}`), ToolName: "x"})
	agents[0].Tools = append(agents[0].Tools, &agent.Tool{Name: "lookup", Func: func(context.Context, json.RawMessage) (string, error) { return "", nil }})
	agents[1].Model = nil
	agents = append(agents, &agent.Agent{Name: "bad name!", Model: nop})
	_, err := agent.NewNetwork(agent.NetworkConfig{Name: "n", Entry: "ghost", Agents: agents})
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{
		`transfer to unknown agent "nobody"`,
		`context schema`,
		`tool name "lookup" is used by`,
		`agent billing: no model`,
		`name must be 1-64`,
		`entry agent "ghost" is not declared`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// mutated is the network "n" of build's agents changed by mut, with limits.
func mutated(t *testing.T, mut func([]*agent.Agent), limits agent.Limits) *agent.Network {
	t.Helper()
	agents := build()
	mut(agents)
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "n", Agents: agents, Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(mut func([]*agent.Agent), limits agent.Limits) string {
		t.Helper()
		return mutated(t, mut, limits).Fingerprint()
	}
	base := fp(func([]*agent.Agent) {}, agent.Limits{})
	if again := fp(func([]*agent.Agent) {}, agent.Limits{}); again != base {
		t.Fatalf("fingerprint not stable: %s vs %s", base, again)
	}
	changes := map[string]func([]*agent.Agent){
		"instructions": func(a []*agent.Agent) { a[0].Instructions = "route carefully" },
		"description":  func(a []*agent.Agent) { a[1].Description = "invoices" },
		"model":        func(a []*agent.Agent) { a[1].ModelName = "openai:gpt-4o" },
		"tool schema": func(a []*agent.Agent) {
			a[0].Tools[0].Parameters = json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)
		},
		"history policy": func(a []*agent.Agent) { a[0].Transfers[0].History = transfer.HistoryNone },
		"transform": func(a []*agent.Agent) {
			a[0].Transfers[0].Transforms = []transfer.Transform{transfer.DropToolTraffic{}}
		},
		"return mode": func(a []*agent.Agent) { a[0].Transfers[0].Return = true },
		"settings":    func(a []*agent.Agent) { a[0].Settings.MaxTokens = 100 },
		"guardrail":   func(a []*agent.Agent) { a[1].OutputGuardrails = []agent.Guardrail{{Name: "g"}} },
	}
	seen := map[string]string{base: "base"}
	for name, mut := range changes {
		got := fp(mut, agent.Limits{})
		if prev, dup := seen[got]; dup {
			t.Errorf("changing %s gives the same fingerprint as %s", name, prev)
		}
		seen[got] = name
	}
	if fp(func([]*agent.Agent) {}, agent.Limits{MaxTurns: 3}) == base {
		t.Error("limits do not change the fingerprint")
	}
	// Equivalent schemas written differently hash the same.
	spaced := fp(func(a []*agent.Agent) { a[0].Tools[0].Parameters = json.RawMessage(`{ "type" : "object" }`) }, agent.Limits{})
	if spaced != base {
		t.Error("whitespace in a schema changes the fingerprint")
	}
}

// TestFingerprintKnown pins a fingerprint computed before agent → agent
// handoffs were renamed transfers: the rename must not change it, or every
// run stopped before the upgrade would be refused on resume.
func TestFingerprintKnown(t *testing.T) {
	t.Parallel()
	agents := build()
	tr := agents[0].Transfers[0]
	tr.Return = true
	tr.Transforms = []transfer.Transform{transfer.DropToolTraffic{}}
	tr.OnTransfer = func(context.Context, *transfer.Context) error { return nil }
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "n", Agents: agents, Limits: agent.Limits{MaxTurns: 5, MaxTransfers: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.Fingerprint(), "d9cea18d6b410f0b6eda1c8a"; got != want {
		t.Errorf("fingerprint = %s, want %s", got, want)
	}
}

func TestParseArguments(t *testing.T) {
	t.Parallel()
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "n", Agents: []*agent.Agent{{Name: "a", Model: nop,
		Tools: []*agent.Tool{agent.FuncTool("add", "adds", func(_ context.Context, in struct {
			A int `json:"a"`
			B int `json:"b,omitempty"`
		}) (int, error) {
			return in.A + in.B, nil
		})}}}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := n.Agent("a")
	s := a.Tools[0].Validator()
	tests := []struct {
		in, errHas string
	}{
		{`{"a":1,"b":2}`, ""},
		{`  {"a":1}  `, ""},
		{``, "at /: missing property 'a'"},
		{`{"a":"x"}`, "at /a"},
		{`[1]`, "must be a JSON object"},
		{`{"a":1`, "not valid JSON"},
		{`null`, "must be a JSON object"},
		{"{\"a\":1,\"s\":\"\xff\"}", "not valid UTF-8"},
	}
	for _, tt := range tests {
		got, err := agent.ParseArguments("add", json.RawMessage(tt.in), s)
		if tt.errHas == "" {
			if err != nil || !json.Valid(got) {
				t.Errorf("%q: %v", tt.in, err)
			}
			continue
		}
		var ae *agent.ArgumentError
		if err == nil || !strings.Contains(err.Error(), tt.errHas) || !errorsAs(err, &ae) {
			t.Errorf("%q: err = %v, want ArgumentError containing %q", tt.in, err, tt.errHas)
		}
	}
	out, err := a.Tools[0].Func(t.Context(), json.RawMessage(`{"a":2,"b":3}`))
	if err != nil || out != "5" {
		t.Errorf("FuncTool = %q, %v", out, err)
	}
}

func errorsAs(err error, target **agent.ArgumentError) bool {
	e, ok := err.(*agent.ArgumentError)
	*target = e
	return ok
}

// TestAgentFingerprint: an agent's own fingerprint moves with what its
// model is asked with and with nothing of the other agents, and the limits
// (which are the network's) leave it alone.
func TestAgentFingerprint(t *testing.T) {
	t.Parallel()
	fps := func(mut func([]*agent.Agent), limits agent.Limits) (triage, billing string) {
		t.Helper()
		n := mutated(t, mut, limits)
		return n.AgentFingerprint("triage"), n.AgentFingerprint("billing")
	}
	t0, b0 := fps(func([]*agent.Agent) {}, agent.Limits{})
	if t0 == "" || b0 == "" || t0 == b0 {
		t.Fatalf("fingerprints %q, %q: want two different ones", t0, b0)
	}
	if t1, b1 := fps(func([]*agent.Agent) {}, agent.Limits{MaxTurns: 3}); t1 != t0 || b1 != b0 {
		t.Error("the network's limits change an agent's fingerprint")
	}
	for name, mut := range map[string]func([]*agent.Agent){
		"instructions": func(a []*agent.Agent) { a[0].Instructions = "route carefully" },
		"model":        func(a []*agent.Agent) { a[0].ModelName = "openai:gpt-4o" },
		"tool":         func(a []*agent.Agent) { a[0].Tools[0].Description = "find an order" },
		"transfer":     func(a []*agent.Agent) { a[0].Transfers[0].History = transfer.HistoryNone },
	} {
		t1, b1 := fps(mut, agent.Limits{})
		if t1 == t0 {
			t.Errorf("changing triage's %s leaves its fingerprint", name)
		}
		if b1 != b0 {
			t.Errorf("changing triage's %s changes billing's fingerprint", name)
		}
	}
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "n", Agents: build()})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.AgentFingerprint("nobody"); got != "" {
		t.Errorf("fingerprint of an unknown agent = %q", got)
	}
}
