// Package mcp publishes each network of a server as an MCP server
// (docs/mcp.md) over baton's server core, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): streamable HTTP at
// /mcp/{network} on `baton serve` ([Protocol], authenticated with a baton
// API key like every route, sessions bound to the key's owner), and stdio
// for desktop apps ([ServeStdio], `baton mcp --network FILE`).
//
// Each server has one tool, named after its network, that runs a turn on a
// thread — a new one, or the thread_id a previous call returned — through
// server.Core, wherever the run executes. Progress notifications carry the
// answer as it streams; the result holds the final answer and the thread
// id. A run that waits for a person's approval asks the client through MCP
// elicitation where the client supports it (as an input request of the
// tool call on protocol 2026-07-28, as an elicitation/create request
// before it, the SDK choosing), and otherwise returns the pending interrupt,
// decided by calling the tool again with run_id and decision.
package mcp
