package testdb

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Trips is a pgx tracer that records the statements of each round trip on
// a pool: a query (Exec, Query, QueryRow), a batch, or a COPY. Set it as
// the pool's ConnConfig.Tracer (pgstore.OpenWith, [PostgresTraced]).
type Trips struct {
	mu    sync.Mutex
	trips [][]string
}

func (tr *Trips) add(sqls ...string) {
	tr.mu.Lock()
	tr.trips = append(tr.trips, sqls)
	tr.mu.Unlock()
}

// Take returns the round trips recorded since the last take.
func (tr *Trips) Take() [][]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	trips := tr.trips
	tr.trips = nil
	return trips
}

func (tr *Trips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	tr.add(d.SQL)
	return ctx
}

func (tr *Trips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *Trips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var sqls []string
	for _, qq := range d.Batch.QueuedQueries {
		sqls = append(sqls, qq.SQL)
	}
	tr.add(sqls...)
	return ctx
}

func (tr *Trips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (tr *Trips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (tr *Trips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	tr.add("COPY " + d.TableName.Sanitize())
	return ctx
}

func (tr *Trips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}
