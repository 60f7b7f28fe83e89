package netspec_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/netspec"
)

// fakeMCP is an MCP client whose servers offer the tools of offers (by
// server name; a server not in it offers the names of its tools: allow
// list, or "echo"), recording the calls and the declarations it got.
type fakeMCP struct {
	offers map[string][]netspec.MCPTool

	mu    sync.Mutex
	got   []netspec.MCPServer
	calls []string // "server/tool atMostOnce=…"
}

func (f *fakeMCP) resolve(s netspec.MCPServer) ([]netspec.MCPTool, error) {
	f.mu.Lock()
	f.got = append(f.got, s)
	f.mu.Unlock()
	if s.Spec.Command == "broken" {
		return nil, errors.New("exec: \"broken\": executable file not found in $PATH")
	}
	tools, ok := f.offers[s.Spec.Name]
	if !ok {
		names := s.Spec.Tools
		if len(names) == 0 {
			names = []string{"echo"}
		}
		for _, n := range names {
			tools = append(tools, netspec.MCPTool{Name: n, Description: "Fake " + n + "."})
		}
	}
	out := make([]netspec.MCPTool, len(tools))
	for i, t := range tools {
		t.Call = func(_ context.Context, args json.RawMessage, atMostOnce bool) (string, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.calls = append(f.calls, s.Spec.Name+"/"+t.Name+" atMostOnce="+map[bool]string{true: "true", false: "false"}[atMostOnce])
			return "called " + t.Name + " with " + string(args), nil
		}
		out[i] = t
	}
	return out, nil
}

func fakeRemote(r netspec.Remote) (model.Model, error) {
	return scripted.New(r.Agent, []scripted.Step{{Text: "remote answer"}}, scripted.Options{}), nil
}

