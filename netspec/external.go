package netspec

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/model"
)

// This file is what a network takes from outside: the tools of MCP servers
// (mcp_servers:, an agent's mcp:) and remote A2A agents (an agent's
// remote:). The loader checks their declarations; the program that loads
// the file connects to them through Options.MCP and Options.Remote.

// MCPServer is an MCP server declaration as [Options].MCP gets it.
type MCPServer struct {
	// Spec is the declaration as written: ${NAME} references in env and
	// headers are not expanded (see [ExpandEnv]).
	Spec MCPServerSpec
	// Dir is the directory of the network file, against which a relative
	// command or dir is resolved ("" for a file without a path).
	Dir string
}

// MCPTool is a tool an MCP server offers, as [Options].MCP returns it.
type MCPTool struct {
	// Name, Description and Parameters (its input JSON Schema) are the
	// server's.
	Name        string
	Description string
	Parameters  json.RawMessage
	// ReadOnly and Idempotent are the server's annotations (readOnlyHint,
	// idempotentHint): a call may then be sent again for the same tool call
	// of a run after a crash.
	ReadOnly, Idempotent bool
	// Call calls the tool with the validated arguments. With atMostOnce it
	// never sends the call twice for one tool call of a run, across retries
	// and processes (agent.Memo): a call whose first sending may have
	// reached the server gets an error result instead.
	Call func(ctx context.Context, args json.RawMessage, atMostOnce bool) (string, error)
}

// Remote is a remote agent declaration as [Options].Remote gets it.
type Remote struct {
	// Agent is the agent's name in the network.
	Agent string
	// Spec is the declaration as written (headers unexpanded).
	Spec RemoteSpec
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ExpandEnv replaces each ${NAME} in s by lookup(NAME). A $ not followed by
// { is kept as is. It fails on a ${ without its }, a NAME that is not
// letters, digits and _ (not starting with a digit), and a variable that
// lookup does not have (its name is in the error, never a value).
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		name := rest[i+2 : i+j]
		if !envName.MatchString(name) {
			return "", fmt.Errorf("${%s}: a variable name is letters, digits and _, not starting with a digit", name)
		}
		if lookup == nil {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(v)
		rest = rest[i+j+1:]
	}
}

// checkEnv checks the ${NAME} references of s without expanding them.
func checkEnv(s string) error {
	_, err := ExpandEnv(s, func(string) (string, bool) { return "", true })
	return err
}

// toolSource records where an agent's tool comes from, for Spec.ToolSources.
func (l *loader) toolSource(spec *Spec, agentName, tool, source string) {
	if spec.ToolSources == nil {
		spec.ToolSources = map[string]map[string]string{}
	}
	if spec.ToolSources[agentName] == nil {
		spec.ToolSources[agentName] = map[string]string{}
	}
	spec.ToolSources[agentName][tool] = source
}

// mcpResolved is an MCP server's tools as the agents get them.
type mcpResolved struct {
	name  string
	tools []*agent.Tool
	// failed is set when the server's tools are unknown (a problem was
	// reported): references to its tools are not checked.
	failed bool
}

// mcpServers checks and resolves the MCP servers declared at path (the
// top level's or an agent's), by name.
func (l *loader) mcpServers(path string, specs []MCPServerSpec, declaredTools map[string]*agent.Tool) map[string]*mcpResolved {
	out := map[string]*mcpResolved{}
	for i := range specs {
		sp := at(path, i)
		s := &specs[i]
		if s.Name == "" {
			l.bad(sp, "an MCP server needs a name")
			continue
		}
		if _, dup := out[s.Name]; !l.declare(sp, "MCP server", s.Name, dup, "") {
			continue
		}
		out[s.Name] = l.mcpServer(sp, s, declaredTools)
	}
	return out
}

