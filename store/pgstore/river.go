package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/batonhq/baton/store"
)

// RiverJobPolicy names the row-level security policy [Store.IsolateRiverJobs]
// puts on River's river_job table.
const RiverJobPolicy = "baton_owner"

// IsolateRiverJobs puts River's job table, river_job (created in the store's
// schema by River's migrations, which must have run), under row-level
// security for the store's application role, as baton's own tables are: a
// transaction of the store (River's InsertTx through [PgxTx], the
// continuation's completion of its job through [DeferTx]) sees and writes only the jobs whose args name its owner
// (args->>'owner_id', as continuation.Args has it). River's own queries, on
// [Store.Pool] in the connecting role that created and owns the table, see
// every job: its workers fetch across owners. River's other tables
// (river_queue, river_leader, river_client, river_client_queue,
// river_migration) hold queue names, leaders and versions, nothing of an
// owner's, and stay as River made them.
//
// With [store.Options.NoAppRole] the store acts as the connecting role,
// which owns the table, and the policy does not apply to it: IsolateRiverJobs
// does nothing. It is safe to call again and from several processes at once.
func (s *Store) IsolateRiverJobs(ctx context.Context) error {
	if s.role == "" {
		return nil
	}
	tx, err := s.beginLocked(ctx, "isolate river jobs")
	if err != nil {
		return err
	}
	defer rollback(ctx, tx)
	var rls, policy bool
	err = tx.QueryRow(ctx, `SELECT c.relrowsecurity,
		EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = $1)
		FROM pg_class c WHERE c.oid = to_regclass('river_job')`, RiverJobPolicy).Scan(&rls, &policy)
	if err == pgx.ErrNoRows {
		return fmt.Errorf("pgstore: isolate river jobs: %w: River's table river_job does not exist (run River's migrations first)", store.ErrSchemaVersion)
	}
	if err != nil {
		return wrap("isolate river jobs", err)
	}
	if !rls {
		if _, err := tx.Exec(ctx, `ALTER TABLE river_job ENABLE ROW LEVEL SECURITY`); err != nil {
			return wrap("isolate river jobs", err)
		}
	}
	if !policy {
		const own = `args->>'owner_id' = current_setting('baton.owner', true)`
		if _, err := tx.Exec(ctx, `CREATE POLICY `+RiverJobPolicy+` ON river_job TO `+pgx.Identifier{s.role}.Sanitize()+
			` USING (`+own+`) WITH CHECK (`+own+`)`); err != nil {
			return wrap("isolate river jobs", err)
		}
	}
	return wrap("isolate river jobs: commit", tx.Commit(ctx))
}
