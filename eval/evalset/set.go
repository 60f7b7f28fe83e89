package evalset

import (
	"encoding/json"

	"github.com/batonhq/baton/message"
)

// Version is the version of the eval set format this package reads and
// writes (a set's `version:`).
const Version = 1

// RecordingVersion is the version of a case's recording format
// ([Recording].Version). A recording's turns are [Outcome]s: what the run
// did, with every model call and tool result it made. Version 1 is what
// `baton eval export` derives from a stored thread's messages, interrupts
// and checkpoints; the recording of model calls (latency, the request as
// sent) will fill the same fields.
const RecordingVersion = 1

// Set is an eval set: cases run against a network.
type Set struct {
	// Version is [Version].
	Version int    `json:"version"`
	Name    string `json:"name"`
	// Description says what the set checks.
	Description string `json:"description,omitempty"`
	// Network, if set, is the network file the set runs on when none is
	// given (`baton eval SET`), relative to the set's file.
	Network string `json:"network,omitempty"`
	Cases   []Case `json:"cases"`
	// Warnings are what a reader left out, such as the criteria of an ADK
	// test_config.json that baton eval does not score; not written.
	Warnings []string `json:"-"`
}

// Case is one conversation: its user turns, what is expected of each, and
// optionally what a baseline recorded.
type Case struct {
	// ID names the case; unique within its set.
	ID          string `json:"id"`
	Description string `json:"description,omitempty"`
	Turns       []Turn `json:"turns"`
	// Recording is what a baseline run of the case did, turn by turn: its
	// model answers answer the agents that did not change, its tool results
	// answer the tools.
	Recording *Recording `json:"recording,omitempty"`
	// Line is the case's first line in its file; 0 when unknown.
	Line int `json:"-"`
}

// Turn is one user message of a case and what is expected of the run that
// answers it.
type Turn struct {
	// User is the user's message.
	User string `json:"user"`
	// Decisions answer the run's approval interrupts, one per interrupt in
	// order: the run resumes with each until it ends or none is left.
	Decisions []Decision `json:"decisions,omitempty"`
	// Expect is what the turn is scored on; nil scores nothing (its
	// outcome is still reported and compared with the baseline).
	Expect *Expect `json:"expect,omitempty"`
}

// Decision answers one approval interrupt: approve, reject or edit (with
// Args); CallID, if set, answers that call only.
type Decision struct {
	Type    string          `json:"type"`
	CallID  string          `json:"call_id,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Message string          `json:"message,omitempty"`
}

// Decision types.
const (
	DecisionApprove = "approve"
	DecisionReject  = "reject"
	DecisionEdit    = "edit"
)

// Expect is what a turn is expected to do. A nil or empty field is not
// scored.
type Expect struct {
	// Routing is the agent expected to take the turn first (the picker's
	// choice, or the entry agent).
	Routing string `json:"routing,omitempty"`
	// Transfers is the expected transfer trajectory, in order; an empty
	// list expects none.
	Transfers *[]TransferExpect `json:"transfers,omitempty"`
	// Tools is the expected tool trajectory.
	Tools *ToolsExpect `json:"tools,omitempty"`
	// Status is the run's expected final status: completed, interrupted,
	// failed, cancelled or suspended.
	Status string `json:"status,omitempty"`
	// Answer is what the final answer is expected to be.
	Answer *AnswerExpect `json:"answer,omitempty"`
}

// TransferExpect is one expected transfer.
type TransferExpect struct {
	// From, if set, is the agent expected to transfer.
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Context lists fields of the typed transfer context and their expected
	// values; fields not listed are not compared.
	Context map[string]any `json:"context,omitempty"`
}

// Tool trajectory match modes ([ToolsExpect].Match), as ADK names them.
const (
	// MatchExact: the same calls, in the same order, and no others.
	MatchExact = "exact"
	// MatchInOrder: the expected calls in that order, others allowed
	// between them.
	MatchInOrder = "in_order"
	// MatchAnyOrder: the expected calls in any order, others allowed.
	MatchAnyOrder = "any_order"
)

// ToolsExpect is an expected tool trajectory: the calls of every agent of
// the turn, transfers excepted (see Expect.Transfers).
type ToolsExpect struct {
	// Match is exact (the default), in_order or any_order.
	Match string           `json:"match,omitempty"`
	Calls []ToolCallExpect `json:"calls"`
}

// ToolCallExpect is one expected tool call.
type ToolCallExpect struct {
	Name string `json:"name"`
	// Agent, if set, is the agent expected to make the call.
	Agent string `json:"agent,omitempty"`
	// Args are the expected arguments: compared exactly (as JSON values)
	// unless Fields lists the fields to compare. Without Args the
	// arguments are not compared; args: {} expects none.
	Args map[string]any `json:"args,omitzero"`
	// Fields, if set, compares only these fields of the arguments, with
	// their values in Args (a field missing from Args must be missing from
	// the call).
	Fields []string `json:"fields,omitempty"`
}

// AnswerExpect is what the turn's final answer is expected to be: every
// check given must pass.
type AnswerExpect struct {
	// Contains are texts the answer must contain (all of them).
	Contains []string `json:"contains,omitempty"`
	// IgnoreCase makes Contains ignore case.
	IgnoreCase bool `json:"ignore_case,omitempty"`
	// Regex is a regular expression (Go syntax) the answer must match.
	Regex string `json:"regex,omitempty"`
	// JSONSchema is a JSON Schema the answer, parsed as JSON, must match.
	JSONSchema map[string]any `json:"json_schema,omitempty"`
	// ROUGE1 scores the answer's unigram overlap with a reference.
	ROUGE1 *ROUGE1 `json:"rouge1,omitempty"`
	// Rubrics are judged by a model, each scored on its own.
	Rubrics []Rubric `json:"rubrics,omitempty"`
}

// DefaultROUGE1Threshold is the ROUGE-1 threshold when none is given:
// ADK's default for its response match score.
const DefaultROUGE1Threshold = 0.8

// ROUGE1 scores the ROUGE-1 F-measure of the answer against Reference.
type ROUGE1 struct {
	Reference string `json:"reference"`
	// Threshold in [0, 1]; defaults to [DefaultROUGE1Threshold].
	Threshold float64 `json:"threshold,omitempty"`
}

// DefaultRubricThreshold is a rubric's threshold when none is given.
const DefaultRubricThreshold = 0.5

// Rubric is a property of the answer judged by a model, which scores it
// from 0 (not at all) to 1 (fully).
type Rubric struct {
	// ID names the rubric in reports; defaults to its position.
	ID string `json:"id,omitempty"`
	// Text is the property, e.g. "The answer gives the refund's id."
	Text string `json:"text"`
	// Judge is the judge model, in the form of --model
	// (openai:gpt-4.1-mini, anthropic:…, ollama:…, openai-compatible:M@URL);
	// "" is the run's default judge (`baton eval --judge`).
	Judge string `json:"judge,omitempty"`
	// Threshold in [0, 1]; defaults to [DefaultRubricThreshold].
	Threshold float64 `json:"threshold,omitempty"`
}

// Recording is what a baseline run of a case did, turn by turn, versioned
// ([RecordingVersion]).
type Recording struct {
	Version int `json:"version"`
	// Source says where it comes from: "thread ID", "adk", ….
	Source string `json:"source,omitempty"`
	// Network and Fingerprint are the recorded network's name and version.
	Network     string `json:"network,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Agents are the recorded agents' fingerprints (see package
	// eval/replay): an agent of the evaluated network whose fingerprint is
	// the same is answered from the recording. An agent not listed is
	// never answered from it.
	Agents map[string]string `json:"agents,omitempty"`
	// Turns are the recorded turns, in the order of the case's.
	Turns []Outcome `json:"turns"`
}

