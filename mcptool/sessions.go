package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/httpheader"
	"github.com/batonhq/baton/netspec"
)

// ErrClosed is returned by the calls of a closed [Sessions].
var ErrClosed = errors.New("mcptool: sessions closed")

// Options tune [New]. The zero value means the defaults.
type Options struct {
	// Logger gets the servers' standard error, line by line (info level),
	// and their restarts. Defaults to a logger that discards.
	Logger *slog.Logger
	// HTTPClient talks to streamable HTTP servers. Defaults to a client
	// without a timeout: calls are bounded by their contexts (a tool's
	// timeout:, the run's).
	HTTPClient *http.Client
	// ConnectTimeout bounds starting a server, its handshake and the
	// listing of its tools. Defaults to 30 seconds.
	ConnectTimeout time.Duration
	// LookupEnv expands the ${NAME} references of env: and headers:.
	// Defaults to os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Restarts bounds the restarts of a stopped server that one call of an
	// idempotent tool makes before it gives up. Defaults to 2.
	Restarts int
}

// Sessions are the sessions of a process with the MCP servers of its
// networks: one per declared server (two declarations that start the same
// command the same way, or reach the same URL with the same headers, share
// it). It is safe for concurrent use. Close it when the process is done
// with its networks: stdio servers are stopped (their standard input is
// closed, then SIGTERM, then SIGKILL).
type Sessions struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
}

// New returns sessions that connect to nothing yet: [Sessions.Resolve]
// starts each server the first time a network names it.
func New(opts Options) *Sessions {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Restarts <= 0 {
		opts.Restarts = 2
	}
	return &Sessions{opts: opts, log: opts.Logger, servers: map[string]*server{}}
}

// Resolve starts (or reuses) the session with the server decl declares and
// lists its tools: it is netspec.Options.MCP. The tools' Call functions
// call them through the session, restarting the server when it stopped.
func (s *Sessions) Resolve(decl netspec.MCPServer) ([]netspec.MCPTool, error) {
	srv, err := s.server(decl)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ConnectTimeout)
	defer cancel()
	tools, err := srv.tools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]netspec.MCPTool, 0, len(tools))
	for _, t := range tools {
		params, err := json.Marshal(t.InputSchema)
		if err != nil || string(params) == "null" {
			params = nil
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		mt := netspec.MCPTool{Name: t.Name, Description: desc, Parameters: params}
		if a := t.Annotations; a != nil {
			mt.ReadOnly, mt.Idempotent = a.ReadOnlyHint, a.IdempotentHint
		}
		name := t.Name
		mt.Call = func(ctx context.Context, args json.RawMessage, atMostOnce bool) (string, error) {
			return srv.call(ctx, name, args, atMostOnce)
		}
		out = append(out, mt)
	}
	return out, nil
}

// Close ends every session. Calls made after it fail with [ErrClosed].
func (s *Sessions) Close() error {
	s.mu.Lock()
	s.closed = true
	servers := s.servers
	s.servers = map[string]*server{}
	s.mu.Unlock()
	var errs []error
	for _, srv := range servers {
		errs = append(errs, srv.close())
	}
	return errors.Join(errs...)
}

// server returns the server of decl, made on first use.
func (s *Sessions) server(decl netspec.MCPServer) (*server, error) {
	t, err := s.target(decl)
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", decl.Spec.Name, err)
	}
	key, _ := json.Marshal(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if srv, ok := s.servers[string(key)]; ok {
		return srv, nil
	}
	srv := &server{s: s, name: decl.Spec.Name, t: t}
	s.servers[string(key)] = srv
	return srv, nil
}

