package e2e_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/batonhq/baton/message"
)

// childInput is the first turn of a handoff's child thread: it starts at
// shipping (the handoff's assistant), whose slow ship call goes to a
// background continuation.
const childInput = "The parcel arrived damaged."

// shippingAnswer is shipping's answer to childInput (testdata/shop.yaml).
const shippingAnswer = "A replacement for order 1234 is on its way; keep the damaged parcel."

// soakHandoff is one thread handoff a client asked for: POST
// /v1/threads/{parent}/handoff to shipping, approved, then a turn on the
// child thread.
type soakHandoff struct {
	parent    string
	interrupt string    // the proposal's id; "" while not accepted
	child     string    // the child thread; "" while not answered
	proposed  time.Time // accepted
	decided   time.Time // answered
}

// handoff proposes a thread handoff of parent to shipping, approves it and
// holds the child thread's first turn. A proposal whose answer was lost is
// asked again: the pending one comes back; a decision whose answer was lost
// is asked again: the 409 says it was decided, and the parent's metadata
// names the child.
func (sk *soak) handoff(ctx context.Context, parent string) {
	h := &soakHandoff{parent: parent}
	sk.mu.Lock()
	sk.handoffs = append(sk.handoffs, h)
	sk.mu.Unlock()
	for ctx.Err() == nil {
		var prop struct {
			ID   string `json:"interrupt_id"`
			Kind string `json:"kind"`
		}
		err := sk.c.api.do(ctx, http.MethodPost, "/v1/threads/"+parent+"/handoff", map[string]any{"assistant_id": "shipping"}, &prop)
		if err == nil {
			if prop.ID == "" || prop.Kind != "thread_handoff" {
				sk.faults.add("handoff of thread %s: proposal %+v", parent, prop)
				return
			}
			sk.mu.Lock()
			h.interrupt, h.proposed = prop.ID, time.Now()
			sk.mu.Unlock()
			break
		}
		sk.refusal(ctx, err)
	}
	if h.interrupt == "" || !sk.decide(ctx, h) {
		return
	}
	sk.turn(ctx, h.child, childInput)
}

// decide approves h's proposal until it has a child thread; false if ctx
// ended first.
func (sk *soak) decide(ctx context.Context, h *soakHandoff) bool {
	for ctx.Err() == nil {
		var out struct {
			Child   string `json:"child_thread_id"`
			Applied bool   `json:"applied"`
		}
		err := sk.c.api.do(ctx, http.MethodPost, "/v1/interrupts/"+h.interrupt+"/decision",
			map[string]any{"decisions": []any{map[string]any{"type": "approve"}}}, &out)
		var he *httpError
		switch {
		case err == nil && out.Child != "" && out.Applied:
			sk.answerHandoff(h, out.Child)
			return true
		case err == nil:
			sk.faults.add("handoff %s of thread %s: approval answered %+v", h.interrupt, h.parent, out)
			return false
		case errors.As(err, &he) && he.status == http.StatusConflict:
			// Decided before: a lost answer. The parent names its child.
			if child := sk.childOf(ctx, h.parent); child != "" {
				sk.answerHandoff(h, child)
				return true
			}
			sk.faults.add("handoff %s of thread %s: approval answered %v and the parent names no child", h.interrupt, h.parent, err)
			return false
		}
		sk.refusal(ctx, err)
	}
	return false
}

func (sk *soak) answerHandoff(h *soakHandoff, child string) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if h.child == "" {
		h.child, h.decided = child, time.Now()
		sk.threads = append(sk.threads, child)
	}
}

