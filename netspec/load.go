package netspec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/policy"
	"github.com/batonhq/baton/transfer"
)

// ProviderSpec is what a provider factory gets to build a non-scripted model.
type ProviderSpec struct {
	Model      string
	BaseURL    string
	APIKeyEnv  string
	HTTPClient *http.Client
}

// Options tune loading. The zero Options load offline networks (scripted
// models and tools with fixed results).
type Options struct {
	// Provider builds non-scripted models ("openai:…", "anthropic:…").
	// Without it such models are an error.
	Provider func(ProviderSpec) (model.Model, error)
	// Tools are Go implementations for tools declared by name in the file;
	// they take precedence over a fixed `result:`.
	Tools map[string]func(ctx context.Context, args json.RawMessage) (string, error)
	// WrapModel, if set, wraps every agent's model (recording, for instance).
	WrapModel func(agentName string, m model.Model) model.Model
	// HTTPClient is passed to providers.
	HTTPClient *http.Client
	// MCP connects to an MCP server of the file and lists its tools (see
	// package mcptool). Without it a file that declares MCP servers is an
	// error.
	MCP func(MCPServer) ([]MCPTool, error)
	// Remote builds the model of a remote A2A agent (see package
	// a2aremote). Without it a file that declares remote agents is an
	// error.
	Remote func(Remote) (model.Model, error)
}

// Spec is a loaded network.
type Spec struct {
	File    *File
	Network *agent.Network
	Policy  policy.Policy
	Picker  policy.Picker
	// Sticky is set when the picker keeps a thread's last active agent.
	Sticky bool
	// Summary is the summary model, when the file declares one.
	Summary model.Model
	// Source is the YAML as read.
	Source []byte
	// ToolSources says, by agent and tool name, where the tools that do not
	// come from tools: come from ("mcp SERVER").
	ToolSources map[string]map[string]string
	// Close, when set, releases what the program that loaded the network
	// opened for it (package service: the sessions with its MCP servers);
	// whoever loaded it calls it once done with the network
	// (service.Service.Close does for the networks it serves).
	Close func() error
}

// Problem is one thing wrong with a file.
type Problem struct {
	Line, Column int
	// Path is the YAML path, like $.agents[1].transfers[0].to.
	Path    string
	Message string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("line %d: %s", p.Line, p.Message)
	}
	return p.Message
}

// Error lists every problem of a file.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		if e.File != "" {
			b.WriteString(e.File)
			b.WriteByte(':')
			if p.Line > 0 {
				b.WriteString(strconv.Itoa(p.Line))
				b.WriteByte(':')
			}
			b.WriteByte(' ')
			b.WriteString(p.Message)
		} else {
			b.WriteString(p.String())
		}
	}
	return b.String()
}

// maxFileBytes bounds a network file (4 MiB).
const maxFileBytes = 4 << 20

// Load reads and loads a network file.
func Load(path string, opts Options) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("netspec: %w", err)
	}
	return Parse(b, path, opts)
}

// Parse loads a network from YAML. name labels problems (a file name).
// It returns an *Error listing every problem with its line: a file that is
// not YAML stops at the syntax error, any other file is checked in full.
func Parse(data []byte, name string, opts Options) (*Spec, error) {
	l := &loader{name: name, opts: opts, src: data}
	if len(data) > maxFileBytes {
		return nil, &Error{File: name, Problems: []Problem{{Message: fmt.Sprintf("file is %d bytes, more than the %d allowed", len(data), maxFileBytes)}}}
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, &Error{File: name, Problems: []Problem{yamlProblem(err)}}
	}
	l.ast = f
	var body ast.Node
	if len(f.Docs) > 0 && f.Docs[0] != nil {
		body = f.Docs[0].Body
	}
	if len(f.Docs) > 1 {
		l.bad("$", "a network file holds one YAML document, not %d", len(f.Docs))
	}
	anchors := collectAnchors(body)
	l.anchors = anchors
	if n := expandedSize(body, anchors, maxExpandedNodes); n > maxExpandedNodes {
		l.bad("$", "the file expands to more than %d values through its aliases", maxExpandedNodes)
		return nil, l.err()
	}
	if _, isMap := unwrapKey(body).(*ast.MappingNode); body != nil && !isMap {
		l.bad("$", "a network file is a mapping (version:, name:, agents: …), not %s", kindOf(unwrapKey(body)))
		return nil, l.err()
	}
	sh := &shaper{l: l, anchors: anchors, checked: map[anchorCheck]bool{}}
	sh.check(body, reflect.TypeFor[File](), "$")
	var file File
	if body != nil {
		// The parser refuses repeated keys; allowing them here lets keys
		// override those brought in by a merge key (<<: *base).
		if err := yaml.NodeToValue(body, &file, yaml.DisallowUnknownField(), yaml.AllowDuplicateMapKey()); err != nil {
			// The shape check keeps this from happening; if it does, report
			// it with what was found so far.
			l.problems = append(l.problems, yamlProblem(err))
			return nil, l.err()
		}
	}
	spec := l.build(&file)
	if len(l.problems) > 0 {
		return nil, l.err()
	}
	spec.Source = data
	return spec, nil
}

