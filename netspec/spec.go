package netspec

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/model"
)

// File is the YAML document.
type File struct {
	Version int          `yaml:"version" json:"version"`
	Name    string       `yaml:"name" json:"name"`
	Entry   string       `yaml:"entry" json:"entry,omitempty"`
	Picker  *PickerSpec  `yaml:"picker" json:"picker,omitempty"`
	Policy  *PolicySpec  `yaml:"policy" json:"policy,omitempty"`
	Limits  *LimitsSpec  `yaml:"limits" json:"limits,omitempty"`
	Tools   []ToolSpec   `yaml:"tools" json:"tools,omitempty"`
	Agents  []AgentSpec  `yaml:"agents" json:"agents"`
	Summary *SummarySpec `yaml:"summary" json:"summary,omitempty"`
	// MCPServers are MCP servers whose tools the agents that name them in
	// mcp: (or name a tool of theirs in tools:) can call.
	MCPServers []MCPServerSpec `yaml:"mcp_servers" json:"mcp_servers,omitempty"`
	// Webhooks take the events of this network's runs, besides the
	// server's own (baton serve --webhook), signed with the server's
	// secret or their own (secret_env).
	Webhooks []WebhookSpec `yaml:"webhooks" json:"webhooks,omitempty"`
}

// WebhookSpec is a webhook endpoint of a network.
type WebhookSpec struct {
	// URL is http:// or https:// and a host; the server checks it against
	// its allow list (--webhook-allow) when it opens the network.
	URL string `yaml:"url" json:"url"`
	// SecretEnv, if set, names the environment variable holding this
	// endpoint's own secret (whsec_…), instead of the server's.
	SecretEnv string `yaml:"secret_env" json:"secret_env,omitempty"`
}

// SummarySpec configures the thread → thread summary model.
type SummarySpec struct {
	ModelSpec `yaml:",inline"`
}

// PickerSpec chooses a conversation's first agent: sticky, then rules, then
// the classifier, then Default (or the entry).
type PickerSpec struct {
	Rules      []PickRuleSpec  `yaml:"rules" json:"rules,omitempty"`
	Sticky     bool            `yaml:"sticky" json:"sticky,omitempty"`
	Classifier *ClassifierSpec `yaml:"classifier" json:"classifier,omitempty"`
	Default    string          `yaml:"default" json:"default,omitempty"`
}

// PickRuleSpec routes by regular expression or keywords.
type PickRuleSpec struct {
	Match    string   `yaml:"match" json:"match,omitempty"`
	Keywords []string `yaml:"keywords" json:"keywords,omitempty"`
	Agent    string   `yaml:"agent" json:"agent"`
}

// ClassifierSpec is an LLM classifier over the agents' descriptions.
type ClassifierSpec struct {
	ModelSpec `yaml:",inline"`
	// Agents limits the candidates; defaults to every agent.
	Agents []string `yaml:"agents" json:"agents,omitempty"`
}

// PolicySpec declares automatic transfers.
type PolicySpec struct {
	// Type is explicit (default), sequential or rules.
	Type  string     `yaml:"type" json:"type"`
	Steps []string   `yaml:"steps" json:"steps,omitempty"`
	Rules []RuleSpec `yaml:"rules" json:"rules,omitempty"`
}

// RuleSpec is an automatic transfer on run state.
type RuleSpec struct {
	Name string `yaml:"name" json:"name"`
	From string `yaml:"from" json:"from,omitempty"`
	To   string `yaml:"to" json:"to"`
	// When: every condition given must hold.
	When    RuleCondition `yaml:"when" json:"when"`
	History string        `yaml:"history" json:"history,omitempty"`
}