// mcpServer checks the MCP server s declared at path, connects to it and
// makes agent tools of the tools it offers (or of those s lists).
func (l *loader) mcpServer(path string, s *MCPServerSpec, declaredTools map[string]*agent.Tool) *mcpResolved {
	res := &mcpResolved{name: s.Name, failed: true}
	if !l.checkMCPServer(path, s) {
		return res
	}
	if l.opts.MCP == nil {
		l.bad(path, "MCP server %s: no MCP client is configured in this program", s.Name)
		return res
	}
	got, err := l.opts.MCP(MCPServer{Spec: *s, Dir: l.dir()})
	if err != nil {
		l.bad(path, "MCP server %s: %v", s.Name, err)
		return res
	}
	byName := map[string]MCPTool{}
	var offered []string
	for _, t := range got {
		byName[t.Name] = t
		offered = append(offered, t.Name)
	}
	sort.Strings(offered)
	if !l.checkMCPOffers(path, s, byName, offered) {
		return res
	}
	names := offered
	if len(s.Tools) > 0 {
		names = slices.Clone(s.Tools)
	}
	res.failed = false
	seen := map[string]string{}
	for _, n := range names {
		tool, ok := l.mcpAgentTool(path, s, byName[n], seen, declaredTools)
		if !ok {
			res.failed = true
			continue
		}
		res.tools = append(res.tools, tool)
	}
	return res
}