// err returns the problems found, sorted by line.
func (l *loader) err() *Error {
	sort.SliceStable(l.problems, func(i, j int) bool {
		a, b := l.problems[i], l.problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return &Error{File: l.name, Problems: l.problems}
}

func yamlProblem(err error) Problem {
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := Problem{Message: strings.TrimSpace(ye.GetMessage())}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Column = tk.Position.Line, tk.Position.Column
		}
		return p
	}
	return Problem{Message: err.Error()}
}

type loader struct {
	name     string
	opts     Options
	src      []byte
	ast      *ast.File
	anchors  map[string]ast.Node
	problems []Problem
	// sources is Spec.ToolSources.
	sources *Spec
}

// bad records a problem at a YAML path, finding its line; a path that is not
// in the file (a missing field) falls back to its nearest parent.
func (l *loader) bad(path, format string, args ...any) {
	p := Problem{Path: path, Message: fmt.Sprintf(format, args...)}
	p.Line, p.Column = l.lineOf(path)
	l.problems = append(l.problems, p)
}

// lineOf returns the position of path, or of its nearest parent in the file.
func (l *loader) lineOf(path string) (line, col int) {
	for q := path; q != ""; q = parent(q) {
		if line, col, ok := l.pos(q); ok {
			return line, col
		}
	}
	return 0, 0
}

func (l *loader) pos(path string) (int, int, bool) {
	if l.ast == nil || len(l.ast.Docs) == 0 || l.ast.Docs[0] == nil {
		return 0, 0, false
	}
	tk := locate(l.ast.Docs[0].Body, l.anchors, path)
	if tk == nil || tk.Position == nil {
		return 0, 0, false
	}
	return tk.Position.Line, tk.Position.Column, true
}

// parent strips the last element of a YAML path.
func parent(p string) string {
	if p == "$" {
		return ""
	}
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return "$"
	}
	return p[:i]
}

