// Package summary implements thread → thread handoffs: a long thread is
// summarised on demand, a person approves, edits or rejects the summary, and
// a new child thread starts seeded with it through the agent's memory.
//
// The pure steps have no side effects: [Select] and [Trim] choose what to
// summarise, [Summarise] asks a model for a [Summary] through structured
// output and renders it, and [Proposal.Interrupt] gives the versioned
// approval payload.
package summary
