package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/batonhq/baton/memory"
)

// Limits of a summary.
const (
	// MinBody and MaxBody bound the number of body points.
	MinBody = 3
	MaxBody = 6
	// MaxTitleRunes caps the title; a longer one is cut.
	MaxTitleRunes = 120
	// DefaultMaxTokens is the output cap of the summary model call.
	DefaultMaxTokens = 200
	// DefaultMaxChars is the length, in characters (runes), past which the
	// rendered Markdown is truncated.
	DefaultMaxChars = 1000
)

// Summary is the structured summary of a thread, as the summary model
// returns it through structured output.
type Summary struct {
	// Title names the thread's subject in a few words.
	Title string `json:"title"`
	// Body holds MinBody to MaxBody points, one line each.
	Body []string `json:"body"`
	// TLDR is one sentence: where things stand and what comes next.
	TLDR string `json:"tldr"`
}

// Schema is the JSON Schema of [Summary] given to the model as structured
// output (strict: every property required, no others).
var Schema = json.RawMessage(`{"type":"object","properties":{` +
	`"title":{"type":"string","description":"The subject of the conversation in a few words."},` +
	`"body":{"type":"array","minItems":3,"maxItems":6,"items":{"type":"string","description":"One fact, decision or open item, one line."},"description":"3 to 6 points: what was asked, what was decided or done, what is still open."},` +
	`"tldr":{"type":"string","description":"One sentence: where things stand and what comes next."}},` +
	`"required":["title","body","tldr"],"additionalProperties":false}`)

// ErrInvalidSummary is wrapped by every *[InvalidSummaryError].
var ErrInvalidSummary = errors.New("summary: invalid summary")

// InvalidSummaryError reports summary output that cannot be used: not a
// JSON object, a missing field, too few points. It unwraps to
// [ErrInvalidSummary] and to the JSON error, if any.
type InvalidSummaryError struct {
	// Field is the offending field ("title", "body", "tldr"), or "" when the
	// output is not a JSON object.
	Field  string
	Reason string
	Err    error
}

func (e *InvalidSummaryError) Error() string {
	s := "summary: invalid summary"
	if e.Field != "" {
		s += ": " + e.Field
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns [ErrInvalidSummary] and the underlying error.
func (e *InvalidSummaryError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidSummary, e.Err}
	}
	return []error{ErrInvalidSummary}
}

// ParseSummary decodes model output into a normalised, valid [Summary].
// It accepts the JSON object alone or wrapped in prose or a Markdown code
// fence, and a body given as one string of lines. Normalisation: white
// space (newlines included) is collapsed to single spaces, list bullets and
// numbering at the start of points are removed, empty points dropped,
// points past [MaxBody] dropped, the title cut at [MaxTitleRunes] runes,
// invalid UTF-8 replaced, and block markers escaped ([memory.Escape]) so
// that the summary can never break the memory block. A summary left with
// an empty title or TL;DR or fewer than [MinBody] points is an
// *[InvalidSummaryError].
func ParseSummary(out string) (Summary, error) {
	obj := jsonObject(out)
	if obj == "" {
		return Summary{}, &InvalidSummaryError{Reason: "no JSON object in the output"}
	}
	var raw struct {
		Title json.RawMessage `json:"title"`
		Body  json.RawMessage `json:"body"`
		TLDR  json.RawMessage `json:"tldr"`
	}
	if err := json.Unmarshal([]byte(obj), &raw); err != nil {
		return Summary{}, &InvalidSummaryError{Reason: "not a JSON object", Err: err}
	}
	var s Summary
	var err error
	if s.Title, err = jsonString("title", raw.Title); err != nil {
		return Summary{}, err
	}
	if s.TLDR, err = jsonString("tldr", raw.TLDR); err != nil {
		return Summary{}, err
	}
	var body []string
	switch b := bytes.TrimSpace(raw.Body); {
	case len(b) == 0 || string(b) == "null":
		return Summary{}, &InvalidSummaryError{Field: "body", Reason: "missing"}
	case b[0] == '"':
		one, err := jsonString("body", b)
		if err != nil {
			return Summary{}, err
		}
		body = strings.Split(one, "\n")
	default:
		if err := json.Unmarshal(b, &body); err != nil {
			return Summary{}, &InvalidSummaryError{Field: "body", Reason: "not a list of strings", Err: err}
		}
	}
	return normalise(Summary{Title: s.Title, Body: body, TLDR: s.TLDR})
}

