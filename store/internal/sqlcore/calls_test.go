package sqlcore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// sweepExec is an Executor whose transactions delete the rows of deleted
// in turn, one entry a transaction, and remember their scopes and
// arguments.
type sweepExec struct {
	deleted []int64
	failAt  int // the transaction (from 1) that fails; 0: none
	scopes  []Scope
	args    [][]any
}

func (x *sweepExec) Run(_ context.Context, sc Scope, write bool, fn func(q Querier) error) error {
	if !write {
		return errors.New("a sweep that does not write")
	}
	x.scopes = append(x.scopes, sc)
	if len(x.scopes) == x.failAt {
		return errors.New("boom")
	}
	return fn(sweepQuerier{x})
}

type sweepQuerier struct{ x *sweepExec }

func (q sweepQuerier) Exec(_ context.Context, query string, args ...any) (int64, error) {
	if query != sweepCallRecords {
		return 0, errors.New("unexpected statement " + query)
	}
	q.x.args = append(q.x.args, args)
	n := q.x.deleted[0]
	q.x.deleted = q.x.deleted[1:]
	return n, nil
}

func (sweepQuerier) QueryRow(context.Context, string, ...any) Row { panic("QueryRow") }

func (sweepQuerier) Query(context.Context, string, ...any) (Rows, error) { panic("Query") }

type sweepDialect struct{}

func (sweepDialect) Time(t time.Time) any                                     { return t }
func (sweepDialect) Classify(error) ErrClass                                  { return ClassOther }
func (sweepDialect) ForUpdate() string                                        { return "" }
func (d sweepDialect) LockRun(context.Context, Querier, string, string) error { return nil }

// TestSweepCallRecordsBatches: the sweep deletes in batches of Limit,
// each a sweep-scoped transaction of its own, until a batch is not full,
// and returns the total; after a failed batch it reports the rows of the
// batches before it.
func TestSweepCallRecordsBatches(t *testing.T) {
	t.Parallel()
	before := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	x := &sweepExec{deleted: []int64{3, 3, 3, 1}}
	e := &Engine{Dialect: sweepDialect{}, Exec: x}
	n, err := e.SweepCallRecords(t.Context(), &store.SweepCallRecordsParams{Before: before, Limit: 3})
	if err != nil || n != 10 {
		t.Fatalf("SweepCallRecords = %d, %v; want 10", n, err)
	}
	if len(x.scopes) != 4 {
		t.Fatalf("%d transactions, want 4 (three full batches and the last)", len(x.scopes))
	}
	for i, sc := range x.scopes {
		if sc != (Scope{Sweep: true}) || len(x.args[i]) != 2 || x.args[i][0] != before || x.args[i][1] != 3 {
			t.Fatalf("batch %d: scope %+v, args %v", i, sc, x.args[i])
		}
	}

	// The default batch; a batch that ends exactly full goes on to an
	// empty one.
	x = &sweepExec{deleted: []int64{store.DefaultPruneLimit, 0}}
	e.Exec = x
	if n, err := e.SweepCallRecords(t.Context(), &store.SweepCallRecordsParams{Before: before}); err != nil || n != store.DefaultPruneLimit ||
		len(x.scopes) != 2 || x.args[0][1] != store.DefaultPruneLimit {
		t.Fatalf("default batch: %d, %v, %d transactions, args %v", n, err, len(x.scopes), x.args)
	}

	x = &sweepExec{deleted: []int64{2, 2}, failAt: 2}
	e.Exec = x
	if n, err := e.SweepCallRecords(t.Context(), &store.SweepCallRecordsParams{Before: before, Limit: 2}); err == nil || n != 2 {
		t.Fatalf("a failed second batch: %d, %v; want 2 and the error", n, err)
	}

	// A cancelled sweep stops between batches.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	x = &sweepExec{deleted: []int64{2, 2, 2}}
	e.Exec = x
	if n, err := e.SweepCallRecords(ctx, &store.SweepCallRecordsParams{Before: before, Limit: 2}); !errors.Is(err, context.Canceled) || n != 2 || len(x.scopes) != 1 {
		t.Fatalf("a cancelled sweep: %d, %v, %d transactions", n, err, len(x.scopes))
	}

	for _, p := range []*store.SweepCallRecordsParams{nil, {}, {Before: before, Limit: -1}} {
		if _, err := e.SweepCallRecords(t.Context(), p); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SweepCallRecords(%+v) = %v, want ErrInvalid", p, err)
		}
	}
}
