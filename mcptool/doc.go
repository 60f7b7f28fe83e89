// Package mcptool connects baton to MCP servers, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): it starts the servers a network
// file declares (mcp_servers:, a command speaking MCP on its standard input
// and output, or a streamable HTTP endpoint), lists their tools, and calls
// them for the agents that have them.
//
// [Sessions] is the MCP side of a process: one session per declared server,
// shared by every network and run of the process. [Sessions.Resolve] is
// netspec.Options.MCP; package service opens one Sessions in service.Open
// and closes it in Service.Close, so that `baton run`, `chat`, `serve` and
// `worker` all get the same servers the same way.
//
// Calls map to tool results: text content is the result; structured content
// is the result as JSON (text that only repeats it is dropped); other
// content (images, audio, resources) is described in a line; a result with
// isError and a protocol error are error results the model sees.
//
// A server that stops is restarted at the next call. A call that was in
// flight when it stopped is sent again after the restart when the tool is
// idempotent (readOnlyHint or idempotentHint, or listed in idempotent:); a
// non-idempotent one gets an error result saying that its outcome is
// unknown. The same rule holds across processes: before a non-idempotent
// call is sent, its mark is saved in the run's state (agent.Memo), so a run
// resumed after a crash never sends it twice; it answers the model that
// the call's outcome is unknown. Every call carries the run's idempotency
// key in its _meta ("baton/idempotency_key"), for servers that de-duplicate.
package mcptool
