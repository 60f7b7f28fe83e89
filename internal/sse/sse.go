// Package sse writes and reads Server-Sent Events
// (https://html.spec.whatwg.org/multipage/server-sent-events.html).
//
// A [Writer] frames events onto an http.ResponseWriter through a bounded
// buffer, with a deadline on every write to the connection, so that a client
// that stops reading is dropped (the write fails with [ErrSlowClient] or a
// timeout) instead of holding the server. A [Reader] parses a stream, for
// clients and tests.
package sse

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event is one event of a stream.
type Event struct {
	// ID is the event id ("id:" line), which a reconnecting client sends
	// back as Last-Event-ID. Empty: no id line. It must not contain a
	// newline or NUL.
	ID string
	// Type is the event name ("event:" line). Empty means "message".
	Type string
	// Data is the payload; each line becomes a "data:" line.
	Data []byte
}

// Defaults of [Options].
const (
	DefaultMaxBuffer    = 64 << 10
	DefaultWriteTimeout = 10 * time.Second
)

// ErrSlowClient is returned by [Writer.Send] when the events queued for a
// client exceed the buffer: the client does not read fast enough and should
// be dropped.
var ErrSlowClient = errors.New("sse: client too slow: buffer full")

// ErrClosed is returned by a [Writer] after a write to the client failed.
var ErrClosed = errors.New("sse: stream closed")

// Options tune a [Writer]. The zero value means the defaults.
type Options struct {
	// MaxBuffer bounds the bytes queued and not yet written to the client.
	// Defaults to 64 KiB.
	MaxBuffer int
	// WriteTimeout bounds each write to the client: a client that does not
	// take the bytes in time is dropped. Defaults to 10 seconds.
	WriteTimeout time.Duration
	// Retry, if positive, is sent as the client's reconnection delay.
	Retry time.Duration
	// Header is added to the response headers.
	Header http.Header
}

// Writer writes events to one client. It is not safe for concurrent use:
// one goroutine at a time owns it (the handler's, or after [Writer.Hijack]
// whichever goroutine the caller hands it to).
type Writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	buf     []byte
	max     int
	timeout time.Duration
	err     error

	// After Hijack: the connection, written directly, and whether the
	// response is chunked (HTTP/1.1) or ends when the connection closes
	// (HTTP/1.0).
	conn    net.Conn
	chunked bool
	closed  bool
}

// ErrNotHijackable is returned by [Writer.Hijack] when the connection
// cannot be taken over: HTTP/2, or a ResponseWriter that does not support
// it (a test recorder).
var ErrNotHijackable = errors.New("sse: the connection cannot be hijacked")

// NewWriter starts an event stream on w: it sends the headers (status 200,
// Content-Type text/event-stream, no caching, no proxy buffering) and the
// retry field, and flushes them.
func NewWriter(w http.ResponseWriter, o Options) (*Writer, error) {
	sw := &Writer{w: w, rc: http.NewResponseController(w), max: o.MaxBuffer, timeout: o.WriteTimeout}
	if sw.max <= 0 {
		sw.max = DefaultMaxBuffer
	}
	if sw.timeout <= 0 {
		sw.timeout = DefaultWriteTimeout
	}
	h := w.Header()
	for k, v := range o.Header {
		h[k] = v
	}
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	if o.Retry > 0 {
		sw.buf = append(sw.buf, "retry: "...)
		sw.buf = strconv.AppendInt(sw.buf, o.Retry.Milliseconds(), 10)
		sw.buf = append(sw.buf, "\n\n"...)
	}
	return sw, sw.Flush()
}

// Queue frames ev into the buffer without writing it. It returns
// [ErrSlowClient] when the buffer would exceed its bound.
func (sw *Writer) Queue(ev Event) error {
	if sw.err != nil {
		return sw.err
	}
	n := len(sw.buf)
	sw.buf = AppendEvent(sw.buf, ev)
	if len(sw.buf) > sw.max && n > 0 {
		sw.buf = sw.buf[:n]
		return ErrSlowClient
	}
	return nil
}

