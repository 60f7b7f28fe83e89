package sqlcore

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/store"
)

const threadCols = `id, owner_id, parent_id, name, network, active_agent, metadata, version, created_at, updated_at`

func scanThread(r Row) (*store.Thread, error) {
	var t store.Thread
	var parent nullStr
	var md []byte
	var created, updated nullTime
	if err := r.Scan(&t.ID, &t.OwnerID, &parent, &t.Name, &t.Network, &t.ActiveAgent, &md, &t.Version, &created, &updated); err != nil {
		return nil, err
	}
	t.ParentID, t.CreatedAt, t.UpdatedAt = parent.S, created.T, updated.T
	m, err := decodeNamespaces(md)
	if err != nil {
		return nil, &store.CorruptError{Table: "threads", ID: t.ID, Column: "metadata", Err: err}
	}
	t.Metadata = m
	return &t, nil
}

// nullStr scans a nullable text column; NULL is "".
type nullStr struct{ S string }

func (n *nullStr) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		n.S = ""
	case string:
		n.S = v
	case []byte:
		n.S = string(v)
	default:
		return fmt.Errorf("sqlcore: cannot scan %T into a string", src)
	}
	return nil
}

// threadKey is the condition that finds thread id (a parameter, "$2") of
// owner owner ("$1") through the thread's key. owner_id is compared as an
// expression, which no index serves: threads_owner_created_idx (owner_id,
// created_at, id), the listing's index, matches owner_id = $1 AND id = $2
// too, by reading every thread of the owner and comparing ids, and where
// the planner's estimates cannot tell the indexes apart (a new database, a
// connection's generic plan made while the table was small and kept since)
// it chose that index, so that every append read a longer range as the
// owner's threads grew. The owner is still compared, exactly.
func threadKey(owner, id string) string {
	return `id = ` + id + ` AND owner_id || '' = ` + owner
}

func getThread(ctx context.Context, q Querier, owner, id, lock string) (*store.Thread, error) {
	return scanThread(q.QueryRow(ctx, `SELECT `+threadCols+` FROM threads WHERE `+threadKey("$1", "$2")+lock, owner, id))
}

// CreateThread implements [store.Ops].
func (e *Engine) CreateThread(ctx context.Context, p *store.CreateThreadParams) (*store.Thread, error) {
	const op = "create thread"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, e.wrap(op, err)
	}
	md, err := encodeNamespaces("Metadata", p.Metadata)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	nms, err := encodeNew(p.Messages)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	if p.ForkSeq < 0 || p.ForkSeq > 0 && p.ForkOf == "" {
		return nil, e.wrap(op, invalid("ForkSeq %d without ForkOf, or negative", p.ForkSeq))
	}
	if err := checkTexts("", "ForkOf", p.ForkOf); err != nil {
		return nil, e.wrap(op, err)
	}
	id := p.ID
	if id == "" {
		id = newID()
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+id, func(q Querier) (*store.Thread, error) {
		now := e.Dialect.Time(e.now())
		if p.ForkOf != "" {
			return createFork(ctx, q, p, id, md, nms, now)
		}
		if _, ok := e.Dialect.(WritingCTE); ok && len(nms) > 0 {
			return createInOne(ctx, q, p, id, md, nms, now)
		}
		return createThread(ctx, q, p, id, md, nms, now, true)
	})
}

// createThread inserts a thread, then its messages: the foreign keys
// reject an owner that does not exist and a parent that is missing or
// another owner's ((parent_id, owner_id) references threads), as
// ErrNotFound; the messages follow with their sequence numbers known. When
// final, the transaction ends with it (last).
func createThread(ctx context.Context, q Querier, p *store.CreateThreadParams, id string, md any, nms []newMessage, now any, final bool) (*store.Thread, error) {
	if final && len(nms) == 0 {
		last(q)
	}
	t, err := scanThread(q.QueryRow(ctx, `INSERT INTO threads
		(id, owner_id, parent_id, name, network, active_agent, metadata, version, next_seq, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $9) RETURNING `+threadCols,
		id, p.OwnerID, nullString(p.ParentID), p.Name, p.Network, p.ActiveAgent, md, len(nms), now))
	if err != nil || len(nms) == 0 {
		return t, err
	}
	_, err = insertMessages(ctx, q, p.OwnerID, id, 0, nms, now)
	return t, err
}

// createInOne is CreateThread of a thread with messages in one statement
// (a WritingCTE dialect): the thread inserted in a WITH, the messages
// inserted from a VALUES list after it, numbered from 1; it returns the
// thread. The messages take the thread's id and owner from its inserted
// row; on SQLite their foreign key to the thread is checked at the end of
// the statement, which sees that row (PostgreSQL has no such key: see
// appendInOne).
func createInOne(ctx context.Context, q Querier, p *store.CreateThreadParams, id string, md any, nms []newMessage, now any) (*store.Thread, error) {
	args, values := messageValues([]any{id, p.OwnerID, nullString(p.ParentID), p.Name, p.Network, p.ActiveAgent, md, len(nms), now}, nms)
	query := createTexts.get(len(nms), func() string {
		return `WITH t AS (INSERT INTO threads
			(id, owner_id, parent_id, name, network, active_agent, metadata, version, next_seq, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $9) RETURNING ` + threadCols + `), m AS (` +
			insertValues("t.owner_id", "t.id", "v.ord", "$9", values()) + `)
		SELECT ` + threadCols + ` FROM t`
	})
	last(q)
	return scanThread(q.QueryRow(ctx, query, args...))
}

// GetThread implements [store.Ops].
func (e *Engine) GetThread(ctx context.Context, p *store.GetThreadParams) (*store.Thread, error) {
	const op = "get thread"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op+" "+p.ID, func(q Querier) (*store.Thread, error) {
		return getThread(ctx, q, p.OwnerID, p.ID, "")
	})
}

