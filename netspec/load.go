package netspec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/schemas"
	"github.com/batonhq/baton/internal/yamlpath"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/policy"
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
	// WrapTool, if set, wraps the function of every tool an agent can call
	// (declared in tools:, or an MCP server's), once per tool, whichever
	// agents have it: name is the tool's name as the model sees it. Agent
	// tools and transfers are not tools of this kind. baton eval answers
	// tools from a recording with it.
	WrapTool func(name string, fn ToolFunc) ToolFunc
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
	// Webhooks are the file's webhooks: (package service sends the
	// network's run events to them).
	Webhooks []WebhookSpec
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
	for q := path; q != ""; q = yamlpath.Parent(q) {
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
	if l.opts.WrapTool != nil {
		wrapTools(agents, l.opts.WrapTool)
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
	spec.Webhooks = l.webhooks("$.webhooks", f.Webhooks)
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

// webhooks checks the file's webhooks and returns their URLs: each an
// absolute http or https URL with a host, none twice. Whether its host
// may be called is the server's to check (its allow list).
func (l *loader) webhooks(path string, specs []WebhookSpec) []WebhookSpec {
	var out []WebhookSpec
	seen := map[string]bool{}
	for i := range specs {
		sp := at(path, i) + ".url"
		raw := specs[i].URL
		u, err := url.Parse(raw)
		switch {
		case raw == "":
			l.bad(at(path, i), "a webhook needs a url")
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil:
			l.bad(sp, "webhook url %q must be an http or https URL with a host and no user info", raw)
		case seen[raw]:
			l.bad(sp, "webhook url %q is given twice", raw)
		case specs[i].SecretEnv != "" && !envName.MatchString(specs[i].SecretEnv):
			l.bad(at(path, i)+".secret_env", "secret_env %q is not an environment variable name", specs[i].SecretEnv)
		default:
			seen[raw] = true
			out = append(out, specs[i])
		}
	}
	return out
}
