package netspec

// fingerprintSpec returns f as the network's fingerprint hashes it: with the
// JSON names that transfers and their limit had before agent → agent
// handoffs were called transfers (handoffs, max_handoffs), so that renaming
// the keys of a network file does not change its fingerprint, and the runs
// it stopped stay resumable.
func fingerprintSpec(f *File) any {
	out := fingerprintFile{Version: f.Version, Name: f.Name, Entry: f.Entry, Picker: f.Picker, Policy: f.Policy,
		Tools: f.Tools, Summary: f.Summary, MCPServers: f.MCPServers}
	if f.Limits != nil {
		l := fingerprintLimits(*f.Limits)
		out.Limits = &l
	}
	if f.Agents != nil {
		out.Agents = make([]fingerprintAgent, len(f.Agents))
		for i, a := range f.Agents {
			out.Agents[i] = fingerprintAgent(a)
		}
	}
	return out
}

// fingerprintFile is File with fingerprintAgent and fingerprintLimits.
type fingerprintFile struct {
	Version int                `json:"version"`
	Name    string             `json:"name"`
	Entry   string             `json:"entry,omitempty"`
	Picker  *PickerSpec        `json:"picker,omitempty"`
	Policy  *PolicySpec        `json:"policy,omitempty"`
	Limits  *fingerprintLimits `json:"limits,omitempty"`
	Tools   []ToolSpec         `json:"tools,omitempty"`
	Agents  []fingerprintAgent `json:"agents"`
	Summary *SummarySpec       `json:"summary,omitempty"`
	// MCPServers hash as declared (variables unexpanded); the tools they
	// resolved to hash with the agents that have them (agent.Network).
	MCPServers []MCPServerSpec `json:"mcp_servers,omitempty"`
	// Webhooks is never set: where a network's events go is not what its
	// runs do, so editing webhooks: keeps the fingerprint (and the runs it
	// stopped resumable).
	Webhooks []WebhookSpec `json:"webhooks,omitempty"`
}

// fingerprintLimits is LimitsSpec with max_transfers named max_handoffs.
type fingerprintLimits struct {
	MaxTurns     int      `json:"max_turns,omitempty"`
	MaxTransfers int      `json:"max_handoffs,omitempty"`
	Timeout      Duration `json:"timeout,omitempty"`
	TokenBudget  int64    `json:"token_budget,omitempty"`
	PingPong     int      `json:"ping_pong,omitempty"`
	OnLimit      string   `json:"on_limit,omitempty"`
}

// fingerprintAgent is AgentSpec with transfers named handoffs.
type fingerprintAgent struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	ModelSpec
	Tools        []string        `json:"tools,omitempty"`
	Transfers    []TransferSpec  `json:"handoffs,omitempty"`
	AgentTools   []AgentToolSpec `json:"agent_tools,omitempty"`
	OutputSchema map[string]any  `json:"output_schema,omitempty"`
	Continuation string          `json:"continuation,omitempty"`
	Guardrails   *GuardrailsSpec `json:"guardrails,omitempty"`
	MCP          []string        `json:"mcp,omitempty"`
	MCPServers   []MCPServerSpec `json:"mcp_servers,omitempty"`
	Remote       *RemoteSpec     `json:"remote,omitempty"`
}
