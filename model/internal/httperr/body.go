package httperr

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/model"
)

// CodeInvalidResponse is the [model.Error] Code of a successful (2xx)
// response whose body is neither an event stream nor the API's JSON, or a
// JSON body that is malformed or cut short. Such errors are not transient:
// the same request would get the same body.
const CodeInvalidResponse = "invalid_response"

// Kind is how a successful response's body is read.
type Kind uint8

// Body kinds.
const (
	// KindEventStream is a text/event-stream body (Server-Sent Events).
	KindEventStream Kind = iota + 1
	// KindJSON is one JSON document: the whole answer at once, from a server
	// that ignored "stream": true (proxies, compatible servers, caches).
	KindJSON
	// KindUnknown is anything else (an HTML page of a proxy, plain text).
	KindUnknown
)

// headSize is how many of a body's first bytes a [Content] keeps.
const headSize = 1024

// SnippetSize bounds the snippet of a body quoted in an error, in bytes.
const SnippetSize = 200

// MaxJSONBody caps a whole JSON body read by [EventStream].
const MaxJSONBody = 32 << 20

// Content is the body of a successful response, read through a buffer that
// keeps its first bytes so that an error can quote what came back. One
// goroutine reads it.
type Content struct {
	// Kind is how the body is to be read: chosen by the Content-Type, and
	// by the first bytes when the type is missing or says neither.
	Kind  Kind
	ctype string // the Content-Type header, "" if none
	r     *bufio.Reader
	body  io.ReadCloser
	head  []byte
	n     int64 // bytes read so far
}

// Open wraps res.Body in a Content, sets res.Body to it (so that decoders
// built on res read through it) and returns it. text/event-stream is an
// event stream; application/json and any +json type one JSON document;
// another type or none is decided by the first non-space byte ('{' or '['
// JSON; "data:", "event:", "id:", "retry:" or ':' an event stream), else
// KindUnknown. An empty body is an event stream (it ends before its
// terminal event, which is reported as a cut stream).
func Open(res *http.Response) *Content {
	c := &Content{ctype: res.Header.Get("Content-Type"), body: res.Body, r: bufio.NewReaderSize(res.Body, 4096)}
	res.Body = c
	mt, _, _ := mime.ParseMediaType(c.ctype)
	switch {
	case mt == "text/event-stream":
		c.Kind = KindEventStream
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		c.Kind = KindJSON
	default:
		c.Kind = c.sniff()
	}
	return c
}

// EventStream opens res's body (see [Open]), the successful response of a
// call that asked for an event stream, and returns it when it is one. A JSON
// body, from a server that ignored "stream": true, is read whole (at most
// [MaxJSONBody] bytes) and handed to whole. Any other body is yielded as a
// permanent error, and so is a JSON body over the limit; a read that fails
// is yielded as a broken connection ([Transport], transient). EventStream
// returns nil unless the body is an event stream. provider, requestID and
// secrets go into the errors as [Malformed] takes them.
func EventStream(ctx context.Context, res *http.Response, provider, requestID string, whole func([]byte), yield func(model.Chunk, error) bool, secrets ...string) *Content {
	c := Open(res)
	switch c.Kind {
	case KindEventStream:
		return c
	case KindJSON:
		b, err := c.ReadAll(MaxJSONBody)
		switch {
		case err == nil:
			whole(b)
		case c.Len() > MaxJSONBody:
			yield(model.Chunk{}, Malformed(provider, requestID, "the JSON response is too long", c.Head(), err, secrets...))
		default:
			yield(model.Chunk{}, Transport(ctx, provider, requestID, err))
		}
	default:
		ct := c.ctype
		if ct == "" {
			ct = "none"
		}
		yield(model.Chunk{}, Malformed(provider, requestID, "the response is neither an event stream nor JSON (Content-Type "+ct+")", c.Head(), nil, secrets...))
	}
	return nil
}

// sniff decides the kind of a body from its first bytes. It reads no more
// than it must: a stream's first event may be all there is for a while.
func (c *Content) sniff() Kind {
	if _, err := c.r.Peek(1); err != nil {
		return KindEventStream // empty: reported as a stream cut before its end
	}
	for {
		b, _ := c.r.Peek(c.r.Buffered())
		k, sure := sniffKind(b)
		if sure || len(b) >= 64 {
			return k
		}
		if _, err := c.r.Peek(len(b) + 1); err != nil {
			b, _ = c.r.Peek(c.r.Buffered())
			k, _ = sniffKind(b)
			return k
		}
	}
}

// sniffKind is the kind the first bytes b of a body show; sure is false
// when more bytes could change it.
func sniffKind(b []byte) (k Kind, sure bool) {
	t := bytes.TrimLeft(b, " \t\r\n")
	bom := []byte("\ufeff")
	if len(t) < len(bom) && bytes.HasPrefix(bom, t) {
		return KindEventStream, false // part of a byte order mark
	}
	t = bytes.TrimPrefix(t, bom)
	if len(t) == 0 {
		return KindEventStream, false
	}
	switch t[0] {
	case '{', '[':
		return KindJSON, true
	case ':':
		return KindEventStream, true
	}
	for _, f := range []string{"data:", "event:", "id:", "retry:"} {
		if bytes.HasPrefix(t, []byte(f)) {
			return KindEventStream, true
		}
		if len(t) < len(f) && strings.HasPrefix(f, string(t)) {
			return KindUnknown, false
		}
	}
	return KindUnknown, true
}

