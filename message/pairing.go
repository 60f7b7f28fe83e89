package message

import (
	"errors"
	"fmt"
)

// Strategy names how [Repair] treats a tool call that has no result.
// Results whose call is missing are always dropped: a call cannot be invented.
type Strategy string

// Strategies.
const (
	// DropOrphans removes calls that have no result; an assistant message
	// left with no parts is removed too.
	DropOrphans Strategy = "drop"
	// StubMissing keeps every call and appends a synthetic error result
	// (see [MissingResultText]) for each call that has none.
	StubMissing Strategy = "stub"
)

// MissingResultText is the output of the synthetic result that [StubMissing]
// appends for a call without a result.
const MissingResultText = "error: no result was recorded for this tool call"

// ErrUnpaired is the error [Validate] wraps when the pairing invariant does not hold.
var ErrUnpaired = errors.New("message: unpaired tool call or result")

// PairingError says where a history breaks the pairing invariant.
type PairingError struct {
	Index  int    // index of the offending message
	CallID string // the call id concerned, if any
	Reason string
}

func (e *PairingError) Error() string {
	if e.CallID != "" {
		return fmt.Sprintf("message %d: call %q: %s", e.Index, e.CallID, e.Reason)
	}
	return fmt.Sprintf("message %d: %s", e.Index, e.Reason)
}

// Unwrap returns [ErrUnpaired].
func (e *PairingError) Unwrap() error { return ErrUnpaired }

// Validate reports whether msgs satisfy the pairing invariant: the results of an
// assistant message's calls follow it directly, one per call, before any other
// message, and every result answers such a call. It returns a *[PairingError]
// describing the first violation, or nil. It does not allocate on valid input.
func Validate(msgs []Message) error {
	var pending []string // call ids of the last assistant message still unanswered
	var buf [8]string
	for i := range msgs {
		m := &msgs[i]
		if m.Role == RoleTool {
			if len(m.Parts) == 0 {
				return &PairingError{Index: i, Reason: "tool message without a result"}
			}
			for j := range m.Parts {
				p := &m.Parts[j]
				if p.Type != PartToolResult {
					return &PairingError{Index: i, Reason: "tool message with a " + string(p.Type) + " part"}
				}
				k := indexOf(pending, p.CallID)
				if k < 0 {
					return &PairingError{Index: i, CallID: p.CallID, Reason: "result without a preceding call"}
				}
				pending = append(pending[:k], pending[k+1:]...)
			}
			continue
		}
		if len(pending) > 0 {
			return &PairingError{Index: i - 1, CallID: pending[0], Reason: "call without a result"}
		}
		for j := range m.Parts {
			p := &m.Parts[j]
			switch p.Type {
			case PartToolResult:
				return &PairingError{Index: i, CallID: p.CallID, Reason: "tool result outside a tool message"}
			case PartToolCall:
				if m.Role != RoleAssistant {
					return &PairingError{Index: i, CallID: p.CallID, Reason: "tool call outside an assistant message"}
				}
				if p.CallID == "" {
					return &PairingError{Index: i, Reason: "tool call without an id"}
				}
				if pending == nil {
					pending = buf[:0]
				}
				if indexOf(pending, p.CallID) >= 0 {
					return &PairingError{Index: i, CallID: p.CallID, Reason: "duplicate call id"}
				}
				pending = append(pending, p.CallID)
			}
		}
	}
	if len(pending) > 0 {
		return &PairingError{Index: len(msgs) - 1, CallID: pending[0], Reason: "call without a result"}
	}
	return nil
}

func indexOf(s []string, v string) int {
	for i := range s {
		if s[i] == v {
			return i
		}
	}
	return -1
}

