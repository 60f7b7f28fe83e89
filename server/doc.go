// Package server is the core of baton's HTTP API: threads, runs streamed
// as Server-Sent Events, approval interrupts, cancel, thread → thread
// handoffs, API-key authentication with one tenant per key owner, rate and
// size limits, and the embedded web UI — baton's own routes (docs/api.md)
// — and [Core], the runs API that every other wire protocol is served
// over. Each protocol is an adapter in its own package, which imports this
// one and no other adapter: server/openai (Chat Completions, Responses,
// models), server/agui (AG-UI), server/a2a (A2A), server/mcp (MCP); the
// package protocols, outside server/, lists them for Config.Protocols.
//
// [New] returns a [Server], an http.Handler, on an assembled
// service.Service: the server is routes and streams, the service is the
// networks, the store and the background path. Runs execute in goroutines
// of the server, apart from the requests that start them: every event goes
// to a bounded in-memory log per run (and per thread), which any number of
// streams follow at their own pace, so a client that disconnects can
// reconnect with Last-Event-ID and get exactly the events it missed. A run
// that stops at the background boundary (a slow tool) is handed to a River
// worker (of this process or another) in its checkpoint's transaction, and
// its streams stay open and carry the worker's progress, read from the
// store and the draft broker, until the run is final. [Server.Shutdown]
// stops taking runs, lets the runs in flight and those their streams follow
// finish, and ends the streams.
package server