// checkMCPServer checks what s declares before its server is asked for
// anything: one transport and its own fields, environment and header
// references, the prefix, the lists of tools. It reports whether s passed.
func (l *loader) checkMCPServer(path string, s *MCPServerSpec) bool {
	ok := l.checkMCPTransport(path, s)
	bad := func(p, format string, args ...any) {
		l.bad(p, format, args...)
		ok = false
	}
	for _, k := range sortedKeys(s.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad(field(path, "env"), "MCP server %s: environment variable name %q is invalid", s.Name, k)
		}
		if err := checkEnv(s.Env[k]); err != nil {
			bad(field(field(path, "env"), k), "MCP server %s: env %s: %v", s.Name, k, err)
		}
	}
	for _, k := range sortedKeys(s.Headers) {
		if err := checkEnv(s.Headers[k]); err != nil {
			bad(field(field(path, "headers"), k), "MCP server %s: header %s: %v", s.Name, k, err)
		}
	}
	if s.Prefix != "" && !regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`).MatchString(s.Prefix) {
		bad(field(path, "prefix"), "MCP server %s: prefix %q must be 1-32 letters, digits, '_' or '-'", s.Name, s.Prefix)
	}
	for _, list := range []struct {
		key   string
		names []string
		star  bool
	}{{"tools", s.Tools, false}, {"approval", s.Approval, true}, {"idempotent", s.Idempotent, true}, {"slow", s.Slow, true}} {
		for j, n := range list.names {
			switch {
			case n == "":
				bad(at(field(path, list.key), j), "MCP server %s: %s: an empty tool name", s.Name, list.key)
			case n == "*" && !list.star:
				bad(at(field(path, list.key), j), "MCP server %s: tools: lists tools by name (leave tools: out for all of them)", s.Name)
			}
		}
	}
	return ok
}

// checkMCPTransport checks that s has one transport, a command or a URL,
// and no field of the other. It reports whether s passed.
func (l *loader) checkMCPTransport(path string, s *MCPServerSpec) bool {
	ok := true
	bad := func(p, format string, args ...any) {
		l.bad(p, format, args...)
		ok = false
	}
	switch {
	case s.Command == "" && s.URL == "":
		bad(path, "MCP server %s needs command: (a program speaking MCP on its standard input and output) or url: (a streamable HTTP endpoint)", s.Name)
	case s.Command != "" && s.URL != "":
		bad(path, "MCP server %s has both command: and url:; give one", s.Name)
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(field(path, "url"), "MCP server %s: url %q must be an http:// or https:// URL", s.Name, s.URL)
		}
		for k, what := range map[string]bool{"args": len(s.Args) > 0, "env": len(s.Env) > 0, "dir": s.Dir != ""} {
			if what {
				bad(field(path, k), "MCP server %s: %s: is for a command, not a url", s.Name, k)
			}
		}
	default:
		if len(s.Headers) > 0 {
			bad(field(path, "headers"), "MCP server %s: headers: are for a url, not a command", s.Name)
		}
	}
	return ok
}

// checkMCPOffers checks that every name s lists is one of the tools its
// server offers (byName; offered sorted). It reports whether s passed.
func (l *loader) checkMCPOffers(path string, s *MCPServerSpec, byName map[string]MCPTool, offered []string) bool {
	ok := true
	for _, list := range []struct {
		key   string
		names []string
	}{{"tools", s.Tools}, {"approval", s.Approval}, {"idempotent", s.Idempotent}, {"slow", s.Slow}} {
		for j, n := range list.names {
			if _, found := byName[n]; !found && n != "*" {
				l.bad(at(field(path, list.key), j), "MCP server %s offers no tool %q (%s)", s.Name, n, declared("its tools", offered))
				ok = false
			}
		}
	}
	return ok
}

// mcpAgentTool makes the agent tool of t, a tool of s's server: its name
// (the prefix, then t's name made a tool name) distinct from seen's (agent
// tool name → MCP name, which it adds to) and from declaredTools', and its
// input schema an object's. ok is false when it reported a problem.
func (l *loader) mcpAgentTool(path string, s *MCPServerSpec, t MCPTool, seen map[string]string, declaredTools map[string]*agent.Tool) (tool *agent.Tool, ok bool) {
	n := t.Name
	name := s.Prefix + mcpToolName(n)
	if !namePattern.MatchString(name) {
		l.bad(path, "MCP server %s: tool %q becomes %q, which is not 1-64 letters, digits, '_' or '-'; leave it out of tools: or shorten the prefix", s.Name, n, name)
		return nil, false
	}
	if prev, dup := seen[name]; dup {
		l.bad(path, "MCP server %s: tools %q and %q are both named %q here", s.Name, prev, n, name)
		return nil, false
	}
	seen[name] = n
	if _, clash := declaredTools[name]; clash {
		l.bad(path, "MCP server %s: its tool %q has the name of a tool of tools:; give the server a prefix:", s.Name, name)
		return nil, false
	}
	params := t.Parameters
	if len(params) == 0 {
		params = schemas.ObjectSchema
	}
	if err := objectParams(params); err != nil {
		l.bad(path, "MCP server %s: tool %s: input schema: %v", s.Name, n, err)
		return nil, false
	}
	atMostOnce := !(t.ReadOnly || t.Idempotent || listed(s.Idempotent, n))
	call := t.Call
	tool = &agent.Tool{Name: name, Description: t.Description, Parameters: params, Timeout: time.Duration(s.Timeout),
		Slow: listed(s.Slow, n),
		Func: func(ctx context.Context, args json.RawMessage) (string, error) { return call(ctx, args, atMostOnce) }}
	if listed(s.Approval, n) {
		tool.RequireApproval = func(context.Context, json.RawMessage) bool { return true }
	}
	return tool, true
}

// listed reports whether name (or "*") is in names.
func listed(names []string, name string) bool {
	return slices.Contains(names, name) || slices.Contains(names, "*")
}

// mcpToolName is an MCP tool's name with what a tool name cannot hold
// replaced by _ (MCP names may have dots and slashes).
func mcpToolName(n string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, n)
}

// objectParams checks an MCP tool's input schema: a JSON Schema of an
// object.
func objectParams(b json.RawMessage) error {
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if t, ok := v["type"]; ok && t != "object" {
		return fmt.Errorf("the type of tool arguments is object, not %v", t)
	}
	if _, err := schemas.Compile(b); err != nil {
		return err
	}
	return nil
}

// dir is the directory of the file being loaded.
func (l *loader) dir() string {
	if l.name == "" {
		return ""
	}
	return filepath.Dir(l.name)
}

// remote builds the model of a remote agent.
func (l *loader) remote(path string, s *AgentSpec) model.Model {
	r := s.Remote
	rp := field(path, "remote")
	for _, f := range []struct {
		key string
		set bool
	}{
		{"model", s.Model != ""}, {"instructions", s.Instructions != ""}, {"tools", len(s.Tools) > 0},
		{"transfers", len(s.Transfers) > 0}, {"agent_tools", len(s.AgentTools) > 0}, {"output_schema", s.OutputSchema != nil},
		{"mcp", len(s.MCP) > 0}, {"mcp_servers", len(s.MCPServers) > 0}, {"script", len(s.Script) > 0}, {"stream", s.Stream != nil},
		{"base_url", s.BaseURL != ""}, {"api_key_env", s.APIKeyEnv != ""}, {"continuation", s.Continuation != ""},
	} {
		if f.set {
			l.bad(field(path, f.key), "agent %s is remote (answered by the agent of its card): it has no %s:", s.Name, f.key)
		}
	}
	if r.Card == "" {
		l.bad(rp, "a remote agent needs card: (the URL of its A2A agent card)")
		return nil
	}
	if u, err := url.Parse(r.Card); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.bad(field(rp, "card"), "card %q must be an http:// or https:// URL", r.Card)
		return nil
	}
	for _, k := range sortedKeys(r.Headers) {
		if err := checkEnv(r.Headers[k]); err != nil {
			l.bad(field(field(rp, "headers"), k), "remote agent %s: header %s: %v", s.Name, k, err)
			return nil
		}
	}
	if l.opts.Remote == nil {
		l.bad(rp, "remote agent %s: no A2A client is configured in this program", s.Name)
		return nil
	}
	m, err := l.opts.Remote(Remote{Agent: s.Name, Spec: *r})
	if err != nil {
		l.bad(rp, "remote agent %s: %v", s.Name, err)
		return nil
	}
	if l.opts.WrapModel != nil {
		m = l.opts.WrapModel(s.Name, m)
	}
	return m
}

// agentMCP gives agent a the tools of the MCP servers it names in mcp: and
// declares in mcp_servers:. It reports whether some server's tools are
// unknown (a problem was reported).
func (l *loader) agentMCP(path string, s *AgentSpec, a *agent.Agent, tools map[string]*agent.Tool, network map[string]*mcpResolved) (unresolved bool) {
	add := func(r *mcpResolved) {
		if r.failed {
			unresolved = true
		}
		for _, t := range r.tools {
			a.Tools = append(a.Tools, t)
			l.toolSource(l.sources, s.Name, t.Name, "mcp "+r.name)
		}
	}
	for i, name := range s.MCP {
		r, ok := network[name]
		if !ok {
			l.bad(at(field(path, "mcp"), i), "unknown MCP server %q (%s)", name, declared("mcp_servers", sortedKeys(network)))
			continue
		}
		add(r)
	}
	own := l.mcpServers(field(path, "mcp_servers"), s.MCPServers, tools)
	for _, name := range sortedKeys(own) {
		if _, dup := network[name]; dup {
			l.bad(field(path, "mcp_servers"), "agent %s declares MCP server %q, which the top-level mcp_servers declares too", s.Name, name)
		}
		add(own[name])
	}
	return unresolved
}

// mcpTool finds a tool of the top-level MCP servers by its name in the
// network; failed is set when it may belong to a server whose tools are
// unknown.
func mcpTool(servers map[string]*mcpResolved, name string) (t *agent.Tool, server string, found, failed bool) {
	for _, n := range sortedKeys(servers) {
		r := servers[n]
		failed = failed || r.failed
		for _, t := range r.tools {
			if t.Name == name {
				return t, n, true, false
			}
		}
	}
	return nil, "", false, failed
}