// Repair returns a history that satisfies the pairing invariant, built from
// msgs with strategy s for calls that have no result:
//
//   - each call's result is placed right after the assistant message that made
//     the call, in call order, one tool message per result, wherever the result
//     stood before (so results are re-appended after their call, never lost
//     while their call is kept);
//   - results are matched to calls of the same id in order, so an id reused
//     in a later turn pairs with its own result;
//   - a result left without a call, and a call or result part in a message
//     of the wrong role, are dropped;
//   - a call with an empty id, or an id repeated within one message, is dropped;
//   - a call without a result is dropped ([DropOrphans]) or answered with a
//     synthetic error result ([StubMissing]).
//
// When msgs already satisfy the invariant, Repair returns msgs itself without
// allocating. Otherwise msgs is not modified. An unknown strategy is treated
// as [DropOrphans].
func Repair(msgs []Message, s Strategy) []Message {
	if Validate(msgs) == nil {
		return msgs
	}
	// Where the results of each call id are, in order: call id -> (message, part).
	type loc struct{ msg, part int }
	results := make(map[string][]loc)
	for i := range msgs {
		if msgs[i].Role != RoleTool {
			continue
		}
		for j := range msgs[i].Parts {
			p := &msgs[i].Parts[j]
			if p.Type == PartToolResult && p.CallID != "" {
				results[p.CallID] = append(results[p.CallID], loc{i, j})
			}
		}
	}
	// take returns the next unused result of a call id.
	take := func(id string) (loc, bool) {
		l := results[id]
		if len(l) == 0 {
			return loc{}, false
		}
		results[id] = l[1:]
		return l[0], true
	}
	out := make([]Message, 0, len(msgs))
	for i := range msgs {
		m := msgs[i]
		switch m.Role {
		case RoleTool:
			continue // results are emitted after their call
		case RoleAssistant:
		default:
			if hasPart(m.Parts, PartToolCall, PartToolResult) {
				m.Parts = filterParts(m.Parts, func(p *Part) bool {
					return p.Type != PartToolCall && p.Type != PartToolResult
				})
				if len(m.Parts) == 0 {
					continue
				}
			}
			out = append(out, m)
			continue
		}
		type kept struct {
			loc  loc
			stub *Part
		}
		var keptCalls []kept
		seen := map[string]bool{} // call ids of this message
		parts := filterParts(m.Parts, func(p *Part) bool {
			switch p.Type {
			case PartToolResult:
				return false
			case PartToolCall:
				if p.CallID == "" || seen[p.CallID] {
					return false
				}
				seen[p.CallID] = true
				if l, ok := take(p.CallID); ok {
					keptCalls = append(keptCalls, kept{loc: l})
					return true
				}
				if s == StubMissing {
					keptCalls = append(keptCalls, kept{stub: &Part{Type: PartToolResult, CallID: p.CallID, Name: p.Name, Text: MissingResultText, IsError: true}})
					return true
				}
				return false
			}
			return true
		})
		if len(parts) == 0 {
			continue
		}
		m.Parts = parts
		out = append(out, m)
		for _, k := range keptCalls {
			if k.stub == nil {
				l := k.loc
				src := msgs[l.msg]
				out = append(out, Message{
					ID:       singleID(src, l.part),
					Role:     RoleTool,
					Agent:    src.Agent,
					Parts:    []Part{src.Parts[l.part]},
					Status:   src.Status,
					Metadata: src.Metadata,
				})
				continue
			}
			out = append(out, Message{Role: RoleTool, Agent: m.Agent, Parts: []Part{*k.stub}})
		}
	}
	return out
}

// singleID keeps a tool message's id when it carried a single result.
func singleID(m Message, part int) string {
	if len(m.Parts) == 1 && part == 0 {
		return m.ID
	}
	return ""
}

func hasPart(parts []Part, types ...PartType) bool {
	for i := range parts {
		for _, t := range types {
			if parts[i].Type == t {
				return true
			}
		}
	}
	return false
}

// filterParts returns the parts kept by keep, in a new slice.
func filterParts(parts []Part, keep func(*Part) bool) []Part {
	out := make([]Part, 0, len(parts))
	for i := range parts {
		if keep(&parts[i]) {
			out = append(out, parts[i])
		}
	}
	return out
}