// target is how a server is reached: what identifies a session.
type target struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     []string          `json:"env,omitempty"`
	Dir     string            `json:"dir,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// target resolves decl: paths against the network file's directory,
// ${NAME} references from the environment.
func (s *Sessions) target(decl netspec.MCPServer) (target, error) {
	sp := decl.Spec
	if sp.URL != "" {
		t := target{URL: sp.URL, Headers: map[string]string{}}
		for k, v := range sp.Headers {
			x, err := netspec.ExpandEnv(v, s.opts.LookupEnv)
			if err != nil {
				return target{}, fmt.Errorf("header %s: %w", k, err)
			}
			t.Headers[k] = x
		}
		return t, nil
	}
	base := decl.Dir
	if base == "" {
		base = "."
	}
	dir := sp.Dir
	if dir == "" {
		dir = base
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return target{}, err
	}
	cmd := sp.Command
	if strings.ContainsRune(cmd, filepath.Separator) && !filepath.IsAbs(cmd) {
		// ./server is relative to the network file's directory.
		cmd = filepath.Join(base, cmd)
		if cmd, err = filepath.Abs(cmd); err != nil {
			return target{}, err
		}
	}
	t := target{Command: cmd, Args: sp.Args, Dir: abs}
	for _, k := range slices.Sorted(maps.Keys(sp.Env)) {
		x, err := netspec.ExpandEnv(sp.Env[k], s.opts.LookupEnv)
		if err != nil {
			return target{}, fmt.Errorf("env %s: %w", k, err)
		}
		t.Env = append(t.Env, k+"="+x)
	}
	return t, nil
}

// server is one MCP server and its current session.
type server struct {
	s    *Sessions
	name string
	t    target

	mu      sync.Mutex
	cs      *mcp.ClientSession
	done    chan struct{} // closed when cs ends
	gen     int           // sessions started so far
	offered map[string]bool
	started time.Time
	stderr  *tail
	closed  bool
}

// tools starts the server if needed and lists its tools.
func (srv *server) tools(ctx context.Context) ([]*mcp.Tool, error) {
	cs, _, err := srv.session(ctx)
	if err != nil {
		return nil, err
	}
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: list tools: %w", srv.name, err)
		}
		out = append(out, t)
	}
	srv.mu.Lock()
	srv.offered = map[string]bool{}
	for _, t := range out {
		srv.offered[t.Name] = true
	}
	srv.mu.Unlock()
	return out, nil
}

// session returns the live session, starting the server (again) when
// there is none or the last one ended.
func (srv *server) session(ctx context.Context) (*mcp.ClientSession, int, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		return nil, 0, ErrClosed
	}
	if srv.cs != nil {
		select {
		case <-srv.done:
			srv.s.log.Warn("MCP server stopped; restarting it", "mcp_server", srv.name, "stderr", srv.stderr.String())
			_ = srv.cs.Close()
			srv.cs = nil
		default:
			return srv.cs, srv.gen, nil
		}
	}
	if srv.gen > 0 {
		// Restarts are at least 200ms apart: a server that dies at once
		// does not spin.
		if wait := 200*time.Millisecond - time.Since(srv.started); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, srv.s.opts.ConnectTimeout)
	defer cancel()
	if err := srv.connect(cctx); err != nil {
		return nil, 0, err
	}
	if srv.gen > 1 {
		srv.s.log.Info("MCP server restarted", "mcp_server", srv.name, "sessions", srv.gen)
		srv.relist(cctx)
	}
	return srv.cs, srv.gen, nil
}

// relist lists a restarted server's tools again, so that a tool it no
// longer offers is answered as such.
func (srv *server) relist(ctx context.Context) {
	offered := map[string]bool{}
	for t, err := range srv.cs.Tools(ctx, nil) {
		if err != nil {
			return
		}
		offered[t.Name] = true
	}
	for name := range srv.offered {
		if !offered[name] {
			srv.s.log.Warn("restarted MCP server no longer offers a tool", "mcp_server", srv.name, "tool", name)
		}
	}
	srv.offered = offered
}

// connect starts a session, with srv.mu held.
func (srv *server) connect(ctx context.Context) error {
	var tr mcp.Transport
	if srv.t.URL != "" {
		client := *srv.s.opts.HTTPClient
		client.Transport = httpheader.Transport(client.Transport, srv.t.Headers)
		tr = &mcp.StreamableClientTransport{Endpoint: srv.t.URL, HTTPClient: &client, DisableStandaloneSSE: true, MaxRetries: -1}
	} else {
		cmd := exec.Command(srv.t.Command, srv.t.Args...)
		cmd.Dir = srv.t.Dir
		cmd.Env = append(os.Environ(), srv.t.Env...)
		srv.stderr = &tail{log: srv.s.log, server: srv.name}
		cmd.Stderr = srv.stderr
		tr = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "baton", Version: version()}, nil)
	srv.started = time.Now()
	cs, err := client.Connect(ctx, tr, nil)
	if err != nil {
		if msg := srv.stderr.String(); msg != "" {
			return fmt.Errorf("MCP server %s: start: %w (its standard error: %s)", srv.name, err, msg)
		}
		return fmt.Errorf("MCP server %s: start: %w", srv.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(done)
	}()
	srv.cs, srv.done = cs, done
	srv.gen++
	return nil
}

// lost ends session gen after a call found its connection gone.
func (srv *server) lost(gen int) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.gen == gen && srv.cs != nil {
		_ = srv.cs.Close()
		srv.cs = nil
	}
}

func (srv *server) close() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.closed = true
	if srv.cs == nil {
		return nil
	}
	err := srv.cs.Close()
	srv.cs = nil
	if err != nil && srv.t.Command != "" {
		// A stdio server that had to be signalled, or had died: not worth
		// failing a shutdown for.
		srv.s.log.Debug("MCP server closed", "mcp_server", srv.name, "error", err)
		return nil
	}
	return err
}

// sent is the memo of a non-idempotent call that was sent.
var sent = json.RawMessage(`{"mcp":"sent"}`)

// call calls tool name. See the package documentation for what happens
// when the server stops.
func (srv *server) call(ctx context.Context, name string, args json.RawMessage, atMostOnce bool) (string, error) {
	memo, hasMemo := agent.MemoFromContext(ctx)
	if atMostOnce && hasMemo && memo.Load() != nil {
		return "", fmt.Errorf("not sent again: this call of %s (MCP server %s) was sent before the run stopped and its result was never recorded; %s is not idempotent, so it is not repeated and its outcome is unknown: check before calling it again", name, srv.name, name)
	}
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if ci, ok := agent.CallFromContext(ctx); ok {
		params.Meta = mcp.Meta{"baton/idempotency_key": ci.IdempotencyKey, "baton/run_id": ci.RunID, "baton/call_id": ci.CallID}
	}
	saved := false
	for attempt := 0; ; attempt++ {
		cs, gen, err := srv.session(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", fmt.Errorf("MCP server %s is unavailable: %w", srv.name, err)
		}
		srv.mu.Lock()
		gone := srv.offered != nil && !srv.offered[name]
		srv.mu.Unlock()
		if gone {
			return "", fmt.Errorf("MCP server %s no longer offers the tool %s", srv.name, name)
		}
		if atMostOnce && hasMemo && !saved {
			if err := memo.Save(ctx, sent); err != nil {
				// Nothing was sent: the call may be made again.
				return "", agent.Transient(fmt.Errorf("record the call of %s before sending it: %w", name, err), 0)
			}
			saved = true
		}
		res, err := cs.CallTool(ctx, params)
		if err == nil {
			return Result(res)
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			// The server answered: the call's own error.
			return "", fmt.Errorf("MCP server %s: %s", srv.name, je.Message)
		}
		srv.lost(gen)
		if atMostOnce {
			return "", fmt.Errorf("MCP server %s stopped during the call of %s (%v); %s is not idempotent, so the call is not repeated: its outcome is unknown", srv.name, name, err, name)
		}
		if attempt >= srv.s.opts.Restarts {
			return "", fmt.Errorf("MCP server %s keeps stopping: %w", srv.name, err)
		}
		srv.s.log.Warn("MCP server stopped during a call; restarting it and calling again (the tool is idempotent)", "mcp_server", srv.name, "tool", name, "error", err)
	}
}

// tail logs a server's standard error line by line and keeps its last
// lines for error messages.
type tail struct {
	log    *slog.Logger
	server string

	mu   sync.Mutex
	part []byte
	last []byte
}

const tailBytes = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := bytes.IndexByte(t.part, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(t.part[:i]), "\r")
		t.part = t.part[i+1:]
		if line == "" {
			continue
		}
		t.log.Info("MCP server: "+line, "mcp_server", t.server)
		t.last = append(t.last, line...)
		t.last = append(t.last, '\n')
		if len(t.last) > tailBytes {
			t.last = t.last[len(t.last)-tailBytes:]
		}
	}
	if len(t.part) > 64<<10 {
		t.part = t.part[:0]
	}
	return len(p), nil
}

// String returns the last lines written.
func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.last))
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
