// Package summary summarises a conversation: it selects the messages worth
// keeping, trims them to a token budget and asks a model for a short
// structured summary, rendered to Markdown. It has no side effects beyond
// the model call and its logs; package threadhandoff builds the thread →
// thread handoff (approval, child thread, agent memory, clean-up) on it.
//
// # Steps
//
//  1. Selection, pure: [Select] scores the last [DefaultWindow] messages
//     (user intent, tool calls kept with their results, recency; orphaned
//     tool output penalised) and keeps the best [DefaultKeep] in order;
//     [Trim] cuts them to a token budget ([DefaultBudget], counted with
//     [ApproxTokens] / [MessageTokens]) starting on a user message. Both keep
//     the pairing invariant of package message.
//  2. Summary: [Summarise] asks the model for a [Summary] {title, body[3–6],
//     tldr} through structured output ([Schema]), capped at
//     [DefaultMaxTokens] output tokens, validates it ([ParseSummary]) and
//     renders it to Markdown ([Summary.Markdown]), truncated past
//     [DefaultMaxChars] characters ([Truncate]; logged with the thread handoff id).
//     It returns a [Result]: the summary, its Markdown and what the call
//     cost.
//
// Everything is safe for concurrent use. Logs use the fields handoff_id (the
// thread handoff's), thread_id, model_run_id and tokens_used. See docs/thread-handoff.md.
package summary