func at(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
func field(path, f string) string  { return path + "." + f }

func (l *loader) regexp(path, expr string) *regexp.Regexp {
	re, err := regexp.Compile(expr)
	if err != nil {
		var se *syntax.Error
		if errors.As(err, &se) {
			l.bad(path, "invalid regular expression %q: %s in %q", expr, se.Code, se.Expr)
		} else {
			l.bad(path, "invalid regular expression %q: %v", expr, err)
		}
		return nil
	}
	return re
}

func (l *loader) schema(path string, v map[string]any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := marshalJSON(v)
	if err != nil {
		l.bad(path, "schema is not JSON-compatible: %v", err)
		return nil
	}
	if _, err := schemas.Compile(b); err != nil {
		l.bad(path, "%s", schemaMessage(err))
		return nil
	}
	return b
}

// objectSchema is schema for the arguments of a tool call, which are always
// a JSON object.
func (l *loader) objectSchema(path string, v map[string]any) json.RawMessage {
	b := l.schema(path, v)
	if b == nil {
		return nil
	}
	if t, ok := v["type"]; ok && t != "object" {
		l.bad(field(path, "type"), "tool arguments are a JSON object: the schema's type must be object (got %v)", t)
		return nil
	}
	return b
}

// marshalJSON encodes v as JSON without escaping <, > and &, which are text
// a model or a person reads.
func marshalJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// namePattern is the shape of agent and tool names (see agent.NewNetwork).
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func (l *loader) build(f *File) *Spec {
	spec := &Spec{File: f}
	if f.Version != 1 {
		l.bad("$.version", "version must be 1 (got %d)", f.Version)
	}
	if f.Name == "" {
		l.bad("$", "name is required")
	}
	if len(f.Agents) == 0 {
		l.bad("$", "at least one agent is required")
	}
	agentIdx := map[string]int{}
	for i, a := range f.Agents {
		if a.Name == "" {
			l.bad(at("$.agents", i), "agent name is required")
			continue
		}
		if j, dup := agentIdx[a.Name]; !l.declare(at("$.agents", i), "agent", a.Name, dup, fmt.Sprintf(" (first at agents[%d])", j)) {
			continue
		}
		agentIdx[a.Name] = i
	}
	known := func(path, name string) bool {
		if _, ok := agentIdx[name]; !ok {
			l.bad(path, "unknown agent %q (%s)", name, declared("agents", sortedKeys(agentIdx)))
			return false
		}
		return true
	}
	if f.Entry != "" {
		known("$.entry", f.Entry)
	}
	tools := l.tools(f)
	l.sources = spec
	mcp := l.mcpServers("$.mcp_servers", f.MCPServers, tools)
	var agents []*agent.Agent
	for i := range f.Agents {
		if a := l.agent(at("$.agents", i), &f.Agents[i], tools, mcp, known); a != nil {
			agents = append(agents, a)
		}
	}
	var limits agent.Limits
	if lim := f.Limits; lim != nil {
		limits = agent.Limits{MaxTurns: lim.MaxTurns, MaxTransfers: lim.MaxTransfers, Timeout: time.Duration(lim.Timeout),
			TokenBudget: lim.TokenBudget, PingPong: lim.PingPong, OnLimit: lim.OnLimit}
		switch lim.OnLimit {
		case "", "error", "final_answer":
		default:
			l.bad("$.limits.on_limit", "on_limit must be error or final_answer (got %q)", lim.OnLimit)
		}
		for _, v := range []struct {
			name string
			n    int64
		}{{"max_turns", int64(lim.MaxTurns)}, {"max_transfers", int64(lim.MaxTransfers)}, {"token_budget", lim.TokenBudget}} {
			if v.n < 0 {
				l.bad("$.limits."+v.name, "%s must not be negative", v.name)
			}
		}
	}
	spec.Policy = l.policy(f, known)
	spec.Picker, spec.Sticky = l.picker(f, known)
	if f.Summary != nil {
		spec.Summary = l.model("$.summary", "summary", &f.Summary.ModelSpec)
	}
	if len(l.problems) > 0 {
		return spec
	}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: f.Name, Entry: f.Entry, Agents: agents, Limits: limits, Spec: fingerprintSpec(f)})
	if err != nil {
		l.bad("$", "%v", err)
		return spec
	}
	spec.Network = net
	return spec
}