// normalise cleans a summary as [ParseSummary] describes and validates it.
func normalise(s Summary) (Summary, error) {
	out := Summary{Title: cutRunes(oneLine(s.Title), MaxTitleRunes), TLDR: oneLine(s.TLDR)}
	for _, p := range s.Body {
		if p = stripBullet(oneLine(p)); p != "" {
			out.Body = append(out.Body, p)
		}
	}
	if len(out.Body) > MaxBody {
		out.Body = out.Body[:MaxBody]
	}
	switch {
	case out.Title == "":
		return Summary{}, &InvalidSummaryError{Field: "title", Reason: "empty"}
	case out.TLDR == "":
		return Summary{}, &InvalidSummaryError{Field: "tldr", Reason: "empty"}
	case len(out.Body) < MinBody:
		return Summary{}, &InvalidSummaryError{Field: "body", Reason: fmt.Sprintf("%d points, want %d to %d", len(out.Body), MinBody, MaxBody)}
	}
	return out, nil
}

// Validate reports whether s is a summary [ParseSummary] could have
// returned: normalised, with a title, a TL;DR and MinBody to MaxBody points.
func (s Summary) Validate() error {
	n, err := normalise(s)
	if err != nil {
		return err
	}
	if n.Title != s.Title || n.TLDR != s.TLDR || len(n.Body) != len(s.Body) {
		return &InvalidSummaryError{Reason: "not normalised"}
	}
	for i := range n.Body {
		if n.Body[i] != s.Body[i] {
			return &InvalidSummaryError{Field: "body", Reason: "not normalised"}
		}
	}
	return nil
}

// WithTitle returns s with its title replaced by title, normalised as
// [ParseSummary] normalises titles: one line, invalid UTF-8 replaced, block
// markers escaped, cut at [MaxTitleRunes] runes. Its body is a copy, so s
// is left as it is.
func (s Summary) WithTitle(title string) Summary {
	s.Body = append([]string(nil), s.Body...)
	s.Title = cutRunes(oneLine(title), MaxTitleRunes)
	return s
}

func jsonString(field string, b json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null" {
		return "", &InvalidSummaryError{Field: field, Reason: "missing"}
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", &InvalidSummaryError{Field: field, Reason: "not a string", Err: err}
	}
	return s, nil
}

// jsonObject returns the outermost {...} of s, or "".
func jsonObject(s string) string {
	i := strings.IndexByte(s, '{')
	j := strings.LastIndexByte(s, '}')
	if i < 0 || j < i {
		return ""
	}
	return s[i : j+1]
}

// oneLine collapses white space runs to one space, trims, replaces invalid
// UTF-8 and control characters and escapes memory block markers.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return memory.Escape(b.String())
}

// stripBullet removes leading list bullets ("- ", "* ", "• ", "– ", "+ ")
// and numbers ("1. ", "2) ") from a point.
func stripBullet(s string) string {
	for {
		t := s
		for _, b := range []string{"- ", "* ", "• ", "– ", "+ "} {
			if r, ok := strings.CutPrefix(t, b); ok {
				t = r
				break
			}
		}
		if i := strings.IndexAny(t, ".)"); i > 0 && i <= 3 && strings.Trim(t[:i], "0123456789") == "" && len(t) > i+1 && t[i+1] == ' ' {
			t = t[i+2:]
		}
		t = strings.TrimLeft(t, " ")
		if t == s {
			return s
		}
		s = t
	}
}

// cutRunes cuts s to at most n runes.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := range s {
		if i == n {
			return strings.TrimRight(s[:k], " ")
		}
		i++
	}
	return s
}

// Markdown renders s:
//
//	### Title
//
//	- point
//	- point
//	- point
//
//	**TL;DR:** sentence
//
// It is the text written into the agent's memory block.
func (s Summary) Markdown() string {
	var b strings.Builder
	b.WriteString("### ")
	b.WriteString(s.Title)
	b.WriteString("\n\n")
	for _, p := range s.Body {
		b.WriteString("- ")
		b.WriteString(p)
		b.WriteByte('\n')
	}
	b.WriteString("\n**TL;DR:** ")
	b.WriteString(s.TLDR)
	return b.String()
}

// Truncate returns md cut to at most maxChars runes ([DefaultMaxChars] when
// maxChars <= 0) and whether it cut. A cut falls at the last line break or
// space of the final fifth, if any, and ends with "…". The result is valid
// UTF-8 if md is.
func Truncate(md string, maxChars int) (string, bool) {
	if maxChars <= 0 {
		maxChars = DefaultMaxChars
	}
	if utf8.RuneCountInString(md) <= maxChars {
		return md, false
	}
	const ellipsis = "…"
	// Byte offset of rune number maxChars-1.
	end, n := len(md), 0
	for i := range md {
		if n == maxChars-1 {
			end = i
			break
		}
		n++
	}
	cut := md[:end]
	if k := strings.LastIndexAny(cut, "\n "); k >= 0 && utf8.RuneCountInString(cut[:k]) >= maxChars*4/5 {
		cut = cut[:k]
	}
	return strings.TrimRight(cut, " \n") + ellipsis, true
}
