package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threadhandoff"
)

// TestChatTerminal drives `baton chat` in a real terminal (a tmux pane,
// 120×50, TERM=xterm-256color) through a conversation with a transfer to
// billing, then /handoff accepted, edited in $EDITOR and declined, /threads
// and /quit. The network is examples/support/network.yaml with billing
// pointed at a stand-in OpenAI-compatible server, which records every
// system prompt billing receives: that is how the test proves that a child
// thread's first turn, and only that turn, sees the summary.
func TestChatTerminal(t *testing.T) {
	bin := batonBinary(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is required in CI (scripts/test.sh installs it)")
		}
		t.Skip("tmux is not installed")
	}
	t.Parallel()
	dir := t.TempDir()
	billing := newFakeBilling(t)
	network := filepath.Join(dir, "network.yaml")
	writeChatNetwork(t, network, billing.URL+"/v1")
	editor := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed 's/^### .*/### Edited: reversal pending/' \"$1\" > \"$1.new\" && mv \"$1.new\" \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "baton.db")

	start := time.Now()
	tm := startTmux(t, dir, "env", "TERM=xterm-256color", "EDITOR="+editor,
		bin, "chat", "--network", network, "--database", "sqlite:"+db, "--owner", "tester")
	const idle = "› Send a message, or /help"
	tm.waitFor(t, "/help lists the commands", idle)

	// A first message: triage hands off to billing, which has no summary.
	tm.send(t, "I was charged twice for order 1234")
	tm.waitFor(t, "⇒ transfer triage → billing", "billing: Billing answer #1: no summary in my memory.", "── completed · last agent billing", idle)

	// /handoff, accepted: a child thread, switched to.
	tm.send(t, "/handoff")
	tm.waitFor(t, "### Double charge on order 1234", "**TL;DR:**", "[a]ccept / [e]dit / [d]ecline")
	tm.keys(t, "a")
	screen := tm.waitFor(t, "✓ Thread handoff approved: continue in thread", "«Double charge on order 1234», child of", idle)
	parent, child := switchedTo(t, screen, "Double charge on order 1234")

	// The child's first turn starts with billing and sees the summary; then
	// the summary is cleared and the next turn does not see it.
	tm.send(t, "Any news on the double charge?")
	tm.waitFor(t, "▶ billing is active (thread handoff)", "Billing answer #2: the summary «Double charge on order 1234» is in my memory.",
		"its summary is now cleared from the agent's memory", idle)
	tm.send(t, "Is the charge reversed yet?")
	tm.waitFor(t, "Billing answer #3: no summary in my memory.", idle)

	// /handoff, edited in $EDITOR: the new title names the grandchild.
	tm.send(t, "/handoff")
	tm.waitFor(t, "[a]ccept / [e]dit / [d]ecline")
	tm.keys(t, "e")
	screen = tm.waitFor(t, "· edited summary:", "«Edited: reversal pending», child of", "the summary (edited) is in billing's memory", idle)
	from, grandchild := switchedTo(t, screen, "Edited: reversal pending")
	if from != child {
		t.Errorf("edited handoff from thread %s, want the child %s", from, child)
	}
	tm.send(t, "Please confirm the charge reversal")
	tm.waitFor(t, "Billing answer #4: the summary «Edited: reversal pending» is in my memory.", idle)

	// /handoff, declined: nothing is written.
	tm.send(t, "/handoff")
	tm.waitFor(t, "[a]ccept / [e]dit / [d]ecline")
	tm.keys(t, "d")
	tm.waitFor(t, "✗ Thread handoff rejected: nothing was written.", idle)

	tm.send(t, "/threads")
	tm.waitFor(t, "(* is the current one)", "* "+shortID(grandchild), "  "+shortID(child), "  "+shortID(parent), idle)
	tm.send(t, "/quit")
	tm.waitExit(t)
	t.Logf("terminal session: %s", time.Since(start).Round(time.Millisecond))

	// What billing was sent.
	calls := billing.systems()
	if len(calls) != 4 {
		t.Fatalf("billing was called %d times, want 4", len(calls))
	}
	for i, want := range []string{"", "Double charge on order 1234", "", "Edited: reversal pending"} {
		got := ""
		if m := summaryTitle.FindStringSubmatch(calls[i]); m != nil {
			got = m[1]
		}
		switch {
		case got != want:
			t.Errorf("billing call %d: summary %q in the system prompt, want %q:\n%s", i+1, got, want, calls[i])
		case i == 2 && !strings.Contains(calls[i], memory.Placeholder):
			// (Before the first handoff, billing has no memory document.)
			t.Errorf("billing call 3: no memory placeholder in the system prompt:\n%s", calls[i])
		case i == 1 && !strings.Contains(calls[i], "**TL;DR:** Duplicate charge on order 1234 flagged"):
			t.Errorf("billing call 2: the system prompt lacks the whole summary:\n%s", calls[i])
		}
	}

	// What was stored.
	st := openTestStore(t, "sqlite:"+db)
	page, err := st.ListThreads(t.Context(), &store.ListThreadsParams{OwnerID: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*store.Thread{}
	for _, th := range page.Threads {
		byID[th.ID] = th
	}
	if len(byID) != 3 || byID[parent] == nil || byID[child] == nil || byID[grandchild] == nil {
		t.Fatalf("threads %v, want %s, %s and %s (the declined handoff must not create one)", keys(byID), parent, child, grandchild)
	}
	// The child became the parent of the edited handoff, whose metadata
	// both threads now hold.
	for _, tt := range []struct{ id, parent, name string }{
		{child, parent, "Double charge on order 1234"},
		{grandchild, child, "Edited: reversal pending"},
	} {
		th := byID[tt.id]
		if th.ParentID != tt.parent || th.Name != tt.name || th.ActiveAgent != "billing" {
			t.Errorf("thread %s: parent %q, name %q, agent %q; want %q, %q, billing", th.ID, th.ParentID, th.Name, th.ActiveAgent, tt.parent, tt.name)
		}
		h := threadhandoff.HandoffOf(th)
		if h == nil || h.ChildThreadID != grandchild || h.SourceThreadID != child || h.Pending || h.CleanupRequired || h.LastCleanupAt == nil {
			t.Errorf("thread %s: handoff metadata %+v, want the handoff %s → %s, cleaned up", th.ID, h, child, grandchild)
		}
	}
	if lh := threadhandoff.LastHandoffOf(byID[grandchild]); lh != nil {
		t.Errorf("the declined handoff wrote last_handoff on %s: %+v", grandchild, lh)
	}
	if lh := threadhandoff.LastHandoffOf(byID[child]); lh == nil || !lh.Edited || lh.ChildThreadID != grandchild {
		t.Errorf("last_handoff of %s: %+v, want the edited handoff to %s", child, lh, grandchild)
	}
	doc, err := threadhandoff.StoreMemory(st).Get(t.Context(), "tester", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := memory.Parse(doc.Content); err != nil || b == nil || strings.TrimSpace(b.Content) != memory.Placeholder {
		t.Errorf("billing's memory after the turns: %q (%v), want the placeholder", doc.Content, err)
	}
	// Each /handoff was stored as a proposal of its thread and decided
	// there, as the web UI and the API would see it.
	for id, want := range map[string]threadhandoff.DecisionType{parent: threadhandoff.DecisionApprove, child: threadhandoff.DecisionEdit,
		grandchild: threadhandoff.DecisionReject} {
		ins, err := st.ListInterrupts(t.Context(), &store.ListInterruptsParams{OwnerID: "tester", ThreadID: id, Kind: store.InterruptThreadHandoff})
		if err != nil {
			t.Fatal(err)
		}
		var d threadhandoff.Decision
		if len(ins) != 1 || ins[0].Status != store.InterruptDecided || json.Unmarshal(ins[0].Decision, &d) != nil || d.Type != want {
			t.Errorf("thread handoff proposals of %s: %d, want one decided %s", id, len(ins), want)
		}
	}
}

// switchedTo reads the parent and child thread ids of the switch to the
// thread named name from the screen.
func switchedTo(t *testing.T, screen, name string) (parent, child string) {
	t.Helper()
	re := regexp.MustCompile(`switched to thread (\S+) «` + regexp.QuoteMeta(name) + `», child of\s+(\S+);`)
	m := re.FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no switch to %q on the screen:\n%s", name, screen)
	}
	return m[2], m[1]
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// writeChatNetwork writes examples/support/network.yaml with billing's
// model replaced by an OpenAI-compatible model at baseURL.
func writeChatNetwork(t *testing.T, path, baseURL string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "support", "network.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["summary"] == nil {
		t.Fatal("examples/support/network.yaml declares no summary: model")
	}
	found := false
	for _, a := range doc["agents"].([]any) {
		if am := a.(map[string]any); am["name"] == "billing" {
			am["model"], am["base_url"] = "openai-compatible:fake-billing", baseURL
			for _, k := range []string{"script", "stream", "rules", "reply"} {
				delete(am, k)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("examples/support/network.yaml has no billing agent")
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeBilling is an OpenAI-compatible Chat Completions server that streams
// "Billing answer #N: …", saying whether the system prompt it got holds a
// handoff summary, and records every system prompt.
type fakeBilling struct {
	*httptest.Server
	mu      sync.Mutex
	prompts []string
}

var summaryTitle = regexp.MustCompile(`(?s)<current_thread_summary>.*?### ([^\n]+)\n.*?</current_thread_summary>`)

func newFakeBilling(t *testing.T) *fakeBilling {
	f := &fakeBilling{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var system strings.Builder
		for _, m := range req.Messages {
			if m.Role != "system" && m.Role != "developer" {
				continue
			}
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				var parts []struct {
					Text string `json:"text"`
				}
				_ = json.Unmarshal(m.Content, &parts)
				for _, p := range parts {
					s += p.Text
				}
			}
			system.WriteString(s + "\n")
		}
		f.mu.Lock()
		f.prompts = append(f.prompts, system.String())
		n := len(f.prompts)
		f.mu.Unlock()
		answer := "no summary in my memory."
		if m := summaryTitle.FindStringSubmatch(system.String()); m != nil {
			answer = "the summary «" + m[1] + "» is in my memory."
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, delta := range []string{fmt.Sprintf("Billing answer #%d: ", n), answer} {
			chunk, _ := json.Marshal(map[string]any{"model": "fake-billing", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": delta}}}})
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, `data: {"model":"fake-billing","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeBilling) systems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.prompts...)
}

// tmuxSession is a program running in a detached tmux pane of a private
// tmux server.
type tmuxSession struct {
	sock string
}

func startTmux(t *testing.T, dir string, argv ...string) *tmuxSession {
	t.Helper()
	s := &tmuxSession{sock: filepath.Join(dir, "tmux.sock")}
	args := append([]string{"new-session", "-d", "-s", "chat", "-x", "120", "-y", "50", "--"}, argv...)
	if out, err := s.cmd(t, args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", s.sock, "kill-server").Run() })
	return s
}

func (s *tmuxSession) cmd(t *testing.T, args ...string) *exec.Cmd {
	return exec.CommandContext(t.Context(), "tmux", append([]string{"-S", s.sock, "-f", "/dev/null"}, args...)...)
}

// send types text and presses enter.
func (s *tmuxSession) send(t *testing.T, text string) {
	t.Helper()
	s.keys(t, "-l", text)
	s.keys(t, "Enter")
}

func (s *tmuxSession) keys(t *testing.T, keys ...string) {
	t.Helper()
	if out, err := s.cmd(t, append([]string{"send-keys", "-t", "chat"}, keys...)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys %q: %v\n%s", keys, err, out)
	}
}

func (s *tmuxSession) screen(t *testing.T) (string, error) {
	out, err := s.cmd(t, "capture-pane", "-p", "-J", "-t", "chat").CombinedOutput()
	return string(out), err
}

// waitFor waits until the screen shows every one of wants at once, and
// returns it.
func (s *tmuxSession) waitFor(t *testing.T, wants ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var screen string
	for {
		var err error
		screen, err = s.screen(t)
		missing := ""
		for _, w := range wants {
			if !strings.Contains(screen, w) {
				missing = w
				break
			}
		}
		if err == nil && missing == "" {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen does not show %q (%v):\n%s", missing, err, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitExit waits until the program has ended (and with it the session).
func (s *tmuxSession) waitExit(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.cmd(t, "has-session", "-t", "chat").Run() == nil {
		if time.Now().After(deadline) {
			screen, _ := s.screen(t)
			t.Fatalf("baton chat did not exit:\n%s", screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestChatUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"Help", []string{"chat", "--help"}, 0, "/handoff --preview"},
		{"NoNetwork", []string{"chat"}, exitUsage, "baton chat: want --network FILE"},
		{"Arguments", []string{"chat", "--network", supportNet, "hello"}, exitUsage, `unexpected arguments ["hello"]`},
		{"NotATerminal", []string{"chat", "--network", supportNet}, exitUsage, "baton chat needs a terminal; use baton run for scripts"},
		{"BadNetwork", []string{"chat", "--network", "testdata/nope.yaml"}, exitUsage, "no such file or directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit code %d, stderr:\n%s\nwant code %d and %q", code, stderr, tt.code, tt.stderr)
			}
		})
	}
}
