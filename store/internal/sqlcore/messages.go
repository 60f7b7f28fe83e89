package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

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
	b, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func encodeMetadata(md map[string]any) (string, error) {
	if len(md) == 0 {
		return "{}", nil
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
		if err := exists(ctx, q, `SELECT 1 FROM threads WHERE `+threadKey("$1", "$2"), p.OwnerID, p.ThreadID); err != nil {
			return nil, err
		}
		return queryAll(ctx, q, []*store.Message{}, scanMessage, query, args...)
	})
	if err != nil {
		return nil, err
	}
	if p.Last && p.Limit > 0 {
		slices.Reverse(out)
	}
	return out, nil
}

// UpdateMessage implements [store.Ops].
func (e *Engine) UpdateMessage(ctx context.Context, p *store.UpdateMessageParams) (*store.Message, error) {
	const op = "update message"
	if err := need(p, "OwnerID", p.OwnerID, "ID", p.ID); err != nil {
		return nil, e.wrap(op, err)
	}
	if p.Status != "" && !validStatus(p.Status) {
		return nil, e.wrap(op, invalid("unknown status %q", p.Status))
	}
	if p.ExpectedStatus != "" && !validStatus(p.ExpectedStatus) {
		return nil, e.wrap(op, invalid("unknown expected status %q", p.ExpectedStatus))
	}
	if mm, ok := e.Dialect.(MetadataMerger); ok {
		return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+p.ID, func(q Querier) (*store.Message, error) {
			return e.updateMessage(ctx, q, mm, p)
		})
	}
	return inTx(ctx, e, Scope{Owner: p.OwnerID}, true, op+" "+p.ID, func(q Querier) (*store.Message, error) {
		m, err := scanMessage(q.QueryRow(ctx, `SELECT `+messageCols+` FROM messages WHERE owner_id = $1 AND id = $2`+e.Dialect.ForUpdate(), p.OwnerID, p.ID))
		if err != nil {
			return nil, err
		}
		if p.ExpectedStatus != "" && m.Status != p.ExpectedStatus {
			to := p.Status
			if to == "" {
				to = m.Status
			}
			return nil, &store.TransitionError{Kind: "message", ID: p.ID, From: string(m.Status), To: string(to),
				Reason: "expected status " + string(p.ExpectedStatus)}
		}
		if p.Status != "" {
			m.Status = p.Status
		}
		if p.Parts != nil {
			m.Parts = p.Parts
		}
		if p.Usage != nil {
			u := *p.Usage
			m.Usage = &u
		}
		if p.Metadata != nil {
			md := maps.Clone(m.Metadata)
			if md == nil {
				md = map[string]any{}
			}
			for k, v := range p.Metadata {
				if v == nil {
					delete(md, k)
				} else {
					md[k] = v
				}
			}
			m.Metadata = md
		}
		enc, err := encodeMessage(&m.Message)
		if err != nil {
			return nil, err
		}
		last(q)
		return scanMessage(q.QueryRow(ctx, `UPDATE messages SET status = $3, parts = $4, usage = $5, metadata = $6, updated_at = $7
			WHERE owner_id = $1 AND id = $2 RETURNING `+messageCols,
			p.OwnerID, p.ID, string(m.Status), enc.parts, enc.usage, enc.metadata, e.Dialect.Time(e.now())))
	})
}

// MetadataMerger is a [Dialect] whose database merges a message's metadata
// in SQL (PostgreSQL: jsonb's || and -), so that [Engine.UpdateMessage] is
// one conditional UPDATE … RETURNING. Without it UpdateMessage reads the row
// (locked), merges in Go and writes it back.
type MetadataMerger interface {
	// MergeMetadata returns the SQL of the metadata column with the keys of
	// the JSON object parameter $patch set and the keys of the text array
	// parameter $del removed.
	MergeMetadata(patch, del int) string
}

