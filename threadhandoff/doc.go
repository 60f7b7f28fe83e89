// Package threadhandoff implements thread → thread handoffs: a long thread
// is summarised on demand (package summary), a person approves, edits or
// rejects the summary, and a new child thread starts seeded with it
// through the agent's memory; the seed is cleared after the child's first
// complete turn.
//
// # Steps
//
//  1. [Service.Preview] summarises the last messages of a thread
//     (summary.Summarise with [Config].Model) and returns a [Proposal]. It
//     writes nothing.
//  2. [Service.Propose] summarises and stores the proposal as a pending
//     interrupt of the thread (store.Interrupt of kind
//     store.InterruptThreadHandoff, id the handoff id), whose payload is the
//     stable, versioned [Interrupt] (schema_version 1, one handoff_summary
//     action; [ParseInterrupt] reads it back). A thread has at most one
//     pending: Propose returns it unless asked to replace it. Every surface
//     — the HTTP API, the web UI, baton chat — shows and decides the stored
//     proposal ([Service.Get], [Service.PendingOf]); a [Decision] approves,
//     edits (title and/or Markdown) or rejects it.
//  3. [Service.Decide] on approval only, in one transaction when the memory
//     is in the store: the Markdown goes into the <current_thread_summary>
//     block of the assistant's memory (package memory) as the seed of the
//     child thread, beside the seeds of other pending handoffs to the same
//     assistant, the child thread is
//     created with its parent id, "handoff" metadata ([Handoff]) is set on
//     both threads, [MetadataLastHandoff] on the parent, and the proposal is
//     marked decided (compare-and-swap: one decision wins, the others get a
//     *[DecidedError] with its outcome). A proposal whose thread has gained
//     messages since is refused (*[StaleError]) unless forced. Rejection
//     writes nothing but the decision.
//  4. Runs: [Service.Extension], in the runner of every process (request
//     handlers and background workers alike), injects the running agent's
//     memory into every model call, showing each child thread its own
//     summary only ([Service.SystemText]), and after each completed run
//     calls [Service.Cleanup], which removes the child's seed and clears the
//     flags after
//     the child's first complete turn — exactly once, compare-and-swap,
//     across processes. [Service.Picker] starts that first turn at the
//     agent whose memory holds the summary. Both take the owner from the
//     run's context (store.OwnerFromContext), which package threads sets.
//  5. Accepted summaries are mirrored (upsert into thread_summaries): by
//     default into the Store in the decision's transaction; into a
//     separate [Config].Mirror after it, with retries, backoff and a storm
//     guard; when that mirror is down the handoff completes and
//     handoff_store_status=degraded is logged.
//
// Logs use the fields handoff_id, thread_id, child_thread_id, run_id,
// model_run_id, tokens_used and handoff_store_status. See
// docs/thread-handoff.md.
package threadhandoff