// Put queues ev, flushing the buffer first when it is full: the events of
// a burst go out in as few writes as the buffer allows. Call Flush after
// the burst.
func (sw *Writer) Put(ev Event) error {
	err := sw.Queue(ev)
	if errors.Is(err, ErrSlowClient) {
		if err := sw.Flush(); err != nil {
			return err
		}
		err = sw.Queue(ev)
	}
	return err
}

// Send queues ev and flushes.
func (sw *Writer) Send(ev Event) error {
	if err := sw.Queue(ev); err != nil {
		return err
	}
	return sw.Flush()
}

// Comment sends a comment line (a heartbeat keeps proxies and clients from
// timing out an idle stream).
func (sw *Writer) Comment(text string) error {
	if sw.err != nil {
		return sw.err
	}
	sw.buf = append(sw.buf, ':')
	if text != "" {
		sw.buf = append(sw.buf, ' ')
		sw.buf = append(sw.buf, strings.ReplaceAll(text, "\n", " ")...)
	}
	sw.buf = append(sw.buf, '\n', '\n')
	return sw.Flush()
}

// Buffered returns the number of bytes queued and not yet written.
func (sw *Writer) Buffered() int { return len(sw.buf) }

// Flush writes the buffer to the client under the write deadline. After an
// error every call returns it.
func (sw *Writer) Flush() error {
	if sw.err != nil {
		return sw.err
	}
	if len(sw.buf) == 0 {
		return nil
	}
	var err error
	if sw.conn != nil {
		err = sw.writeConn(sw.buf)
	} else {
		_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
		_, err = sw.w.Write(sw.buf)
		if err == nil {
			err = sw.rc.Flush()
		}
		_ = sw.rc.SetWriteDeadline(time.Time{})
	}
	sw.buf = sw.buf[:0]
	if cap(sw.buf) > 4<<10 {
		sw.buf = nil // do not keep a large buffer on an idle stream
	}
	if err != nil {
		sw.err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return sw.err
}

// Hijack takes the stream's connection over from the http.Server, so that
// the stream no longer needs the handler's goroutine (nor the server's
// background reader): after it the handler may return, and the Writer
// writes to the connection itself — chunked, as the response started on
// HTTP/1.1 — from any goroutine, one at a time, until [Writer.Close]. Call
// it after [NewWriter], from the handler, with the handler's request. It
// returns [ErrNotHijackable] on HTTP/2 or a writer that cannot be hijacked:
// the stream then stays the handler's.
//
// The http.Server no longer tracks a hijacked connection: its Shutdown
// and Close leave it open, and its caller must Close the Writer.
func (sw *Writer) Hijack(r *http.Request) error {
	if sw.err != nil {
		return sw.err
	}
	if r.ProtoMajor != 1 {
		return ErrNotHijackable
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	conn, brw, err := sw.rc.Hijack()
	if err != nil {
		if errors.Is(err, http.ErrNotSupported) {
			return ErrNotHijackable
		}
		sw.err = fmt.Errorf("%w: %w", ErrClosed, err)
		return sw.err
	}
	// Nothing is buffered to write (Flush flushed the response), and a
	// client of an event stream sends nothing after its request: brw and
	// its buffers are dropped.
	_ = brw
	sw.conn, sw.chunked, sw.w, sw.rc = conn, r.ProtoMinor >= 1, nil, nil
	return nil
}

// Hijacked reports whether [Writer.Hijack] took the connection over.
func (sw *Writer) Hijacked() bool { return sw.conn != nil }

// Conn returns the connection of a hijacked stream, nil before.
func (sw *Writer) Conn() net.Conn { return sw.conn }

// writeConn writes b to a hijacked connection, as one chunk when chunked,
// under the write deadline.
func (sw *Writer) writeConn(b []byte) error {
	_ = sw.conn.SetWriteDeadline(time.Now().Add(sw.timeout))
	var err error
	if sw.chunked {
		var head [20]byte
		h := strconv.AppendInt(head[:0], int64(len(b)), 16)
		h = append(h, '\r', '\n')
		bufs := net.Buffers{h, b, crlf}
		_, err = bufs.WriteTo(sw.conn)
	} else {
		_, err = sw.conn.Write(b)
	}
	_ = sw.conn.SetWriteDeadline(time.Time{})
	return err
}

var crlf = []byte("\r\n")

// Gone reports whether the client of a hijacked stream has closed its side
// of the connection (or it failed), by a read that waits at most a
// millisecond: a parked stream learns of a client gone without a
// goroutine of its own blocked in a read. It reports false for a stream
// that is not hijacked.
func (sw *Writer) Gone() bool {
	if sw.conn == nil {
		return false
	}
	if sw.err != nil {
		return true
	}
	var b [1]byte
	_ = sw.conn.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := sw.conn.Read(b[:])
	_ = sw.conn.SetReadDeadline(time.Time{})
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		return false // no data, or data a client of an event stream does not send: alive
	}
	return true
}

// Close ends a hijacked stream: it writes what is queued and the end of
// the chunked body, and closes the connection. It does nothing for a
// stream that is not hijacked (the handler's return ends it) or that is
// closed.
func (sw *Writer) Close() error {
	if sw.conn == nil || sw.closed {
		return nil
	}
	sw.closed = true
	err := sw.Flush()
	if err == nil && sw.chunked {
		_ = sw.conn.SetWriteDeadline(time.Now().Add(sw.timeout))
		_, err = sw.conn.Write([]byte("0\r\n\r\n"))
	}
	if cerr := sw.conn.Close(); err == nil {
		err = cerr
	}
	if sw.err == nil {
		sw.err = ErrClosed
	}
	return err
}

// AppendEvent appends the wire form of ev to b.
func AppendEvent(b []byte, ev Event) []byte {
	if ev.ID != "" {
		b = append(b, "id: "...)
		b = append(b, ev.ID...)
		b = append(b, '\n')
	}
	if ev.Type != "" {
		b = append(b, "event: "...)
		b = append(b, ev.Type...)
		b = append(b, '\n')
	}
	data := ev.Data
	for {
		b = append(b, "data: "...)
		i := indexNewline(data)
		if i < 0 {
			b = append(b, data...)
			b = append(b, '\n')
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(b, '\n')
}

func indexNewline(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}

// LastEventID returns the id a reconnecting client asks to resume after:
// the Last-Event-ID header, else the last_event_id query parameter.
func LastEventID(r *http.Request) string {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(r.URL.Query().Get("last_event_id"))
}

// Reader parses an event stream.
type Reader struct {
	s *bufio.Scanner
	// LastID is the id of the last event read (the "id:" field persists
	// across events, as in a browser).
	LastID string
	// Retry is the last retry field, 0 if none.
	Retry time.Duration
}

// NewReader returns a Reader of r. Lines longer than max bytes (default
// 1 MiB when max <= 0) are an error.
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = 1 << 20
	}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 4096), max)
	s.Split(scanLines)
	return &Reader{s: s}
}

