// Package draft streams the text of a message that is not final yet to the
// clients that wait for it.
//
// A [Writer] collects progress text (a background run's streamed answer,
// tool progress) and flushes it to the message's draft row of the store,
// throttled: at most [Options.Interval] after the first unflushed text
// (default 200 ms), or as soon as [Options.Bytes] are unflushed (default
// 1.5 KiB), whichever comes first. After each flush it publishes an [Event]
// to a [Broker].
//
// A Broker fans events out to subscribers. Events carry ids only; a
// subscriber reads the data (draft text, message status and final text) from
// the store, scoped to its owner, so a lost or repeated event costs a read,
// never a wrong answer. [Broker.Subscribe] first yields what is there when
// it starts (the current draft of a message, or of each unfinished message
// of a thread), then live updates, without polling.
//
// [Hub] is the in-process Broker (the embedded SQLite default, where the API
// and the workers share a process). Package pgbroker carries events across
// processes with PostgreSQL LISTEN/NOTIFY. Package drafttest is the
// conformance suite every Broker passes.
package draft
