package memory

import (
	"errors"
	"fmt"
	"strings"
)

// Markers and placeholder of the current-thread-summary block.
const (
	// OpenMarker opens the block. It is matched exactly (case and spacing).
	OpenMarker = "<current_thread_summary>"
	// CloseMarker closes the block.
	CloseMarker = "</current_thread_summary>"
	// Placeholder is the block's content when no summary is pending: after
	// a migration and after a cleanup.
	Placeholder = "No summary of a previous thread is pending."
)

// Escaped forms of the markers. [Repair] turns a marker it cannot place into
// its escaped form, and [Escape] does the same to text that is to be written
// into the block, so that the text can never open or close a block.
const (
	EscapedOpenMarker  = "&lt;current_thread_summary&gt;"
	EscapedCloseMarker = "&lt;/current_thread_summary&gt;"
)

// ErrMalformed is wrapped by every error about a document's markers. The
// [*ParseError] says which problem and where; its Kind is one of
// [ErrUnclosed], [ErrUnopened], [ErrNested] or [ErrDuplicate].
var ErrMalformed = errors.New("memory: malformed current_thread_summary block")

// Kinds of malformed documents, found by [Parse].
var (
	// ErrUnclosed: an opening marker with no closing marker after it.
	ErrUnclosed = errors.New("memory: opening marker without a closing marker")
	// ErrUnopened: a closing marker with no opening marker before it.
	ErrUnopened = errors.New("memory: closing marker without an opening marker")
	// ErrNested: an opening marker inside an open block.
	ErrNested = errors.New("memory: nested opening marker")
	// ErrDuplicate: a second block after a complete one.
	ErrDuplicate = errors.New("memory: more than one block")
)

// ErrMarkerInContent is returned by [Set] when the content to write contains
// a marker; pass it through [Escape] first.
var ErrMarkerInContent = errors.New("memory: block content contains a block marker")

// ParseError reports the first marker of a document that breaks the block
// grammar (at most one block: an opening marker, text without markers, a
// closing marker). It unwraps to [ErrMalformed] and to Kind.
type ParseError struct {
	// Kind is ErrUnclosed, ErrUnopened, ErrNested or ErrDuplicate.
	Kind error
	// Offset is the byte offset of the offending marker; Line is its
	// 1-based line.
	Offset, Line int
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s at line %d (byte %d)", e.Kind.Error(), e.Line, e.Offset)
}

// Unwrap returns [ErrMalformed] and the kind.
func (e *ParseError) Unwrap() []error { return []error{ErrMalformed, e.Kind} }

// Block is the current-thread-summary block of a document.
type Block struct {
	// Start and End delimit the whole block, markers included: doc[Start:End].
	Start, End int
	// Content is the text between the markers, without the one newline
	// written after the opening marker and the one before the closing
	// marker ("\r\n" counts as one newline after the opening marker).
	Content string
}

// marker is one occurrence of a marker in a document.
type marker struct {
	off  int
	open bool
}

func (m marker) len() int {
	if m.open {
		return len(OpenMarker)
	}
	return len(CloseMarker)
}

// scan returns every marker of doc in order. Markers cannot overlap: the
// opening marker is not a part of the closing one and both start with '<'
// and contain no other '<'.
func scan(doc string) []marker {
	var out []marker
	for i := 0; i < len(doc); {
		j := strings.Index(doc[i:], "current_thread_summary>")
		if j < 0 {
			break
		}
		at := i + j // index of "current_thread_summary>"
		switch {
		case at >= 2 && doc[at-2:at] == "</":
			out = append(out, marker{off: at - 2})
		case at >= 1 && doc[at-1] == '<':
			out = append(out, marker{off: at - 1, open: true})
		}
		i = at + len("current_thread_summary>")
	}
	return out
}

// Parse finds the block of doc. It returns nil and no error when doc has no
// marker at all, and a *[ParseError] when doc has more than one block or an
// unbalanced or nested marker. Parse does not change doc; see [Repair].
func Parse(doc string) (*Block, error) {
	ms := scan(doc)
	if len(ms) == 0 {
		return nil, nil
	}
	fail := func(m marker, kind error) (*Block, error) {
		return nil, &ParseError{Kind: kind, Offset: m.off, Line: 1 + strings.Count(doc[:m.off], "\n")}
	}
	first := ms[0]
	if !first.open {
		return fail(first, ErrUnopened)
	}
	if len(ms) == 1 {
		return fail(first, ErrUnclosed)
	}
	second := ms[1]
	if second.open {
		return fail(second, ErrNested)
	}
	if len(ms) > 2 {
		if ms[2].open {
			return fail(ms[2], ErrDuplicate)
		}
		return fail(ms[2], ErrUnopened)
	}
	return &Block{
		Start:   first.off,
		End:     second.off + len(CloseMarker),
		Content: inner(doc[first.off+len(OpenMarker) : second.off]),
	}, nil
}

// inner strips the newline after the opening marker and before the closing one.
func inner(s string) string {
	if strings.HasPrefix(s, "\r\n") {
		s = s[2:]
	} else if strings.HasPrefix(s, "\n") {
		s = s[1:]
	}
	return strings.TrimSuffix(s, "\n")
}

// Render returns a block holding content: the opening marker, a newline,
// content, a newline and the closing marker.
func Render(content string) string {
	return OpenMarker + "\n" + content + "\n" + CloseMarker
}

