// Package summary implements thread → thread handoffs: a long thread is
// summarised on demand, a person approves, edits or rejects the summary, and
// a new child thread starts seeded with it through the agent's memory; the
// seed is cleared after the child's first complete turn.
//
// # Steps
//
//  1. Selection, pure: [Select] scores the last [DefaultWindow] messages
//     (user intent, tool calls kept with their results, recency; orphaned
//     tool output penalised) and keeps the best [DefaultKeep] in order;
//     [Trim] cuts them to a token budget ([DefaultBudget], counted with
//     [ApproxTokens] / [MessageTokens]) starting on a user message. Both keep
//     the pairing invariant of package message.
//  2. Summary, no side effects: [Summarise] asks the configured model for a
//     [Summary] {title, body[3–6], tldr} through structured output
//     ([Schema]), capped at [DefaultMaxTokens] output tokens, validates it
//     ([ParseSummary]) and renders it to Markdown, truncated past
//     [DefaultMaxChars] characters (logged with the handoff id).
//  3. Approval: [Proposal.Interrupt] is the stable, versioned payload
//     (schema_version 1, middleware_source, one handoff_summary action);
//     a [Decision] approves, edits (title and/or Markdown) or rejects.
//  4. [Service.Decide] on approval only, in one transaction when the memory
//     is in the store: the Markdown goes into the <current_thread_summary>
//     block of the assistant's memory (package memory), the child thread is
//     created with its parent id, "handoff" metadata ([Handoff]) is set on
//     both threads and [MetadataLastHandoff] on the parent. Rejection
//     writes nothing.
//  5. [Service.System] (for runner.Config.System) injects the memory into
//     every model call, showing the summary on the child thread only;
//     [Service.Cleanup], called after each completed run, resets the block
//     and clears the flags after the child's first complete turn — exactly
//     once, compare-and-swap, across processes.
//  6. Accepted summaries are mirrored (upsert into thread_summaries) with
//     retries, backoff and a storm guard; when the mirror is down the
//     handoff completes and handoff_store_status=degraded is logged.
//
// Logs use the fields handoff_id, thread_id, child_thread_id, model_run_id,
// tokens_used and handoff_store_status. See docs/thread-handoff.md.
package summary
