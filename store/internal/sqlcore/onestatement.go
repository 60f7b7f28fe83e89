package sqlcore

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// The pieces of the one-statement writes (a [WritingCTE] dialect) that
// messages, threads, checkpoints and job runs share.

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

// nestRow is a Row whose Scan is a function: a row scanned by two scanners
// in turn, the inner one reading the whole row.
type nestRow func(dest ...any) error

func (r nestRow) Scan(dest ...any) error { return r(dest...) }
