package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/mcp"
)

// keyTransport sends a baton API key with every request.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// versions are the MCP protocol versions a client may speak: the latest
// (elicitation as input requests of the tool call) and the one before it
// (elicitation/create requests of the server).
var versions = []string{"", "2025-11-25"}

// client is an MCP client of the Go SDK, with what it received.
type client struct {
	mu       sync.Mutex
	more     chan struct{} // a progress notification came
	progress []string
	elicited []string
	answer   func(*sdk.ElicitRequest) *sdk.ElicitResult
}

func (cl *client) connect(t testing.TB, b *servertest.Bundle, key, network, version string) *sdk.ClientSession {
	t.Helper()
	cl.more = make(chan struct{}, 1)
	opts := &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		cl.mu.Lock()
		cl.progress = append(cl.progress, r.Params.Message)
		cl.mu.Unlock()
		select {
		case cl.more <- struct{}{}:
		default:
		}
	}}
	if cl.answer != nil {
		opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			cl.mu.Lock()
			cl.elicited = append(cl.elicited, r.Params.Message)
			cl.mu.Unlock()
			return cl.answer(r), nil
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "baton-test", Version: "1"}, opts)
	tr := &sdk.StreamableClientTransport{Endpoint: b.URL + "/mcp/" + network, HTTPClient: &http.Client{Transport: keyTransport{key}}}
	cs, err := c.Connect(t.Context(), tr, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// streamed waits until the progress notifications carried want, or 10 s
// passed without one, and returns what they carried.
func (cl *client) streamed(t *testing.T, want string) string {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		cl.mu.Lock()
		got := strings.Join(cl.progress, "")
		cl.mu.Unlock()
		if got == want {
			return got
		}
		select {
		case <-cl.more:
			timeout.Reset(10 * time.Second)
		case <-timeout.C:
			return got
		}
	}
}

// out is a call's structured result.
type out struct {
	Answer    string `json:"answer"`
	ThreadID  string `json:"thread_id"`
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	LastAgent string `json:"last_agent"`
	Interrupt *struct {
		ID      string `json:"id"`
		Actions []struct {
			Name string `json:"name"`
		} `json:"actions"`
	} `json:"interrupt"`
}

// callBound bounds a tool call and the end of a stdio session: far above
// what they take on a loaded machine.
const callBound = 2 * time.Minute

func call(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (*sdk.CallToolResult, out) {
	t.Helper()
	p := &sdk.CallToolParams{Name: tool, Arguments: args}
	p.SetProgressToken("p1")
	// Bounded, generously: a call that never returns fails here, with
	// its arguments, rather than at the test binary's timeout.
	ctx, cancel := context.WithTimeout(t.Context(), callBound)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("call %s %v: %v", tool, args, err)
	}
	var o out
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
	}
	return res, o
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

// A network is an MCP server with one tool: a call runs a turn, its answer
// streams as progress notifications, the result has the answer and the
// thread id, which continues the conversation; another owner cannot.
func TestToolRunsTurns(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	for _, v := range versions {
		t.Run("version="+v, func(t *testing.T) {
			t.Parallel()
			var cl client
			cs := cl.connect(t, b, b.KeyA, "support", v)
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 1 || tools.Tools[0].Name != "support" || !strings.Contains(tools.Tools[0].Description, "thread_id") {
				t.Fatalf("tools: %+v", tools.Tools)
			}
			res, o := call(t, cs, "support", map[string]any{"message": "I was charged twice for order 1234"})
			if res.IsError || o.Status != "completed" || !strings.Contains(o.Answer, "duplicate") || o.ThreadID == "" || text(res) != o.Answer {
				t.Fatalf("result %s: %+v", text(res), o)
			}
			// The client handles notifications on its own: they may come
			// after the result.
			if streamed := cl.streamed(t, o.Answer); streamed != o.Answer {
				t.Errorf("progress notifications carried %q, the answer is %q", streamed, o.Answer)
			}
			// The thread id continues the conversation.
			res, o2 := call(t, cs, "support", map[string]any{"message": "thanks", "thread_id": o.ThreadID})
			if res.IsError || o2.ThreadID != o.ThreadID || o2.RunID == o.RunID || o2.Status != "completed" {
				t.Fatalf("second turn %s: %+v", text(res), o2)
			}
			r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+o.ThreadID+"/messages", nil)
			if r.Status != 200 || strings.Count(string(r.Body), `"role":"user"`) != 2 {
				t.Errorf("thread messages: %d %s", r.Status, r.Body)
			}
			// Another owner's MCP session cannot reach the thread.
			var other client
			csB := other.connect(t, b, b.KeyB, "support", v)
			res, _ = call(t, csB, "support", map[string]any{"message": "hello", "thread_id": o.ThreadID})
			if !res.IsError || !strings.Contains(text(res), "not found") || strings.Contains(text(res), "duplicate") {
				t.Errorf("another owner's thread: %s", text(res))
			}
			// Bad arguments are a tool error the model sees.
			res, _ = call(t, cs, "support", map[string]any{"message": "hi", "decision": "maybe", "run_id": "run_x"})
			if !res.IsError || !strings.Contains(text(res), "decision") {
				t.Errorf("bad decision: %s", text(res))
			}
		})
	}
}

