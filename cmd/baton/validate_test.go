package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateListsResolvedTools: `baton validate` prints each agent's
// tools as the network resolved them — an MCP server's tools as the server
// listed them (examples/notes starts its server, notesmcp, with go run),
// with the approval marking; declared tools, transfers, agent tools; and a
// remote A2A agent's card.
func TestValidateListsResolvedTools(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "validate", "../../examples/notes/network.yaml")
	if code != 0 {
		t.Fatalf("validate examples/notes: exit code %d, stderr %q", code, stderr)
	}
	want := "  scribe: list_notes (mcp notebook), search_notes (mcp notebook), add_note (mcp notebook), delete_note (mcp notebook, approval)\n"
	if !strings.HasSuffix(stdout, want) {
		t.Errorf("validate examples/notes printed %q, want it to end with %q", stdout, want)
	}

	net := filepath.Join(t.TempDir(), "desk.yaml")
	if err := os.WriteFile(net, []byte(`version: 1
name: desk
tools:
  - {name: lookup, result: found}
agents:
  - name: triage
    model: scripted
    reply: ok
    tools: [lookup]
    transfers: [{to: expert}]
    agent_tools: [{agent: expert}]
  - name: expert
    description: Remote.
    remote: {card: "http://127.0.0.1:9/a2a/experts"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "validate", net)
	if code != 0 {
		t.Fatalf("validate desk: exit code %d, stderr %q", code, stderr)
	}
	for _, line := range []string{
		"  triage: lookup, transfer_to_expert (transfer to expert), ask_expert (agent tool expert)\n",
		"  expert: remote A2A agent (card http://127.0.0.1:9/a2a/experts)\n",
	} {
		if !strings.Contains(stdout, line) {
			t.Errorf("validate desk printed %q, want the line %q", stdout, line)
		}
	}
}
