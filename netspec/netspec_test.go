package netspec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/netspec"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/transfer"
)

// problem is an expected problem: its line and a part of its message.
type problem struct {
	line int
	msg  string
}

// numbered returns src with line numbers, for failure messages.
func numbered(src string) string {
	var b strings.Builder
	for i, line := range strings.Split(src, "\n") {
		fmt.Fprintf(&b, "%3d | %s\n", i+1, line)
	}
	return b.String()
}

// parseProblems parses src, which must not load, and returns its problems.
func parseProblems(t *testing.T, src string, opts netspec.Options) []netspec.Problem {
	t.Helper()
	spec, err := netspec.Parse([]byte(src), "test.yaml", opts)
	if err == nil {
		t.Fatalf("network %s loaded, want problems:\n%s", spec.Network.Name(), numbered(src))
	}
	var ne *netspec.Error
	if !errors.As(err, &ne) {
		t.Fatalf("error is %T (%v), want *netspec.Error", err, err)
	}
	if len(ne.Problems) == 0 {
		t.Fatalf("*netspec.Error without problems")
	}
	return ne.Problems
}

func checkProblems(t *testing.T, src string, got []netspec.Problem, want []problem) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].Line == want[i].line && strings.Contains(got[i].Message, want[i].msg)
	}
	if ok {
		return
	}
	var g, w strings.Builder
	for _, p := range got {
		fmt.Fprintf(&g, "  line %d: %s\n", p.Line, p.Message)
	}
	for _, p := range want {
		fmt.Fprintf(&w, "  line %d: …%s…\n", p.line, p.msg)
	}
	t.Errorf("problems:\n%swant:\n%sfile:\n%s", g.String(), w.String(), numbered(src))
}

// fakeProvider builds a scripted model for any provider model, recording
// what it was asked for.
func fakeProvider(specs *[]netspec.ProviderSpec) func(netspec.ProviderSpec) (model.Model, error) {
	return func(ps netspec.ProviderSpec) (model.Model, error) {
		if specs != nil {
			*specs = append(*specs, ps)
		}
		if strings.HasSuffix(ps.Model, ":broken") {
			return nil, errors.New("provider refuses this model")
		}
		return scripted.New("provider", []scripted.Step{{Text: "hi"}}, scripted.Options{}), nil
	}
}

