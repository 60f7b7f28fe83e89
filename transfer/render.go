package transfer

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
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
func (tc *Context) RenderRefs() (string, bool) {
	refs := false
	var b strings.Builder
	b.Grow(64 + len(tc.From) + len(tc.Reason) + len(tc.ExpectedOutput) + len(tc.Data))
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
	fields := tc.fields()
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if k != "reason" && k != "expected_output" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := bytes.TrimSpace(fields[k])
		b.WriteString(k)
		b.WriteString(": ")
		if len(v) > PreviewLimit {
			refs = true
			b.WriteString(oneLine(string(v), 120))
			b.WriteString(" (")
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteString(" bytes; full value: ref ")
			b.WriteString(tc.Ref(k))
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
	for _, v := range tc.fields() {
		if len(bytes.TrimSpace(v)) > PreviewLimit {
			return true
		}
	}
	return false
}

// Ref returns the reference of a Data field.
func (tc *Context) Ref(field string) string { return "transfer:" + tc.ID + "/" + field }

// Lookup returns the full JSON value of a field by reference, as made by Ref.
func (tc *Context) Lookup(ref string) (json.RawMessage, bool) {
	field, ok := strings.CutPrefix(ref, "transfer:"+tc.ID+"/")
	if !ok {
		return nil, false
	}
	v, ok := tc.fields()[field]
	return v, ok
}

func (tc *Context) fields() map[string]json.RawMessage {
	if len(tc.Data) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(tc.Data, &m) != nil {
		return nil
	}
	return m
}

// oneLine shortens s to at most n bytes on one line, marking a cut with "…".
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