// Set returns doc with the block's content replaced by content. Every byte
// outside the block is kept as it is. A document without a block is
// migrated: the block is appended after a blank line (see [Migrate]), so doc
// is a prefix of the result. A malformed doc is a *[ParseError] (use
// [Repair] first to accept it), content with a marker [ErrMarkerInContent]
// (use [Escape] first).
func Set(doc, content string) (string, error) {
	if strings.Contains(content, OpenMarker) || strings.Contains(content, CloseMarker) {
		return "", ErrMarkerInContent
	}
	b, err := Parse(doc)
	if err != nil {
		return "", err
	}
	if b == nil {
		return appendBlock(doc, content), nil
	}
	return doc[:b.Start] + Render(content) + doc[b.End:], nil
}

// Clear returns doc with the block's content replaced by [Placeholder], as
// [Set] does.
func Clear(doc string) (string, error) { return Set(doc, Placeholder) }

// Migrate returns doc with a block holding [Placeholder] appended when doc
// has none, and doc itself when it has one. A malformed doc is a
// *[ParseError].
func Migrate(doc string) (string, error) {
	b, err := Parse(doc)
	if err != nil {
		return "", err
	}
	if b != nil {
		return doc, nil
	}
	return appendBlock(doc, Placeholder), nil
}

// appendBlock appends a block to doc, separated from existing text by a
// blank line, and ends the document with a newline.
func appendBlock(doc, content string) string {
	var sep string
	switch {
	case doc == "":
	case strings.HasSuffix(doc, "\n\n"):
	case strings.HasSuffix(doc, "\n"):
		sep = "\n"
	default:
		sep = "\n\n"
	}
	return doc + sep + Render(content) + "\n"
}

// Escape returns s with every marker replaced by its escaped form, so that
// it can be written into the block.
func Escape(s string) string {
	if !strings.Contains(s, "current_thread_summary>") {
		return s
	}
	s = strings.ReplaceAll(s, CloseMarker, EscapedCloseMarker)
	return strings.ReplaceAll(s, OpenMarker, EscapedOpenMarker)
}

// IsPlaceholder reports whether block content is empty or the placeholder,
// ignoring surrounding white space.
func IsPlaceholder(content string) bool {
	c := strings.TrimSpace(content)
	return c == "" || c == Placeholder
}

// Fix is one change made by [Repair]: the marker at Offset of the input was
// replaced by its escaped form for the reason Kind ([ErrUnclosed],
// [ErrUnopened], [ErrNested] or [ErrDuplicate]).
type Fix struct {
	Offset int
	Marker string
	Kind   error
}

func (f Fix) String() string {
	return fmt.Sprintf("escaped %s at byte %d: %v", f.Marker, f.Offset, f.Kind)
}

// Repair returns a well-formed version of doc and the changes it made. It
// never deletes or moves text: the only change is that a marker that cannot
// be part of the block is replaced in place by its escaped form
// ([EscapedOpenMarker], [EscapedCloseMarker]), which is not a marker and
// cannot join neighbouring text into one. Markers are paired innermost
// first, like brackets; the first outermost pair becomes the block and
// keeps its markers:
//
//   - a closing marker with no opening marker to pair with, and an opening
//     marker left without a closing one, are escaped;
//   - markers nested inside the block are escaped, so their text stays in
//     the block;
//   - the markers of every later block (and of what is nested in it) are
//     escaped, so their text stays where it is, as ordinary text.
//
// A well-formed doc is returned unchanged with no fixes. Repair(Repair(doc))
// equals Repair(doc).
func Repair(doc string) (string, []Fix) {
	ms := scan(doc)
	if _, err := Parse(doc); err == nil {
		return doc, nil
	}
	// Pair markers like brackets.
	reason := make([]error, len(ms)) // nil: kept as a marker
	partner := make([]int, len(ms))
	var stack []int
	for i, m := range ms {
		partner[i] = -1
		if m.open {
			stack = append(stack, i)
			continue
		}
		if len(stack) == 0 {
			reason[i] = ErrUnopened
			continue
		}
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		partner[o], partner[i] = i, o
	}
	for _, o := range stack {
		reason[o] = ErrUnclosed
	}
	// The first outermost pair is the block; everything else is escaped.
	block := -1
	for i := 0; i < len(ms); i++ {
		if reason[i] != nil || !ms[i].open {
			continue
		}
		end := partner[i]
		if block < 0 {
			block = i
			for k := i + 1; k < end; k++ {
				if reason[k] == nil {
					reason[k] = ErrNested
				}
			}
		} else {
			for k := i; k <= end; k++ {
				if reason[k] == nil {
					reason[k] = ErrDuplicate
				}
			}
		}
		i = end
	}
	var b strings.Builder
	b.Grow(len(doc) + 8*len(ms))
	var fixes []Fix
	last := 0
	for i, m := range ms {
		if reason[i] == nil {
			continue
		}
		b.WriteString(doc[last:m.off])
		tok, esc := CloseMarker, EscapedCloseMarker
		if m.open {
			tok, esc = OpenMarker, EscapedOpenMarker
		}
		b.WriteString(esc)
		last = m.off + m.len()
		fixes = append(fixes, Fix{Offset: m.off, Marker: tok, Kind: reason[i]})
	}
	b.WriteString(doc[last:])
	return b.String(), fixes
}
