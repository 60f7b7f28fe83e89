package mcptool_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/memotest"
	"github.com/batonhq/baton/mcptool"
	"github.com/batonhq/baton/netspec"
)

// serverBin is the test MCP server (testdata/mcpserver), built once.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptool")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	if out, err := exec.Command("go", "build", "-o", serverBin, "./testdata/mcpserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the test MCP server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type bundle struct {
	s   *mcptool.Sessions
	dir string
	env map[string]string
}

// setup returns sessions whose ${NAME} references read env, closed at the
// end of the test.
func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{dir: t.TempDir(), env: map[string]string{}}
	var mu sync.Mutex
	b.s = mcptool.New(mcptool.Options{ConnectTimeout: 20 * time.Second, LookupEnv: func(k string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		v, ok := b.env[k]
		return v, ok
	}})
	t.Cleanup(func() { b.s.Close() })
	return b
}

// setupTest is setup with the test server resolved on stdio, SECRET set to
// secret.
func setupTest(t *testing.T, secret string) (*bundle, map[string]netspec.MCPTool) {
	t.Helper()
	b := setup(t)
	b.env["SECRET"] = secret
	return b, b.resolve(t, b.stdio("test"))
}

// stdio declares the test server on stdio.
func (b *bundle) stdio(name string) netspec.MCPServer {
	return netspec.MCPServer{Spec: netspec.MCPServerSpec{Name: name, Command: serverBin, Env: map[string]string{
		"MCP_LOG": filepath.Join(b.dir, "log"), "MCP_SECRET": "${SECRET}", "MCP_CRASH_ONCE": filepath.Join(b.dir, "crash-once")}}, Dir: b.dir}
}

func (b *bundle) resolve(t *testing.T, decl netspec.MCPServer) map[string]netspec.MCPTool {
	t.Helper()
	tools, err := b.s.Resolve(decl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]netspec.MCPTool{}
	for _, tl := range tools {
		out[tl.Name] = tl
	}
	return out
}

func (b *bundle) logLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(b.dir, "log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func call(t *testing.T, ctx context.Context, tl netspec.MCPTool, args string, atMostOnce bool) (string, error) {
	t.Helper()
	if tl.Call == nil {
		t.Fatalf("no such tool")
	}
	return tl.Call(ctx, json.RawMessage(args), atMostOnce)
}

// checkResults calls the tools that show how results map, on a server
// resolved to tools.
func checkResults(t *testing.T, tools map[string]netspec.MCPTool) {
	t.Helper()
	ctx := t.Context()
	for _, tt := range []struct{ tool, args, want, err string }{
		{"echo", `{"text":"hello"}`, "hello", ""},
		{"add", `{"a":2,"b":3}`, `{"sum":5}`, ""},
		{"picture", `{}`, "here it is\n[image image/png, 8 bytes]", ""},
		{"fail", `{}`, "", "it failed, as it always does"},
		{"echo", `{"text":5}`, "", "validating"},
		{"secret", `{}`, "s3cr3t", ""},
	} {
		got, err := call(t, ctx, tools[tt.tool], tt.args, false)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s %s: %q, %v; want error %q", tt.tool, tt.args, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %s: %q, %v; want %q", tt.tool, tt.args, got, err, tt.want)
		}
	}
	if _, err := call(t, ctx, tools["fail"], `{}`, false); !errors.Is(err, mcptool.ErrToolFailed) {
		t.Errorf("fail: %v, want ErrToolFailed", err)
	}
}

func TestStdioServer(t *testing.T) {
	t.Parallel()
	_, tools := setupTest(t, "s3cr3t")
	echo, add := tools["echo"], tools["add"]
	if !echo.ReadOnly || echo.Idempotent || !add.Idempotent || echo.Description != "Echo the text." {
		t.Errorf("annotations: echo %+v, add %+v", echo, add)
	}
	var schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(echo.Parameters, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
		t.Errorf("echo's input schema %s (%v)", echo.Parameters, err)
	}
	checkResults(t, tools)
}

func TestMissingVariable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.s.Resolve(b.stdio("test"))
	if err == nil || !strings.Contains(err.Error(), "environment variable SECRET is not set") {
		t.Errorf("error %v", err)
	}
}

func TestServerThatDoesNotStart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.s.Resolve(netspec.MCPServer{Spec: netspec.MCPServerSpec{Name: "ghost", Command: "./no-such-server"}, Dir: b.dir})
	if err == nil || !strings.Contains(err.Error(), "MCP server ghost: start") {
		t.Errorf("error %v", err)
	}
}

