package handoff

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

// Render returns the short block that shows hc in the target's system prompt.
// Fields of Data larger than [PreviewLimit] bytes appear as a preview and a
// reference ("ref": "handoff:<id>/<field>"), to be read in full through the
// handoff context tool; the full data stays in the run context.
func (hc *Context) Render() string {
	s, _ := hc.RenderRefs()
	return s
}

// RenderRefs returns Render and HasRefs with one parse of the data.
func (hc *Context) RenderRefs() (string, bool) {
	refs := false
	var b strings.Builder
	b.Grow(64 + len(hc.From) + len(hc.Reason) + len(hc.ExpectedOutput) + len(hc.Data))
	b.WriteString("<handoff_context from=\"")
	b.WriteString(hc.From)
	b.WriteString("\" type=\"")
	b.WriteString(string(hc.Type))
	b.WriteString("\">\n")
	if hc.Reason != "" {
		b.WriteString("reason: ")
		b.WriteString(oneLine(hc.Reason, PreviewLimit))
		b.WriteByte('\n')
	}
	if hc.ExpectedOutput != "" {
		b.WriteString("expected_output: ")
		b.WriteString(oneLine(hc.ExpectedOutput, PreviewLimit))
		b.WriteByte('\n')
	}
	fields := hc.fields()
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
			b.WriteString(hc.Ref(k))
			b.WriteString(")\n")
			continue
		}
		b.Write(v)
		b.WriteByte('\n')
	}
	b.WriteString("</handoff_context>")
	return b.String(), refs
}

// HasRefs reports whether Render delivers at least one field by reference.
func (hc *Context) HasRefs() bool {
	for _, v := range hc.fields() {
		if len(bytes.TrimSpace(v)) > PreviewLimit {
			return true
		}
	}
	return false
}

// Ref returns the reference of a Data field.
func (hc *Context) Ref(field string) string { return "handoff:" + hc.ID + "/" + field }

// Lookup returns the full JSON value of a field by reference, as made by Ref.
func (hc *Context) Lookup(ref string) (json.RawMessage, bool) {
	field, ok := strings.CutPrefix(ref, "handoff:"+hc.ID+"/")
	if !ok {
		return nil, false
	}
	v, ok := hc.fields()[field]
	return v, ok
}

func (hc *Context) fields() map[string]json.RawMessage {
	if len(hc.Data) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(hc.Data, &m) != nil {
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