// childOf returns the child thread of parent's latest approved handoff
// (its last_handoff metadata), "" if it has none.
func (sk *soak) childOf(ctx context.Context, parent string) string {
	for ctx.Err() == nil {
		var th struct {
			Metadata struct {
				LastHandoff struct {
					Child string `json:"child_thread_id"`
				} `json:"last_handoff"`
			} `json:"metadata"`
		}
		if err := sk.c.api.do(ctx, http.MethodGet, "/v1/threads/"+parent, nil, &th); err == nil {
			return th.Metadata.LastHandoff.Child
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
	return ""
}

// settleHandoffs approves, within soakBound of the chaos's end, every
// proposal the chaos left undecided (the client's part), and waits for the
// turns of the children it gives.
func (sk *soak) settleHandoffs(ctx context.Context, end time.Time) {
	sk.mu.Lock()
	var open []*soakHandoff
	for _, h := range sk.handoffs {
		if h.interrupt != "" && h.child == "" {
			open = append(open, h)
		}
	}
	sk.mu.Unlock()
	for _, h := range open {
		sctx, cancel := context.WithDeadline(ctx, end.Add(soakBound))
		sk.decide(sctx, h)
		cancel()
	}
}

// handoffCounts are the thread handoffs' figures of a soak.
type handoffCounts struct {
	accepted, answered, lost, duplicated, stuck int
	// unmirrored: approved handoffs whose summary has no row in the
	// summary mirror (thread_summaries), which the approval's transaction
	// writes (so each is also a loss); uncleared:
	// children whose first turn completed but whose seed is still pending.
	unmirrored, uncleared int
}

func (c handoffCounts) String() string {
	return fmt.Sprintf("accepted %d, answered %d, lost %d, duplicated %d, stuck %d (summaries not mirrored %d, seeds not cleared %d)",
		c.accepted, c.answered, c.lost, c.duplicated, c.stuck, c.unmirrored, c.uncleared)
}

// checkHandoffs checks every handoff asked for against the database (sk.mu
// held): a parent has at most one proposal, one child thread and one
// mirrored summary; an answered handoff's parent names its child and holds
// its summary, and that child exists, names its parent and the same
// handoff. It appends the answers' times to done.
func (sk *soak) checkHandoffs(done *[]time.Time) handoffCounts {
	var c handoffCounts
	db := sk.c.db.sql
	ctx := context.Background()
	count := func(q string, args ...any) int {
		var n int
		if err := db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			sk.faults.add("%s: %v", q, err)
		}
		return n
	}
	str := func(q string, args ...any) string {
		var s sql.NullString
		if err := db.QueryRowContext(ctx, q, args...).Scan(&s); err != nil && !errors.Is(err, sql.ErrNoRows) {
			sk.faults.add("%s: %v", q, err)
		}
		return s.String
	}
	for _, h := range sk.handoffs {
		proposals := count(`SELECT count(*) FROM interrupts WHERE kind = 'thread_handoff' AND thread_id = $1`, h.parent)
		children := count(`SELECT count(*) FROM threads WHERE id <> $1 AND metadata->'handoff'->>'source_thread_id' = $1`, h.parent)
		mirrored := count(`SELECT count(*) FROM thread_summaries WHERE thread_id = $1`, h.parent)
		dup := false
		if proposals > 1 {
			dup = true
			sk.faults.add("duplicated: thread %s has %d handoff proposals", h.parent, proposals)
		}
		if children > 1 {
			dup = true
			sk.faults.add("duplicated: thread %s was handed off to %d child threads", h.parent, children)
		}
		if mirrored > 1 {
			dup = true
			sk.faults.add("duplicated: thread %s has %d mirrored summaries", h.parent, mirrored)
		}
		if dup {
			c.duplicated++
		}
		if h.interrupt == "" {
			continue
		}
		c.accepted++
		if h.child == "" {
			c.stuck++
			sk.faults.add("stuck: handoff %s of thread %s has no child thread %s after the chaos", h.interrupt, h.parent, soakBound)
			continue
		}
		c.answered++
		*done = append(*done, h.decided)
		var why []string
		if proposals == 0 {
			why = append(why, "its proposal is gone")
		}
		if got := str(`SELECT metadata->'last_handoff'->>'child_thread_id' FROM threads WHERE id = $1`, h.parent); got != h.child {
			why = append(why, fmt.Sprintf("the parent names child %q, the approval gave %s", got, h.child))
		}
		if str(`SELECT metadata->'last_handoff'->>'summary_md' FROM threads WHERE id = $1`, h.parent) == "" {
			why = append(why, "the parent holds no summary")
		}
		if got := str(`SELECT metadata->'handoff'->>'source_thread_id' FROM threads WHERE id = $1`, h.child); got != h.parent {
			why = append(why, fmt.Sprintf("child %s names parent %q", h.child, got))
		}
		if hid := str(`SELECT metadata->'handoff'->>'handoff_id' FROM threads WHERE id = $1`, h.child); hid != h.interrupt {
			why = append(why, fmt.Sprintf("child %s names handoff %q, want %s", h.child, hid, h.interrupt))
		}
		if mirrored == 0 {
			// Written in the approval's transaction: no kill loses it.
			c.unmirrored++
			why = append(why, "its summary is not in thread_summaries")
		}
		if tr := sk.turns[h.child+"\x00"+childInput]; tr != nil && tr.status == "completed" {
			// The child's first turn started at shipping, the assistant.
			msgs, _ := sk.c.db.messages(sk.t, h.child)
			if !slices.ContainsFunc(msgs, func(m message.Message) bool { return m.Role == "assistant" && m.Text() == shippingAnswer }) {
				why = append(why, fmt.Sprintf("child %s's first turn completed without shipping's answer", h.child))
			}
			if str(`SELECT metadata->'handoff'->>'pending' FROM threads WHERE id = $1`, h.child) == "true" {
				c.uncleared++
			}
		}
		if len(why) > 0 {
			c.lost++
			sk.faults.add("lost: handoff %s of thread %s: %v", h.interrupt, h.parent, why)
		}
	}
	return c
}
