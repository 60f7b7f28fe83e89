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
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cursor is the position of an event: Seq is the run's event sequence
// number (1, 2, …); Sub numbers events inserted after Seq that the run
// itself did not number (draft updates of a background worker seen from
// another process). Its text form is "Seq" or "Seq.Sub", the SSE id.
type Cursor struct {
	Seq int
	Sub int
}

// String returns the SSE id form.
func (c Cursor) String() string {
	if c.Sub == 0 {
		return strconv.Itoa(c.Seq)
	}
	return strconv.Itoa(c.Seq) + "." + strconv.Itoa(c.Sub)
}

// Less reports whether c comes before d.
func (c Cursor) Less(d Cursor) bool {
	return c.Seq < d.Seq || c.Seq == d.Seq && c.Sub < d.Sub
}

// ParseCursor parses an SSE id ("12" or "12.3"); "" is the zero Cursor
// (before every event).
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	a, b, sub := strings.Cut(s, ".")
	seq, err := strconv.Atoi(a)
	if err != nil || seq < 0 || len(a) > 10 {
		return Cursor{}, fmt.Errorf("runlog: bad event id %q", s)
	}
	c := Cursor{Seq: seq}
	if sub {
		n, err := strconv.Atoi(b)
		if err != nil || n < 0 || len(b) > 10 {
			return Cursor{}, fmt.Errorf("runlog: bad event id %q", s)
		}
		c.Sub = n
	}
	return c, nil
}

// Entry is one encoded event.
type Entry struct {
	At   Cursor
	Type string
	// Data is the event's JSON. Readers must not change it.
	Data []byte
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
