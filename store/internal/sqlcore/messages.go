package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/batonhq/baton/internal/jsonfast"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/store"
)

const messageCols = `id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata, created_at, updated_at`

func scanMessage(r Row) (*store.Message, error) {
	var m store.Message
	var role, status string
	var parts, usage, md []byte
	var parent nullStr
	var created, updated nullTime
	if err := r.Scan(&m.ID, &m.OwnerID, &m.ThreadID, &m.Seq, &role, &m.Agent, &parts, &status, &parent, &usage, &md, &created, &updated); err != nil {
		return nil, err
	}
	m.Role, m.Status, m.ParentID = message.Role(role), message.Status(status), parent.S
	m.CreatedAt, m.UpdatedAt = created.T, updated.T
	corrupt := func(col string, err error) error {
		return &store.CorruptError{Table: "messages", ID: m.ID, Column: col, Err: err}
	}
	if err := jsonfast.Unmarshal(parts, &m.Parts); err != nil {
		return nil, corrupt("parts", err)
	}
	if len(usage) > 0 && !isNull(usage) {
		m.Usage = new(message.Usage)
		if err := jsonfast.Unmarshal(usage, m.Usage); err != nil {
			return nil, corrupt("usage", err)
		}
	}
	// "{}", what a message without metadata has, is no metadata.
	if len(md) > 0 && string(md) != "{}" {
		if err := jsonfast.Unmarshal(md, &m.Metadata); err != nil {
			return nil, corrupt("metadata", err)
		}
		if len(m.Metadata) == 0 {
			m.Metadata = nil
		}
	}
	return &m, nil
}

func validRole(r message.Role) bool {
	switch r {
	case message.RoleSystem, message.RoleUser, message.RoleAssistant, message.RoleTool:
		return true
	}
	return false
}

func validStatus(s message.Status) bool {
	switch s {
	case message.StatusQueued, message.StatusStreaming, message.StatusCompleted, message.StatusError:
		return true
	}
	return false
}

// encodedMessage is a message's columns as query arguments.
type encodedMessage struct {
	parts, usage, metadata any
}

func encodeParts(parts []message.Part) (string, error) {
	if parts == nil {
		parts = []message.Part{}
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return "", invalid("parts: %v", err)
	}
	return string(b), nil
}

func encodeUsage(u *message.Usage) (any, error) {
	if u == nil {
		return nil, nil
	}
	var buf [128]byte
	return string(jsonfast.AppendUsage(buf[:0], u)), nil
}

func encodeMetadata(md map[string]any) (string, error) {
	if len(md) == 0 {
		return "{}", nil
	}
	var buf [256]byte
	if b, ok := jsonfast.AppendObject(buf[:0], md, 0); ok {
		return string(b), nil
	}
	b, err := json.Marshal(md)
	if err != nil {
		return "", invalid("metadata: %v", err)
	}
	return string(b), nil
}

func encodeMessage(m *message.Message) (encodedMessage, error) {
	var em encodedMessage
	var err error
	if em.parts, err = encodeParts(m.Parts); err != nil {
		return em, err
	}
	if em.usage, err = encodeUsage(m.Usage); err != nil {
		return em, err
	}
	if em.metadata, err = encodeMetadata(m.Metadata); err != nil {
		return em, err
	}
	return em, nil
}

// AppendMessages implements [store.Ops].
func (e *Engine) AppendMessages(ctx context.Context, p *store.AppendMessagesParams) ([]*store.Message, error) {
	const op = "append messages"
	if err := need(p, "OwnerID", p.OwnerID, "ThreadID", p.ThreadID); err != nil {
		return nil, e.wrap(op, err)
	}
	nms, err := encodeNew(p.Messages)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" to thread "+p.ThreadID, func(q Querier) ([]*store.Message, error) {
		return appendTo(ctx, e, q, p, nms, e.Dialect.Time(e.now()))
	})
}

// reserveSeq reserves $3 sequence numbers of thread $2 of owner $1, at
// time $4, and returns the next one.
var reserveSeq = `UPDATE threads SET next_seq = next_seq + $3, updated_at = $4
		WHERE ` + threadKey("$1", "$2") + ` RETURNING next_seq`

// appendTo is AppendMessages of the encoded messages nms, in q.
func appendTo(ctx context.Context, e *Engine, q Querier, p *store.AppendMessagesParams, nms []newMessage, now any) ([]*store.Message, error) {
	// Reserving the sequence numbers locks the thread row, which orders
	// concurrent appenders, and proves the thread is the owner's.
	if len(nms) == 0 {
		last(q)
	}
	if _, ok := e.Dialect.(WritingCTE); ok && len(nms) > 0 {
		return appendInOne(ctx, q, p, nms, now)
	}
	next, err := reserve(ctx, q, p.OwnerID, p.ThreadID, len(nms), now, p.Thread)
	if err != nil {
		return nil, err
	}
	return insertMessages(ctx, q, p.OwnerID, p.ThreadID, next-int64(len(nms)), nms, now)
}

