package e2e_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testbin"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// mcpNetwork calls append_first of the test MCP server
// (mcptool/testdata/mcpserver): it writes a line to $MCP_LOG at once, then
// takes 10s to answer, and is not idempotent. %s is the server's binary,
// %s the log.
const mcpNetwork = `version: 1
name: mcpkill
mcp_servers:
  - name: test
    command: %s
    env: {MCP_LOG: %s}
    tools: [append_first]
agents:
  - name: scribe
    model: scripted
    mcp: [test]
    script:
      - tool_calls: [{name: append_first, arguments: {line: effect, wait_ms: 10000}}]
      - text: done
`

// mcpServer is the test MCP server (mcptool/testdata/mcpserver).
var mcpServer = testbin.Build{Pkg: "github.com/batonhq/baton/mcptool/testdata/mcpserver"}

// TestMCPNotTwiceAcrossAKill: `baton run` is SIGKILLed while a
// non-idempotent MCP tool call is in flight — the server has done its
// effect, the result is not recorded. `baton resume`, in a new process
// with a new server process, completes the run without sending the call
// again: the model gets an error result saying its outcome is unknown, and
// the effect happened once.
func TestMCPNotTwiceAcrossAKill(t *testing.T) {
	bin := batonBin(t)
	dir := t.TempDir()
	server := mcpServer.Path(t, binDir, "mcpserver")
	effects := filepath.Join(dir, "effects.log")
	net := filepath.Join(dir, "mcpkill.yaml")
	if err := os.WriteFile(net, fmt.Appendf(nil, mcpNetwork, server, effects), 0o644); err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + filepath.Join(dir, "baton.db")

	var runID string
	run := newProc(dir, "run", bin, "run", "--json", "--database", db, net, "append the effect")
	run.onLine = func(line string) {
		if e, ok := decodeLine(line); ok {
			if s, ok := e.(*runner.RunStartEvent); ok {
				runID = s.RunID
			}
		}
	}
	if err := run.start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for lines(effects) == 0 {
		if time.Now().After(deadline) || !run.running() {
			t.Fatalf("the MCP call had no effect:\n%s", run.tail(4000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	run.kill()
	if strings.Contains(run.tail(100000), `"type":"run_end"`) {
		t.Fatal("the run ended before the kill: the test proves nothing")
	}
	if runID == "" {
		t.Fatalf("no run_start:\n%s", run.tail(4000))
	}

	out, err := exec.Command(bin, "resume", "--json", "--database", db, net, "--run", runID).CombinedOutput()
	if err != nil {
		t.Fatalf("baton resume: %v\n%s", err, out)
	}
	var result *runner.ToolResultEvent
	var end *runner.RunEndEvent
	for line := range strings.Lines(string(out)) {
		e, ok := decodeLine(strings.TrimSpace(line))
		if !ok {
			continue
		}
		switch e := e.(type) {
		case *runner.ToolResultEvent:
			result = e
		case *runner.RunEndEvent:
			end = e
		}
	}
	if end == nil || end.Status != runstate.StatusCompleted {
		t.Fatalf("resumed run: %+v\n%s", end, out)
	}
	if result == nil || result.Name != "append_first" || !strings.Contains(result.Error, "not sent again") {
		t.Errorf("the resumed call's result %+v, want an error saying it is not sent again", result)
	}
	if n := lines(effects); n != 1 {
		t.Errorf("the MCP tool's effect happened %d times, want once", n)
	}
}

// lines counts the lines of a file (0 if it does not exist).
func lines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}
