package summary

import (
	"slices"
	"strings"

	"github.com/batonhq/baton/message"
)

// Defaults of selection and trimming.
const (
	// DefaultWindow is how many of a thread's last messages [Select] scores.
	DefaultWindow = 120
	// DefaultKeep is how many messages [Select] keeps at most.
	DefaultKeep = 25
	// DefaultBudget is the token budget of [Trim], in [ApproxTokens] tokens.
	DefaultBudget = 4000
)

// SelectOptions tune [Select]. The zero value means the defaults.
type SelectOptions struct {
	// Window is how many of the last messages are scored. Defaults to
	// [DefaultWindow].
	Window int
	// Keep is the most messages kept. Defaults to [DefaultKeep].
	Keep int
}

// Scores of the selection. A unit is a message, or an assistant message
// with tool calls together with the tool results that answer it.
const (
	scoreUser        = 3.0 // user intent
	scoreUserLength  = 1.0 // up to this much more for a long user message
	scoreLastUser    = 10  // the latest user message is always worth keeping
	scoreAssistant   = 1.5
	scoreToolGroup   = 1.0
	scoreToolText    = 0.5  // a tool-calling message that also says something
	scoreOrphan      = -4.0 // a tool result whose call is not in the window
	scoreUnanswered  = -1.0 // a call whose result is missing
	scoreRecency     = 2.0  // up to this much more for the newest unit
	lengthSaturation = 200  // tokens at which the length bonus is full
)

// unit is a run of messages kept or dropped together.
type unit struct {
	start, end int // msgs[start:end]
	score      float64
	user       bool // starts with a user message
}

// units groups msgs into units: an assistant message with tool calls takes
// the tool messages right after it whose results all answer its calls. Other
// messages are units of their own; a tool message outside a group is an
// orphan. System messages, messages without parts and messages still queued
// or streaming are left out when skipSystem is set.
func units(msgs []message.Message, skipSystem bool, buf []unit) []unit {
	out := buf[:0]
	var cbuf [16]string
	calls := cbuf[:0]
	for i := 0; i < len(msgs); {
		m := &msgs[i]
		if skipSystem && (m.Role == message.RoleSystem || len(m.Parts) == 0 ||
			m.Status == message.StatusQueued || m.Status == message.StatusStreaming) {
			i++
			continue
		}
		u := unit{start: i, end: i + 1, user: m.Role == message.RoleUser}
		if m.Role == message.RoleAssistant && m.HasToolCalls() {
			calls = calls[:0]
			for j := range m.Parts {
				if m.Parts[j].Type == message.PartToolCall {
					calls = append(calls, m.Parts[j].CallID)
				}
			}
			answered := 0
			for u.end < len(msgs) && msgs[u.end].Role == message.RoleTool && answers(&msgs[u.end], calls) {
				answered += len(msgs[u.end].Parts)
				u.end++
			}
			if answered < len(calls) {
				u.score += scoreUnanswered
			}
		}
		out = append(out, u)
		i = u.end
	}
	return out
}

// answers reports whether every part of tool message m answers one of calls.
func answers(m *message.Message, calls []string) bool {
	if len(m.Parts) == 0 {
		return false
	}
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Type != message.PartToolResult || !slices.Contains(calls, p.CallID) {
			return false
		}
	}
	return true
}