// reserve reserves n sequence numbers of thread of owner at now
// (reserveSeq), reads the thread into th when th is not nil, and returns
// the next number.
func reserve(ctx context.Context, q Querier, owner, thread string, n int, now any, th *store.Thread) (int64, error) {
	var next int64
	if th == nil {
		err := q.QueryRow(ctx, reserveSeq, owner, thread, n, now).Scan(&next)
		return next, err
	}
	t, err := scanThread(seqRow{q.QueryRow(ctx, reserveSeq+", "+threadCols, owner, thread, n, now), &next})
	if err != nil {
		return 0, err
	}
	*th = *t
	return next, nil
}

// The texts of appendRows.
var insertRowsTexts textCache

// appendRows appends the encoded messages nms to thread of owner at now
// without reading them back, in two statements: the sequence numbers
// reserved (the thread read into th when th is not nil), the messages
// inserted by one INSERT of a row each.
func appendRows(ctx context.Context, q Querier, owner, thread string, th *store.Thread, nms []newMessage, now any) error {
	next, err := reserve(ctx, q, owner, thread, len(nms), now, th)
	if err != nil {
		return err
	}
	args := make([]any, 0, 3+9*len(nms))
	args = append(args, owner, thread, now)
	seq := next - int64(len(nms))
	for i := range nms {
		seq++
		nm := &nms[i]
		args = append(args, nm.id, seq, string(nm.msg.Role), nm.msg.Agent, nm.enc.parts, string(nm.status), nullString(nm.parent),
			nm.enc.usage, nm.enc.metadata)
	}
	query := insertRowsTexts.get(len(nms), func() string {
		var sb strings.Builder
		sb.WriteString(`INSERT INTO messages
			(id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata, created_at, updated_at) VALUES `)
		for i := range nms {
			if i > 0 {
				sb.WriteString(", ")
			}
			p := 3 + 9*i
			fmt.Fprintf(&sb, "($%d, $1, $2, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $3, $3)", p+1, p+2, p+3, p+4, p+5, p+6, p+7, p+8, p+9)
		}
		return sb.String()
	})
	last(q)
	_, err = q.Exec(ctx, query, args...)
	return err
}

// seqRow is a row of next_seq followed by a thread's columns: Scan reads
// the first into seq, the rest into dest.
type seqRow struct {
	Row
	seq *int64
}

func (r seqRow) Scan(dest ...any) error {
	return r.Row.Scan(append([]any{r.seq}, dest...)...)
}

// newMessage is a message to insert, checked and encoded.
type newMessage struct {
	id, parent string
	msg        *message.Message
	status     message.Status
	enc        encodedMessage
}

// encodeNew checks and encodes messages to insert; a message without an id
// gets one.
func encodeNew(msgs []store.NewMessage) ([]newMessage, error) {
	out := make([]newMessage, len(msgs))
	for i := range msgs {
		m := &msgs[i].Message
		if !validRole(m.Role) {
			return nil, invalid("message %d: unknown role %q", i, m.Role)
		}
		nm := newMessage{id: m.ID, parent: msgs[i].ParentID, msg: m, status: m.Status}
		if err := checkTextsAt(func() string { return "Messages[" + strconv.Itoa(i) + "]." }, "ID", nm.id, "ParentID", nm.parent, "Agent", m.Agent); err != nil {
			return nil, err
		}
		if nm.status == "" {
			nm.status = message.StatusCompleted
		} else if !validStatus(nm.status) {
			return nil, invalid("message %d: unknown status %q", i, m.Status)
		}
		var err error
		if nm.enc, err = encodeMessage(m); err != nil {
			return nil, err
		}
		if nm.id == "" {
			nm.id = newID()
		}
		out[i] = nm
	}
	return out, nil
}

