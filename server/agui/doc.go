// Package agui serves the AG-UI protocol (https://docs.ag-ui.com, protocol
// 1.0) over baton's server core at POST /v1/agui/{network} (docs/agui.md):
// the body is AG-UI's RunAgentInput, the answer an SSE stream of AG-UI
// events made from the run's events. A run starts and is followed exactly
// as POST /v1/threads/{id}/runs does (server.Core); this package only
// translates. Every event's SSE id says where it stands in the baton run,
// so that the same request sent again with Last-Event-ID resumes after it,
// after a restart too. Mount [Protocol] on a server
// (server.Config.Protocols).
package agui