// RuleCondition is a condition on run state.
type RuleCondition struct {
	// AnswerMatches: the active agent's answer matches this regexp.
	AnswerMatches string `yaml:"answer_matches" json:"answer_matches,omitempty"`
	// InputMatches: the run's user input matches this regexp.
	InputMatches string `yaml:"input_matches" json:"input_matches,omitempty"`
	// ToolResultMatches: a tool result of the last turn matches this regexp.
	ToolResultMatches string `yaml:"tool_result_matches" json:"tool_result_matches,omitempty"`
	// TurnsAtLeast: the run has made at least this many model calls.
	TurnsAtLeast int `yaml:"turns_at_least" json:"turns_at_least,omitempty"`
	// TokensAtLeast: the run has used at least this many tokens.
	TokensAtLeast int64 `yaml:"tokens_at_least" json:"tokens_at_least,omitempty"`
}

// LimitsSpec bounds runs.
type LimitsSpec struct {
	MaxTurns     int      `yaml:"max_turns" json:"max_turns,omitempty"`
	MaxTransfers int      `yaml:"max_transfers" json:"max_transfers,omitempty"`
	Timeout      Duration `yaml:"timeout" json:"timeout,omitempty"`
	TokenBudget  int64    `yaml:"token_budget" json:"token_budget,omitempty"`
	PingPong     int      `yaml:"ping_pong" json:"ping_pong,omitempty"`
	OnLimit      string   `yaml:"on_limit" json:"on_limit,omitempty"`
}

