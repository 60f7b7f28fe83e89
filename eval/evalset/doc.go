// Package evalset is the format of baton eval's sets: cases (the user turns
// of a conversation, what a baseline recorded, what is expected), read from
// YAML, from JSON Lines (one case a line, for large sets) and from the
// evalset JSON of Google's ADK, and written back as YAML or JSON Lines.
//
// A case's expectations are scored per turn by package eval/metric; its
// recording (model answers and tool results, versioned by
// [RecordingVersion]) is replayed by package eval/replay. Every parser
// reports a malformed set as an *[Error] listing each problem with its line,
// and never panics (fuzzed).
package evalset