// Thread listing page sizes.
const (
	defaultPage = 50
	maxPage     = 1000
)

// pageLimit is the rows of a page a list's Limit asks for: defaultPage for
// 0, at most maxPage; a negative Limit is invalid.
func pageLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, invalid("Limit %d is negative", limit)
	case limit == 0:
		return defaultPage, nil
	case limit > maxPage:
		return maxPage, nil
	}
	return limit, nil
}

// ListThreads implements [store.Ops].
func (e *Engine) ListThreads(ctx context.Context, p *store.ListThreadsParams) (*store.ThreadPage, error) {
	const op = "list threads"
	if err := need(p, "OwnerID", p.OwnerID); err != nil {
		return nil, e.wrap(op, err)
	}
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	var (
		after   bool
		afterAt time.Time
		afterID string
	)
	if p.Cursor != "" {
		var err error
		afterAt, afterID, err = decodeCursor(p.Cursor)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		after = true
	}
	if err := checkNetworks(p.Networks); err != nil {
		return nil, e.wrap(op, err)
	}
	k := newKeyset(threadCols, "threads", p.OwnerID)
	k.eq("parent_id", p.ParentID)
	k.in("network", p.Networks)
	if after {
		at, id := k.arg(e.Dialect.Time(afterAt)), k.arg(afterID)
		k.sb.WriteString(` AND (created_at < ` + at + ` OR (created_at = ` + at + ` AND id < ` + id + `))`)
	}
	k.sb.WriteString(` ORDER BY created_at DESC, id DESC LIMIT ` + k.arg(limit+1))
	var page store.ThreadPage
	page.Threads, err = inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op, func(q Querier) ([]*store.Thread, error) {
		return queryAll(ctx, q, nil, scanThread, k.sb.String(), k.args...)
	})
	if err != nil {
		return nil, err
	}
	if len(page.Threads) > limit {
		page.Threads = page.Threads[:limit]
		last := page.Threads[limit-1]
		page.NextCursor = encodeCursor(last.CreatedAt, last.ID)
	}
	return &page, nil
}

func encodeCursor(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(t.UnixMicro(), 10) + ":" + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", invalid("malformed cursor")
	}
	us, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", invalid("malformed cursor")
	}
	return time.UnixMicro(n).UTC(), id, nil
}

// updateThread runs change on a locked thread and writes back its metadata
// and active agent with the version incremented.
func (e *Engine) updateThread(ctx context.Context, op, owner, id string, expected int64, change func(t *store.Thread) error) (*store.Thread, error) {
	if err := need(nil, "OwnerID", owner, "ThreadID", id); err != nil {
		return nil, e.wrap(op, err)
	}
	if expected < 0 {
		return nil, e.wrap(op, invalid("ExpectedVersion %d is negative", expected))
	}
	return inTx(ctx, e, Scope{Owner: owner}, true, op+" "+id, func(q Querier) (*store.Thread, error) {
		t, err := getThread(ctx, q, owner, id, e.Dialect.ForUpdate())
		if err != nil {
			return nil, err
		}
		if expected != 0 && t.Version != expected {
			return nil, &store.VersionConflictError{Kind: "thread", ID: id, Expected: expected, Actual: t.Version}
		}
		if err := change(t); err != nil {
			return nil, err
		}
		md, err := encodeNamespaces("Metadata", t.Metadata)
		if err != nil {
			return nil, err
		}
		last(q)
		return scanThread(q.QueryRow(ctx, `UPDATE threads SET metadata = $3, active_agent = $4, version = version + 1, updated_at = $5
			WHERE `+threadKey("$1", "$2")+` RETURNING `+threadCols,
			owner, id, md, t.ActiveAgent, e.Dialect.Time(e.now())))
	})
}

// UpdateThreadMetadata implements [store.Ops].
func (e *Engine) UpdateThreadMetadata(ctx context.Context, p *store.UpdateThreadMetadataParams) (*store.Thread, error) {
	const op = "update thread metadata"
	if err := need(p, "Namespace", p.Namespace); err != nil {
		return nil, e.wrap(op, err)
	}
	patch := p.Patch
	if len(patch) == 0 {
		return nil, e.wrap(op, invalid("Patch is required (null removes the namespace)"))
	}
	if !json.Valid(patch) {
		return nil, e.wrap(op, invalid("Patch is not valid JSON"))
	}
	// The merge would turn a lone surrogate into U+FFFD: refused as
	// written instead, like every JSON value the store is given.
	if err := CheckJSON("Patch", patch); err != nil {
		return nil, e.wrap(op, err)
	}
	return e.updateThread(ctx, op, p.OwnerID, p.ThreadID, p.ExpectedVersion, func(t *store.Thread) error {
		v, err := MergePatch(t.Metadata[p.Namespace], patch)
		if err != nil {
			return &store.CorruptError{Table: "threads", ID: t.ID, Column: "metadata." + p.Namespace, Err: err}
		}
		if v == nil {
			delete(t.Metadata, p.Namespace)
		} else {
			t.Metadata[p.Namespace] = v
		}
		return nil
	})
}

// SetActiveAgent implements [store.Ops].
func (e *Engine) SetActiveAgent(ctx context.Context, p *store.SetActiveAgentParams) (*store.Thread, error) {
	if err := need(p); err != nil {
		return nil, e.wrap("set active agent", err)
	}
	return e.updateThread(ctx, "set active agent", p.OwnerID, p.ThreadID, p.ExpectedVersion, func(t *store.Thread) error {
		t.ActiveAgent = p.Agent
		return nil
	})
}
