package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/schemas"
)

// Limits bound a run. Zero values mean the defaults.
type Limits struct {
	// MaxTurns bounds model calls across all agents. Defaults to 25.
	MaxTurns int `json:"max_turns,omitempty"`
	// MaxTransfers bounds transfers. Defaults to 10.
	MaxTransfers int `json:"max_transfers,omitempty"`
	// Timeout bounds the run's active wall-clock time. Zero means none.
	Timeout time.Duration `json:"timeout,omitempty"`
	// TokenBudget bounds input+output tokens across the run. Zero means none.
	TokenBudget int64 `json:"token_budget,omitempty"`
	// PingPong is how many alternations between the same two agents
	// (A→B→A→B is 3 transfers) end the run. Defaults to 3; negative disables.
	PingPong int `json:"ping_pong,omitempty"`
	// OnLimit is "error" (default): a limit ends the run with a LimitError; or
	// "final_answer": the current agent is called once more without tools and
	// its answer ends the run.
	OnLimit string `json:"on_limit,omitempty"`
}

// Defaults returns l with defaults filled in.
func (l Limits) Defaults() Limits {
	if l.MaxTurns <= 0 {
		l.MaxTurns = 25
	}
	if l.MaxTransfers <= 0 {
		l.MaxTransfers = 10
	}
	if l.PingPong == 0 {
		l.PingPong = 3
	}
	if l.OnLimit == "" {
		l.OnLimit = "error"
	}
	return l
}

// NetworkConfig declares a network.
type NetworkConfig struct {
	// Name identifies the network (the "model" of the OpenAI-compatible API).
	Name string
	// Entry is the default first agent. Defaults to the first agent.
	Entry  string
	Agents []*Agent
	Limits Limits
	// Spec, if set, is mixed into the fingerprint: declarative parts of the
	// network that live outside the agents (picker, policy). Must be JSON-encodable.
	Spec any
	// Version, if set, is mixed into the fingerprint; bump it when Go
	// functions (instructions, tools, hooks) change behaviour, since code
	// cannot be hashed.
	Version string
}

