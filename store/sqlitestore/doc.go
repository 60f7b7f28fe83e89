// Package sqlitestore is the embedded SQLite backend of [store.Store], on the
// pure-Go driver modernc.org/sqlite (no cgo).
//
// The database is opened in WAL mode with foreign keys on and a busy timeout,
// through two pools: one write connection, on which every transaction begins
// IMMEDIATE, and a few read-only connections for reads outside transactions.
// See [Open] for why, and for how River's SQLite driver shares the database
// through [Store.DB] and [SQLTx].
//
// Migrations are embedded (migration/NNN_name.up.sql and .down.sql) and
// applied on open unless [store.Options.NoMigrate] is set.
package sqlitestore
