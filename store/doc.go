// Package store defines baton's persistence: the [Store] interface, its row
// types and params, and the errors callers branch on. Backends live in
// sub-packages and pass the same conformance suite (store/storetest):
//
//   - sqlitestore: embedded SQLite on a pure-Go driver, the default;
//   - pgstore: PostgreSQL through pgx, with row-level security;
//   - open: opens either by URL ("sqlite:PATH", "postgres://…").
//
// # Owners
//
// Every row has an owner and every call names one in its params. A row of
// another owner is reported as [ErrNotFound]: reads and writes across owners
// are impossible through the interface and, on PostgreSQL, also blocked by
// row-level security in the database.
//
// # Transactions
//
// Each call of a [Store] is a transaction of its own. [Store.Tx] runs several
// in one, so that, for example, a checkpoint, the placeholder message of the
// answer still to come and the job run that will resume it commit together.
// The driver transaction underneath is reachable (sqlitestore.SQLTx,
// pgstore.PgxTx) so that a River job is enqueued in the same transaction.
//
// # Checkpoints
//
// [Ops.SaveCheckpoint] is fenced: a writer that lost a race (another process
// already wrote the step, or a newer one) gets a *[StaleWriteError] and
// writes nothing. A stored state that cannot be decoded is a *[CorruptError]
// and is never overwritten; a state written under another network version is
// refused with a *runstate.IncompatibleError ([ErrIncompatible]).
//
// # Errors
//
// Sentinels: [ErrNotFound], [ErrConflict], [ErrIncompatible], [ErrUnavailable],
// [ErrCorrupt], [ErrInvalid], [ErrSchemaVersion]. Typed errors carry detail
// and unwrap to them: [StaleWriteError], [VersionConflictError],
// [TransitionError], [CorruptError], [SchemaVersionError].
package store