// Read implements io.Reader, keeping the first bytes read.
func (c *Content) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && len(c.head) < headSize {
		c.head = append(c.head, p[:min(n, headSize-len(c.head))]...)
	}
	c.n += int64(n)
	return n, err
}

// Close closes the response body.
func (c *Content) Close() error { return c.body.Close() }

// Len is how many bytes have been read.
func (c *Content) Len() int64 { return c.n }

// Head returns the first bytes read (or, before any read, those buffered),
// at most 1 KiB.
func (c *Content) Head() []byte {
	if len(c.head) == 0 {
		b, _ := c.r.Peek(min(c.r.Buffered(), headSize))
		return b
	}
	return c.head
}

// NoEvents reports whether the body read so far is not an event stream:
// its first bytes are not blank, yet none of their lines is an event-stream
// field or comment (data:, event:, id:, retry:, ':'). A JSON document or an
// HTML page served as text/event-stream is such a body.
func (c *Content) NoEvents() bool {
	head := c.Head()
	if len(bytes.TrimSpace(head)) == 0 {
		return false
	}
	for line := range bytes.Lines(head) {
		if k, _ := sniffKind(line); k == KindEventStream && len(bytes.TrimSpace(line)) > 0 {
			return false
		}
	}
	return true
}

// Eventless returns the permanent error of an event stream that ended
// without holding a single event (see [Content.NoEvents]), nil otherwise.
func (c *Content) Eventless(provider, requestID string, secrets ...string) error {
	if !c.NoEvents() {
		return nil
	}
	return Malformed(provider, requestID, "the event stream holds no event", c.Head(), nil, secrets...)
}

// Cut returns the error of an event stream that ended cleanly before its
// terminal event (named by terminal): the permanent error of [Content.Eventless]
// when it held no event at all, else the transient one of [Incomplete].
func (c *Content) Cut(provider, requestID, terminal string, secrets ...string) error {
	if err := c.Eventless(provider, requestID, secrets...); err != nil {
		return err
	}
	return Incomplete(provider, requestID, terminal)
}

// ReadAll reads the whole body, up to limit bytes; a longer body is an error.
func (c *Content) ReadAll(limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(c, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, errTooLong{limit}
	}
	return b, err
}

type errTooLong struct{ limit int64 }

func (e errTooLong) Error() string {
	return "response body is longer than " + strconv.FormatInt(e.limit, 10) + " bytes"
}

// Malformed returns the permanent error of a successful response whose body
// the adapter cannot use: what says what is wrong, body is (the start of)
// what came back, err the decoding error if any. The message quotes a
// snippet of body of at most [SnippetSize] bytes, with secrets (the API
// keys given, bearer tokens, sk-… keys) replaced by [redacted].
func Malformed(provider, requestID, what string, body []byte, err error, secrets ...string) *model.Error {
	msg := what
	if err != nil {
		msg += ": " + redact(errText(err), secrets)
	}
	msg += "; the body began " + Snippet(body, secrets...)
	return &model.Error{Provider: provider, Code: CodeInvalidResponse, Message: msg, RequestID: requestID, Err: err}
}

// secretPatterns match credentials a body may echo back.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}`),
	regexp.MustCompile(`(?i)((?:api[_-]?key|x-api-key|authorization|token|secret|password)["']?\s*[:=]\s*["']?(?:bearer\s+)?)[^"'\s,}&]{4,}`),
	regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{8,}`),
}

// Snippet quotes the start of b for an error message: at most [SnippetSize]
// bytes of valid UTF-8 (trimmed, cut at a rune boundary), secrets replaced by
// [redacted] before cutting, as a Go string literal with "…" appended
// when cut; "an empty body" when b is empty.
func Snippet(b []byte, secrets ...string) string {
	if len(bytes.TrimSpace(b)) == 0 {
		return "an empty body"
	}
	s := string(bytes.TrimSpace(b))
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\ufffd")
	}
	s = redact(s, secrets)
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, "${1}[redacted]")
	}
	cut := false
	if len(s) > SnippetSize {
		n := SnippetSize
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	q := strconv.Quote(s)
	if cut {
		q += "…"
	}
	return q
}

// InvalidEvent returns the permanent error of a stream event the adapter
// cannot decode (Code "invalid_stream"), quoting a snippet of its data as
// [Malformed] does.
func InvalidEvent(provider, requestID, what string, data []byte, err error, secrets ...string) *model.Error {
	e := Invalid(provider, requestID, what, err)
	e.Message = redact(e.Message, secrets) + "; the event began " + Snippet(data, secrets...)
	return e
}