// ToolSpec declares a tool. Offline networks give a fixed Result; Go
// programs register implementations by name (Options.Tools).
type ToolSpec struct {
	Name        string         `yaml:"name" json:"name"`
	Description string         `yaml:"description" json:"description,omitempty"`
	Parameters  map[string]any `yaml:"parameters" json:"parameters,omitempty"`
	Result      any            `yaml:"result" json:"result,omitempty"`
	// Approval "required" stops the run for a human decision before each call.
	Approval string `yaml:"approval" json:"approval,omitempty"`
	// Slow (or continuation: background) hands calls to a background worker
	// when the run is inline.
	Slow         bool   `yaml:"slow" json:"slow,omitempty"`
	Continuation string `yaml:"continuation" json:"continuation,omitempty"`
	// Idempotent declares that the tool de-duplicates its effects on the
	// call's idempotency key (agent.Tool.Idempotent).
	Idempotent bool     `yaml:"idempotent" json:"idempotent,omitempty"`
	Timeout    Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// ModelSpec selects a model.
type ModelSpec struct {
	// Model is scripted, openai:<m>, openai-responses:<m>, anthropic:<m> or
	// openai-compatible:<m>.
	Model     string         `yaml:"model" json:"model"`
	BaseURL   string         `yaml:"base_url" json:"base_url,omitempty"`
	APIKeyEnv string         `yaml:"api_key_env" json:"api_key_env,omitempty"`
	Settings  model.Settings `yaml:"settings" json:"settings,omitzero"`
	Script    []StepSpec     `yaml:"script" json:"script,omitempty"`
	Stream    *StreamSpec    `yaml:"stream" json:"stream,omitempty"`
	// Rules and Reply keep a scripted conversation going once its script
	// is played: a rule answers the user's words whenever they match, the
	// reply whatever nothing else answers.
	Rules []ScriptRuleSpec `yaml:"rules" json:"rules,omitempty"`
	Reply string           `yaml:"reply" json:"reply,omitempty"`
}

// ScriptRuleSpec is a scripted rule: when its `when` matches the last user
// message (no `when`: any), its step's fields answer, and `then` answers
// the next calls of the same turn (after the results of its tool calls).
type ScriptRuleSpec struct {
	StepSpec `yaml:",inline"`
	Then     []StepSpec `yaml:"then" json:"then,omitempty"`
}

// StreamSpec simulates token streaming for the scripted model.
type StreamSpec struct {
	ChunkWords int      `yaml:"chunk_words" json:"chunk_words,omitempty"`
	Delay      Duration `yaml:"delay" json:"delay,omitempty"`
}

// AgentSpec declares an agent.
type AgentSpec struct {
	Name         string `yaml:"name" json:"name"`
	Description  string `yaml:"description" json:"description,omitempty"`
	Instructions string `yaml:"instructions" json:"instructions,omitempty"`
	ModelSpec    `yaml:",inline"`
	Tools        []string        `yaml:"tools" json:"tools,omitempty"`
	Transfers    []TransferSpec  `yaml:"transfers" json:"transfers,omitempty"`
	AgentTools   []AgentToolSpec `yaml:"agent_tools" json:"agent_tools,omitempty"`
	OutputSchema map[string]any  `yaml:"output_schema" json:"output_schema,omitempty"`
	Continuation string          `yaml:"continuation" json:"continuation,omitempty"`
	Guardrails   *GuardrailsSpec `yaml:"guardrails" json:"guardrails,omitempty"`
	// MCP names servers of the top-level mcp_servers whose tools the agent
	// can call; MCPServers declares servers of the agent's own.
	MCP        []string        `yaml:"mcp" json:"mcp,omitempty"`
	MCPServers []MCPServerSpec `yaml:"mcp_servers" json:"mcp_servers,omitempty"`
	// Remote makes the agent a remote A2A agent, answered by the agent
	// that its card describes instead of a model.
	Remote *RemoteSpec `yaml:"remote" json:"remote,omitempty"`
}

// GuardrailsSpec declares pattern guardrails.
type GuardrailsSpec struct {
	Input  []GuardrailSpec `yaml:"input" json:"input,omitempty"`
	Output []GuardrailSpec `yaml:"output" json:"output,omitempty"`
}

// GuardrailSpec trips when the text matches Deny.
type GuardrailSpec struct {
	Name    string `yaml:"name" json:"name"`
	Deny    string `yaml:"deny" json:"deny"`
	Message string `yaml:"message" json:"message,omitempty"`
}

// StepSpec is one scripted answer.
type StepSpec struct {
	When string `yaml:"when" json:"when,omitempty"`
	Text string `yaml:"text" json:"text,omitempty"`
	// Texts are further text blocks, after Text, each its own block.
	Texts     []string   `yaml:"texts" json:"texts,omitempty"`
	ToolCalls []CallSpec `yaml:"tool_calls" json:"tool_calls,omitempty"`
	// Reasoning is streamed first as reasoning (reasoning events).
	Reasoning string `yaml:"reasoning" json:"reasoning,omitempty"`
	// FinishReason is how the answer ended when not as usual: length,
	// content_filter, refusal or pause_turn (stop and tool_calls are implied).
	FinishReason string `yaml:"finish_reason" json:"finish_reason,omitempty"`
	// Refusal is the provider's words on a refusal or content-filter stop.
	Refusal string     `yaml:"refusal" json:"refusal,omitempty"`
	Usage   *UsageSpec `yaml:"usage" json:"usage,omitempty"`
	Delay   Duration   `yaml:"delay" json:"delay,omitempty"`
	Fail    *FailSpec  `yaml:"fail" json:"fail,omitempty"`
}

// CallSpec is a scripted tool call.
type CallSpec struct {
	ID        string `yaml:"id" json:"id,omitempty"`
	Name      string `yaml:"name" json:"name"`
	Arguments any    `yaml:"arguments" json:"arguments,omitempty"`
}

// UsageSpec is a scripted step's usage.
type UsageSpec struct {
	InputTokens         int64 `yaml:"input_tokens" json:"input_tokens"`
	OutputTokens        int64 `yaml:"output_tokens" json:"output_tokens"`
	CachedTokens        int64 `yaml:"cached_tokens" json:"cached_tokens,omitempty"`
	CacheCreationTokens int64 `yaml:"cache_creation_tokens" json:"cache_creation_tokens,omitempty"`
	ReasoningTokens     int64 `yaml:"reasoning_tokens" json:"reasoning_tokens,omitempty"`
}

// FailSpec makes a scripted step fail.
type FailSpec struct {
	Status     int      `yaml:"status" json:"status"`
	Message    string   `yaml:"message" json:"message,omitempty"`
	Transient  bool     `yaml:"transient" json:"transient,omitempty"`
	RetryAfter Duration `yaml:"retry_after" json:"retry_after,omitempty"`
	Times      int      `yaml:"times" json:"times,omitempty"`
}

// TransferSpec declares a transfer to another agent.
type TransferSpec struct {
	To            string         `yaml:"to" json:"to"`
	Tool          string         `yaml:"tool" json:"tool,omitempty"`
	Description   string         `yaml:"description" json:"description,omitempty"`
	History       string         `yaml:"history" json:"history,omitempty"`
	SystemMessage bool           `yaml:"system_message" json:"system_message,omitempty"`
	Transforms    []any          `yaml:"transforms" json:"transforms,omitempty"`
	ContextSchema map[string]any `yaml:"context_schema" json:"context_schema,omitempty"`
	Return        bool           `yaml:"return" json:"return,omitempty"`
}

// redactSpec is the options of the redact transform.
type redactSpec struct {
	Patterns    []string `yaml:"patterns"`
	Replacement string   `yaml:"replacement"`
}

// compactSpec is the options of the compact transform: the summariser's
// model, declared like an agent's.
type compactSpec struct {
	KeepRecent int    `yaml:"keep_recent"`
	Prompt     string `yaml:"prompt"`
	ModelSpec  `yaml:",inline"`
}

// AgentToolSpec offers another agent as a tool.
type AgentToolSpec struct {
	Agent       string `yaml:"agent" json:"agent"`
	Tool        string `yaml:"tool" json:"tool,omitempty"`
	Description string `yaml:"description" json:"description,omitempty"`
}

// Duration is a time.Duration written as "30s", "1m30s" or a number of seconds.
type Duration time.Duration

// UnmarshalText parses "30s"-style durations.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		// A bare number means seconds.
		f, ferr := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
		if ferr != nil || math.IsNaN(f) {
			return fmt.Errorf("invalid duration %q (want 30s, 1m30s, 250ms or a number of seconds)", b)
		}
		if math.Abs(f) > float64(math.MaxInt64)/float64(time.Second) {
			return fmt.Errorf("duration %q is too long", b)
		}
		v = time.Duration(f * float64(time.Second))
	}
	if v < 0 {
		return fmt.Errorf("duration %q must not be negative", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as "30s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// MCPServerSpec declares an MCP server: a command run with its standard
// input and output (command, args, env, dir), or a streamable HTTP endpoint
// (url, headers). Values of env and headers may name environment variables
// as ${NAME}, expanded when the server is started.
type MCPServerSpec struct {
	Name    string            `yaml:"name" json:"name"`
	Command string            `yaml:"command" json:"command,omitempty"`
	Args    []string          `yaml:"args" json:"args,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	// Dir is the command's working directory, relative to the network
	// file's directory (default: that directory).
	Dir     string            `yaml:"dir" json:"dir,omitempty"`
	URL     string            `yaml:"url" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Tools is the allow list of the server's tools (default: all).
	Tools []string `yaml:"tools" json:"tools,omitempty"`
	// Prefix is put before the server's tool names.
	Prefix string `yaml:"prefix" json:"prefix,omitempty"`
	// Approval, Idempotent and Slow list tools (by the server's names;
	// "*" for all): calls that need a person's approval; tools whose calls
	// may be repeated after a crash whatever their annotations say; tools
	// handed to a background worker when the run is inline.
	Approval   []string `yaml:"approval" json:"approval,omitempty"`
	Idempotent []string `yaml:"idempotent" json:"idempotent,omitempty"`
	Slow       []string `yaml:"slow" json:"slow,omitempty"`
	// Timeout bounds one call.
	Timeout Duration `yaml:"timeout" json:"timeout,omitempty"`
}

// RemoteSpec declares a remote A2A agent by its agent card.
type RemoteSpec struct {
	// Card is the agent card's URL; a URL whose path does not end in .json
	// is a base URL, the card is at /.well-known/agent-card.json below it.
	Card string `yaml:"card" json:"card"`
	// Headers are sent with every request (the card's too); values may
	// name environment variables as ${NAME}.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Reconnect is how long a task whose stream broke is followed again
	// before the turn fails (default 60s).
	Reconnect Duration `yaml:"reconnect" json:"reconnect,omitempty"`
}