// httpServer starts the test server on streamable HTTP on loopback, its
// requests refused without the token.
func httpServer(t *testing.T, token string) string {
	t.Helper()
	cmd := exec.Command(serverBin, "-http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "MCP_TOKEN="+token, "MCP_SECRET=over-http")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
}

func TestHTTPServer(t *testing.T) {
	t.Parallel()
	url := httpServer(t, "tok-123")
	b := setup(t)
	b.env["MCP_KEY"] = "tok-123"
	tools := b.resolve(t, netspec.MCPServer{Spec: netspec.MCPServerSpec{Name: "web", URL: url, Headers: map[string]string{"Authorization": "Bearer ${MCP_KEY}"}}})
	got, err := call(t, t.Context(), tools["secret"], `{}`, false)
	if err != nil || got != "over-http" {
		t.Errorf("secret: %q, %v", got, err)
	}
	if got, err := call(t, t.Context(), tools["add"], `{"a":1,"b":1}`, false); err != nil || got != `{"sum":2}` {
		t.Errorf("add: %q, %v", got, err)
	}

	b.env["MCP_KEY"] = "wrong"
	_, err = b.s.Resolve(netspec.MCPServer{Spec: netspec.MCPServerSpec{Name: "web2", URL: url, Headers: map[string]string{"Authorization": "Bearer ${MCP_KEY}"}}})
	if err == nil || !strings.Contains(err.Error(), "MCP server web2") {
		t.Errorf("wrong key: %v", err)
	}
}

// TestRestart: a server that stops during a call is restarted; the call of
// an idempotent tool is sent again, that of a non-idempotent one is
// answered as of unknown outcome, and the next calls work.
func TestRestart(t *testing.T) {
	t.Parallel()
	b, tools := setupTest(t, "x")
	if err := os.WriteFile(filepath.Join(b.dir, "crash-once"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := call(t, t.Context(), tools["crash_once"], `{}`, false); err != nil || got != "survived" {
		t.Errorf("crash_once (idempotent) after a restart: %q, %v", got, err)
	}
	_, err := call(t, t.Context(), tools["crash"], `{}`, true)
	if err == nil || !strings.Contains(err.Error(), "MCP server test stopped during the call of crash") || !strings.Contains(err.Error(), "outcome is unknown") {
		t.Errorf("crash (not idempotent): %v", err)
	}
	if got, err := call(t, t.Context(), tools["echo"], `{"text":"again"}`, false); err != nil || got != "again" {
		t.Errorf("echo after the crash: %q, %v", got, err)
	}
}

func TestAtMostOnce(t *testing.T) {
	t.Parallel()
	b, tools := setupTest(t, "x")
	m := memotest.New("run/call/c1", nil)
	got, err := call(t, m.Context(t.Context()), tools["append"], `{"line":"one"}`, true)
	if err != nil || got != "appended one" || m.Saves() != 1 {
		t.Fatalf("append: %q, %v, %d saves", got, err, m.Saves())
	}
	// The same call again (a resumed run whose result was not recorded):
	// not sent.
	_, err = call(t, m.Context(t.Context()), tools["append"], `{"line":"one"}`, true)
	if err == nil || !strings.Contains(err.Error(), "not sent again") {
		t.Errorf("append again: %v", err)
	}
	// An idempotent call is sent again, and saves nothing.
	m2 := memotest.New("run/call/c1", json.RawMessage(`{"mcp":"sent"}`))
	if got, err := call(t, m2.Context(t.Context()), tools["append"], `{"line":"two"}`, false); err != nil || got != "appended two" || m2.Saves() != 0 {
		t.Errorf("append (may repeat): %q, %v, %d saves", got, err, m2.Saves())
	}
	if lines := b.logLines(t); strings.Join(lines, " ") != "one two" {
		t.Errorf("log %v", lines)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	b, tools := setupTest(t, "x")
	if err := b.s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, t.Context(), tools["echo"], `{"text":"x"}`, false); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := b.s.Resolve(b.stdio("test")); !errors.Is(err, mcptool.ErrClosed) {
		t.Errorf("Resolve after Close: %v", err)
	}
}

func TestSharedSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["SECRET"] = "x"
	one := b.resolve(t, b.stdio("one"))
	decl := b.stdio("two")
	decl.Spec.Tools = []string{"echo"} // the allow list is not part of the session
	two := b.resolve(t, decl)
	if err := os.WriteFile(filepath.Join(b.dir, "crash-once"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, t.Context(), one["crash_once"], `{}`, false); err != nil {
		t.Fatal(err)
	}
	// one restarted the shared server: two uses the new session
	if got, err := call(t, t.Context(), two["echo"], `{"text":"shared"}`, false); err != nil || got != "shared" {
		t.Errorf("echo through the other declaration: %q, %v", got, err)
	}
}
