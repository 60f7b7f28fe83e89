// Package pgstore is the PostgreSQL backend of [store.Store], on pgx v5.
//
// Row-level security: every owner-scoped table has RLS enabled and forced,
// with a policy that compares its owner column to
// current_setting('baton.owner', true). Each transaction of the store sets
// baton.owner (set_config(..., true), so it ends with the transaction) to the
// owner of the call and, unless [store.Options.NoAppRole] is set, switches to
// the NOLOGIN role [store.Options.AppRole] (default "baton_app"), which
// Migrate creates and grants, so that the policies apply even to a superuser
// connection. A query that forgets its owner filter therefore still sees only
// the owner's rows.
//
// Migrations are embedded (migration/NNN_name.up.sql and .down.sql) and run
// under a transaction-scoped advisory lock, so concurrent migrators wait for
// each other.
package pgstore
