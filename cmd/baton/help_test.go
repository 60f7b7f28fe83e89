package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/internal/logtest"
)

// Every command answers --help (and -h) with its synopsis and flags, and
// exits 0.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		for _, arg := range []string{"--help", "-h"} {
			t.Run(c.name+arg, func(t *testing.T) {
				t.Parallel()
				code, stdout, stderr := runCLI(t, c.name, arg)
				if code != 0 || stdout != "" {
					t.Errorf("exit code %d, stdout %q", code, stdout)
				}
				if !strings.HasPrefix(stderr, "usage: baton "+c.name) || strings.Contains(stderr, "help requested") {
					t.Errorf("stderr:\n%s", stderr)
				}
				// The same logging flags in every command.
				for _, f := range []string{"\n  -v\t", "\n  -log-format string\n", "\n  -log-level string\n"} {
					if !strings.Contains(stderr, f) {
						t.Errorf("no %q flag:\n%s", strings.TrimSpace(f), stderr)
					}
				}
			})
		}
	}
	t.Run("KeysSubcommand", func(t *testing.T) {
		t.Parallel()
		code, _, stderr := runCLI(t, "keys", "create", "--help")
		if code != 0 || !strings.HasPrefix(stderr, "usage: baton keys create --owner NAME") || !strings.Contains(stderr, "-owner string") {
			t.Errorf("exit code %d, stderr:\n%s", code, stderr)
		}
	})
	t.Run("FlagsAfterArguments", func(t *testing.T) {
		t.Parallel()
		code, _, stderr := runCLI(t, "run", supportNet, "hello", "--help")
		if code != 0 || !strings.Contains(stderr, "-model string") {
			t.Errorf("exit code %d, stderr:\n%s", code, stderr)
		}
	})
}

// --model points every agent of an example at a live OpenAI-compatible
// server: the scripted rules are not used, the server's answer is.
func TestLiveModel(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"tiny","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello from a live model."},"finish_reason":null}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"tiny","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", d)
		}
	}))
	t.Cleanup(srv.Close)
	code, stdout, stderr := runCLI(t, "run", "--model", "openai-compatible:tiny@"+srv.URL+"/v1", supportNet, "I was charged twice for order 1234")
	if code != 0 || !strings.Contains(stdout, "triage: Hello from a live model.") || calls.Load() != 1 {
		t.Errorf("exit code %d, %d calls, stdout:\n%s\nstderr:\n%s", code, calls.Load(), stdout, stderr)
	}
	code, _, stderr = runCLI(t, "run", "--model", "nowhere:tiny", supportNet, "hello")
	if code != exitUsage || !strings.Contains(stderr, `unknown provider "nowhere"`) {
		t.Errorf("unknown provider: exit code %d, stderr:\n%s", code, stderr)
	}
}

// The CLI prints warnings only; -v adds the info logs (a transfer, the
// run's start and end), before or after the command; --log-format json
// writes them as JSON. Not parallel: it sets BATON_LOG_LEVEL.
func TestVerbose(t *testing.T) {
	t.Setenv("BATON_LOG_LEVEL", "")
	t.Setenv("BATON_LOG_FORMAT", "")
	const msg = "I was charged twice for order 1234"
	if code, _, stderr := runCLI(t, "run", supportNet, msg); code != 0 || stderr != "" {
		t.Errorf("without -v: exit code %d, stderr:\n%s", code, stderr)
	}
	db := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
	for _, args := range [][]string{{"-v", "run", "--database", db, supportNet, msg}, {"run", supportNet, msg, "-v"}} {
		code, _, stderr := runCLI(t, args...)
		if code != 0 || !strings.Contains(stderr, "level=INFO msg=transfer") || !strings.Contains(stderr, `level=INFO msg="run started"`) ||
			!strings.Contains(stderr, `level=INFO msg="run ended"`) || strings.Contains(stderr, "level=DEBUG") {
			t.Errorf("%v: exit code %d, stderr:\n%s", args, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "run", "--log-level", "info", supportNet, msg); code != 0 || !strings.Contains(stderr, `level=INFO msg="run ended"`) {
		t.Errorf("--log-level info: exit code %d, stderr:\n%s", code, stderr)
	}
	t.Setenv("BATON_LOG_LEVEL", "info")
	code, stdout, stderr := runCLI(t, "run", "--json", "--log-format", "json", supportNet, msg)
	if code != 0 {
		t.Fatalf("--log-format json: exit code %d, stderr:\n%s", code, stderr)
	}
	start, _, err := runStartOf(stdout)
	if err != nil || start.RunID == "" {
		t.Fatalf("first event %q: %v", stdout, err)
	}
	var buf logtest.Buffer
	buf.Write([]byte(stderr))
	for _, m := range []string{"run started", "run ended"} {
		if lines := buf.Records(t, m); len(lines) != 1 || lines[0]["run_id"] != start.RunID || lines[0]["network"] != "support" {
			t.Errorf("%q lines %v, want one of run %s", m, lines, start.RunID)
		}
	}
	for _, args := range [][]string{{"run", "--log-format", "yaml", supportNet, msg}, {"run", "--log-level", "loud", supportNet, msg}, {"worker", "--log-format", "xml", supportNet}} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, "--log-") {
			t.Errorf("%v: exit code %d, stderr:\n%s", args, code, stderr)
		}
	}
}
