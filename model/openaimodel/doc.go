// Package openaimodel implements [model.Model] on OpenAI's Chat Completions
// and Responses APIs through the official SDK (github.com/openai/openai-go/v3),
// and on any OpenAI-compatible Chat Completions server (vLLM, Ollama,
// LM Studio, llama.cpp, proxies) by base URL.
//
// # Streaming
//
// Every call streams. Text deltas become [model.ChunkText] as they arrive,
// reasoning deltas [model.ChunkReasoning] (Responses reasoning summaries and
// text; the reasoning_content / reasoning fields of compatible servers), each
// tool call a [model.ChunkToolCall] once it is whole (Chat: when the stream
// ends, Responses: at output_item.done), then one [model.ChunkDone] with the
// whole assistant message, usage, normalised finish reason, the x-request-id
// header and the model the provider reports.
//
// A stream is only accepted when it is complete: for OpenAI, Chat needs its
// finish_reason and the [DONE] line, Responses its response.completed (or
// response.incomplete) event. A stream cut short is a transient
// [*model.Error] with Code "incomplete_stream"; tool arguments that are not a
// JSON object are an error too (Code "invalid_tool_arguments"), never a
// silent partial answer.
//
// The body is read by its Content-Type (else its first bytes): an event
// stream, or one JSON completion (Chat) or Response (Responses) from a
// server or proxy that ignored "stream": true — a Response is folded in as
// its terminal event would be. A body that is neither, a JSON body that is
// malformed, cut or not the API's object, or an event stream holding no
// event is a permanent [*model.Error] (Code "invalid_response") quoting a
// short snippet of it, secrets redacted: the runner does not retry it.
//
// Finish reasons are normalised ("stop", "tool_calls", "length",
// "content_filter", "refusal" when the model refused — its words also in
// Chunk.Refusal).
//
// # OpenAI-compatible servers
//
// With Config.Provider "openai-compatible" the adapter tolerates what such
// servers do: tool names repeated in every fragment, calls without an index
// or an id (an id is made up), arguments sent as a JSON object instead of a
// string, no finish_reason (inferred when the stream ended cleanly: "tool_calls"
// if there are calls, else "stop"), no [DONE] after a finish_reason, no
// usage. max_tokens is sent instead of max_completion_tokens. No API key is
// sent when none is configured, and OPENAI_* environment variables are never
// read by this package.
//
// # Retries and errors
//
// SDK retries are off: the caller (baton's runner) owns retries. Failures are
// [*model.Error] values: 408/409/429/5xx, overloads, timeouts and broken
// streams are Transient, with RetryAfter from retry-after-ms, retry-after or
// the x-ratelimit-reset-* header of an exhausted limit; 400/401/403/404 are
// not, and keep the provider's message. A request that does not fit the
// context window has Code "context_length_exceeded". API keys never appear
// in error text.
//
// # History
//
// Request.System and system messages go first as system messages (Chat) or in
// instructions and system input items (Responses). Tool results become tool
// messages (Chat) or function_call_output items (Responses); parallel calls
// keep their order. Reasoning parts are sent back only to the Responses API and
// only when OpenAI produced them (Part.Provider "openai", Signature holding the
// encrypted content, ID the reasoning item id). Images are sent from user
// messages (URL or inline data); an image anywhere else is an error wrapping
// [ErrUnsupported].
//
// # Structured output
//
// Request.Output is sent as response_format json_schema (Chat) or text.format
// json_schema (Responses), and the final text is validated against the schema
// here too: a mismatch is a [*model.Error] with Code "output_schema_mismatch".
package openaimodel