// declared lists what a file declares: "tools: a, b" or "no tools are declared".
func declared(what string, names []string) string {
	if len(names) == 0 {
		return "no " + what + " are declared"
	}
	return what + ": " + strings.Join(names, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// declare checks the name, not empty, of a what ("agent", "tool", "MCP
// server") declared at path, dup when the name is taken: a name taken is
// reported, with the words first saying where it was first declared, and
// the declaration is to be skipped (false); a name namePattern refuses is
// reported, and the declaration kept.
func (l *loader) declare(path, what, name string, dup bool, first string) bool {
	if dup {
		l.bad(field(path, "name"), "%s %q is declared twice%s", what, name, first)
		return false
	}
	if !namePattern.MatchString(name) {
		l.bad(field(path, "name"), "%s name %q must be 1-64 letters, digits, '_' or '-'", what, name)
	}
	return true
}

func (l *loader) tools(f *File) map[string]*agent.Tool {
	out := map[string]*agent.Tool{}
	for i, t := range f.Tools {
		path := at("$.tools", i)
		if t.Name == "" {
			l.bad(path, "tool name is required")
			continue
		}
		if _, dup := out[t.Name]; !l.declare(path, "tool", t.Name, dup, "") {
			continue
		}
		params := l.objectSchema(field(path, "parameters"), t.Parameters)
		tool := &agent.Tool{Name: t.Name, Description: t.Description, Parameters: params, Timeout: time.Duration(t.Timeout),
			Slow: t.Slow || t.Continuation == "background", Idempotent: t.Idempotent}
		switch t.Approval {
		case "", "none":
		case "required":
			tool.RequireApproval = func(context.Context, json.RawMessage) bool { return true }
		default:
			l.bad(field(path, "approval"), "approval must be required or none (got %q)", t.Approval)
		}
		switch t.Continuation {
		case "", "inline", "background":
		default:
			l.bad(field(path, "continuation"), "continuation must be inline or background (got %q)", t.Continuation)
		}
		if fn, ok := l.opts.Tools[t.Name]; ok {
			tool.Func = fn
		} else if t.Result != nil {
			var result string
			if s, ok := t.Result.(string); ok {
				result = s
			} else {
				b, err := marshalJSON(t.Result)
				if err != nil {
					l.bad(field(path, "result"), "result is not JSON-compatible: %v", err)
				}
				result = string(b)
			}
			tool.Func = func(context.Context, json.RawMessage) (string, error) { return result, nil }
		} else {
			l.bad(path, "tool %q has no result: and no Go implementation", t.Name)
		}
		out[t.Name] = tool
	}
	return out
}

func (l *loader) agent(path string, s *AgentSpec, tools map[string]*agent.Tool, mcp map[string]*mcpResolved, known func(string, string) bool) *agent.Agent {
	if s.Name == "" {
		return nil
	}
	a := &agent.Agent{Name: s.Name, Description: s.Description, Instructions: s.Instructions, Settings: s.Settings,
		ModelName: s.Model, Background: s.Continuation == "background"}
	switch s.Continuation {
	case "", "inline", "background":
	default:
		l.bad(field(path, "continuation"), "continuation must be inline or background (got %q)", s.Continuation)
	}
	if s.Remote != nil {
		a.Model, a.ModelName = l.remote(path, s), "a2a:"+s.Remote.Card
	} else {
		a.Model = l.model(path, s.Name, &s.ModelSpec)
	}
	unresolved := l.agentMCP(path, s, a, tools, mcp)
	for i, name := range s.Tools {
		t, ok := tools[name]
		if !ok {
			if t, server, found, failed := mcpTool(mcp, name); found {
				a.Tools = append(a.Tools, t)
				l.toolSource(l.sources, s.Name, name, "mcp "+server)
				continue
			} else if failed {
				unresolved = true
				continue
			}
			l.bad(at(field(path, "tools"), i), "unknown tool %q (%s)", name, declared("tools", sortedKeys(tools)))
			continue
		}
		a.Tools = append(a.Tools, t)
	}
	// peer checks the agent a transfer or an agent tool at p names in its
	// field key.
	peer := func(p, key, name, missing, self string) bool {
		switch {
		case name == "":
			l.bad(p, "%s", missing)
		case !known(field(p, key), name): // known reports it
		case name == s.Name:
			l.bad(field(p, key), "agent %s %s", s.Name, self)
		default:
			return true
		}
		return false
	}
	for i, h := range s.Transfers {
		hp := at(field(path, "transfers"), i)
		if !peer(hp, "to", h.To, "transfer target (to:) is required", "cannot transfer to itself") {
			continue
		}
		ho := &transfer.Transfer{To: h.To, ToolName: h.Tool, Description: h.Description, History: transfer.HistoryPolicy(h.History),
			SystemMessage: h.SystemMessage, Return: h.Return, ContextSchema: l.objectSchema(field(hp, "context_schema"), h.ContextSchema)}
		switch ho.Policy() {
		case transfer.HistoryFull, transfer.HistoryLastUser, transfer.HistoryNone:
		default:
			l.bad(field(hp, "history"), "history must be full, last_user or none (got %q)", h.History)
		}
		for j, t := range h.Transforms {
			if tr := l.transform(at(field(hp, "transforms"), j), s.Name, t); tr != nil {
				ho.Transforms = append(ho.Transforms, tr)
			}
		}
		a.Transfers = append(a.Transfers, ho)
	}
	for i, t := range s.AgentTools {
		if !peer(at(field(path, "agent_tools"), i), "agent", t.Agent, "an agent tool needs agent: (the agent to call)", "cannot call itself as a tool") {
			continue
		}
		a.AgentTools = append(a.AgentTools, &agent.AgentTool{Agent: t.Agent, ToolName: t.Tool, Description: t.Description})
	}
	l.toolNames(path, s, a, unresolved)
	a.OutputSchema = l.schema(field(path, "output_schema"), s.OutputSchema)
	if g := s.Guardrails; g != nil {
		a.InputGuardrails = l.guardrails(field(field(path, "guardrails"), "input"), g.Input)
		a.OutputGuardrails = l.guardrails(field(field(path, "guardrails"), "output"), g.Output)
	}
	return a
}

// toolNames checks that the tool names an agent's model sees (its tools,
// transfer tools and agent tools) are well formed and distinct, and that a
// script calls only those.
func (l *loader) toolNames(path string, s *AgentSpec, a *agent.Agent, unresolved bool) {
	names := map[string]string{}
	// claim takes name for what; p is where it is declared, or the entry
	// (of transfers, agent_tools) whose tool: field overrides it.
	claim := func(p, tool, name, what string) {
		if tool != "" {
			p = field(p, "tool")
		}
		if !namePattern.MatchString(name) {
			l.bad(p, "%s: tool name %q must be 1-64 letters, digits, '_' or '-'", what, name)
		}
		if prev, dup := names[name]; dup {
			l.bad(p, "tool name %q is used by %s and by %s", name, prev, what)
			return
		}
		names[name] = what
	}
	for i, name := range s.Tools {
		if prev, dup := names[name]; dup {
			l.bad(at(field(path, "tools"), i), "tool name %q is used by %s and by tool %s", name, prev, name)
			continue
		}
		names[name] = "tool " + name
	}
	for _, t := range a.Tools {
		if src := l.sources.ToolSources[s.Name][t.Name]; src != "" && !slices.Contains(s.Tools, t.Name) {
			claim(path, "", t.Name, "tool "+t.Name+" of "+src)
		}
	}
	for i, h := range s.Transfers {
		if h.To != "" {
			ho := transfer.Transfer{To: h.To, ToolName: h.Tool}
			claim(at(field(path, "transfers"), i), h.Tool, ho.Tool(), "the transfer to "+h.To)
		}
	}
	for i, t := range s.AgentTools {
		if t.Agent != "" {
			agt := agent.AgentTool{Agent: t.Agent, ToolName: t.Tool}
			claim(at(field(path, "agent_tools"), i), t.Tool, agt.Tool(), "the agent tool "+t.Agent)
		}
	}
	if s.Model != "scripted" || unresolved {
		return
	}
	callable := sortedKeys(names)
	if len(callable) == 0 {
		callable = []string{"nothing"}
	}
	for i, st := range s.Script {
		for j, c := range st.ToolCalls {
			if c.Name == "" {
				continue
			}
			if _, ok := names[c.Name]; !ok {
				l.bad(field(at(field(at(field(path, "script"), i), "tool_calls"), j), "name"),
					"the script calls %q, which agent %s cannot call (it can call %s)", c.Name, s.Name, strings.Join(callable, ", "))
			}
		}
	}
}

func (l *loader) guardrails(path string, gs []GuardrailSpec) []agent.Guardrail {
	var out []agent.Guardrail
	for i, g := range gs {
		gp := at(path, i)
		if g.Name == "" {
			l.bad(gp, "guardrail name is required")
		}
		re := l.regexp(field(gp, "deny"), g.Deny)
		if re == nil {
			continue
		}
		msg := g.Message
		if msg == "" {
			msg = "matched " + g.Deny
		}
		out = append(out, agent.Guardrail{Name: g.Name, Check: func(_ context.Context, in agent.GuardrailInput) error {
			if re.MatchString(in.Text) {
				return agent.Tripwire(msg)
			}
			return nil
		}})
	}
	return out
}

func (l *loader) transform(path, agentName string, v any) transfer.Transform {
	const want = "a transform is a name or a mapping with one key (drop_tool_traffic, redact, compact)"
	name, args := "", any(nil)
	switch t := v.(type) {
	case string:
		name = t
	case map[string]any:
		if len(t) != 1 {
			l.bad(path, "%s", want)
			return nil
		}
		for k, a := range t {
			name, args = k, a
		}
	default:
		l.bad(path, "%s", want)
		return nil
	}
	// options decodes args into out; the shape check has vetted them.
	options := func(out any) bool {
		if args == nil {
			return true
		}
		b, err := yaml.Marshal(args)
		if err == nil {
			err = yaml.UnmarshalWithOptions(b, out, yaml.DisallowUnknownField())
		}
		if err != nil {
			l.bad(field(path, name), "transform %s: %s", name, strings.TrimSpace(yamlProblem(err).Message))
			return false
		}
		return true
	}
	switch name {
	case "drop_tool_traffic":
		if args != nil {
			l.bad(field(path, name), "drop_tool_traffic takes no options")
			return nil
		}
		return transfer.DropToolTraffic{}
	case "redact":
		var rs redactSpec
		if !options(&rs) {
			return nil
		}
		if len(rs.Patterns) == 0 {
			l.bad(path, "redact needs patterns: [REGEX, …]")
			return nil
		}
		r := transfer.Redact{Replacement: rs.Replacement}
		for i, p := range rs.Patterns {
			if re := l.regexp(at(field(field(path, name), "patterns"), i), p); re != nil {
				r.Patterns = append(r.Patterns, re)
			}
		}
		if len(r.Patterns) != len(rs.Patterns) {
			return nil
		}
		return r
	case "compact":
		var cs compactSpec
		if !options(&cs) {
			return nil
		}
		if cs.KeepRecent < 0 {
			l.bad(field(field(path, name), "keep_recent"), "compact keep_recent must not be negative")
			return nil
		}
		if cs.Model == "" {
			l.bad(path, "compact needs a model: (scripted or PROVIDER:MODEL) for its summaries")
			return nil
		}
		m := l.model(field(path, name), agentName+"_compact", &cs.ModelSpec)
		if m == nil {
			return nil
		}
		return transfer.Compact{Model: m, KeepRecent: cs.KeepRecent, Prompt: cs.Prompt}
	}
	l.bad(path, "unknown transform %q (want drop_tool_traffic, redact or compact)", name)
	return nil
}

// model builds the model of agentName from s.
func (l *loader) model(path, agentName string, s *ModelSpec) model.Model {
	var m model.Model
	switch {
	case s.Model == "":
		l.bad(path, "model is required (scripted, openai:<model>, openai-responses:<model>, anthropic:<model>, openai-compatible:<model>)")
		return nil
	case s.Model == "scripted":
		if s.BaseURL != "" {
			l.bad(field(path, "base_url"), "base_url is for provider models, not scripted")
		}
		if s.APIKeyEnv != "" {
			l.bad(field(path, "api_key_env"), "api_key_env is for provider models, not scripted")
		}
		if s.Stream != nil && s.Stream.ChunkWords < 0 {
			l.bad(field(field(path, "stream"), "chunk_words"), "chunk_words must not be negative")
		}
		if len(s.Script) == 0 && len(s.Rules) == 0 && s.Reply == "" {
			l.bad(path, "a scripted model needs a script: of steps, rules: or a reply:")
			return nil
		}
		steps := l.steps(field(path, "script"), s.Script)
		var o scripted.Options
		if s.Stream != nil {
			o = scripted.Options{ChunkWords: s.Stream.ChunkWords, ChunkDelay: time.Duration(s.Stream.Delay)}
		}
		o.Reply = s.Reply
		for i, r := range s.Rules {
			rp := at(field(path, "rules"), i)
			first := r.StepSpec
			first.When = ""
			rule := scripted.Rule{Steps: []scripted.Step{l.step(rp, first)}}
			if r.When != "" {
				rule.When = l.regexp(field(rp, "when"), r.When)
			}
			for j, t := range r.Then {
				if t.When != "" {
					l.bad(field(at(field(rp, "then"), j), "when"), "a rule's then: steps answer the same turn; only the rule has a when:")
				}
			}
			rule.Steps = append(rule.Steps, l.steps(field(rp, "then"), r.Then)...)
			o.Rules = append(o.Rules, rule)
		}
		m = scripted.New(agentName, steps, o)
	default:
		if len(s.Script) > 0 {
			l.bad(field(path, "script"), "script: is only for model: scripted")
		}
		if len(s.Rules) > 0 || s.Reply != "" {
			l.bad(field(path, "rules"), "rules: and reply: are only for model: scripted")
		}
		if s.Stream != nil {
			l.bad(field(path, "stream"), "stream: simulates streaming for model: scripted; provider models stream for real")
		}
		prefix, name, ok := strings.Cut(s.Model, ":")
		switch {
		case !ok || name == "":
			l.bad(field(path, "model"), "model %q: want scripted or PROVIDER:MODEL", s.Model)
			return nil
		case prefix != "openai" && prefix != "openai-responses" && prefix != "anthropic" && prefix != "openai-compatible":
			l.bad(field(path, "model"), "unknown provider %q (want openai, openai-responses, anthropic or openai-compatible)", prefix)
			return nil
		case prefix == "openai-compatible" && s.BaseURL == "":
			l.bad(field(path, "model"), "openai-compatible models need base_url")
			return nil
		case l.opts.Provider == nil:
			l.bad(field(path, "model"), "model %q: no provider is configured in this program", s.Model)
			return nil
		}
		pm, err := l.opts.Provider(ProviderSpec{Model: s.Model, BaseURL: s.BaseURL, APIKeyEnv: s.APIKeyEnv, HTTPClient: l.opts.HTTPClient})
		if err != nil {
			l.bad(field(path, "model"), "%v", err)
			return nil
		}
		m = pm
	}
	if l.opts.WrapModel != nil {
		m = l.opts.WrapModel(agentName, m)
	}
	return m
}

func (l *loader) steps(path string, in []StepSpec) []scripted.Step {
	out := make([]scripted.Step, 0, len(in))
	for i, s := range in {
		out = append(out, l.step(at(path, i), s))
	}
	return out
}

// step returns the scripted step of s, at path sp.
func (l *loader) step(sp string, s StepSpec) scripted.Step {
	st := scripted.Step{Text: s.Text, Texts: s.Texts, Reasoning: s.Reasoning, FinishReason: s.FinishReason, Refusal: s.Refusal, Delay: time.Duration(s.Delay)}
	if s.When != "" {
		st.When = l.regexp(field(sp, "when"), s.When)
	}
	if s.Text == "" && len(s.Texts) == 0 && len(s.ToolCalls) == 0 && s.Fail == nil && s.FinishReason == "" {
		l.bad(sp, "a script step needs text:, tool_calls: or fail: (or texts:, or finish_reason:)")
	}
	switch s.FinishReason {
	case "", model.FinishStop, model.FinishToolCalls, model.FinishLength, model.FinishContentFilter, model.FinishRefusal, model.FinishPauseTurn:
	default:
		l.bad(field(sp, "finish_reason"), "unknown finish_reason %q (want length, content_filter, refusal or pause_turn)", s.FinishReason)
	}
	for j, c := range s.ToolCalls {
		if c.Name == "" {
			l.bad(at(field(sp, "tool_calls"), j), "a tool call needs a name")
			continue
		}
		args := json.RawMessage(`{}`)
		if c.Arguments != nil {
			b, err := marshalJSON(c.Arguments)
			if err != nil {
				l.bad(at(field(sp, "tool_calls"), j), "arguments are not JSON-compatible: %v", err)
				continue
			}
			args = b
		}
		st.ToolCalls = append(st.ToolCalls, scripted.Call{ID: c.ID, Name: c.Name, Arguments: args})
	}
	if u := s.Usage; u != nil && (u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedTokens < 0 || u.CacheCreationTokens < 0 || u.ReasoningTokens < 0) {
		l.bad(field(sp, "usage"), "usage token counts must not be negative")
	}
	if f := s.Fail; f != nil && f.Times < 0 {
		l.bad(field(field(sp, "fail"), "times"), "fail times must not be negative (0 means always)")
	}
	if s.Usage != nil {
		u := s.Usage
		st.Usage = &message.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens,
			CacheCreationTokens: u.CacheCreationTokens, ReasoningTokens: u.ReasoningTokens}
	}
	if f := s.Fail; f != nil {
		st.Fail = &scripted.Fail{Status: f.Status, Message: f.Message, Transient: f.Transient, RetryAfter: time.Duration(f.RetryAfter), Times: f.Times}
	}
	return st
}

func (l *loader) policy(f *File, known func(string, string) bool) policy.Policy {
	ps := f.Policy
	if ps == nil {
		return policy.Explicit{}
	}
	switch ps.Type {
	case "", "explicit":
		if len(ps.Rules) > 0 {
			return policy.Composite{l.rules(ps, known), policy.Explicit{}}
		}
		return policy.Explicit{}
	case "sequential":
		if len(ps.Steps) < 2 {
			l.bad("$.policy.steps", "a sequential policy needs at least two steps")
		}
		for i, s := range ps.Steps {
			known(at("$.policy.steps", i), s)
		}
		seq := policy.Sequential{Steps: ps.Steps}
		if len(ps.Rules) > 0 {
			return policy.Composite{l.rules(ps, known), seq}
		}
		return seq
	case "rules":
		if len(ps.Rules) == 0 {
			l.bad("$.policy", "a rules policy needs rules")
		}
		return l.rules(ps, known)
	}
	l.bad("$.policy.type", "policy type must be explicit, sequential or rules (got %q)", ps.Type)
	return policy.Explicit{}
}

func (l *loader) rules(ps *PolicySpec, known func(string, string) bool) policy.Rules {
	var out policy.Rules
	for i, r := range ps.Rules {
		rp := at("$.policy.rules", i)
		if r.Name == "" {
			l.bad(rp, "a rule needs a name")
		}
		if r.To == "" {
			l.bad(rp, "a rule needs to: (the agent to transfer to)")
		} else {
			known(field(rp, "to"), r.To)
		}
		if r.From != "" {
			known(field(rp, "from"), r.From)
		}
		w := r.When
		var ans, inp, res *regexp.Regexp
		if w.AnswerMatches != "" {
			ans = l.regexp(field(rp, "when"), w.AnswerMatches)
		}
		if w.InputMatches != "" {
			inp = l.regexp(field(rp, "when"), w.InputMatches)
		}
		if w.ToolResultMatches != "" {
			res = l.regexp(field(rp, "when"), w.ToolResultMatches)
		}
		switch transfer.HistoryPolicy(r.History) {
		case "", transfer.HistoryFull, transfer.HistoryLastUser, transfer.HistoryNone:
		default:
			l.bad(field(rp, "history"), "history must be full, last_user or none (got %q)", r.History)
		}
		if w == (RuleCondition{}) {
			l.bad(rp, "rule %q has no when: condition", r.Name)
		}
		if w.AnswerMatches != "" && w.ToolResultMatches != "" {
			// An answer is a turn without tool calls: no tool result is
			// the last thing then.
			l.bad(field(rp, "when"), "answer_matches and tool_result_matches never hold together (one is checked after an answer, the other after tool results)")
		}
		at := policy.Point("")
		if ans != nil {
			at = policy.AfterAnswer
		} else if res != nil {
			at = policy.AfterTools
		}
		out = append(out, policy.Rule{Name: r.Name, From: r.From, To: r.To, At: at, History: transfer.HistoryPolicy(r.History),
			When: func(_ context.Context, v *policy.View) bool {
				if ans != nil && !ans.MatchString(v.Answer) {
					return false
				}
				if inp != nil && !inp.MatchString(v.Input) {
					return false
				}
				if res != nil && !lastResultsMatch(v.Messages, res) {
					return false
				}
				if w.TurnsAtLeast > 0 && v.Turns < w.TurnsAtLeast {
					return false
				}
				if w.TokensAtLeast > 0 && v.Usage.Total() < w.TokensAtLeast {
					return false
				}
				return true
			}})
	}
	return out
}

// lastResultsMatch reports whether a tool result of the last turn matches re.
func lastResultsMatch(msgs []message.Message, re *regexp.Regexp) bool {
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == message.RoleTool; i-- {
		for _, p := range msgs[i].Parts {
			if re.MatchString(p.Text) {
				return true
			}
		}
	}
	return false
}

func (l *loader) picker(f *File, known func(string, string) bool) (policy.Picker, bool) {
	ps := f.Picker
	if ps == nil {
		return nil, false
	}
	var chain policy.Chain
	if ps.Sticky {
		chain.Pickers = append(chain.Pickers, policy.Sticky{})
	}
	var rules policy.RulePicker
	for i, r := range ps.Rules {
		rp := at("$.picker.rules", i)
		if r.Agent == "" {
			l.bad(rp, "a picker rule needs agent: (the agent to start with)")
		} else {
			known(field(rp, "agent"), r.Agent)
		}
		pr := policy.PickRule{Agent: r.Agent, Keywords: r.Keywords}
		if r.Match != "" {
			pr.Match = l.regexp(field(rp, "match"), r.Match)
		}
		if r.Match == "" && len(r.Keywords) == 0 {
			l.bad(rp, "a picker rule needs match: or keywords:")
		}
		rules = append(rules, pr)
	}
	if len(rules) > 0 {
		chain.Pickers = append(chain.Pickers, rules)
	}
	if c := ps.Classifier; c != nil {
		cl := &policy.Classifier{Model: l.model("$.picker.classifier", "picker", &c.ModelSpec), Lenient: true}
		names := c.Agents
		if len(names) == 0 {
			for _, a := range f.Agents {
				names = append(names, a.Name)
			}
		}
		for i, n := range names {
			if len(c.Agents) > 0 && !known(at("$.picker.classifier.agents", i), n) {
				continue
			}
			for _, a := range f.Agents {
				if a.Name == n {
					cl.Candidates = append(cl.Candidates, policy.Candidate{Name: n, Description: a.Description})
				}
			}
		}
		chain.Pickers = append(chain.Pickers, cl)
	}
	if ps.Default != "" {
		known("$.picker.default", ps.Default)
		chain.Default = ps.Default
	}
	return chain, ps.Sticky
}
