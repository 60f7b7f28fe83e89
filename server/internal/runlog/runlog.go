// Package runlog keeps the recent events of runs and threads in memory, in
// bounded logs that any number of readers follow at their own pace: the
// event log behind every SSE stream of the server.
//
// A [Log] holds the encoded events of one run (or one thread), numbered by
// a [Cursor]. Writers append; readers ask for what follows their cursor and
// wait on a channel that is closed at the next append. A log keeps at most
// its bound of events and bytes: a reader that falls further behind learns
// that it lost events (and rebuilds them from the store, or resyncs).
package runlog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cursor is the position of an event: Seq is the run's event sequence
// number (1, 2, …); Sub numbers the events of a checkpoint that the run
// did not number (written by another writer than the run's runner: a
// worker's claim, a failure recorded for it, a run settled by another),
// after the Seq they follow; Ver numbers the events that are not stored
// after the stored event they follow (Seq, Sub): the drafts of a background
// worker (their version) and, in a thread's stream, text deltas (their
// count). Its text form is "Seq", "Seq.Sub" or "Seq.Sub.Ver", the SSE id
// of a run's stream.
//
// The events of a thread's stream add Pos, the position of their run on
// the thread (the seq of the run's first message), before Seq, and Ext,
// which numbers the thread's own events (thread handoffs) after Ver: see
// [ThreadCursor]. A run's cursors have Pos 0, and Ext 0 but for the text
// and reasoning deltas of a run a worker executes, as a replica that
// follows it places them (their count after the stored event and draft
// they follow): "Seq.Sub.Ver.Ext" in a run's stream.
type Cursor struct {
	Pos int
	Seq int
	Sub int
	Ver int
	Ext int
}

// String returns the SSE id form of a run's cursor ("Seq", "Seq.Sub",
// "Seq.Sub.Ver" or, with Ext, "Seq.Sub.Ver.Ext"), or, when Pos is set, of
// a thread's ([Cursor.Thread]).
func (c Cursor) String() string {
	if c.Pos != 0 {
		return c.Thread()
	}
	return join([]int{c.Seq, c.Sub, c.Ver, c.Ext}, 1)
}

// Thread returns the SSE id form of a thread's cursor: "Pos.Seq",
// "Pos.Seq.Sub", "Pos.Seq.Sub.Ver" or "Pos.Seq.Sub.Ver.Ext" (trailing
// zeros left out).
func (c Cursor) Thread() string {
	return join([]int{c.Pos, c.Seq, c.Sub, c.Ver, c.Ext}, 2)
}

// join writes ns dotted, without the zeros at its end beyond the first
// keep numbers.
func join(ns []int, keep int) string {
	n := len(ns)
	for n > keep && ns[n-1] == 0 {
		n--
	}
	b := make([]byte, 0, 8*n)
	for i, v := range ns[:n] {
		if i > 0 {
			b = append(b, '.')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return string(b)
}

// Less reports whether c comes before d.
func (c Cursor) Less(d Cursor) bool {
	switch {
	case c.Pos != d.Pos:
		return c.Pos < d.Pos
	case c.Seq != d.Seq:
		return c.Seq < d.Seq
	case c.Sub != d.Sub:
		return c.Sub < d.Sub
	case c.Ver != d.Ver:
		return c.Ver < d.Ver
	}
	return c.Ext < d.Ext
}

// Durable returns c without the parts of the events that are not stored
// (Ver, Ext): the cursor of the stored event c follows, or is.
func (c Cursor) Durable() Cursor {
	c.Ver, c.Ext = 0, 0
	return c
}

// ParseCursor parses the SSE id of a run's stream ("12", "12.3", "12.3.4"
// or "12.3.4.5"); "" is the zero Cursor (before every event).
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return Cursor{}, fmt.Errorf("runlog: bad event id %q", s)
	}
	var n [4]int
	for i, p := range parts {
		v, err := number(p)
		if err != nil {
			return Cursor{}, fmt.Errorf("runlog: bad event id %q", s)
		}
		n[i] = v
	}
	return Cursor{Seq: n[0], Sub: n[1], Ver: n[2], Ext: n[3]}, nil
}

func number(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || len(s) > 10 || s[0] == '+' {
		return 0, fmt.Errorf("runlog: bad number %q", s)
	}
	return n, nil
}

// LegacyPos is the least Pos of a two-part id that is taken for an id of
// the thread streams of before durable thread ids ("EPOCH+N.M", EPOCH the
// process's start in Unix seconds): no thread has a billion messages.
const LegacyPos = 1_000_000_000

// ThreadCursor parses the SSE id of a thread's stream: "Pos.Seq",
// "Pos.Seq.Sub", "Pos.Seq.Sub.Ver" or "Pos.Seq.Sub.Ver.Ext". legacy is set
// for an id of the thread streams of before durable ids (one number, or
// two with a first of at least [LegacyPos]): its position is unknown. ""
// is the zero Cursor.
func ThreadCursor(s string) (c Cursor, legacy bool, err error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	parts := strings.Split(s, ".")
	if len(parts) > 5 {
		return Cursor{}, false, fmt.Errorf("runlog: bad thread event id %q", s)
	}
	var n [5]int
	for i, p := range parts {
		if n[i], err = number(p); err != nil {
			return Cursor{}, false, fmt.Errorf("runlog: bad thread event id %q", s)
		}
	}
	if len(parts) == 1 || len(parts) == 2 && n[0] >= LegacyPos {
		return Cursor{}, true, nil
	}
	return Cursor{Pos: n[0], Seq: n[1], Sub: n[2], Ver: n[3], Ext: n[4]}, false, nil
}

