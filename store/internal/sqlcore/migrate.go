package sqlcore

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/batonhq/baton/store"
)

// Migration is one numbered schema change.
type Migration struct {
	Version  int
	Name     string
	Up, Down string
}

var migrationFile = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.(up|down)\.sql$`)

// LoadMigrations reads NNN_name.up.sql and NNN_name.down.sql files from dir
// of fsys. Versions must run from 1 without gaps and each must have both
// directions.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		m := migrationFile.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %s: name is not NNN_name.up.sql or NNN_name.down.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		mig := byVersion[v]
		if mig == nil {
			mig = &Migration{Version: v, Name: m[2]}
			byVersion[v] = mig
		} else if mig.Name != m[2] {
			return nil, fmt.Errorf("migration %03d is named both %s and %s", v, mig.Name, m[2])
		}
		if m[3] == "up" {
			mig.Up = string(b)
		} else {
			mig.Down = string(b)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %03d is missing", i+1)
		}
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migration %03d_%s lacks its up or down file", m.Version, m.Name)
		}
	}
	return out, nil
}

// MustLoadMigrations is LoadMigrations for a backend's embedded files: it
// panics, naming the backend, on an error.
func MustLoadMigrations(fsys fs.FS, dir, backend string) []Migration {
	ms, err := LoadMigrations(fsys, dir)
	if err != nil {
		panic(backend + ": " + err.Error())
	}
	return ms
}

// VersionTable is the table recording applied migrations.
const VersionTable = "baton_schema_migrations"

// CurrentVersion returns the newest applied migration, 0 if none. The
// version table must exist.
func CurrentVersion(ctx context.Context, q Querier) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM `+VersionTable).Scan(&v)
	return v, err
}

// Apply moves the schema to version target (len(ms) for the newest) by
// running up or down migrations in order. It must run in a transaction that
// holds the backend's migration lock and in which the version table exists.
// It returns the version before and after.
func Apply(ctx context.Context, q Querier, d Dialect, ms []Migration, target int, log *slog.Logger) (from, to int, err error) {
	if target < 0 || target > len(ms) {
		return 0, 0, fmt.Errorf("migrate: no migration %d (this build has 1 to %d)", target, len(ms))
	}
	cur, err := CurrentVersion(ctx, q)
	if err != nil {
		return 0, 0, fmt.Errorf("migrate: read version: %w", err)
	}
	if cur > len(ms) {
		if target == len(ms) { // a newer build migrated further; leave it
			return cur, cur, nil
		}
		return cur, cur, fmt.Errorf("migrate: database is at version %d, newer than this build (%d): cannot migrate down", cur, len(ms))
	}
	v := cur
	for v < target {
		m := ms[v]
		if _, err := q.Exec(ctx, m.Up); err != nil {
			return cur, v, fmt.Errorf("migrate: %03d_%s up: %w", m.Version, m.Name, err)
		}
		if _, err := q.Exec(ctx, `INSERT INTO `+VersionTable+` (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.Version, m.Name, d.Time(time.Now().UTC().Truncate(time.Microsecond))); err != nil {
			return cur, v, fmt.Errorf("migrate: record %03d: %w", m.Version, err)
		}
		log.InfoContext(ctx, "store: migration applied", "version", m.Version, "name", m.Name)
		v++
	}
	for v > target {
		m := ms[v-1]
		if _, err := q.Exec(ctx, m.Down); err != nil {
			return cur, v, fmt.Errorf("migrate: %03d_%s down: %w", m.Version, m.Name, err)
		}
		if _, err := q.Exec(ctx, `DELETE FROM `+VersionTable+` WHERE version = $1`, m.Version); err != nil {
			return cur, v, fmt.Errorf("migrate: unrecord %03d: %w", m.Version, err)
		}
		log.InfoContext(ctx, "store: migration reverted", "version", m.Version, "name", m.Name)
		v--
	}
	return cur, v, nil
}

// Opened is what [Ready] needs of a store.
type Opened interface {
	Ping(ctx context.Context) error
	Migrate(ctx context.Context) error
	SchemaVersion(ctx context.Context) (int, error)
}

// Ready checks that a store just opened answers, then migrates it, or
// with noMigrate checks that its schema has the latest of this build's
// migrations (a *store.SchemaVersionError when it has not).
func Ready(ctx context.Context, s Opened, noMigrate bool, latest int) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	if !noMigrate {
		return s.Migrate(ctx)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if v < latest {
		return &store.SchemaVersionError{Current: v, Required: latest}
	}
	return nil
}
