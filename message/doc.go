// Package message defines baton's provider-neutral conversation messages and
// the pairing invariant every history must satisfy before it is handed to a
// model: every tool result follows the assistant message that made its call,
// and every call sent back to a model has a result.
//
// [Repair] enforces the invariant with a named [Strategy]; [Validate] checks
// it without changing anything. Both are pure and safe for concurrent use on
// distinct slices.
package message