// Entry is one encoded event.
type Entry struct {
	At   Cursor
	Type string
	// Data is the event's JSON. Readers must not change it.
	Data []byte
}

// Decode decodes an entry's event (its JSON) as a T; ok is false when it
// is not one.
func Decode[T any](e Entry) (ev *T, ok bool) {
	var v T
	if json.Unmarshal(e.Data, &v) != nil {
		return nil, false
	}
	return &v, true
}

// Limits bound a log. The zero value means the defaults.
type Limits struct {
	// MaxEvents is the number of events kept. Defaults to 4096.
	MaxEvents int
	// MaxBytes bounds the bytes of the events kept. Defaults to 1 MiB.
	MaxBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxEvents <= 0 {
		l.MaxEvents = 4096
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = 1 << 20
	}
	return l
}

// Log is the bounded event log of one run or thread. It is safe for
// concurrent use.
type Log struct {
	lim Limits

	mu      sync.Mutex
	entries []Entry // oldest first; entries[head:] are live
	head    int
	bytes   int
	last    Cursor // the cursor of the last event appended
	dropped Cursor // the cursor of the last event dropped for the bound
	lost    bool   // some event was dropped
	wait    chan struct{}
	closed  bool
	status  string
	doneAt  time.Time
}

// New returns an empty log.
func New(lim Limits) *Log {
	return &Log{lim: lim.withDefaults()}
}

// Append adds an event after the last one. An event whose cursor is not
// after the last one's is ignored (a duplicate), and so is an event on a
// closed log; Append reports whether it was added.
func (l *Log) Append(e Entry) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || !l.last.Less(e.At) {
		return false
	}
	l.entries = append(l.entries, e)
	l.last = e.At
	l.bytes += len(e.Data) + len(e.Type) + 48
	for len(l.entries)-l.head > l.lim.MaxEvents || l.bytes > l.lim.MaxBytes && len(l.entries)-l.head > 1 {
		old := &l.entries[l.head]
		l.bytes -= len(old.Data) + len(old.Type) + 48
		l.dropped, l.lost = old.At, true
		*old = Entry{}
		l.head++
	}
	if l.head > 64 && l.head > len(l.entries)/2 {
		l.entries = append(l.entries[:0:0], l.entries[l.head:]...)
		l.head = 0
	}
	l.wake()
	return true
}

// Dropped returns the cursor of the last event dropped for the bound, and
// whether any was.
func (l *Log) Dropped() (Cursor, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped, l.lost
}

// Last returns the cursor of the last event appended.
func (l *Log) Last() Cursor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *Log) wake() {
	if l.wait != nil {
		close(l.wait)
		l.wait = nil
	}
}

// Close marks the log complete with a status (the run's final or waiting
// status): readers get what is left and then done. Closing a closed log
// changes nothing.
func (l *Log) Close(status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed, l.status, l.doneAt = true, status, time.Now()
	l.wake()
}

// Reopen makes a closed log take events again: a run resumed after an
// interrupt continues its log.
func (l *Log) Reopen() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed, l.status = false, ""
	l.wake()
}

// Closed reports whether the log is closed, with its status and when it
// was closed.
func (l *Log) Closed() (closed bool, status string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed, l.status, l.doneAt
}

// Read is the result of [Log.Since].
type Read struct {
	// Entries are the events after the cursor, at most the max asked for.
	Entries []Entry
	// Wait is closed when the log changes; nil when Done.
	Wait <-chan struct{}
	// Done is set when the log is closed and Entries are its last events.
	Done bool
	// Status is the status the log was closed with.
	Status string
	// Lost is set when events after the cursor were dropped for the bound:
	// Entries start later than asked.
	Lost bool
}

// Since returns up to max events after c (all when max <= 0), appending
// them to buf.
func (l *Log) Since(c Cursor, max int, buf []Entry) Read {
	l.mu.Lock()
	defer l.mu.Unlock()
	live := l.entries[l.head:]
	// Binary search: entries are in cursor order.
	lo, hi := 0, len(live)
	for lo < hi {
		m := (lo + hi) / 2
		if c.Less(live[m].At) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	rest := live[lo:]
	more := false
	if max > 0 && len(rest) > max {
		rest, more = rest[:max], true
	}
	r := Read{Entries: append(buf, rest...), Lost: l.lost && c.Less(l.dropped)}
	if l.closed && !more {
		r.Done, r.Status = true, l.status
		return r
	}
	if more {
		ch := make(chan struct{})
		close(ch)
		r.Wait = ch
		return r
	}
	if l.wait == nil {
		l.wait = make(chan struct{})
	}
	r.Wait = l.wait
	return r
}
