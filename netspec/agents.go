package netspec

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/transfer"
)

// ToolFunc is a tool's function: it gets the call's JSON arguments and
// returns the result the model sees (see agent.Tool.Func).
type ToolFunc = func(ctx context.Context, args json.RawMessage) (string, error)

// wrapTools wraps the function of each tool of agents with wrap, once per
// tool however many agents share it.
func wrapTools(agents []*agent.Agent, wrap func(string, ToolFunc) ToolFunc) {
	done := map[*agent.Tool]bool{}
	for _, a := range agents {
		for _, t := range a.Tools {
			if !done[t] && t.Func != nil {
				done[t] = true
				t.Func = wrap(t.Name, t.Func)
			}
		}
	}
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
