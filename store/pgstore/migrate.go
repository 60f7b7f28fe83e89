package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/batonhq/baton/store/internal/sqlcore"
)

// Migrate implements [store.Store].
func (s *Store) Migrate(ctx context.Context) error {
	return s.MigrateTo(ctx, len(migrations))
}

// MigrateTo moves the schema to version (0 to [LatestVersion]) in one
// transaction holding an advisory lock, so that concurrent migrators wait
// for it and then find nothing to do. It creates the schema of
// [store.Options.Schema] and the application role, and grants the role
// what it needs, including on tables created later in the schema by the
// same user (River's).
func (s *Store) MigrateTo(ctx context.Context, version int) error {
	tx, err := s.beginLocked(ctx, "migrate")
	if err != nil {
		return err
	}
	defer rollback(ctx, tx)
	var schema string
	if err := tx.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&schema); err != nil {
		return wrap("migrate", err)
	}
	if ident, ok := firstSchema(schema); ok {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+ident); err != nil {
			return wrap("migrate: create schema", err)
		}
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+sqlcore.VersionTable+` (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL
	)`); err != nil {
		return wrap("migrate", err)
	}
	if _, _, err := sqlcore.Apply(ctx, querier{tx}, dialect{}, migrations, version, s.log); err != nil {
		return wrap("migrate", err)
	}
	if s.role != "" {
		if err := ensureRole(ctx, tx, s.role); err != nil {
			return wrap("migrate", err)
		}
	}
	return wrap("migrate: commit", tx.Commit(ctx))
}

// beginLocked begins a transaction and takes in it the advisory lock that
// serialises the schema's changes (MigrateTo, IsolateRiverJobs) across
// processes; the lock goes with the transaction. op names the caller in
// errors.
func (s *Store) beginLocked(ctx context.Context, op string) (pgx.Tx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, wrap(op, err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
		rollback(ctx, tx)
		return nil, wrap(op+": lock", err)
	}
	return tx, nil
}

// firstSchema returns the first schema of a search_path other than
// "$user", quoted, when it is not public.
func firstSchema(searchPath string) (string, bool) {
	for p := range strings.SplitSeq(searchPath, ",") {
		p = strings.TrimSpace(p)
		if p == "" || p == `"$user"` {
			continue
		}
		if p == "public" {
			return "", false
		}
		if !strings.HasPrefix(p, `"`) {
			p = pgx.Identifier{p}.Sanitize()
		}
		return p, true
	}
	return "", false
}

// ensureRole creates the application role if it does not exist, lets the
// connecting role switch to it and grants it the schema's tables.
func ensureRole(ctx context.Context, tx pgx.Tx, role string) error {
	ident := pgx.Identifier{role}.Sanitize()
	var exists, member bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, role).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		// Roles are shared by all databases of the cluster, outside the
		// advisory lock's reach: tolerate losing the race to create it.
		if err := savepoint(ctx, tx, `CREATE ROLE `+ident+` NOLOGIN`, "42710", "23505"); err != nil {
			return fmt.Errorf("create role %s: %w", role, err)
		}
	}
	if err := tx.QueryRow(ctx, `SELECT pg_has_role(current_user, $1, 'MEMBER')`, role).Scan(&member); err != nil {
		return err
	}
	if !member {
		if err := savepoint(ctx, tx, `GRANT `+ident+` TO CURRENT_USER`); err != nil {
			return fmt.Errorf("grant role %s to the connecting role (grant it, or set NoAppRole): %w", role, err)
		}
	}
	var schema string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	sch := pgx.Identifier{schema}.Sanitize()
	for _, stmt := range []string{
		`GRANT USAGE ON SCHEMA ` + sch + ` TO ` + ident,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ` + sch + ` TO ` + ident,
		`GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA ` + sch + ` TO ` + ident,
		`ALTER DEFAULT PRIVILEGES IN SCHEMA ` + sch + ` GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ` + ident,
		`ALTER DEFAULT PRIVILEGES IN SCHEMA ` + sch + ` GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO ` + ident,
		`REVOKE INSERT, UPDATE, DELETE ON ` + sqlcore.VersionTable + ` FROM ` + ident,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("grant role %s: %w", role, err)
		}
	}
	return nil
}

// savepoint runs stmt in a savepoint, ignoring errors with the given
// SQLSTATEs.
func savepoint(ctx context.Context, tx pgx.Tx, stmt string, ignore ...string) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, err := sp.Exec(ctx, stmt); err != nil {
		_ = sp.Rollback(ctx)
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			for _, code := range ignore {
				if pe.Code == code {
					return nil
				}
			}
		}
		return err
	}
	return sp.Commit(ctx)
}

// LatestVersion is the newest migration of this build.
func LatestVersion() int { return len(migrations) }

// SchemaVersion returns the newest migration applied to the database, 0
// for an empty database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, sqlcore.VersionTable).Scan(&exists); err != nil {
		return 0, wrap("schema version", err)
	}
	if !exists {
		return 0, nil
	}
	v, err := sqlcore.CurrentVersion(ctx, querier{s.pool})
	return v, wrap("schema version", err)
}