// Select picks the messages of a thread worth summarising, without side
// effects. It scores the last opts.Window messages by unit — user intent
// first (the latest user message always), then assistant text, tool calls
// kept together with their results, more for recent ones, less for tool
// output whose call is out of the window or a call without a result — and
// keeps the best units up to opts.Keep messages, in their original order.
// System messages and messages still queued or streaming are left out. The result satisfies the pairing invariant
// (orphans are dropped with [message.Repair]). It shares messages (not
// parts) with msgs and never modifies msgs. It is safe for concurrent use.
func Select(msgs []message.Message, opts SelectOptions) []message.Message {
	window, keep := opts.Window, opts.Keep
	if window <= 0 {
		window = DefaultWindow
	}
	if keep <= 0 {
		keep = DefaultKeep
	}
	if len(msgs) > window {
		msgs = msgs[len(msgs)-window:]
	}
	var ubuf [DefaultWindow]unit
	us := units(msgs, true, ubuf[:])
	if len(us) == 0 {
		return nil
	}
	lastUser := -1
	for i := range us {
		u := &us[i]
		m := &msgs[u.start]
		switch {
		case u.user:
			lastUser = i
			u.score += scoreUser + scoreUserLength*min(float64(MessageTokens(m)), lengthSaturation)/lengthSaturation
		case m.Role == message.RoleTool:
			u.score += scoreOrphan
		case m.HasToolCalls():
			u.score += scoreToolGroup
			if strings.TrimSpace(m.Text()) != "" {
				u.score += scoreToolText
			}
		default:
			u.score += scoreAssistant * min(1, 0.5+float64(MessageTokens(m))/(2*lengthSaturation))
		}
		u.score += scoreRecency * float64(u.end) / float64(len(msgs))
	}
	if lastUser >= 0 {
		us[lastUser].score += scoreLastUser
	}
	var obuf [DefaultWindow]int
	order := obuf[:0]
	for i := range us {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case us[a].score > us[b].score:
			return -1
		case us[a].score < us[b].score:
			return 1
		}
		return b - a // newer first on a tie
	})
	var kbuf [DefaultWindow]bool
	kept := kbuf[:0]
	for range us {
		kept = append(kept, false)
	}
	n := 0
	for _, i := range order {
		if size := us[i].end - us[i].start; n+size <= keep {
			kept[i] = true
			n += size
		}
	}
	out := make([]message.Message, 0, n)
	for i := range us {
		if kept[i] {
			out = append(out, msgs[us[i].start:us[i].end]...)
		}
	}
	return message.Repair(out, message.DropOrphans)
}

// Trim returns the longest suffix of msgs, cut between units (a tool call
// stays with its results), that starts on a user message and whose
// [HistoryTokens] is at most budget ([DefaultBudget] when budget <= 0). When
// not even the last user message with what follows it fits, Trim returns
// that user message alone, its text cut to fit. It returns nil when msgs has
// no user message. The result satisfies the pairing invariant (a history
// that did not is repaired with [message.Repair]). Trim is pure; the result
// shares messages with msgs except for a cut message.
func Trim(msgs []message.Message, budget int) []message.Message {
	if budget <= 0 {
		budget = DefaultBudget
	}
	var ubuf [DefaultKeep * 2]unit
	us := units(msgs, false, ubuf[:])
	total := 0
	start := len(us) // first unit kept
	for i := len(us) - 1; i >= 0; i-- {
		t := HistoryTokens(msgs[us[i].start:us[i].end])
		if total+t > budget {
			break
		}
		total += t
		start = i
	}
	for ; start < len(us); start++ {
		if us[start].user {
			return message.Repair(msgs[us[start].start:], message.DropOrphans)
		}
	}
	// Nothing from a user message on fits: keep the last user message, cut.
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.RoleUser {
			return []message.Message{cutMessage(msgs[i], budget)}
		}
	}
	return nil
}

// cutMessage returns a copy of m whose text parts are cut so that
// MessageTokens(m) <= budget, keeping the beginning; non-text parts are
// dropped.
func cutMessage(m message.Message, budget int) message.Message {
	const ellipsis = " …"
	room := max(0, (budget-MessageOverheadTokens)*bytesPerToken-len(ellipsis))
	var text strings.Builder
	for i := range m.Parts {
		if m.Parts[i].Type == message.PartText {
			text.WriteString(m.Parts[i].Text)
		}
	}
	s := text.String()
	if len(s) > room {
		s = cutUTF8(s, room) + ellipsis
	}
	m.Parts = []message.Part{{Type: message.PartText, Text: s}}
	return m
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
