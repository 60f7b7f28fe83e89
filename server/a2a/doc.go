// Package a2a publishes each network of a server as an A2A agent
// (docs/a2a.md) over baton's server core: its agent card at
// GET /a2a/{network}/.well-known/agent-card.json (and at
// /.well-known/agent-card.json when the server runs one network), and the
// A2A JSON-RPC methods, with their SSE streams, at POST /a2a/{network}. An
// A2A context is a thread, a task is a run: the methods run turns and
// follow runs through server.Core, wherever the run executes. Mount
// [Protocol] on a server (server.Config.Protocols).
package a2a