// updateMessage is UpdateMessage in one statement: the status, parts and
// usage that p sets, the metadata merged by the database, the expected
// status a condition of the UPDATE. Only when it updates nothing does it
// read the row, to say why (not found, or the status it has).
func (e *Engine) updateMessage(ctx context.Context, q Querier, mm MetadataMerger, p *store.UpdateMessageParams) (*store.Message, error) {
	var status, parts, usage any // nil: kept
	if p.Status != "" {
		status = string(p.Status)
	}
	if p.Parts != nil {
		enc, err := encodeParts(p.Parts)
		if err != nil {
			return nil, err
		}
		parts = enc
	}
	if p.Usage != nil {
		enc, err := encodeUsage(p.Usage)
		if err != nil {
			return nil, err
		}
		usage = enc
	}
	args := []any{p.OwnerID, p.ID, status, parts, usage, e.Dialect.Time(e.now())}
	metadata := "metadata"
	if p.Metadata != nil {
		set, del := map[string]any{}, []string{}
		for k, v := range p.Metadata {
			if v == nil {
				del = append(del, k)
			} else {
				set[k] = v
			}
		}
		enc, err := encodeMetadata(set)
		if err != nil {
			return nil, err
		}
		args = append(args, enc, del)
		metadata = mm.MergeMetadata(len(args)-1, len(args))
	}
	// The expected status is compared with the row as it is once locked
	// (l), not with the UPDATE's own condition: that is evaluated on the
	// row as the statement's snapshot has it, and PostgreSQL re-checks a
	// row a concurrent transaction changed only if it passed there. A
	// writer still open that moves the message to the expected status (a
	// continuation's draft flush that claims its run, racing the final
	// update) would have the update refused even when it commits; locked
	// first, the update waits for it and is decided by its outcome, as on
	// SQLite (testMessagesUpdateAwaitsWriter).
	with, where, found := "", "", "(SELECT status FROM messages WHERE owner_id = $1 AND id = $2)"
	if p.ExpectedStatus != "" {
		args = append(args, string(p.ExpectedStatus))
		with = `l AS (SELECT status FROM messages WHERE owner_id = $1 AND id = $2 FOR UPDATE), `
		where = fmt.Sprintf(" AND (SELECT status FROM l) = $%d", len(args))
		found = "(SELECT status FROM l)"
	}
	update := `UPDATE messages SET status = COALESCE($3, status), parts = COALESCE($4, parts),
		usage = COALESCE($5, usage), metadata = ` + metadata + `, updated_at = $6
		WHERE owner_id = $1 AND id = $2` + where
	// Deferred: the statement fails, through baton_refused with the status
	// it found ('' for no message), when it updates nothing.
	refused := func(found string) error {
		if found == "" {
			return e.wrap("update message "+p.ID, store.ErrNotFound)
		}
		return e.wrap("update message "+p.ID, transitionError(p, found))
	}
	asserted := `WITH ` + with + `u AS (` + update + ` RETURNING 1)
		SELECT CASE WHEN EXISTS (SELECT 1 FROM u) THEN true ELSE baton_refused(` + found + `) END`
	if with != "" {
		update = `WITH ` + strings.TrimSuffix(with, ", ") + ` ` + update
	}
	if deferAsserted(q, p.Deferred, refused, asserted, args...) {
		return nil, nil
	}
	m, err := scanMessage(q.QueryRow(ctx, update+` RETURNING `+messageCols, args...))
	if !errors.Is(err, sql.ErrNoRows) || p.ExpectedStatus == "" {
		return m, err
	}
	// Nothing updated: the message is missing, or not in the expected status.
	var from string
	if err := q.QueryRow(ctx, `SELECT status FROM messages WHERE owner_id = $1 AND id = $2`, p.OwnerID, p.ID).Scan(&from); err != nil {
		return nil, err
	}
	return nil, transitionError(p, from)
}

// transitionError is the error of an update refused because the message,
// found in status from, is not in p.ExpectedStatus.
func transitionError(p *store.UpdateMessageParams, from string) error {
	to := p.Status
	if to == "" {
		to = message.Status(from)
	}
	return &store.TransitionError{Kind: "message", ID: p.ID, From: from, To: string(to),
		Reason: "expected status " + string(p.ExpectedStatus)}
}

// WritingCTE is a [Dialect] whose database runs a data-modifying statement
// in a WITH clause and its result in the statement around it (PostgreSQL):
// [Engine.AppendMessages] then reserves the sequence numbers and inserts
// the messages in one statement.
type WritingCTE interface {
	WritingCTE()
}

// messageValues appends the columns of nms to args and returns them with
// the VALUES rows of the one-statement writes of messages (appendInOne,
// createInOne, checkpointAppendInOne; their INSERT is insertValues): one row per message — (its index from 1, id, role, agent,
// parts, status, parent, usage, metadata) — with parameters numbered
// after args'. The rows' text depends only on len(args) and len(nms):
// each caller keeps the whole statement's text in a [textCache].
func messageValues(args []any, nms []newMessage) ([]any, func() string) {
	base, n := len(args), len(nms)
	for i := range nms {
		nm := &nms[i]
		args = append(args, nm.id, string(nm.msg.Role), nm.msg.Agent, nm.enc.parts, string(nm.status), nullString(nm.parent),
			nm.enc.usage, nm.enc.metadata)
	}
	return args, func() string {
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteString(", ")
			}
			p := base + 8*i
			fmt.Fprintf(&sb, "(%d, $%d::text, $%d::text, $%d::text, $%d::json, $%d::text, $%d::text, $%d::json, $%d::json)",
				i+1, p+1, p+2, p+3, p+4, p+5, p+6, p+7, p+8)
		}
		return sb.String()
	}
}

// insertValues is the INSERT of the rows of messageValues (v), joined to
// t, the one-row CTE of the thread before it in a one-statement write:
// owner, thread, seq and now are the SQL of each row's owner, thread,
// sequence number and time.
func insertValues(owner, thread, seq, now, values string) string {
	return `INSERT INTO messages (id, owner_id, thread_id, seq, role, agent, parts, status, parent_message_id, usage, metadata, created_at, updated_at)
		SELECT v.id, ` + owner + `, ` + thread + `, ` + seq + `, v.role, v.agent, v.parts, v.status, v.parent, v.usage, v.metadata, ` + now + `, ` + now + `
		FROM t, (VALUES ` + values + `) AS v (ord, id, role, agent, parts, status, parent, usage, metadata)`
}

// threadColsOfT is threadCols of the CTE t.
var threadColsOfT = "t." + strings.ReplaceAll(threadCols, ", ", ", t.")

// textCache holds the texts of a statement that depend only on how many
// messages it writes, from 1 to 32, each built once: a hot statement's
// text is not built again at every call. It is safe for concurrent use.
type textCache [32]atomic.Pointer[string]

// get returns the text for n, built by build if it is not cached.
func (c *textCache) get(n int, build func() string) string {
	if n < 1 || n > len(c) {
		return build()
	}
	if s := c[n-1].Load(); s != nil {
		return *s
	}
	s := build()
	c[n-1].Store(&s)
	return s
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

// nestRow is a Row whose Scan is a function: a row scanned by two scanners
// in turn, the inner one reading the whole row.
type nestRow func(dest ...any) error

func (r nestRow) Scan(dest ...any) error { return r(dest...) }