// A session belongs to the owner who opened it: another key's requests on
// it are refused.
func TestSessionBoundToOwner(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	var cl client
	cs := cl.connect(t, b, b.KeyA, "support", "2025-11-25")
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`
	req := b.Request(t, b.KeyB, "POST", "/mcp/support", json.RawMessage(body), "Mcp-Session-Id", cs.ID(), "Accept", "application/json, text/event-stream",
		"Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(got), "support") {
		t.Errorf("another owner on the session: %d %s", resp.StatusCode, got)
	}
	if r := b.Do(t, b.KeyA, "POST", "/mcp/nope", json.RawMessage(body)); r.Status != http.StatusNotFound {
		t.Errorf("unknown network: %d %s", r.Status, r.Body)
	}
}

// A run that waits for approval asks the client through elicitation, on
// either protocol version; the answer decides the run, whose result is
// then final. Without elicitation the result holds the pending interrupt,
// decided by calling the tool with run_id and decision.
func TestApproval(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	for _, v := range versions {
		for _, tc := range []struct {
			name, decision string
			action         string
			want           string
		}{
			{"Approve", "approve", "accept", "completed"},
			{"Reject", "reject", "accept", "completed"},
			{"Decline", "", "decline", "completed"},
			{"Cancel", "", "cancel", "interrupted"},
		} {
			t.Run(tc.name+"/version="+v, func(t *testing.T) {
				t.Parallel()
				cl := client{answer: func(*sdk.ElicitRequest) *sdk.ElicitResult {
					r := &sdk.ElicitResult{Action: tc.action}
					if tc.action == "accept" {
						r.Content = map[string]any{"decision": tc.decision}
					}
					return r
				}}
				cs := cl.connect(t, b, b.KeyA, "support", v)
				res, o := call(t, cs, "support", map[string]any{"message": "I want a refund for order 1234"})
				cl.mu.Lock()
				asked := len(cl.elicited)
				msg := strings.Join(cl.elicited, "")
				cl.mu.Unlock()
				if asked != 1 || !strings.Contains(msg, "refund") {
					t.Fatalf("elicited %d times: %q", asked, msg)
				}
				if res.IsError || o.Status != tc.want {
					t.Fatalf("result %s: %+v", text(res), o)
				}
				if tc.want == "interrupted" && (o.Interrupt == nil || o.Interrupt.ID == "" || !strings.Contains(text(res), "run_id "+o.RunID)) {
					t.Fatalf("a cancelled elicitation leaves the interrupt pending: %s %+v", text(res), o)
				}
			})
		}
	}
	t.Run("NoElicitation", func(t *testing.T) {
		t.Parallel()
		var cl client
		cs := cl.connect(t, b, b.KeyA, "support", "")
		res, o := call(t, cs, "support", map[string]any{"message": "I want a refund for order 1234"})
		if res.IsError || o.Status != "interrupted" || o.Interrupt == nil || len(o.Interrupt.Actions) == 0 || !strings.Contains(text(res), "decision") {
			t.Fatalf("result %s: %+v", text(res), o)
		}
		// Another owner cannot decide it.
		var other client
		csB := other.connect(t, b, b.KeyB, "support", "")
		if res, _ := call(t, csB, "support", map[string]any{"message": "", "decision": "approve", "run_id": o.RunID}); !res.IsError || !strings.Contains(text(res), "not found") {
			t.Errorf("another owner's decision: %s", text(res))
		}
		res, o2 := call(t, cs, "support", map[string]any{"message": "", "decision": "approve", "run_id": o.RunID})
		if res.IsError || o2.Status != "completed" || o2.RunID != o.RunID || o2.ThreadID != o.ThreadID || !strings.HasPrefix(o2.Answer, o.Answer) {
			t.Fatalf("decided %s: %+v (before: %+v)", text(res), o2, o)
		}
		if res, _ := call(t, cs, "support", map[string]any{"message": "", "decision": "approve", "run_id": o.RunID}); !res.IsError {
			t.Errorf("a second decision: %s", text(res))
		}
	})
}

// baton mcp's stdio: the same tool over a pipe, for a fixed caller.
func TestStdio(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- mcp.ServeStdio(ctx, b.Srv, "support", &server.Caller{Owner: "alice", Scopes: []server.Scope{server.ScopeAdmin}}, serverIn, serverOut)
	}()
	c := sdk.NewClient(&sdk.Implementation{Name: "baton-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, o := call(t, cs, "support", map[string]any{"message": "I was charged twice for order 1234"})
	if res.IsError || o.Status != "completed" || !strings.Contains(o.Answer, "duplicate") {
		t.Fatalf("result %s: %+v", text(res), o)
	}
	// The thread is alice's.
	if r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+o.ThreadID, nil); r.Status != 200 {
		t.Errorf("the stdio caller's thread: %d %s", r.Status, r.Body)
	}
	_ = cs.Close()
	cancel()
	select {
	case <-done:
	case <-time.After(callBound):
		t.Fatal("ServeStdio did not return after its client closed and its context ended")
	}
	if err := mcp.ServeStdio(t.Context(), b.Srv, "nope", &server.Caller{Owner: "alice", Scopes: []server.Scope{server.ScopeAdmin}}, io.NopCloser(strings.NewReader("")), nopWriter{}); err == nil {
		t.Error("an unknown network is served")
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriter) Close() error                { return nil }

// A run handed to a background worker at a slow tool is followed to its
// end: the result is the whole answer.
func TestBackgroundRun(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	var cl client
	cs := cl.connect(t, b, b.KeyA, "research", "")
	res, o := call(t, cs, "research", map[string]any{"message": "How did EV sales develop in 2025?"})
	if res.IsError || o.Status != "completed" || !strings.Contains(o.Answer, "RPT-42") {
		t.Fatalf("result %s: %+v", text(res), o)
	}
	if streamed := cl.streamed(t, o.Answer); streamed != o.Answer {
		t.Errorf("progress notifications carried %q, the answer is %q", streamed, o.Answer)
	}
}
