// Package anthropicmodel implements [model.Model] on Anthropic's Messages API
// through the official SDK (github.com/anthropics/anthropic-sdk-go), always
// asking for a stream.
//
// # Streaming
//
// Text deltas become [model.ChunkText] as they arrive and thinking deltas
// [model.ChunkReasoning]; each tool_use block becomes a [model.ChunkToolCall]
// when its block stops, with its input assembled from the input_json_delta
// fragments (no fragment, or an empty one, means {}). The stream ends with
// one [model.ChunkDone] carrying the whole assistant message (blocks in
// order), usage (input tokens include cache reads and writes; cached tokens
// are the cache reads, cache-creation tokens the writes; reasoning tokens are
// thinking tokens when reported), the normalised stop reason ("stop",
// "tool_calls", "length", "refusal" with stop_details in Refusal,
// "pause_turn"), the request-id header and the model.
//
// The body is read by its Content-Type: an event stream, or one JSON message
// from a server or proxy that ignored "stream": true, folded in through the
// same events. A body that is neither, a JSON body that is malformed or cut,
// or an event stream holding no event is a permanent [*model.Error] (Code
// "invalid_response") quoting a short snippet of it, secrets redacted.
//
// Server-side tool blocks (server_tool_use, web_search_tool_result, …),
// citations, pings and event or delta types this package does not know are
// skipped. A stream that ends before message_stop is a transient
// [*model.Error] (Code "incomplete_stream"); tool input that is not a JSON
// object is an error (Code "invalid_tool_arguments").
//
// # Thinking
//
// thinking and redacted_thinking blocks are kept as [message.PartReasoning]
// parts with Provider "anthropic": a thinking block has its text in Text and
// its signature in Signature; a redacted_thinking block has ID
// "redacted_thinking" and its opaque data in Signature. They are never
// answer text, and they are sent back verbatim in later requests (as
// Anthropic requires during tool use); reasoning parts of other providers are
// left out. Settings.ReasoningEffort turns extended thinking on with a token
// budget (minimal 1024, low 2048, medium 8192, high 16384, xhigh and max
// 32000), lowered to fit max_tokens (thinking stays off when less than 1024
// tokens would be left); while thinking, temperature and top_p below 0.95 are
// not sent, and a forced tool_choice is an error wrapping [ErrUnsupported].
//
// # History
//
// Request.System and every system message of the history go, in order, into
// the system parameter. Tool results become tool_result blocks in a user
// message; consecutive tool results, and a user message that follows them,
// are grouped into one user message as Anthropic requires. Images in user
// messages are sent by URL or as base64 data; anywhere else they are an error.
//
// # Prompt caching
//
// Unless Settings.PromptCaching is false, every request marks three cache
// breakpoints (cache_control ephemeral): the last system block, the last
// tool, and the last block of the conversation that can carry one.
//
// # Settings and structured output
//
// max_tokens defaults to Config.MaxTokens (4096). temperature, top_p,
// tool_choice ("auto", "none", "required" → any, or a tool name) and
// parallel_tool_calls (false → disable_parallel_tool_use) are mapped.
// Request.Output is sent as output_config.format (json_schema) by default, or,
// with Config.StructuredOutput "tool", as a tool the model is made to call,
// whose input becomes the answer text. Either way the answer is validated
// against the schema here: a mismatch is a [*model.Error] with Code
// "output_schema_mismatch".
//
// # Errors
//
// SDK retries are off. 429, 5xx, 529 overloaded, stream error events of
// kind overloaded_error/api_error/rate_limit_error, timeouts and broken
// streams are Transient, with RetryAfter from retry-after or the reset time
// of an exhausted anthropic-ratelimit-* limit. A prompt that is too long has
// Code "context_length_exceeded". The API key never appears in error text,
// and no ANTHROPIC_* environment variable is read by this package.
package anthropicmodel
