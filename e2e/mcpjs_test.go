package e2e_test

import (
	"path/filepath"
	"testing"
)

// TestMCPTypeScriptClient drives baton's MCP servers with the official MCP
// TypeScript client, @modelcontextprotocol/sdk (mcpjs/test.mjs, run by
// node's test runner after `npm ci` in mcpjs/ installs the package from
// mcpjs/package-lock.json): streamable HTTP on a real `baton serve` on
// loopback, and stdio on `baton mcp --network`, started by the client as a
// desktop app does. Without node and npm it skips, except with CI=true,
// where it fails.
func TestMCPTypeScriptClient(t *testing.T) {
	network, err := filepath.Abs(filepath.Join("..", "examples", "support", "network.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runNodeClient(t, "mcpjs", "MCP TypeScript client", "BATON_BIN="+batonBin(t), "BATON_NETWORK="+network)
}