// problemCases are files with problems; FuzzLoad starts from them too.
var problemCases = []struct {
	name string
	yaml string
	opts netspec.Options
	want []problem
}{
	{
		name: "UnknownTransferTarget",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    transfers:
      - to: ghost
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{8, `unknown agent "ghost" (agents: a, b)`}},
	},
	{
		name: "UnknownTool",
		yaml: `version: 1
name: n
tools:
  - name: lookup
    result: ok
agents:
  - name: a
    model: scripted
    tools:
      - lookup
      - lokup
    script: [{text: hi}]
`,
		want: []problem{{11, `unknown tool "lokup" (tools: lookup)`}},
	},
	{
		name: "UnknownToolNoneDeclared",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    tools: [lookup]
    script: [{text: hi}]
`,
		want: []problem{{6, `unknown tool "lookup" (no tools are declared)`}},
	},
	{
		name: "ScriptCallsUnknownTool",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    transfers: [{to: b}]
    script:
      - tool_calls:
          - name: transfer_to_bb
      - text: done
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{9, `the script calls "transfer_to_bb", which agent a cannot call (it can call transfer_to_b)`}},
	},
	{
		name: "InvalidParametersSchema",
		yaml: `version: 1
name: n
tools:
  - name: t
    result: ok
    parameters:
      type: objekt
agents:
  - name: a
    model: scripted
    tools: [t]
    script: [{text: hi}]
`,
		want: []problem{{6, `invalid JSON Schema at /type: value must be one of 'array'`}},
	},
	{
		name: "ParametersNotAnObject",
		yaml: `version: 1
name: n
tools:
  - name: t
    result: ok
    parameters: {type: string}
agents:
  - name: a
    model: scripted
    tools: [t]
    script: [{text: hi}]
`,
		want: []problem{{6, `the schema's type must be object (got string)`}},
	},
	{
		name: "InvalidContextSchema",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    transfers:
      - to: b
        context_schema:
          type: object
          required: order_id
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{9, `invalid JSON Schema at /required: got string, want array`}},
	},
	{
		name: "InvalidOutputSchema",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    output_schema: {type: object, minProperties: -1}
`,
		want: []problem{{7, `invalid JSON Schema at /minProperties`}},
	},
	{
		name: "BadWhenRegex",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script:
      - when: "(?i)refund("
        text: hi
`,
		want: []problem{{7, `invalid regular expression "(?i)refund(": missing closing )`}},
	},
	{
		name: "BadPickerRegex",
		yaml: `version: 1
name: n
picker:
  rules:
    - match: "[a-"
      agent: a
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{5, `invalid regular expression "[a-"`}},
	},
	{
		name: "UnknownFieldTypo",
		yaml: `version: 1
name: n
limits:
  max_turn: 3
agents:
  - name: a
    model: scripted
    instruction: Be brief.
    script: [{text: hi}]
`,
		want: []problem{
			{4, `unknown field "max_turn" in limits (did you mean "max_turns"?)`},
			{8, `unknown field "instruction" in agents[0] (did you mean "instructions"?)`},
		},
	},
	{
		name: "UnknownFieldNested",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script:
      - text: hi
        usage: {input_tokens: 3, ouput_tokens: 4}
    transfers:
      - to: b
        histroy: none
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{8, `unknown field "ouput_tokens" in agents[0].script[0].usage (did you mean "output_tokens"?)`},
			{11, `unknown field "histroy" in agents[0].transfers[0] (did you mean "history"?)`},
		},
	},
	{
		name: "RenamedField",
		yaml: `version: 1
name: n
limits:
  max_handoffs: 3
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    handoffs: [{to: b}]
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{4, `unknown field "max_handoffs" in limits (it is now "max_transfers")`},
			{9, `unknown field "handoffs" in agents[0] (it is now "transfers")`},
		},
	},
	{
		name: "UnknownFieldNoHint",
		yaml: `version: 1
name: n
colour: blue
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{3, `unknown field "colour" in the file`}},
	},
	{
		name: "WrongVersion",
		yaml: `version: 2
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{1, `version must be 1 (got 2)`}},
	},
	{
		name: "MissingVersion",
		yaml: `name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{1, `version must be 1 (got 0)`}},
	},
	{
		name: "DuplicateAgent",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{7, `agent "a" is declared twice (first at agents[0])`}},
	},
	{
		name: "MissingModel",
		yaml: `version: 1
name: n
agents:
  - name: a
    description: Has no model.
`,
		want: []problem{{4, `model is required`}},
	},
	{
		name: "ScriptedWithoutScript",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
`,
		want: []problem{{4, `a scripted model needs a script: of steps`}},
	},
	{
		name: "EmptyScriptStep",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script:
      - when: hello
`,
		want: []problem{{7, `a script step needs text:, tool_calls: or fail:`}},
	},
	{
		name: "UnknownProvider",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: gemini:pro
`,
		opts: netspec.Options{Provider: fakeProvider(nil)},
		want: []problem{{5, `unknown provider "gemini" (want openai, openai-responses, anthropic or openai-compatible)`}},
	},
	{
		name: "ModelWithoutProviderPrefix",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: gpt-4o
`,
		opts: netspec.Options{Provider: fakeProvider(nil)},
		want: []problem{{5, `model "gpt-4o": want scripted or PROVIDER:MODEL`}},
	},
	{
		name: "OpenAICompatibleWithoutBaseURL",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: openai-compatible:llama3
`,
		opts: netspec.Options{Provider: fakeProvider(nil)},
		want: []problem{{5, `openai-compatible models need base_url`}},
	},
	{
		name: "NoProviderConfigured",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: openai:gpt-4o
`,
		want: []problem{{5, `model "openai:gpt-4o": no provider is configured in this program`}},
	},
	{
		name: "ProviderRefuses",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: anthropic:broken
`,
		opts: netspec.Options{Provider: fakeProvider(nil)},
		want: []problem{{5, `provider refuses this model`}},
	},
	{
		name: "ScriptOnProviderModel",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: openai:gpt-4o
    stream: {chunk_words: 2}
    script: [{text: hi}]
`,
		opts: netspec.Options{Provider: fakeProvider(nil)},
		want: []problem{
			{6, `stream: simulates streaming for model: scripted`},
			{7, `script: is only for model: scripted`},
		},
	},
	{
		name: "ProviderFieldsOnScripted",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    base_url: http://localhost:11434/v1
    api_key_env: KEY
    script: [{text: hi}]
`,
		want: []problem{
			{6, `base_url is for provider models, not scripted`},
			{7, `api_key_env is for provider models, not scripted`},
		},
	},
	{
		name: "BadHistoryPolicy",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    transfers:
      - to: b
        history: partial
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{9, `history must be full, last_user or none (got "partial")`}},
	},
	{
		name: "BadTransforms",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    transfers:
      - to: b
        transforms:
          - shred
          - redact: {}
          - redact: {patterns: ["("]}
          - compact: {keep_recent: 2}
          - redact: {patterns: [x], replace: "*"}
          - {drop_tool_traffic: ~, redact: ~}
          - [drop_tool_traffic]
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{10, `unknown transform "shred" (want drop_tool_traffic, redact or compact)`},
			{11, `redact needs patterns: [REGEX, …]`},
			{12, `invalid regular expression "("`},
			{13, `compact needs a model:`},
			{14, `unknown field "replace" in agents[0].transfers[0].transforms[4].redact (did you mean "replacement"?)`},
			{15, `a transform is a name or a mapping with one key`},
			{16, `a transform is a name or a mapping with one key`},
		},
	},
	{
		name: "CompactModelProblems",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    transfers:
      - to: b
        transforms:
          - compact:
              model: scripted
              script:
                - when: "(("
                  text: summary
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{13, `invalid regular expression "(("`}},
	},
	{
		name: "BadDurations",
		yaml: `version: 1
name: n
limits:
  timeout: soon
tools:
  - name: t
    result: ok
    timeout: -5s
agents:
  - name: a
    model: scripted
    tools: [t]
    script:
      - text: hi
        delay: 30 seconds
`,
		want: []problem{
			{4, `limits.timeout: invalid duration "soon" (want 30s, 1m30s, 250ms or a number of seconds)`},
			{8, `tools[0].timeout: duration "-5s" must not be negative`},
			{15, `agents[0].script[0].delay: invalid duration "30 seconds"`},
		},
	},
	{
		name: "WrongTypes",
		yaml: `version: 1
name: n
limits:
  max_turns: many
  max_transfers: 2.5
picker:
  sticky: "yes"
tools: lookup
agents:
  - name: a
    model: [scripted]
    script: [{text: hi}]
    transfers: {to: b}
`,
		want: []problem{
			{4, `limits.max_turns must be a whole number, not a string`},
			{5, `limits.max_transfers must be a whole number, not the number 2.5`},
			{7, `picker.sticky must be true or false, not a string`},
			{8, `tools must be a list, not a string`},
			{10, `model is required`},
			{11, `agents[0].model must be a string, not a list`},
			{13, `agents[0].transfers must be a list, not a mapping`},
		},
	},
	{
		name: "NotYAML",
		yaml: `version: 1
name: n
agents: [
`,
		want: []problem{{3, `not found`}},
	},
	{
		name: "DuplicateKey",
		yaml: `version: 1
name: n
name: m
agents: []
`,
		want: []problem{{3, `mapping key "name" already defined`}},
	},
	{
		name: "Empty",
		yaml: ``,
		want: []problem{
			{0, `version must be 1 (got 0)`},
			{0, `name is required`},
			{0, `at least one agent is required`},
		},
	},
	{
		name: "NotAMapping",
		yaml: `- name: a
  model: scripted
`,
		want: []problem{{1, `a network file is a mapping (version:, name:, agents: …), not a list`}},
	},
	{
		name: "TwoDocuments",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
---
version: 1
`,
		want: []problem{{1, `a network file holds one YAML document, not 2`}},
	},
	{
		name: "UnknownAlias",
		yaml: `version: 1
name: n
agents: *everyone
`,
		want: []problem{
			{1, `at least one agent is required`},
			{3, `agents: unknown alias *everyone`},
		},
	},
	{
		name: "EntryAndNames",
		yaml: `version: 1
name: n
entry: triage
tools:
  - name: look up
    result: ok
agents:
  - name: first agent
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{3, `unknown agent "triage" (agents: first agent)`},
			{5, `tool name "look up" must be 1-64 letters, digits, '_' or '-'`},
			{8, `agent name "first agent" must be 1-64 letters, digits, '_' or '-'`},
		},
	},
	{
		name: "ToolNameClashes",
		yaml: `version: 1
name: n
tools:
  - name: transfer_to_b
    result: ok
  - name: transfer_to_b
    result: ok
agents:
  - name: a
    model: scripted
    tools: [transfer_to_b]
    script: [{text: hi}]
    transfers:
      - to: b
      - to: a
      - to: b
        tool: escalate
      - to: b
        tool: escalate
  - name: b
    model: scripted
    script: [{text: hi}]
    agent_tools:
      - agent: b
      - agent: ""
`,
		want: []problem{
			{6, `tool "transfer_to_b" is declared twice`},
			{14, `tool name "transfer_to_b" is used by tool transfer_to_b and by the transfer to b`},
			{15, `agent a cannot transfer to itself`},
			{19, `tool name "escalate" is used by the transfer to b and by the transfer to b`},
			{24, `agent b cannot call itself as a tool`},
			{25, `an agent tool needs agent:`},
		},
	},
	{
		name: "ToolProblems",
		yaml: `version: 1
name: n
tools:
  - name: t
    approval: always
    continuation: later
  - description: no name
  - name: noresult
agents:
  - name: a
    model: scripted
    continuation: sometimes
    script: [{text: hi}]
`,
		want: []problem{
			{4, `tool "t" has no result: and no Go implementation`},
			{5, `approval must be required or none (got "always")`},
			{6, `continuation must be inline or background (got "later")`},
			{7, `tool name is required`},
			{8, `tool "noresult" has no result: and no Go implementation`},
			{12, `continuation must be inline or background (got "sometimes")`},
		},
	},
	{
		name: "Policies",
		yaml: `version: 1
name: n
policy:
  type: sequential
  steps: [a, c]
  rules:
    - name: escalate
      to: b
      history: some
    - to: d
      when: {answer_matches: "(", tokens_at_least: 10}
    - name: never
      to: b
      when: {answer_matches: done, tool_result_matches: error}
    - name: nowhere
      when: {input_matches: x}
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
  - name: b
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{5, `unknown agent "c" (agents: a, b)`},
			{7, `rule "escalate" has no when: condition`},
			{9, `history must be full, last_user or none (got "some")`},
			{10, `a rule needs a name`},
			{10, `unknown agent "d" (agents: a, b)`},
			{11, `invalid regular expression "("`},
			{14, `answer_matches and tool_result_matches never hold together`},
			{15, `a rule needs to: (the agent to transfer to)`},
		},
	},
	{
		name: "PolicyType",
		yaml: `version: 1
name: n
policy: {type: round_robin}
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{3, `policy type must be explicit, sequential or rules (got "round_robin")`}},
	},
	{
		name: "SequentialTooShort",
		yaml: `version: 1
name: n
policy:
  type: sequential
  steps: [a]
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{5, `a sequential policy needs at least two steps`}},
	},
	{
		name: "Limits",
		yaml: `version: 1
name: n
limits:
  max_turns: -1
  max_transfers: -2
  token_budget: -3
  on_limit: retry
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{4, `max_turns must not be negative`},
			{5, `max_transfers must not be negative`},
			{6, `token_budget must not be negative`},
			{7, `on_limit must be error or final_answer (got "retry")`},
		},
	},
	{
		name: "Webhooks",
		yaml: `version: 1
name: n
webhooks:
  - url: https://hooks.example.com/baton
  - url: ftp://hooks.example.com/x
  - {}
  - url: https://hooks.example.com/baton
  - url: https://user:pw@hooks.example.com/
  - url: https://hooks.example.com/c
    secret_env: "not a name"
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{5, `webhook url "ftp://hooks.example.com/x" must be an http or https URL with a host and no user info`},
			{6, `a webhook needs a url`},
			{7, `webhook url "https://hooks.example.com/baton" is given twice`},
			{8, `webhook url "https://user:pw@hooks.example.com/" must be an http or https URL with a host and no user info`},
			{10, `secret_env "not a name" is not an environment variable name`},
		},
	},
	{
		name: "Picker",
		yaml: `version: 1
name: n
picker:
  rules:
    - agent: a
    - match: bill
      agent: billing
    - match: x
  default: nobody
  classifier:
    agents: [a, z]
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{
			{5, `a picker rule needs match: or keywords:`},
			{7, `unknown agent "billing" (agents: a)`},
			{8, `a picker rule needs agent:`},
			{9, `unknown agent "nobody" (agents: a)`},
			{10, `model is required`},
			{11, `unknown agent "z" (agents: a)`},
		},
	},
	{
		name: "Guardrails",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
    guardrails:
      input:
        - deny: "(?i)password"
      output:
        - name: no-secrets
          deny: "[unclosed"
`,
		want: []problem{
			{9, `guardrail name is required`},
			{12, `invalid regular expression "[unclosed"`},
		},
	},
	{
		name: "ScriptSteps",
		yaml: `version: 1
name: n
agents:
  - name: a
    model: scripted
    stream: {chunk_words: -1}
    script:
      - tool_calls: [{arguments: {x: 1}}]
      - text: hi
        usage: {input_tokens: -1, output_tokens: 2}
      - fail: {status: 500, times: -1}
`,
		want: []problem{
			{6, `chunk_words must not be negative`},
			{8, `a tool call needs a name`},
			{10, `usage token counts must not be negative`},
			{11, `fail times must not be negative`},
		},
	},
	{
		name: "Summary",
		yaml: `version: 1
name: n
summary:
  model: scripted
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
`,
		want: []problem{{3, `a scripted model needs a script: of steps`}},
	},
	{
		// Every kind of problem at once: each is reported, in line order.
		name: "ManyProblems",
		yaml: `version: 3
name: many
entry: nobody
limits:
  timeout: later
  max_turn: 3
tools:
  - name: lookup
    parameters: {type: object, properties: {id: {type: strin}}}
    result: {ok: true}
agents:
  - name: triage
    model: scripted
    tools: [lookup, refund]
    script:
      - when: "(?i)bill("
        tool_calls: [{name: transfer_to_billing}]
    transfers:
      - to: billing
        history: everything
        transforms: [drop_tools]
      - to: nobody
  - name: billing
    model: ollama:llama3
  - name: billing
    model: scripted
  - name: tech
    modle: scripted
`,
		opts: netspec.Options{Provider: fakeProvider(nil)},
		want: []problem{
			{1, `version must be 1 (got 3)`},
			{3, `unknown agent "nobody"`},
			{5, `limits.timeout: invalid duration "later"`},
			{6, `unknown field "max_turn" in limits (did you mean "max_turns"?)`},
			{9, `invalid JSON Schema at /properties/id/type`},
			{14, `unknown tool "refund" (tools: lookup)`},
			{16, `invalid regular expression "(?i)bill("`},
			{20, `history must be full, last_user or none (got "everything")`},
			{21, `unknown transform "drop_tools"`},
			{22, `unknown agent "nobody"`},
			{24, `unknown provider "ollama"`},
			{25, `a scripted model needs a script: of steps`},
			{25, `agent "billing" is declared twice`},
			{27, `model is required`},
			{28, `unknown field "modle" in agents[3] (did you mean "model"?)`},
		},
	},
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	for _, tt := range problemCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseProblems(t, tt.yaml, tt.opts)
			checkProblems(t, tt.yaml, got, tt.want)
		})
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	src := "version: 2\nname: n\nagents:\n  - name: a\n    modle: scripted\n"
	_, err := netspec.Parse([]byte(src), "net.yaml", netspec.Options{})
	want := `net.yaml:1: version must be 1 (got 2)
net.yaml:4: model is required (scripted, openai:<model>, openai-responses:<model>, anthropic:<model>, openai-compatible:<model>)
net.yaml:5: unknown field "modle" in agents[0] (did you mean "model"?)`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
	_, err = netspec.Parse([]byte(src), "", netspec.Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "line 1: version must be 1") {
		t.Errorf("error without a file name: %v", err)
	}
	var ne *netspec.Error
	if !errors.As(err, &ne) || ne.Problems[2].Path != "$.agents[0].modle" || ne.Problems[2].Column != 5 {
		t.Errorf("problem = %+v, want path $.agents[0].modle at column 5", ne.Problems[2])
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	t.Run("FileTooLarge", func(t *testing.T) {
		t.Parallel()
		src := "version: 1\n# " + strings.Repeat("x", 4<<20) + "\n"
		checkProblems(t, "", parseProblems(t, src, netspec.Options{}), []problem{{0, "more than the 4194304 allowed"}})
	})
	t.Run("AliasBomb", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		b.WriteString("version: 1\nname: n\ntools:\n  - name: t\n    result:\n")
		b.WriteString("      a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
		for i := 1; i < 9; i++ {
			fmt.Fprintf(&b, "      a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
		}
		b.WriteString("agents: [{name: a, model: scripted, script: [{text: hi}]}]\n")
		start := time.Now()
		got := parseProblems(t, b.String(), netspec.Options{})
		checkProblems(t, b.String(), got, []problem{{1, "expands to more than"}})
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("AliasesWithinBounds", func(t *testing.T) {
		t.Parallel()
		src := `version: 1
name: n
tools:
  - name: t
    parameters: &p {type: object, properties: {id: {type: string}}}
    result: ok
  - name: u
    parameters: *p
    result: {same: *p}
agents:
  - &base
    name: a
    model: scripted
    tools: [t, u]
    script: [{text: hi}]
  - <<: *base
    name: b
    description: Overrides.
`
		spec, err := netspec.Parse([]byte(src), "aliases.yaml", netspec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := spec.Network.Agent("b")
		if b.Description != "Overrides." || b.ModelName != "scripted" || len(b.Tools) != 2 || string(b.Tools[1].Parameters) != `{"properties":{"id":{"type":"string"}},"type":"object"}` {
			t.Errorf("agent b from a merge key: tools %+v", b.Tools)
		}
	})
}

// load loads a network file of the repository.
func load(t *testing.T, path string, opts netspec.Options) *netspec.Spec {
	t.Helper()
	spec, err := netspec.Load(path, opts)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return spec
}

func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../examples/*/network.yaml")
	if err != nil || len(paths) < 2 {
		t.Fatalf("examples: %v %v", paths, err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			t.Parallel()
			// The notes example's MCP server is a fake here (its tools by
			// the names of its allow list); service's examples test runs it.
			spec := load(t, path, netspec.Options{MCP: (&fakeMCP{}).resolve})
			if spec.Network == nil || spec.Network.Fingerprint() == "" || len(spec.Source) == 0 {
				t.Fatalf("spec = %+v", spec)
			}
		})
	}
}

// TestFingerprintsKept pins the fingerprints the examples had before agent
// → agent handoffs were called transfers (handoffs:, max_handoffs:):
// renaming the keys must not change them, or the runs a network stopped
// before the rename would be refused on resume. testdata/kept has the
// examples as they were then (they have rules and replies since), and new
// fields that such files leave out must not change their hash either.
func TestFingerprintsKept(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"support":  "750c5c245777331ff79696b4",
		"pipeline": "9a9faf87f824fe45db86f14e",
		"research": "e745fa92940d1aa0cadad910",
	} {
		if got := load(t, "testdata/kept/"+name+".yaml", netspec.Options{}).Network.Fingerprint(); got != want {
			t.Errorf("%s: fingerprint %s, want %s", name, got, want)
		}
	}
	// The file as the fingerprint hashes it has every field of File, in order.
	file, hashed := reflect.TypeFor[netspec.File](), reflect.TypeOf(netspec.FingerprintSpec(&netspec.File{}))
	if file.NumField() != hashed.NumField() {
		t.Fatalf("File has %d fields, its fingerprint form %d", file.NumField(), hashed.NumField())
	}
	for i := range file.NumField() {
		if a, b := file.Field(i), hashed.Field(i); a.Name != b.Name || a.Tag.Get("json") != b.Tag.Get("json") {
			t.Errorf("field %d: File has %s %q, its fingerprint form %s %q", i, a.Name, a.Tag.Get("json"), b.Name, b.Tag.Get("json"))
		}
	}
}

func TestLoadSupportExample(t *testing.T) {
	t.Parallel()
	spec := load(t, "../examples/support/network.yaml", netspec.Options{})
	net := spec.Network
	if net.Name() != "support" || net.Entry() != "triage" {
		t.Errorf("name %q entry %q", net.Name(), net.Entry())
	}
	if got, want := net.Names(), []string{"triage", "billing", "refunds", "tech"}; !slices.Equal(got, want) {
		t.Errorf("agents %v, want %v", got, want)
	}
	lim := net.Limits()
	if lim.MaxTurns != 12 || lim.MaxTransfers != 4 || lim.Timeout != time.Minute || lim.PingPong != 3 || lim.OnLimit != "error" {
		t.Errorf("limits %+v", lim)
	}
	if _, ok := spec.Policy.(policy.Explicit); !ok {
		t.Errorf("policy %T, want policy.Explicit", spec.Policy)
	}
	if spec.Picker != nil || spec.Sticky {
		t.Errorf("picker %v sticky %v, want none", spec.Picker, spec.Sticky)
	}

	triage, _ := net.Agent("triage")
	if triage.ModelName != "scripted" || !strings.Contains(triage.Instructions, "first line of support") {
		t.Errorf("triage: model %q instructions %q", triage.ModelName, triage.Instructions)
	}
	type hf struct {
		to, tool string
		history  transfer.HistoryPolicy
		schema   bool
		trans    []string
	}
	var got []hf
	for _, h := range triage.Transfers {
		var tr []string
		for _, x := range h.Transforms {
			tr = append(tr, x.Name())
		}
		got = append(got, hf{h.To, h.Tool(), h.Policy(), len(h.ContextSchema) > 0, tr})
	}
	want := []hf{
		{"billing", "transfer_to_billing", transfer.HistoryFull, true, nil},
		{"refunds", "transfer_to_refunds", transfer.HistoryLastUser, true, nil},
		{"tech", "transfer_to_tech", transfer.HistoryFull, false, []string{"drop_tool_traffic"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("transfers\n%v\nwant\n%v", got, want)
	}
	// The aliased context schema is the same on both transfers and is enforced.
	if string(triage.Transfers[0].ContextSchema) != string(triage.Transfers[1].ContextSchema) {
		t.Errorf("context schemas differ")
	}
	h := triage.Transfers[0]
	if _, err := h.BuildContext("triage", json.RawMessage(`{"order_id":"x1","issue":"double_charge","reason":"r"}`)); err == nil {
		t.Errorf("order_id x1 passed the pattern ^[0-9]+$")
	}
	tc, err := h.BuildContext("triage", json.RawMessage(`{"order_id":"1234","issue":"double_charge","reason":"twice"}`))
	if err != nil || tc.Reason != "twice" {
		t.Errorf("context %+v, %v", tc, err)
	}

	refunds, _ := net.Agent("refunds")
	if len(refunds.Tools) != 2 || refunds.Tools[1].Name != "issue_refund" || refunds.Tools[1].RequireApproval == nil || refunds.Tools[0].RequireApproval != nil {
		t.Errorf("refunds tools %+v", refunds.Tools)
	}
	out, err := refunds.Tools[0].Func(t.Context(), json.RawMessage(`{"order_id":"1234"}`))
	if err != nil || out != `{"charges":2,"currency":"EUR","order_id":"1234","status":"delivered","total":49.9}` {
		t.Errorf("lookup_order = %s, %v", out, err)
	}
	if refunds.Tools[0].Validator() == nil {
		t.Errorf("lookup_order has no compiled parameters")
	}
	if err := refunds.Tools[0].Validator().Validate(json.RawMessage(`{"order_id":"12a"}`)); err == nil {
		t.Errorf("lookup_order accepted order_id 12a")
	}
}

func TestLoadPipelineExample(t *testing.T) {
	t.Parallel()
	spec := load(t, "../examples/pipeline/network.yaml", netspec.Options{})
	seq, ok := spec.Policy.(policy.Sequential)
	if !ok || !slices.Equal(seq.Steps, []string{"research", "analysis", "report"}) {
		t.Fatalf("policy %#v, want sequential research > analysis > report", spec.Policy)
	}
	if spec.Network.Entry() != "research" {
		t.Errorf("entry %q, want the first agent", spec.Network.Entry())
	}
	research, _ := spec.Network.Agent("research")
	out, err := research.Tools[0].Func(t.Context(), nil)
	// Fixed results are JSON as written: "->" is not escaped to "-\u003e".
	if err != nil || !strings.Contains(out, `18% (2024) -> 22% (2025)`) {
		t.Errorf("search_notes = %s, %v", out, err)
	}
}

const fullNetwork = `version: 1
name: full
entry: front
picker:
  sticky: true
  rules:
    - match: "(?i)invoice"
      agent: billing
    - keywords: [crash, bug]
      agent: tech
  default: front
policy:
  rules:
    - name: big-spender
      from: front
      to: billing
      history: last_user
      when: {input_matches: "(?i)refund", turns_at_least: 1}
limits:
  max_turns: 7
  max_transfers: 3
  timeout: 90
  token_budget: 5000
  ping_pong: -1
  on_limit: final_answer
tools:
  - name: lookup
    description: Look up.
    parameters: {type: object, properties: {id: {type: string}}, required: [id]}
    result: {found: true, note: "<b> & co"}
    timeout: 1.5
    continuation: background
  - name: wipe
    approval: required
    slow: true
    result: wiped
agents:
  - name: front
    description: Front desk.
    instructions: Route.
    model: scripted
    settings: {temperature: 0.2, max_tokens: 100}
    stream: {chunk_words: 2, delay: 10ms}
    script:
      - when: "(?i)hello"
        text: Hi there.
        usage: {input_tokens: 10, output_tokens: 5}
        delay: 1ms
      - tool_calls:
          - {id: c1, name: ask_tech, arguments: {input: "why <broken>?"}}
          - {name: escalate, arguments: {reason: r}}
      - fail: {status: 503, message: busy, transient: true, retry_after: 2s, times: 1}
        text: recovered
    tools: [lookup]
    transfers:
      - to: billing
        tool: escalate
        description: Money matters.
        history: none
        system_message: true
        return: true
        transforms:
          - drop_tool_traffic
          - redact: {patterns: ["\\d{4}"], replacement: "[card]"}
          - compact:
              keep_recent: 4
              prompt: Summarise.
              model: scripted
              script: [{text: summary}]
        context_schema:
          type: object
          properties: {reason: {type: string}}
    agent_tools:
      - agent: tech
        description: Ask tech.
    guardrails:
      input: [{name: no-pw, deny: "(?i)password", message: no passwords}]
      output: [{name: no-cards, deny: "\\d{16}"}]
  - name: billing
    model: openai:gpt-4o
    base_url: https://proxy.example/v1
    api_key_env: PROXY_KEY
    output_schema: {type: object, properties: {amount: {type: number}}}
    continuation: background
  - name: tech
    model: openai-compatible:llama3
    base_url: http://localhost:11434/v1
summary:
  model: anthropic:claude-sonnet-4-5
`

func TestParseFullNetwork(t *testing.T) {
	t.Parallel()
	var asked []netspec.ProviderSpec
	var wrapped []string
	spec, err := netspec.Parse([]byte(fullNetwork), "full.yaml", netspec.Options{
		Provider:  fakeProvider(&asked),
		WrapModel: func(name string, m model.Model) model.Model { wrapped = append(wrapped, name); return m },
		Tools: map[string]func(context.Context, json.RawMessage) (string, error){
			"wipe": func(context.Context, json.RawMessage) (string, error) { return "go wipe", nil },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	net := spec.Network
	if net.Entry() != "front" {
		t.Errorf("entry %q", net.Entry())
	}
	wantLimits := agent.Limits{MaxTurns: 7, MaxTransfers: 3, Timeout: 90 * time.Second, TokenBudget: 5000, PingPong: -1, OnLimit: "final_answer"}
	if net.Limits() != wantLimits {
		t.Errorf("limits %+v, want %+v", net.Limits(), wantLimits)
	}
	if got := fmt.Sprint(asked); got != "[{openai:gpt-4o https://proxy.example/v1 PROXY_KEY <nil>} {openai-compatible:llama3 http://localhost:11434/v1  <nil>} {anthropic:claude-sonnet-4-5   <nil>}]" {
		t.Errorf("provider asked for %s", got)
	}
	if got := strings.Join(wrapped, " "); got != "front front_compact billing tech summary" {
		t.Errorf("wrapped models %q", got)
	}
	if spec.Summary == nil {
		t.Errorf("no summary model")
	}

	front, _ := net.Agent("front")
	if front.Settings.Temperature == nil || *front.Settings.Temperature != 0.2 || front.Settings.MaxTokens != 100 {
		t.Errorf("settings %+v", front.Settings)
	}
	if len(front.InputGuardrails) != 1 || len(front.OutputGuardrails) != 1 {
		t.Fatalf("guardrails %+v %+v", front.InputGuardrails, front.OutputGuardrails)
	}
	err = front.InputGuardrails[0].Check(t.Context(), agent.GuardrailInput{Text: "my Password is x"})
	if !errors.Is(err, agent.ErrGuardrail) || !strings.Contains(err.Error(), "no passwords") {
		t.Errorf("input guardrail: %v", err)
	}
	if err := front.OutputGuardrails[0].Check(t.Context(), agent.GuardrailInput{Text: "fine"}); err != nil {
		t.Errorf("output guardrail on clean text: %v", err)
	}
	if err := front.OutputGuardrails[0].Check(t.Context(), agent.GuardrailInput{Text: "4111111111111111"}); err == nil || !strings.Contains(err.Error(), `matched \d{16}`) {
		t.Errorf("output guardrail default message: %v", err)
	}
	if len(front.AgentTools) != 1 || front.AgentTools[0].Tool() != "ask_tech" || front.AgentTools[0].Description != "Ask tech." {
		t.Errorf("agent tools %+v", front.AgentTools)
	}

	h := front.Transfers[0]
	if h.To != "billing" || h.Tool() != "escalate" || h.Description != "Money matters." || h.Policy() != transfer.HistoryNone || !h.SystemMessage || !h.Return {
		t.Errorf("transfer %+v", h)
	}
	var names []string
	for _, tr := range h.Transforms {
		names = append(names, tr.Name())
	}
	if strings.Join(names, ",") != "drop_tool_traffic,redact,compact" {
		t.Errorf("transforms %v", names)
	}
	red := h.Transforms[1].(transfer.Redact)
	if red.Replacement != "[card]" || len(red.Patterns) != 1 || red.Patterns[0].String() != `\d{4}` {
		t.Errorf("redact %+v", red)
	}
	cp := h.Transforms[2].(transfer.Compact)
	if cp.KeepRecent != 4 || cp.Prompt != "Summarise." || cp.Model == nil {
		t.Errorf("compact %+v", cp)
	}
	if string(h.ContextSchema) != `{"properties":{"reason":{"type":"string"}},"type":"object"}` {
		t.Errorf("context schema %s", h.ContextSchema)
	}

	lookup := front.Tools[0]
	if lookup.Timeout != 1500*time.Millisecond || !lookup.Slow || lookup.RequireApproval != nil {
		t.Errorf("lookup %+v", lookup)
	}
	if out, _ := lookup.Func(t.Context(), nil); out != `{"found":true,"note":"<b> & co"}` {
		t.Errorf("lookup result %s", out)
	}
	billing, _ := net.Agent("billing")
	if billing.ModelName != "openai:gpt-4o" || !billing.Background || billing.OutputValidator() == nil {
		t.Errorf("billing %+v", billing)
	}

	// The script: steps, calls, usage, delay, streaming and failures.
	m := scriptedModel(t, front.Model)
	steps := m.Steps()
	if len(steps) != 3 || steps[0].When == nil || steps[0].Usage.InputTokens != 10 || steps[0].Delay != time.Millisecond {
		t.Fatalf("steps %+v", steps)
	}
	if c := steps[1].ToolCalls; len(c) != 2 || c[0].ID != "c1" || string(c[0].Arguments) != `{"input":"why <broken>?"}` || c[1].ID != "" {
		t.Errorf("calls %+v", steps[1].ToolCalls)
	}
	if f := steps[2].Fail; f == nil || f.Status != 503 || f.Message != "busy" || !f.Transient || f.RetryAfter != 2*time.Second || f.Times != 1 {
		t.Errorf("fail %+v", steps[2].Fail)
	}
	resp, err := model.Collect(front.Model.Stream(t.Context(), &model.Request{Messages: []message.Message{message.User("hello")}}))
	if err != nil || resp.Message.Text() != "Hi there." {
		t.Errorf("scripted answer %+v, %v", resp, err)
	}

	// Picker: sticky, then rules, then the default.
	for _, c := range []struct{ input, last, want string }{
		{"my invoice", "", "billing"},
		{"it is a BUG", "", "tech"},
		{"hello", "", "front"},
		{"my invoice", "tech", "tech"},
	} {
		got, _, err := spec.Picker.Pick(t.Context(), policy.PickInput{Input: c.input, LastAgent: c.last})
		if err != nil || got != c.want {
			t.Errorf("pick(%q, last %q) = %q, %v; want %q", c.input, c.last, got, err, c.want)
		}
	}
	if !spec.Sticky {
		t.Errorf("not sticky")
	}

	// Policy: the rule, then explicit transfers.
	comp, ok := spec.Policy.(policy.Composite)
	if !ok || len(comp) != 2 {
		t.Fatalf("policy %#v", spec.Policy)
	}
	view := &policy.View{Agent: "front", Input: "a refund please", Turns: 1}
	d, fired, err := spec.Policy.Next(t.Context(), view)
	if err != nil || !fired || d.To != "billing" || d.History != transfer.HistoryLastUser {
		t.Errorf("rule: %+v %v %v", d, fired, err)
	}
	view.Turns = 0
	if _, fired, _ := spec.Policy.Next(t.Context(), view); fired {
		t.Errorf("rule fired before turns_at_least")
	}
}

func scriptedModel(t *testing.T, m model.Model) *scripted.Model {
	t.Helper()
	sm, ok := m.(*scripted.Model)
	if !ok {
		t.Fatalf("model %T, want *scripted.Model", m)
	}
	return sm
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../examples/support/network.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fingerprint := func(t *testing.T, src string) string {
		t.Helper()
		spec, err := netspec.Parse([]byte(src), "support.yaml", netspec.Options{})
		if err != nil {
			t.Fatalf("%v\n%s", err, numbered(src))
		}
		return spec.Network.Fingerprint()
	}
	base := fingerprint(t, string(src))
	if again := fingerprint(t, string(src)); again != base {
		t.Fatalf("fingerprint changed between two loads: %s, %s", base, again)
	}
	edit := func(old, new string) string {
		t.Helper()
		if !strings.Contains(string(src), old) {
			t.Fatalf("example has no %q", old)
		}
		return strings.Replace(string(src), old, new, 1)
	}
	same := []struct{ name, src string }{
		{"Comment", edit("# A customer-support network", "# A support network")},
		{"FlowStyle", edit("tools: [lookup_order]", "tools:\n      - lookup_order")},
		{"Quotes", edit("name: billing\n", "name: \"billing\"\n")},
	}
	for _, c := range same {
		t.Run("Same"+c.name, func(t *testing.T) {
			t.Parallel()
			if got := fingerprint(t, c.src); got != base {
				t.Errorf("fingerprint changed to %s", got)
			}
		})
	}
	changed := []struct{ name, src string }{
		{"Instructions", edit("You resolve billing problems.", "You resolve billing issues.")},
		{"Description", edit("Fixes app problems.", "Fixes app bugs.")},
		{"ScriptText", edit("Log-in is degraded", "Login is degraded")},
		{"ScriptWhen", edit(`"(?i)refund|money back"`, `"(?i)refund"`)},
		{"TransferHistory", edit("history: last_user", "history: none")},
		{"TransferDescription", edit("Requests for money back.", "Refunds.")},
		{"ContextSchema", edit("One line on why.", "Why.")},
		{"Transform", edit("transforms: [drop_tool_traffic]", "transforms: []")},
		{"AgentTools", edit("tools: [lookup_order, issue_refund]", "tools: [issue_refund, lookup_order]")},
		{"Stream", edit("stream: {chunk_words: 3}\n    tools", "stream: {chunk_words: 4}\n    tools")},
		{"ToolResult", edit(`{refund_id: "R-77", status: issued}`, `{refund_id: "R-78", status: issued}`)},
		{"ToolApproval", edit("    approval: required\n", "")},
		{"Limits", edit("max_turns: 12", "max_turns: 13")},
		{"Entry", edit("entry: triage", "entry: tech")},
		{"Name", edit("name: support", "name: support2")},
	}
	seen := map[string]string{base: "base"}
	for _, c := range changed {
		fp := fingerprint(t, c.src)
		if prev, dup := seen[fp]; dup {
			t.Errorf("%s: fingerprint %s is the same as %s's", c.name, fp, prev)
		}
		seen[fp] = c.name
	}
}

// TestDocsFullExample loads the full example of docs/network-yaml.md, so
// that the reference stays true.
func TestDocsFullExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/network-yaml.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n## Full example\n")
	_, rest, ok2 := strings.Cut(rest, "```yaml\n")
	src, _, ok3 := strings.Cut(rest, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/network-yaml.md has no yaml block under ## Full example")
	}
	var asked []netspec.ProviderSpec
	spec, err := netspec.Parse([]byte(src), "network-yaml.md", netspec.Options{Provider: fakeProvider(&asked)})
	if err != nil {
		t.Fatal(err)
	}
	if got := spec.Network.Names(); !slices.Equal(got, []string{"triage", "billing", "tech"}) {
		t.Errorf("agents %v", got)
	}
	if len(asked) != 1 || asked[0].Model != "openai-compatible:llama3.1" || asked[0].BaseURL != "http://localhost:11434/v1" {
		t.Errorf("provider asked for %+v", asked)
	}
	if spec.Picker == nil || spec.Summary == nil {
		t.Errorf("picker %v, summary %v", spec.Picker, spec.Summary)
	}
}

// TestWebhooksKeepFingerprint: a file's webhooks: reach Spec.Webhooks and
// do not change the network's fingerprint.
func TestWebhooksKeepFingerprint(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../examples/support/network.yaml")
	if err != nil {
		t.Fatal(err)
	}
	with := strings.Replace(string(src), "\ntools:\n", "\nwebhooks:\n  - url: https://hooks.example.com/a\n  - url: http://10.0.0.1/b\n    secret_env: HOOK_SECRET\n\ntools:\n", 1)
	a, err := netspec.Parse(src, "support", netspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := netspec.Parse([]byte(with), "support", netspec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.Webhooks, []netspec.WebhookSpec{{URL: "https://hooks.example.com/a"}, {URL: "http://10.0.0.1/b", SecretEnv: "HOOK_SECRET"}}) || a.Webhooks != nil {
		t.Errorf("webhooks %q, %q", b.Webhooks, a.Webhooks)
	}
	if a.Network.Fingerprint() != b.Network.Fingerprint() {
		t.Errorf("fingerprint %s with webhooks, %s without", b.Network.Fingerprint(), a.Network.Fingerprint())
	}
}