// Next returns the next event. Comments are skipped. At the end of the
// stream it returns io.EOF (an event not terminated by a blank line is
// dropped, as the specification says).
func (rd *Reader) Next() (Event, error) {
	var ev Event
	var data []byte
	has := false
	for rd.s.Scan() {
		line := rd.s.Text()
		if line == "" {
			if !has {
				ev = Event{} // no data: nothing is dispatched
				continue
			}
			ev.ID = rd.LastID
			if len(data) > 0 {
				ev.Data = data[:len(data)-1]
			} else {
				ev.Data = []byte{}
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type = value
		case "data":
			data = append(append(data, value...), '\n')
			has = true
		case "id":
			if !strings.ContainsRune(value, 0) {
				rd.LastID = value
			}
		case "retry":
			if n, err := strconv.Atoi(value); err == nil {
				rd.Retry = time.Duration(n) * time.Millisecond
			}
		}
	}
	if err := rd.s.Err(); err != nil {
		return Event{}, err
	}
	return Event{}, io.EOF
}

// scanLines splits on \n, \r\n or \r.
func scanLines(data []byte, atEOF bool) (int, []byte, error) {
	for i, c := range data {
		switch c {
		case '\n':
			return i + 1, data[:i], nil
		case '\r':
			if i+1 < len(data) {
				if data[i+1] == '\n' {
					return i + 2, data[:i], nil
				}
				return i + 1, data[:i], nil
			}
			if atEOF {
				return i + 1, data[:i], nil
			}
			return 0, nil, nil // need more data to know if \n follows
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
