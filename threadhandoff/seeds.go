package threadhandoff

import (
	"net/url"
	"strings"

	"github.com/batonhq/baton/memory"
)

// The <current_thread_summary> block of an agent's memory holds one seed
// per approved handoff whose child thread has not had its first complete
// turn yet, keyed by the child thread: two handoffs to the same agent
// approved close together each keep their own summary, each child is
// shown its own only, and each cleanup removes its own only. A seed is a
// header line that names its handoff, then the summary's Markdown:
//
//	<!-- baton:handoff child_thread_id=…&handoff_id=…&parent_thread_id=… -->
//	### Refund for order 1142
//	…
//	<!-- baton:handoff child_thread_id=…&handoff_id=…&parent_thread_id=… -->
//	### Another summary
//
// A block whose first line is no header holds no seed (the placeholder, or
// text someone wrote there); a block with one seed is the format of
// earlier versions, which held one summary per agent.
const headerPrefix, headerSuffix = "<!-- baton:handoff ", " -->"

// escapedHeaderPrefix replaces headerPrefix at the start of a line of a
// summary, so that no summary can start a seed of its own.
const escapedHeaderPrefix = "&lt;!-- baton:handoff "

type header struct{ HandoffID, ChildThreadID, ParentThreadID string }

func (h header) render() string {
	v := url.Values{"handoff_id": {h.HandoffID}, "child_thread_id": {h.ChildThreadID}, "parent_thread_id": {h.ParentThreadID}}
	return headerPrefix + v.Encode() + headerSuffix
}

// parseHeader returns the header of a line, if it is one (a trailing "\r"
// allowed): it must name a handoff.
func parseHeader(line string) (header, bool) {
	q, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), headerPrefix)
	if !ok {
		return header{}, false
	}
	if q, ok = strings.CutSuffix(q, headerSuffix); !ok {
		return header{}, false
	}
	v, err := url.ParseQuery(q)
	if err != nil || v.Get("handoff_id") == "" {
		return header{}, false
	}
	return header{HandoffID: v.Get("handoff_id"), ChildThreadID: v.Get("child_thread_id"), ParentThreadID: v.Get("parent_thread_id")}, true
}

// seed is one handoff's summary in the memory block.
type seed struct {
	header
	markdown string
}

// render returns the seed as block content: its header line, then its
// Markdown, whose lines that would read as a header are escaped.
func (s seed) render() string {
	return s.header.render() + "\n" + escapeHeaders(s.markdown)
}

// escapeHeaders returns md with headerPrefix escaped at the start of every
// line.
func escapeHeaders(md string) string {
	if strings.HasPrefix(md, headerPrefix) {
		md = escapedHeaderPrefix + md[len(headerPrefix):]
	}
	return strings.ReplaceAll(md, "\n"+headerPrefix, "\n"+escapedHeaderPrefix)
}

// parseSeeds returns the seeds of block content, in order: none when its
// first line is no header. Each seed runs from its header line to the next
// header line, or to the end.
func parseSeeds(content string) []seed {
	lines := strings.Split(content, "\n")
	var out []seed
	start := -1 // the first line of the current seed's Markdown
	for i, line := range lines {
		h, ok := parseHeader(line)
		if !ok {
			if i == 0 {
				return nil
			}
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].markdown = strings.Join(lines[start:i], "\n")
		}
		out = append(out, seed{header: h})
		start = i + 1
	}
	out[len(out)-1].markdown = strings.Join(lines[start:], "\n")
	return out
}

// renderSeeds returns block content holding seeds: the placeholder when
// there is none.
func renderSeeds(seeds []seed) string {
	if len(seeds) == 0 {
		return memory.Placeholder
	}
	parts := make([]string, len(seeds))
	for i, s := range seeds {
		parts[i] = s.render()
	}
	return strings.Join(parts, "\n")
}

// seedOf returns the seed of child thread threadID among seeds.
func seedOf(seeds []seed, threadID string) (seed, bool) {
	for _, s := range seeds {
		if s.ChildThreadID != "" && s.ChildThreadID == threadID {
			return s, true
		}
	}
	return seed{}, false
}

// withoutHandoff returns seeds without those of handoff id (and of its
// child thread, when childID is not empty).
func withoutHandoff(seeds []seed, id, childID string) []seed {
	out := seeds[:0:0]
	for _, s := range seeds {
		if s.HandoffID == id || (childID != "" && s.ChildThreadID == childID) {
			continue
		}
		out = append(out, s)
	}
	return out
}