// Outcome is what the run of one turn did: the facts that metrics score,
// and, in a recording, every model answer and tool result.
type Outcome struct {
	RunID string `json:"run_id,omitempty"`
	// FirstAgent is the agent that took the turn first.
	FirstAgent string `json:"first_agent,omitempty"`
	// Transfers are the transfers taken, in order.
	Transfers []Transfer `json:"transfers,omitempty"`
	// Tools are the tool calls made (transfers excepted), in order, with
	// their results.
	Tools []ToolCall `json:"tools,omitempty"`
	// Status is the run's final status (completed, interrupted, failed,
	// cancelled, suspended), or "error" when it could not run.
	Status string `json:"status,omitempty"`
	// Answer is the final answer: the last agent's last text.
	Answer string `json:"answer,omitempty"`
	// Error says why the run failed or could not run.
	Error string `json:"error,omitempty"`
	// Usage is the tokens the run's model calls used; LatencyMS its
	// wall-clock time in milliseconds.
	Usage     message.Usage `json:"usage,omitzero"`
	LatencyMS int64         `json:"latency_ms,omitempty"`
	// ModelCalls are the model's answers, in order.
	ModelCalls []ModelCall `json:"model_calls,omitempty"`
}

// Transfer is one transfer taken.
type Transfer struct {
	From string `json:"from"`
	To   string `json:"to"`
	// CallID is the model's transfer call.
	CallID string `json:"call_id,omitempty"`
	// Context is the typed transfer context (the call's arguments).
	Context json.RawMessage `json:"context,omitempty"`
}

// ToolCall is one tool call and its result.
type ToolCall struct {
	Agent     string          `json:"agent,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Output    string          `json:"output"`
	IsError   bool            `json:"is_error,omitempty"`
}

// ModelCall is one answer of a model.
type ModelCall struct {
	Agent string `json:"agent"`
	// Message is the assistant message as the model answered it: its parts
	// (text, tool calls, reasoning), usage, finish reason and metadata.
	Message message.Message `json:"message"`
	// Replayed is set in a run's outcome when the answer came from the
	// recording rather than the model.
	Replayed bool `json:"replayed,omitempty"`
	// LatencyMS is how long the call took, where known.
	LatencyMS int64 `json:"latency_ms,omitempty"`
}