// Network is a registry of agents by name with a version fingerprint. It is
// immutable and safe for concurrent use.
type Network struct {
	name        string
	entry       string
	agents      map[string]*Agent
	order       []string
	limits      Limits
	fingerprint string
	// agentFingerprints are the agents' own, by name.
	agentFingerprints map[string]string
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// NewNetwork validates cfg, compiles every schema and computes the
// fingerprint. All problems are reported together (errors.Join).
func NewNetwork(cfg NetworkConfig) (*Network, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cfg.Name == "" {
		bad("network: no name")
	}
	if len(cfg.Agents) == 0 {
		bad("network %s: no agents", cfg.Name)
	}
	n := &Network{name: cfg.Name, agents: make(map[string]*Agent, len(cfg.Agents)), limits: cfg.Limits}
	for _, a := range cfg.Agents {
		if a == nil {
			bad("network %s: nil agent", cfg.Name)
			continue
		}
		if !namePattern.MatchString(a.Name) {
			bad("agent %q: name must be 1-64 letters, digits, '_' or '-'", a.Name)
		}
		if _, dup := n.agents[a.Name]; dup {
			bad("agent %s: declared twice", a.Name)
			continue
		}
		n.agents[a.Name] = a
		n.order = append(n.order, a.Name)
	}
	for _, a := range cfg.Agents {
		if a == nil {
			continue
		}
		errs = append(errs, n.check(a)...)
	}
	n.entry = cfg.Entry
	if n.entry == "" && len(n.order) > 0 {
		n.entry = n.order[0]
	}
	if _, ok := n.agents[n.entry]; !ok && n.entry != "" {
		bad("network %s: entry agent %q is not declared", cfg.Name, n.entry)
	}
	switch cfg.Limits.OnLimit {
	case "", "error", "final_answer":
	default:
		bad("network %s: on_limit %q: want error or final_answer", cfg.Name, cfg.Limits.OnLimit)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	fp, err := fingerprint(cfg, n)
	if err != nil {
		return nil, err
	}
	n.fingerprint = fp
	return n, nil
}

func (n *Network) check(a *Agent) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("agent %s: "+format, append([]any{a.Name}, args...)...))
	}
	if a.Model == nil {
		bad("no model")
	}
	toolNames := map[string]string{}
	claim := func(name, what string) {
		if !namePattern.MatchString(name) {
			bad("%s name %q must be 1-64 letters, digits, '_' or '-'", what, name)
		}
		if prev, dup := toolNames[name]; dup {
			bad("tool name %q is used by %s and by %s", name, prev, what)
		}
		toolNames[name] = what
	}
	for _, t := range a.Tools {
		if t == nil {
			bad("nil tool")
			continue
		}
		claim(t.Name, "tool "+t.Name)
		if t.Func == nil {
			bad("tool %s has no function", t.Name)
		}
		if t.params == nil {
			p := t.Parameters
			if len(p) == 0 {
				p = schemas.ObjectSchema
			}
			s, err := schemas.Compile(p)
			if err != nil {
				bad("tool %s: parameters: %v", t.Name, err)
			} else {
				t.params = s
			}
		}
	}
	// peer checks the agent a transfer or an agent tool names, and claims the
	// tool the model calls for it.
	peer := func(to, tool, unknown, self, what string) {
		if _, ok := n.agents[to]; !ok {
			bad("%s %q", unknown, to)
		}
		if to == a.Name {
			bad("%s", self)
		}
		claim(tool, what)
	}
	for _, h := range a.Transfers {
		if h == nil {
			bad("nil transfer")
			continue
		}
		peer(h.To, h.Tool(), "transfer to unknown agent", "transfer to itself", "transfer to "+h.To)
		if err := h.Compile(); err != nil {
			bad("%v", err)
		}
	}
	for _, t := range a.AgentTools {
		if t == nil {
			bad("nil agent tool")
			continue
		}
		peer(t.Agent, t.Tool(), "agent tool of unknown agent", "agent tool calling itself", "agent tool "+t.Agent)
	}
	if len(a.OutputSchema) > 0 && a.outputSchema == nil {
		s, err := schemas.Compile(a.OutputSchema)
		if err != nil {
			bad("output schema: %v", err)
		} else {
			a.outputSchema = s
		}
	}
	return errs
}

// Name returns the network's name.
func (n *Network) Name() string { return n.name }

// Entry returns the default first agent's name.
func (n *Network) Entry() string { return n.entry }

// Limits returns the network's limits with defaults filled in.
func (n *Network) Limits() Limits { return n.limits.Defaults() }

// Fingerprint identifies the network's version: it changes when any agent's
// definition, the limits, the spec or the version change.
func (n *Network) Fingerprint() string { return n.fingerprint }

// AgentFingerprint identifies the version of one agent of the network: it
// changes when the agent's description, instructions (or whether a function
// gives them), model name, settings, tools (names, descriptions,
// parameters, approval, slowness, timeouts), transfers, agent tools,
// guardrails' names, output schema or background flag change — what its
// model is asked with. It is "" for an agent the network does not have.
// baton eval answers an agent whose fingerprint matches its recording's
// from the recording.
func (n *Network) AgentFingerprint(name string) string { return n.agentFingerprints[name] }

// Agent returns the agent named name.
func (n *Network) Agent(name string) (*Agent, bool) {
	a, ok := n.agents[name]
	return a, ok
}

// Agents returns the agents in declaration order.
func (n *Network) Agents() []*Agent {
	out := make([]*Agent, len(n.order))
	for i, name := range n.order {
		out[i] = n.agents[name]
	}
	return out
}

