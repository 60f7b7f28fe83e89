package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

const leaseCols = `owner_id, run_id, thread_id, holder, expires_at`

func scanLease(r Row) (*store.Lease, error) {
	var l store.Lease
	var thread nullStr
	var exp nullTime
	if err := r.Scan(&l.OwnerID, &l.RunID, &thread, &l.Holder, &exp); err != nil {
		return nil, err
	}
	l.ThreadID, l.ExpiresAt = thread.S, exp.T
	return &l, nil
}

// AcquireLease implements [store.Ops].
func (e *Engine) AcquireLease(ctx context.Context, p *store.AcquireLeaseParams) (*store.Lease, error) {
	const op = "acquire lease"
	if err := need(p, "OwnerID", p.OwnerID, "RunID", p.RunID, "Holder", p.Holder); err != nil {
		return nil, e.wrap(op, err)
	}
	if p.TTL <= 0 {
		return nil, e.wrap(op, invalid("TTL must be positive"))
	}
	if p.Free && p.Deferred {
		return nil, e.wrap(op, invalid("Free cannot be Deferred"))
	}
	upsert, args, expires := e.leaseUpsert(p)
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" of run "+strconv.Quote(p.RunID), func(q Querier) (*store.Lease, error) {
		if deferWrite(q, p.Deferred, upsert, args...) {
			// The upsert writes the row as given, whatever was there.
			return &store.Lease{OwnerID: p.OwnerID, RunID: p.RunID, ThreadID: p.ThreadID, Holder: p.Holder, ExpiresAt: expires}, nil
		}
		last(q)
		l, err := scanLease(q.QueryRow(ctx, upsert+` RETURNING `+leaseCols, args...))
		if p.Free && errors.Is(err, sql.ErrNoRows) {
			// The conflicting row was kept: another holder's live lease.
			return nil, fmt.Errorf("%w: another holder's lease of the run is alive", store.ErrConflict)
		}
		return l, err
	})
}

// leaseUpsert returns the statement that writes p's lease (only where no
// other holder's is alive, if p.Free), its arguments and the lease's
// expiry.
func (e *Engine) leaseUpsert(p *store.AcquireLeaseParams) (string, []any, time.Time) {
	upsert := `INSERT INTO run_leases (` + leaseCols + `) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (owner_id, run_id) DO UPDATE SET thread_id = excluded.thread_id, holder = excluded.holder, expires_at = excluded.expires_at`
	now := e.now()
	expires := now.Add(p.TTL)
	args := []any{p.OwnerID, p.RunID, nullString(p.ThreadID), p.Holder, e.Dialect.Time(expires)}
	if p.Free {
		upsert += ` WHERE run_leases.holder = excluded.holder OR run_leases.expires_at < $6`
		args = append(args, e.Dialect.Time(now))
	}
	return upsert, args, expires
}

// GetLease implements [store.Ops].
func (e *Engine) GetLease(ctx context.Context, p *store.GetLeaseParams) (*store.Lease, error) {
	return getByKey(ctx, e, p, "get lease", p.OwnerID, "RunID", p.RunID, " of run "+strconv.Quote(p.RunID), scanLease,
		`SELECT `+leaseCols+` FROM run_leases WHERE owner_id = $1 AND run_id = $2`)
}

// ReleaseLease implements [store.Ops].
func (e *Engine) ReleaseLease(ctx context.Context, p *store.ReleaseLeaseParams) (bool, error) {
	const op = "release lease"
	if err := need(p, "OwnerID", p.OwnerID, "RunID", p.RunID); err != nil {
		return false, e.wrap(op, err)
	}
	query := `DELETE FROM run_leases WHERE owner_id = $1 AND run_id = $2`
	args := []any{p.OwnerID, p.RunID}
	if p.Holder != "" {
		args = append(args, p.Holder)
		query += ` AND holder = $` + strconv.Itoa(len(args))
	}
	if p.Expired {
		args = append(args, e.Dialect.Time(e.now()))
		query += ` AND expires_at < $` + strconv.Itoa(len(args))
	}
	n, err := inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" of run "+strconv.Quote(p.RunID), func(q Querier) (int64, error) {
		if deferWrite(q, p.Deferred, query, args...) {
			return 0, nil
		}
		last(q)
		return q.Exec(ctx, query, args...)
	})
	return n > 0, err
}

// leaseChunk bounds the run ids of one renewal statement.
const leaseChunk = 500

// RenewLeases implements [store.Store]; it spans owners.
func (e *Engine) RenewLeases(ctx context.Context, p *store.RenewLeasesParams) (int, error) {
	const op = "renew leases"
	if err := need(p, "Holder", p.Holder); err != nil {
		return 0, e.wrap(op, err)
	}
	if p.TTL <= 0 {
		return 0, e.wrap(op, invalid("TTL must be positive"))
	}
	if len(p.RunIDs) == 0 {
		return 0, nil
	}
	total := 0
	err := e.Exec.Run(ctx, Scope{Leases: true}, true, func(q Querier) error {
		exp := e.Dialect.Time(e.now().Add(p.TTL))
		for ids := range chunks(p.RunIDs, leaseChunk) {
			args := make([]any, 0, len(ids)+2)
			args = append(args, exp, p.Holder)
			var in strings.Builder
			for i, id := range ids {
				if i > 0 {
					in.WriteByte(',')
				}
				args = append(args, id)
				in.WriteString("$" + strconv.Itoa(len(args)))
			}
			n, err := q.Exec(ctx, `UPDATE run_leases SET expires_at = $1 WHERE holder = $2 AND run_id IN (`+in.String()+`)`, args...)
			if err != nil {
				return err
			}
			total += int(n)
		}
		return nil
	})
	return total, e.wrap(op+" of "+strconv.Quote(p.Holder), err)
}

// ExpiredLeases implements [store.Store]; it spans owners.
func (e *Engine) ExpiredLeases(ctx context.Context, p *store.ExpiredLeasesParams) ([]*store.Lease, error) {
	const op = "expired leases"
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	return inTx(ctx, e, Scope{Leases: true}, false, op, func(q Querier) ([]*store.Lease, error) {
		return queryAll(ctx, q, nil, scanLease, `SELECT `+leaseCols+` FROM run_leases WHERE expires_at < $1 ORDER BY expires_at LIMIT $2`,
			e.Dialect.Time(e.now()), limit)
	})
}

// chunks yields s in consecutive pieces of at most n.
func chunks[T any](s []T, n int) func(yield func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(n, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}