var notesTools = []netspec.MCPTool{
	{Name: "add_note", Description: "Add a note.", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
	{Name: "list_notes", Description: "List the notes.", ReadOnly: true},
	{Name: "touch", Description: "Idempotent.", Idempotent: true},
	{Name: "delete.note", Description: "Delete a note."},
}

const mcpNetwork = `version: 1
name: mcp
mcp_servers:
  - name: notes
    command: ./notes-server
    args: [--dir, data]
    env: {NOTES_TOKEN: "${NOTES_TOKEN}"}
    prefix: notes_
    tools: [add_note, list_notes, touch, delete.note]
    approval: [delete.note]
    slow: [add_note]
    timeout: 5s
  - name: search
    url: http://127.0.0.1:9/mcp
    headers: {Authorization: "Bearer ${SEARCH_KEY}"}
agents:
  - name: writer
    model: scripted
    mcp: [notes]
    script:
      - tool_calls: [{name: notes_add_note, arguments: {text: hi}}]
      - text: done
  - name: reader
    model: scripted
    tools: [notes_list_notes]
    mcp_servers:
      - name: scratch
        command: scratch-server
    script: [{tool_calls: [{name: echo}]}, {text: done}]
  - name: billing
    description: Billing, in another baton.
    remote:
      card: http://127.0.0.1:8081/a2a/billing
      headers: {Authorization: "Bearer ${BILLING_KEY}"}
      reconnect: 30s
`

func TestMCPServersAndRemoteAgents(t *testing.T) {
	t.Parallel()
	f := &fakeMCP{offers: map[string][]netspec.MCPTool{"notes": notesTools}}
	spec, err := netspec.Parse([]byte(mcpNetwork), "dir/net.yaml", netspec.Options{MCP: f.resolve, Remote: fakeRemote})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.got) != 3 || f.got[0].Dir != "dir" || f.got[0].Spec.Env["NOTES_TOKEN"] != "${NOTES_TOKEN}" {
		t.Errorf("declarations given to the MCP client: %+v", f.got)
	}
	w, _ := spec.Network.Agent("writer")
	var names []string
	for _, tl := range w.Tools {
		names = append(names, tl.Name)
	}
	if got := strings.Join(names, " "); got != "notes_add_note notes_list_notes notes_touch notes_delete_note" {
		t.Fatalf("writer's tools: %s", got)
	}
	add, del := w.Tools[0], w.Tools[3]
	if !add.Slow || add.RequireApproval != nil || add.Timeout.Seconds() != 5 || del.RequireApproval == nil || del.Slow {
		t.Errorf("flags: add %+v, delete %+v", add, del)
	}
	for _, tl := range w.Tools {
		if _, err := tl.Func(t.Context(), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	want := "notes/add_note atMostOnce=true notes/list_notes atMostOnce=false notes/touch atMostOnce=false notes/delete.note atMostOnce=true"
	if got := strings.Join(f.calls, " "); got != want {
		t.Errorf("calls:\n%s\nwant\n%s", got, want)
	}
	r, _ := spec.Network.Agent("reader")
	if len(r.Tools) != 2 || r.Tools[0].Name != "echo" || r.Tools[1].Name != "notes_list_notes" {
		t.Errorf("reader's tools: %+v", r.Tools)
	}
	if got := spec.ToolSources["reader"]; got["echo"] != "mcp scratch" || got["notes_list_notes"] != "mcp notes" {
		t.Errorf("tool sources: %v", spec.ToolSources)
	}
	b, _ := spec.Network.Agent("billing")
	if b.ModelName != "a2a:http://127.0.0.1:8081/a2a/billing" || b.Model == nil {
		t.Errorf("remote agent: %+v", b)
	}
}

// TestMCPToolsInTheFingerprint: the tools a server resolved to are part of
// the network's fingerprint, so that a process whose server offers other
// tools (or other schemas) refuses the checkpoints of another rather than
// resuming them with other tools.
func TestMCPToolsInTheFingerprint(t *testing.T) {
	t.Parallel()
	fp := func(tools []netspec.MCPTool) string {
		t.Helper()
		f := &fakeMCP{offers: map[string][]netspec.MCPTool{"notes": tools}}
		spec, err := netspec.Parse([]byte(mcpNetwork), "net.yaml", netspec.Options{MCP: f.resolve, Remote: fakeRemote})
		if err != nil {
			t.Fatal(err)
		}
		return spec.Network.Fingerprint()
	}
	base := fp(notesTools)
	if again := fp(notesTools); again != base {
		t.Fatalf("fingerprint %s then %s", base, again)
	}
	changed := append([]netspec.MCPTool(nil), notesTools...)
	changed[0].Description = "Add a note (v2)."
	if fp(changed) == base {
		t.Error("a tool's new description kept the fingerprint")
	}
	changed = append([]netspec.MCPTool(nil), notesTools...)
	changed[1].Parameters = json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer"}}}`)
	if fp(changed) == base {
		t.Error("a tool's new schema kept the fingerprint")
	}
	changed = append(append([]netspec.MCPTool(nil), notesTools...), netspec.MCPTool{Name: "extra"})
	if fp(changed) != base {
		t.Error("a tool left out by the allow list changed the fingerprint")
	}
}

func TestMCPAndRemoteProblems(t *testing.T) {
	t.Parallel()
	f := &fakeMCP{offers: map[string][]netspec.MCPTool{"notes": notesTools}}
	opts := netspec.Options{MCP: f.resolve, Remote: fakeRemote}
	for _, tt := range []struct {
		name string
		yaml string
		opts netspec.Options
		want []problem
	}{
		{"NoTransport", `version: 1
name: n
mcp_servers:
  - name: notes
agents: [{name: a, model: scripted, script: [{text: hi}]}]
`, opts, []problem{{4, "needs command: (a program speaking MCP"}}},
		{"BothTransports", `version: 1
name: n
mcp_servers:
  - name: notes
    command: x
    url: http://h/mcp
    headers: {A: b}
agents: [{name: a, model: scripted, script: [{text: hi}]}]
`, opts, []problem{{4, "has both command: and url:"}}},
		{"BadURLAndEnv", `version: 1
name: n
mcp_servers:
  - name: s
    url: ftp://h/mcp
    headers: {Authorization: "Bearer ${KEY"}
  - name: t
    command: x
    env: {A: "${1BAD}"}
agents: [{name: a, model: scripted, script: [{text: hi}]}]
`, opts, []problem{{5, "must be an http:// or https:// URL"}, {6, "unterminated ${"}, {9, "a variable name is letters"}}},
		{"UnknownServerAndTools", `version: 1
name: n
mcp_servers:
  - name: notes
    command: notes
    tools: [add_note, ghost]
    approval: ["*"]
agents:
  - name: a
    model: scripted
    mcp: [nope]
    tools: [list_notes]
    script: [{text: hi}]
`, opts, []problem{{6, `offers no tool "ghost" (its tools: add_note, delete.note, list_notes, touch)`}, {11, `unknown MCP server "nope" (mcp_servers: notes)`}}},
		{"ClashWithDeclaredTool", `version: 1
name: n
tools: [{name: add_note, result: ok}]
mcp_servers:
  - name: notes
    command: notes
agents: [{name: a, model: scripted, mcp: [notes], script: [{text: hi}]}]
`, opts, []problem{{5, `its tool "add_note" has the name of a tool of tools:`}}},
		{"ScriptCallsAnMCPTool", `version: 1
name: n
mcp_servers: [{name: notes, command: notes, prefix: n_}]
agents:
  - name: a
    model: scripted
    mcp: [notes]
    script: [{tool_calls: [{name: add_note}]}]
`, opts, []problem{{8, `the script calls "add_note", which agent a cannot call (it can call n_add_note, n_delete_note, n_list_notes, n_touch)`}}},
		{"NoClients", `version: 1
name: n
mcp_servers: [{name: notes, command: notes}]
agents:
  - name: a
    model: scripted
    mcp: [notes]
    script: [{tool_calls: [{name: add_note}]}]
  - name: r
    remote: {card: "http://h/card.json"}
`, netspec.Options{}, []problem{{3, "MCP server notes: no MCP client is configured"}, {10, "remote agent r: no A2A client is configured"}}},
		{"ServerFails", `version: 1
name: n
mcp_servers: [{name: notes, command: broken}]
agents: [{name: a, model: scripted, mcp: [notes], script: [{text: hi}]}]
`, opts, []problem{{3, `MCP server notes: exec: "broken": executable file not found`}}},
		{"RemoteWithAModel", `version: 1
name: n
agents:
  - name: a
    model: scripted
    script: [{text: hi}]
  - name: r
    model: scripted
    instructions: no
    remote: {card: "file:///card.json"}
`, opts, []problem{{8, "agent r is remote (answered by the agent of its card): it has no model:"}, {9, "it has no instructions:"}, {10, `card "file:///card.json" must be an http:// or https:// URL`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkProblems(t, tt.yaml, parseProblems(t, tt.yaml, tt.opts), tt.want)
		})
	}
}

func TestExpandEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"KEY": "s3cr3t", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tt := range []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"Bearer ${KEY}", "Bearer s3cr3t", ""},
		{"${KEY}${EMPTY}-${KEY}", "s3cr3t-s3cr3t", ""},
		{"costs $5 and $ {KEY}", "costs $5 and $ {KEY}", ""},
		{"${MISSING}", "", "environment variable MISSING is not set"},
		{"${KEY", "", "unterminated ${"},
		{"${}", "", "a variable name is letters"},
		{"${A-B}", "", "a variable name is letters"},
	} {
		got, err := netspec.ExpandEnv(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("ExpandEnv(%q) = %q, %v; want error %q", tt.in, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ExpandEnv(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzExpandEnv: ExpandEnv never panics, and what it returns has no ${
// left of the references it expanded (values with no ${ of their own).
func FuzzExpandEnv(f *testing.F) {
	for _, s := range []string{"", "Bearer ${KEY}", "${A}${B}", "$${A}", "${", "${}", "}${A}{", "${A}x${"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := netspec.ExpandEnv(s, func(k string) (string, bool) { return "v", k != "MISSING" })
		if err != nil {
			return
		}
		if strings.Contains(out, "${") {
			t.Fatalf("ExpandEnv(%q) = %q", s, out)
		}
	})
}
