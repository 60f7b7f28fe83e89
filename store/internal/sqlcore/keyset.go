package sqlcore

import (
	"context"
	"strconv"
	"strings"
)

// keyset builds a newest-first page of one owner's rows keyed by their
// time-ordered id: `SELECT cols FROM table WHERE owner_id = $1`, the
// filters added by eq and in, then the cursor and the limit added by query.
// The audit log and the webhook deliveries are listed this way, through
// listOwned; threads, paged by (created_at, id), share its filters.
type keyset struct {
	sb   strings.Builder
	args []any
}

func newKeyset(cols, table, ownerID string) *keyset {
	k := &keyset{args: []any{ownerID}}
	k.sb.WriteString(`SELECT ` + cols + ` FROM ` + table + ` WHERE owner_id = $1`)
	return k
}

// arg binds v and returns its placeholder.
func (k *keyset) arg(v any) string {
	k.args = append(k.args, v)
	return `$` + strconv.Itoa(len(k.args))
}

// eq keeps the rows whose col is v; an empty v filters nothing.
func (k *keyset) eq(col, v string) {
	if v != "" {
		k.sb.WriteString(` AND ` + col + ` = ` + k.arg(v))
	}
}

// in keeps the rows whose col is one of vs; no vs filters nothing.
func (k *keyset) in(col string, vs []string) {
	if len(vs) == 0 {
		return
	}
	k.sb.WriteString(` AND ` + col + ` IN (`)
	for i, v := range vs {
		if i > 0 {
			k.sb.WriteString(`, `)
		}
		k.sb.WriteString(k.arg(v))
	}
	k.sb.WriteString(`)`)
}

// cursor keeps the rows older than cursor, the id of the last row of the
// page before; an empty cursor is the first page.
func (k *keyset) cursor(c string) error {
	if c == "" {
		return nil
	}
	if len(c) > 200 || checkText("Cursor", c, true) != nil {
		return invalid("malformed cursor")
	}
	k.sb.WriteString(` AND id < ` + k.arg(c))
	return nil
}

// listPage runs k for at most limit rows, newest first, in a read-only
// transaction of scope, and returns them with the cursor of the next page
// ("" on the last).
func listPage[T any](ctx context.Context, e *Engine, scope Scope, op string, k *keyset, limit int,
	scan func(Row) (T, error), id func(T) string) ([]T, string, error) {
	k.sb.WriteString(` ORDER BY id DESC LIMIT ` + k.arg(limit+1))
	rows, err := inTx(ctx, e, scope, false, op, func(q Querier) ([]T, error) {
		return queryAll(ctx, q, nil, scan, k.sb.String(), k.args...)
	})
	if err != nil || len(rows) <= limit {
		return rows, "", err
	}
	return rows[:limit], id(rows[limit-1]), nil
}

// listQuery is what a list of an owner's rows by keyset asks for: the
// list's params (checked by need), its owner, network filter, page size
// and cursor.
type listQuery struct {
	params   any
	owner    string
	networks []string
	limit    int
	cursor   string
}

// listOwned checks q and lists a page of the owner's rows of table, newest
// first: filter adds the list's own filters, then the networks, the cursor
// and the limit go in, and listPage runs it.
func listOwned[T any](ctx context.Context, e *Engine, op, cols, table string, q listQuery, filter func(k *keyset),
	scan func(Row) (T, error), id func(T) string) ([]T, string, error) {
	if err := need(q.params, "OwnerID", q.owner); err != nil {
		return nil, "", e.wrap(op, err)
	}
	limit, err := pageLimit(q.limit)
	if err != nil {
		return nil, "", e.wrap(op, err)
	}
	if err := checkNetworks(q.networks); err != nil {
		return nil, "", e.wrap(op, err)
	}
	k := newKeyset(cols, table, q.owner)
	filter(k)
	k.in("network", q.networks)
	if err := k.cursor(q.cursor); err != nil {
		return nil, "", e.wrap(op, err)
	}
	return listPage(ctx, e, Scope{Owner: q.owner}, op, k, limit, scan, id)
}

// checkNetworks checks the network names a list is filtered by.
func checkNetworks(ns []string) error {
	for _, n := range ns {
		if err := checkText("Networks", n, true); err != nil {
			return err
		}
	}
	return nil
}
