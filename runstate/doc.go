// Package runstate defines the serialisable state of a run ([State]) and its
// versioned JSON codec. A State is everything needed to resume a run in
// another process: the same pending tool calls, counters, limits and transfer
// context. Checkpoints, approval interrupts, background continuation and crash
// recovery all persist a State.
package runstate
