package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/store"
)

// A fork (store.CreateThreadParams.ForkOf) shares its source's stored
// messages: its row in threads names the source (fork_of) and the position
// up to which it reads the source's messages (fork_seq); its own rows are
// numbered after that position. A thread's messages are so a chain of
// stretches, each one thread's own rows between two positions: the
// thread's own after its fork_seq, its source's own between the source's
// fork_seq and the thread's, and so on. A thread that is no fork is one
// stretch, its own rows, read as before.

// maxForkChain bounds the forks of forks a thread's messages are read
// through; a longer chain is refused as corrupt.
const maxForkChain = 10000

// stretch is the rows of thread with positions in (from, to].
type stretch struct {
	thread   string
	from, to int64
}

// forkOf returns the source of thread of owner and the position up to
// which it reads it: "" for a thread that is no fork; sql.ErrNoRows for
// no thread.
func forkOf(ctx context.Context, q Querier, owner, thread string) (string, int64, error) {
	var src nullStr
	var seq int64
	err := q.QueryRow(ctx, `SELECT fork_of, fork_seq FROM threads WHERE `+threadKey("$1", "$2"), owner, thread).Scan(&src, &seq)
	return src.S, seq, err
}

// chain returns the stretches of thread of owner, a fork of src that reads
// it up to seq: its own rows, then its sources' in turn.
func chain(ctx context.Context, q Querier, owner, thread, src string, seq int64) ([]stretch, error) {
	out := []stretch{{thread: thread, from: seq, to: math.MaxInt64}}
	upto := seq
	for src != "" {
		if len(out) > maxForkChain {
			return nil, &store.CorruptError{Table: "threads", ID: thread, Column: "fork_of", Err: errors.New("the chain of forks is too long")}
		}
		next, from, err := forkOf(ctx, q, owner, src)
		if err != nil {
			return nil, err
		}
		out = append(out, stretch{thread: src, from: from, to: upto})
		upto = min(upto, from)
		src = next
	}
	return out, nil
}

// chainMessages returns the messages of stretches with positions in
// (after, until], in position order (the last limit of them with last),
// as rows of thread.
func chainMessages(ctx context.Context, q Querier, owner, thread string, stretches []stretch, after, until int64, limit int, lastN bool) ([]*store.Message, error) {
	args := []any{owner}
	var sb strings.Builder
	for _, s := range stretches {
		from, to := max(s.from, after), min(s.to, until)
		if from >= to {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString(" UNION ALL ")
		}
		n := len(args)
		args = append(args, s.thread, from, to)
		sb.WriteString(`SELECT ` + messageCols + ` FROM messages WHERE owner_id = $1 AND thread_id = $` + strconv.Itoa(n+1) +
			` AND seq > $` + strconv.Itoa(n+2) + ` AND seq <= $` + strconv.Itoa(n+3))
	}
	if sb.Len() == 0 {
		return []*store.Message{}, nil
	}
	sb.WriteString(` ORDER BY seq`)
	if lastN && limit > 0 {
		sb.WriteString(` DESC`)
	}
	if limit > 0 {
		sb.WriteString(` LIMIT $` + strconv.Itoa(len(args)+1))
		args = append(args, limit)
	}
	out, err := queryAll(ctx, q, []*store.Message{}, scanMessage, sb.String(), args...)
	if err != nil {
		return nil, err
	}
	if lastN && limit > 0 {
		slices.Reverse(out)
	}
	for _, m := range out {
		m.ThreadID = thread
	}
	return out, nil
}

// forkRows returns the messages of thread of owner at positions from to
// to, read through its sources when it is a fork; nothing for a thread
// that is no fork.
func forkRows(ctx context.Context, q Querier, owner, thread string, from, to int64) ([]*store.Message, error) {
	src, seq, err := forkOf(ctx, q, owner, thread)
	if err != nil || src == "" {
		return nil, err
	}
	stretches, err := chain(ctx, q, owner, thread, src, seq)
	if err != nil {
		return nil, err
	}
	return chainMessages(ctx, q, owner, thread, stretches, from-1, to, 0, false)
}

// createFork is CreateThread of a fork (p.ForkOf): the source must be the
// owner's and have position p.ForkSeq; the thread is inserted with its
// source, its next position after ForkSeq and its own messages, then its
// messages numbered from ForkSeq+1.
func createFork(ctx context.Context, q Querier, p *store.CreateThreadParams, id string, md any, nms []newMessage, now any) (*store.Thread, error) {
	var next int64
	err := q.QueryRow(ctx, `SELECT next_seq FROM threads WHERE `+threadKey("$1", "$2"), p.OwnerID, p.ForkOf).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if p.ForkSeq > next {
		return nil, invalid("ForkSeq %d is past the last position %d of thread %s", p.ForkSeq, next, p.ForkOf)
	}
	if len(nms) == 0 {
		last(q)
	}
	t, err := scanThread(q.QueryRow(ctx, `INSERT INTO threads
		(id, owner_id, parent_id, name, network, active_agent, metadata, version, next_seq, fork_of, fork_seq, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $10, $11, $11) RETURNING `+threadCols,
		id, p.OwnerID, nullString(p.ParentID), p.Name, p.Network, p.ActiveAgent, md, p.ForkSeq+int64(len(nms)), p.ForkOf, p.ForkSeq, now))
	if err != nil || len(nms) == 0 {
		return t, err
	}
	_, err = insertMessages(ctx, q, p.OwnerID, id, p.ForkSeq, nms, now)
	return t, err
}
