package message

import (
	"encoding/json"
	"testing"
)

// FuzzRepair decodes arbitrary bytes into a history and checks that Repair
// always returns a valid history, never panics, keeps every text part of the
// user and system messages, and is idempotent.
func FuzzRepair(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 1, 2})
	f.Add([]byte{1, 3, 3, 1, 2, 4, 0})
	f.Add([]byte(`[{"role":"assistant","parts":[{"type":"tool_call","call_id":"1"}]},{"role":"tool","parts":[{"type":"tool_result","call_id":"2"}]}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs := decodeHistory(b)
		for _, s := range []Strategy{DropOrphans, StubMissing} {
			got := Repair(msgs, s)
			if err := Validate(got); err != nil {
				t.Fatalf("%s: invalid after repair: %v\ninput: %s", s, err, mustJSON(msgs))
			}
			again := Repair(got, s)
			if len(again) != len(got) {
				t.Fatalf("%s: repair is not idempotent", s)
			}
			if countUserText(got) != countUserText(msgs) {
				t.Fatalf("%s: user/system text lost", s)
			}
		}
	})
}

func countUserText(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == RoleUser || m.Role == RoleSystem {
			for _, p := range m.Parts {
				if p.Type == PartText {
					n++
				}
			}
		}
	}
	return n
}

// decodeHistory reads JSON when b is a JSON history, else builds one from
// the bytes as a small instruction stream.
func decodeHistory(b []byte) []Message {
	var msgs []Message
	if json.Unmarshal(b, &msgs) == nil {
		return msgs
	}
	ids := []string{"a", "b", "c", ""}
	for i := 0; i+1 < len(b); i += 2 {
		id := ids[int(b[i+1])%len(ids)]
		switch b[i] % 6 {
		case 0:
			msgs = append(msgs, User("u"))
		case 1:
			msgs = append(msgs, Message{Role: RoleAssistant, Parts: []Part{{Type: PartToolCall, CallID: id, Name: "t"}}})
		case 2:
			msgs = append(msgs, ToolResult("", id, "t", "r", false))
		case 3:
			msgs = append(msgs, Assistant("", "x"))
		case 4:
			if n := len(msgs); n > 0 && msgs[n-1].Role == RoleAssistant {
				msgs[n-1].Parts = append(msgs[n-1].Parts, Part{Type: PartToolCall, CallID: id, Name: "t"})
			}
		case 5:
			msgs = append(msgs, Message{Role: RoleTool, Parts: []Part{{Type: PartText, Text: "stray"}}})
		}
	}
	return msgs
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
