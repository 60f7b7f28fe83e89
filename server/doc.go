// Package server is baton's HTTP API: threads, runs streamed as
// Server-Sent Events, approval interrupts, thread → thread handoffs, an
// OpenAI-compatible /v1/chat/completions, API-key authentication with one
// tenant per key owner, and the embedded web UI. docs/api.md documents the
// routes.
//
// [New] returns a [Server], an http.Handler. Runs execute in goroutines of
// the server, apart from the requests that start them: every event goes to
// a bounded in-memory log per run (and per thread), which any number of
// streams follow at their own pace, so a client that disconnects can
// reconnect with Last-Event-ID and get exactly the events it missed. A run
// that stops at the background boundary (a slow tool) is handed to a
// [Background] worker, and its streams stay open and carry the worker's
// progress until the run is final. [Server.Shutdown] stops taking runs,
// lets the runs in flight finish (or hands them to the worker) and ends
// the streams.
package server
