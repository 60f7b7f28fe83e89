// Package service assembles baton: from network files (or networks
// declared in Go), a database URL and options, [Open] builds the one value
// that `baton run`, `baton chat`, `baton serve`, `baton worker` and library
// users all start from. Commands and HTTP routes are thin layers on it, so
// that a network behaves the same in every process that runs it.
//
// Opening the database chooses, once, from the store's type: the store
// (embedded SQLite or PostgreSQL), the draft broker that fans a message's
// progress out to subscribers (in-process on SQLite, LISTEN/NOTIFY on
// PostgreSQL) and River's driver for the background path.
//
// Every network gets one runner whose extensions are registered here, and
// only here:
//
//   - continuation: a run executed inline holds a lease renewed by its
//     process; a run that reaches a slow tool is handed to a River worker in
//     its checkpoint's transaction; a worker finalises it in its final
//     checkpoint's transaction; runs of processes that died are adopted
//     and resumed by a worker from their last checkpoint;
//   - threadhandoff: the agents' memory goes into every model call, a child
//     thread's first turn starts at the agent its summary names (a picker),
//     and its seed is cleared after that turn completes, in whichever
//     process ran it.
//
// River is the only background path, on PostgreSQL and on the embedded
// SQLite alike.
package service