// limitsFP is Limits as fingerprints hash it: the JSON names are those from
// before transfers had their word (max_handoffs), so that a network keeps
// its fingerprint, and its stopped runs stay resumable, across the rename.
type limitsFP struct {
	MaxTurns     int           `json:"max_turns,omitempty"`
	MaxTransfers int           `json:"max_handoffs,omitempty"`
	Timeout      time.Duration `json:"timeout,omitempty"`
	TokenBudget  int64         `json:"token_budget,omitempty"`
	PingPong     int           `json:"ping_pong,omitempty"`
	OnLimit      string        `json:"on_limit,omitempty"`
}

// fingerprint hashes a canonical description of everything declarative.
// Its names predate the word transfer (an agent's transfers hash as
// "Handoffs"), so that fingerprints did not change with it.
func fingerprint(cfg NetworkConfig, n *Network) (string, error) {
	type toolFP struct {
		Name, Description string
		Parameters        json.RawMessage
		Approval, Slow    bool
		Timeout           time.Duration
	}
	type transferFP struct {
		To, Tool, Description, History string
		SystemMessage, Return          bool
		Transforms                     []string
		ContextSchema                  json.RawMessage
		Hook, Enabled                  bool
	}
	type agentFP struct {
		Name, Description, Instructions string
		InstructionsFunc                bool
		Model                           string
		Settings                        any
		Tools                           []toolFP
		Transfers                       []transferFP `json:"Handoffs"`
		AgentTools                      []AgentTool
		Input, Output                   []string
		OutputSchema                    json.RawMessage
		Background                      bool
	}
	var agents []agentFP
	n.agentFingerprints = make(map[string]string, len(n.order))
	for _, name := range n.order {
		a := n.agents[name]
		fp := agentFP{Name: a.Name, Description: a.Description, Instructions: a.Instructions,
			InstructionsFunc: a.InstructionsFunc != nil, Model: a.ModelName, Settings: a.Settings,
			OutputSchema: compactJSON(a.OutputSchema), Background: a.Background}
		for _, t := range a.Tools {
			fp.Tools = append(fp.Tools, toolFP{t.Name, t.Description, compactJSON(t.Parameters), t.RequireApproval != nil, t.Slow, t.Timeout})
		}
		for _, h := range a.Transfers {
			hf := transferFP{To: h.To, Tool: h.Tool(), Description: h.Description, History: string(h.Policy()),
				SystemMessage: h.SystemMessage, Return: h.Return, ContextSchema: compactJSON(h.ContextSchema),
				Hook: h.OnTransfer != nil, Enabled: h.Enabled != nil}
			for _, t := range h.Transforms {
				hf.Transforms = append(hf.Transforms, t.Name())
			}
			fp.Transfers = append(fp.Transfers, hf)
		}
		for _, t := range a.AgentTools {
			fp.AgentTools = append(fp.AgentTools, *t)
		}
		for _, g := range a.InputGuardrails {
			fp.Input = append(fp.Input, g.Name)
		}
		for _, g := range a.OutputGuardrails {
			fp.Output = append(fp.Output, g.Name)
		}
		b, err := json.Marshal(fp)
		if err != nil {
			return "", fmt.Errorf("network %s: agent %s: fingerprint: %w", cfg.Name, a.Name, err)
		}
		sum := sha256.Sum256(b)
		n.agentFingerprints[a.Name] = hex.EncodeToString(sum[:12])
		agents = append(agents, fp)
	}
	b, err := json.Marshal(struct {
		Name, Entry, Version string
		Limits               limitsFP
		Spec                 any
		Agents               []agentFP
	}{cfg.Name, n.entry, cfg.Version, limitsFP(cfg.Limits), cfg.Spec, agents})
	if err != nil {
		return "", fmt.Errorf("network %s: fingerprint: %w", cfg.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

func compactJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, _ := json.Marshal(v) // maps marshal with sorted keys
	return out
}

// Names returns the agent names in declaration order.
func (n *Network) Names() []string { return slices.Clone(n.order) }