// insertMessages inserts msgs into a thread with the sequence numbers after
// seq, which the caller reserved.
func insertMessages(ctx context.Context, q Querier, owner, thread string, seq int64, msgs []newMessage, now any) ([]*store.Message, error) {
	out := make([]*store.Message, 0, len(msgs))
	for i := range msgs {
		seq++
		nm := &msgs[i]
		if i == len(msgs)-1 {
			last(q)
		}
		m, err := scanMessage(q.QueryRow(ctx, `INSERT INTO messages
			(id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING `+messageCols,
			nm.id, owner, thread, seq, string(nm.msg.Role), nm.msg.Agent, nm.enc.parts,
			string(nm.status), nullString(nm.parent), nm.enc.usage, nm.enc.metadata, now))
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// GetMessage implements [store.Ops].
func (e *Engine) GetMessage(ctx context.Context, p *store.GetMessageParams) (*store.Message, error) {
	return getByKey(ctx, e, p, "get message", p.OwnerID, "ID", p.ID, " "+p.ID, scanMessage,
		`SELECT `+messageCols+` FROM messages WHERE owner_id = $1 AND id = $2`)
}

// ListMessages implements [store.Ops].
func (e *Engine) ListMessages(ctx context.Context, p *store.ListMessagesParams) ([]*store.Message, error) {
	const op = "list messages"
	if err := need(p, "OwnerID", p.OwnerID, "ThreadID", p.ThreadID); err != nil {
		return nil, e.wrap(op, err)
	}
	if p.Limit < 0 {
		return nil, e.wrap(op, invalid("Limit %d is negative", p.Limit))
	}
	query := `SELECT ` + messageCols + ` FROM messages WHERE owner_id = $1 AND thread_id = $2 AND seq > $3 ORDER BY seq`
	args := []any{p.OwnerID, p.ThreadID, p.AfterSeq}
	if p.Last && p.Limit > 0 {
		query += ` DESC`
	}
	if p.Limit > 0 {
		query += ` LIMIT $4`
		args = append(args, p.Limit)
	}
	out, err := inTx(ctx, e, Scope{Owner: p.OwnerID}, false, op+" of thread "+p.ThreadID, func(q Querier) ([]*store.Message, error) {
		var next int64
		if err := q.QueryRow(ctx, `SELECT next_seq FROM threads WHERE `+threadKey("$1", "$2"), p.OwnerID, p.ThreadID).Scan(&next); err != nil {
			return nil, err
		}
		out, err := queryAll(ctx, q, []*store.Message{}, scanMessage, query, args...)
		if err != nil {
			return nil, err
		}
		if p.Last && p.Limit > 0 {
			slices.Reverse(out) // read in descending order
		}
		if complete(out, p, next) {
			return out, nil
		}
		// Positions missing: a fork's, which its sources hold.
		src, seq, err := forkOf(ctx, q, p.OwnerID, p.ThreadID)
		if err != nil || src == "" {
			return out, err
		}
		stretches, err := chain(ctx, q, p.OwnerID, p.ThreadID, src, seq)
		if err != nil {
			return nil, err
		}
		return chainMessages(ctx, q, p.OwnerID, p.ThreadID, stretches, p.AfterSeq, math.MaxInt64, p.Limit, p.Last)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// complete reports whether out, the thread's own rows that ListMessages
// p read (in position order), are every message it asks for of a thread
// whose last position is next: a thread's positions are numbered without
// gaps, so rows are missing only where a fork reads its source's.
func complete(out []*store.Message, p *store.ListMessagesParams, next int64) bool {
	if len(out) == 0 {
		return next <= p.AfterSeq
	}
	if p.Last && p.Limit > 0 && len(out) == p.Limit {
		return true
	}
	return out[0].Seq == p.AfterSeq+1
}

// The texts of appendInOne (without and with the thread's columns) and of
// createInOne.
var appendTexts, appendThreadTexts, createTexts textCache

// appendInOne is AppendMessages in one statement: reserve (the UPDATE of
// the thread's next_seq) in a WITH, the messages inserted with the numbers
// it returned, the inserted rows (and the thread's columns when p.Thread
// is set) returned. The thread's row is locked by the UPDATE before the
// insert, as in two statements. No row: the thread is not the owner's.
//
// Every message is inserted this way — by the statement, or after the
// statement in its transaction, that creates its thread or reserves its
// sequence numbers on the thread's row by id and owner — which is what lets
// PostgreSQL's schema do without a foreign key from messages to threads
// (011_messages_thread_trigger): nothing is inserted for a thread missing
// or another owner's, and a DELETE of the thread waits for the reservation's
// transaction, then its trigger deletes the messages it sees.
func appendInOne(ctx context.Context, q Querier, p *store.AppendMessagesParams, nms []newMessage, now any) ([]*store.Message, error) {
	args, values := messageValues([]any{p.OwnerID, p.ThreadID, len(nms), now}, nms)
	texts := &appendTexts
	if p.Thread != nil {
		texts = &appendThreadTexts
	}
	query := texts.get(len(nms), func() string {
		reserve := reserveSeq
		cols := "m.id, m.owner_id, m.thread_id, m.seq, m.role, m.agent, m.parts, m.status, m.parent_message_id, m.usage, m.metadata, m.created_at, m.updated_at"
		from := "m"
		if p.Thread != nil {
			reserve += ", " + threadCols
			cols += ", " + threadColsOfT
			from = "m, t"
		}
		return `WITH t AS (` + reserve + `), m AS (` + insertValues("$1", "$2", "t.next_seq - $3 + v.ord", "$4", values()) + `
		RETURNING ` + messageCols + `)
		SELECT ` + cols + ` FROM ` + from + ` ORDER BY m.seq`
	})
	// scan reads a row of the messages and, with p.Thread, of the thread.
	scan := func(r Row) (*store.Message, error) {
		return scanMessage(nestRow(func(md ...any) error {
			if p.Thread == nil {
				return r.Scan(md...)
			}
			th, err := scanThread(nestRow(func(td ...any) error { return r.Scan(append(md, td...)...) }))
			if err == nil {
				*p.Thread = *th
			}
			return err
		}))
	}
	if len(nms) == 1 {
		// One row: QueryRow, which a call of the Store sends with its COMMIT.
		last(q)
		m, err := scan(q.QueryRow(ctx, query, args...))
		if err != nil {
			return nil, err
		}
		return []*store.Message{m}, nil
	}
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]*store.Message, 0, len(nms))
	for rows.Next() {
		m, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) != len(nms) {
		return nil, sql.ErrNoRows
	}
	return out, nil
}
