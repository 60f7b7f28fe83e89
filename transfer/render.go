package transfer

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/jsonscan"
)

// PreviewLimit is the size in bytes above which a context field is delivered
// by reference with a preview in the prompt, rather than inline.
const PreviewLimit = 400

// Render returns the short block that shows tc in the target's system prompt.
// Fields of Data larger than [PreviewLimit] bytes appear as a preview and a
// reference ("ref": "transfer:<id>/<field>"), to be read in full through the
// transfer context tool; the full data stays in the run context.
func (tc *Context) Render() string {
	s, _ := tc.RenderRefs()
	return s
}

// RenderRefs returns Render and HasRefs with one parse of the data.
func (tc *Context) RenderRefs() (string, bool) { return tc.RenderAfter("") }

// RenderAfter returns prefix, a blank line and Render's block as one string
// (the block alone when prefix is empty), and HasRefs: a system prompt
// that ends with the block, built in one allocation.
func (tc *Context) RenderAfter(prefix string) (string, bool) {
	refs := false
	var b strings.Builder
	b.Grow(len(prefix) + 66 + len(tc.From) + len(tc.Reason) + len(tc.ExpectedOutput) + len(tc.Data))
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteString("\n\n")
	}
	b.WriteString("<transfer_context from=\"")
	b.WriteString(tc.From)
	b.WriteString("\" type=\"")
	b.WriteString(string(tc.Type))
	b.WriteString("\">\n")
	if tc.Reason != "" {
		b.WriteString("reason: ")
		b.WriteString(oneLine(tc.Reason, PreviewLimit))
		b.WriteByte('\n')
	}
	if tc.ExpectedOutput != "" {
		b.WriteString("expected_output: ")
		b.WriteString(oneLine(tc.ExpectedOutput, PreviewLimit))
		b.WriteByte('\n')
	}
	var buf [16]field
	for _, f := range tc.fields(buf[:0]) {
		if string(f.key) == "reason" || string(f.key) == "expected_output" {
			continue
		}
		v := bytes.TrimSpace(f.value)
		b.Write(f.key)
		b.WriteString(": ")
		if len(v) > PreviewLimit {
			refs = true
			b.WriteString(oneLine(string(v), 120))
			b.WriteString(" (")
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteString(" bytes; full value: ref ")
			b.WriteString(tc.Ref(string(f.key)))
			b.WriteString(")\n")
			continue
		}
		b.Write(v)
		b.WriteByte('\n')
	}
	b.WriteString("</transfer_context>")
	return b.String(), refs
}

// HasRefs reports whether Render delivers at least one field by reference.
func (tc *Context) HasRefs() bool {
	var buf [16]field
	for _, f := range tc.fields(buf[:0]) {
		if len(bytes.TrimSpace(f.value)) > PreviewLimit {
			return true
		}
	}
	return false
}

// Ref returns the reference of a Data field.
func (tc *Context) Ref(field string) string { return "transfer:" + tc.ID + "/" + field }

// Lookup returns the full JSON value of a field by reference, as made by Ref.
func (tc *Context) Lookup(ref string) (json.RawMessage, bool) {
	name, ok := strings.CutPrefix(ref, "transfer:"+tc.ID+"/")
	if !ok {
		return nil, false
	}
	var buf [16]field
	for _, f := range tc.fields(buf[:0]) {
		if string(f.key) == name {
			return bytes.Clone(f.value), true
		}
	}
	return nil, false
}

// field is a member of Data: its key (decoded) and its value as written.
type field struct{ key, value []byte }

// fields appends the members of Data to buf, as a decode into a map would
// give them: in the order of their keys, the last of a key given twice.
// Data that is not a JSON object has none.
func (tc *Context) fields(buf []field) []field {
	if len(tc.Data) == 0 {
		return nil
	}
	fs := buf
	if !jsonscan.Members(tc.Data, func(key, value []byte) {
		if !jsonscan.Plain(key) {
			key = []byte(jsonscan.Unquote(key))
		}
		fs = append(fs, field{key: key, value: value})
	}) {
		return nil
	}
	slices.SortStableFunc(fs, func(a, b field) int { return bytes.Compare(a.key, b.key) })
	out := fs[:0]
	for i, f := range fs {
		if i+1 < len(fs) && bytes.Equal(fs[i+1].key, f.key) {
			continue // the last of equal keys wins
		}
		out = append(out, f)
	}
	return out
}

// oneLine shortens s to at most n bytes on one line, marking a cut with "…".
func oneLine(s string, n int) string {
	if !oneLined(s) {
		s = strings.Join(strings.Fields(s), " ")
	}
	return clip(s, n)
}

// clip shortens s to at most n bytes, cutting at the start of a rune and
// marking the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// oneLined reports whether s is already as oneLine puts it on one line
// (strings.Join(strings.Fields(s), " ") would return s): ASCII, with single
// spaces between words and no other whitespace. Other text is not checked.
func oneLined(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf, c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
			return false
		case c == ' ' && (i == 0 || i == len(s)-1 || s[i+1] == ' '):
			return false
		}
	}
	return true
}
