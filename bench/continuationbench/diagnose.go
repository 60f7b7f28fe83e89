package continuationbench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/store/pgstore"
	"github.com/batonhq/baton/store/sqlitestore"
)

// diagnoseMax bounds the runs [Diagnose] reports.
const diagnoseMax = 5

// Diagnose logs [Diagnosis] of runs, which a scenario waited for in vain.
func Diagnose(tb testing.TB, st store.Store, runs []string) {
	tb.Helper()
	tb.Log(Diagnosis(context.Background(), st, runs))
}

// Diagnosis reports, for each of runs (at most [diagnoseMax]), what st
// holds of it: its River jobs, its job runs, its placeholder message and its
// checkpoints, so that a benchmark that fails on a continuation not done
// says where the continuation stopped.
func Diagnosis(ctx context.Context, st store.Store, runs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d runs not done: %v", len(runs), runs[:min(len(runs), diagnoseMax)])
	q := diagnoseQueries(st)
	if q == nil {
		return b.String()
	}
	for _, run := range runs[:min(len(runs), diagnoseMax)] {
		for _, d := range []struct{ what, sql string }{
			{"river_job", `SELECT id, state, attempt, errors, scheduled_at, finalized_at FROM river_job WHERE ` + q.field("run_id") + ` = $1 ORDER BY id`},
			{"job_runs", `SELECT id, status, attempt, error, updated_at FROM job_runs WHERE id IN (SELECT ` + q.field("job_run_id") + ` FROM river_job WHERE ` + q.field("run_id") + ` = $1) ORDER BY id`},
			{"placeholder", `SELECT id, status FROM messages WHERE id IN (SELECT ` + q.field("continuation_id") + ` FROM river_job WHERE ` + q.field("run_id") + ` = $1)`},
			{"checkpoints", `SELECT step, status, created_at FROM checkpoints WHERE run_id = $1 ORDER BY step`},
		} {
			rows, err := q.query(ctx, d.sql, run)
			if err != nil {
				fmt.Fprintf(&b, "\nrun %s: %s: %v", run, d.what, err)
				continue
			}
			if len(rows) == 0 {
				rows = []string{"(no rows)"}
			}
			fmt.Fprintf(&b, "\nrun %s: %s:\n\t%s", run, d.what, strings.Join(rows, "\n\t"))
		}
	}
	return b.String()
}

type diagnoser struct {
	field func(name string) string // the SQL of a field of River's args
	query func(ctx context.Context, sql string, args ...any) ([]string, error)
}

func diagnoseQueries(st store.Store) *diagnoser {
	switch s := st.(type) {
	case *pgstore.Store:
		return &diagnoser{field: func(n string) string { return "args->>'" + n + "'" },
			query: func(ctx context.Context, q string, args ...any) ([]string, error) {
				rows, err := s.Pool().Query(ctx, q, args...)
				if err != nil {
					return nil, err
				}
				defer rows.Close()
				var out []string
				for rows.Next() {
					v, err := rows.Values()
					if err != nil {
						return nil, err
					}
					out = append(out, row(v))
				}
				return out, rows.Err()
			}}
	case *sqlitestore.Store:
		return &diagnoser{field: func(n string) string { return "json_extract(args, '$." + n + "')" },
			query: func(ctx context.Context, q string, args ...any) ([]string, error) {
				return sqlRows(ctx, s.DB(), q, args...)
			}}
	}
	return nil
}

func sqlRows(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		v := make([]any, len(cols))
		p := make([]any, len(cols))
		for i := range v {
			p[i] = &v[i]
		}
		if err := rows.Scan(p...); err != nil {
			return nil, err
		}
		out = append(out, row(v))
	}
	return out, rows.Err()
}

// row formats a row's values, separated by spaces.
func row(v []any) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}
