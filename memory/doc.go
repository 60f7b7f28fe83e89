// Package memory is baton's agent memory: one Markdown document per owner and
// agent, injected into the agent's system prompt on every model call, with
// one block that baton manages:
//
//	<current_thread_summary>
//	No summary of a previous thread is pending.
//	</current_thread_summary>
//
// A thread → thread handoff writes the approved summary into the block, so
// that the child thread's first turn sees it, and clears it back to
// [Placeholder] after that turn (see package summary). Everything outside
// the block belongs to whoever writes the document — a person, another tool
// — and is never changed: [Set] and [Clear] replace only the block's bytes,
// and a document without a block is migrated by appending one.
//
// # Parsing
//
// [Parse] is strict: a document has no marker or exactly one block, and any
// other arrangement (an unclosed block, a stray closing marker, nested or
// duplicated blocks) is a *[ParseError] that says which and where. [Repair]
// accepts any document and makes it well-formed without losing text: it only
// replaces markers it cannot place by escaped forms. Content written into
// the block goes through [Escape] so that it can never close the block early.
//
// # Stores
//
// A [Store] gets and writes documents compare-and-swap on an opaque version;
// [Update] runs the read-modify-write loop. [Dir] keeps documents as files
// (atomic temporary file + fsync + rename, content-hash versions, flock
// across processes), [Map] in process memory, and package
// memory/storemem adapts the memory documents of a baton store. Every
// implementation passes memory/memorytest.
//
// The package uses the standard library (and internal/retry, for its waits)
// only and never imports the store.
package memory
