package message

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func call(agent string, ids ...string) Message {
	m := Message{Role: RoleAssistant, Agent: agent}
	for _, id := range ids {
		m.Parts = append(m.Parts, Part{Type: PartToolCall, CallID: id, Name: "t_" + id, Arguments: json.RawMessage(`{}`)})
	}
	return m
}

func result(id string) Message { return ToolResult("a", id, "t_"+id, "out "+id, false) }

// shape renders a history compactly: U, A(text), C[ids], R(id), S(system).
func shape(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			out = append(out, "U")
		case RoleSystem:
			out = append(out, "S")
		case RoleTool:
			for _, p := range m.Parts {
				s := "R(" + p.CallID + ")"
				if p.IsError {
					s = "R!(" + p.CallID + ")"
				}
				out = append(out, s)
			}
		case RoleAssistant:
			s := "A"
			var ids []string
			for _, p := range m.Parts {
				if p.Type == PartToolCall {
					ids = append(ids, p.CallID)
				}
			}
			if len(ids) > 0 {
				s = "C" + join(ids)
			}
			if m.Text() != "" {
				s += "+t"
			}
			out = append(out, s)
		}
	}
	return out
}

func join(ids []string) string {
	s := "["
	for i, id := range ids {
		if i > 0 {
			s += ","
		}
		s += id
	}
	return s + "]"
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		msgs   []Message
		reason string // empty = valid
	}{
		{"Empty", nil, ""},
		{"TextOnly", []Message{User("hi"), Assistant("a", "hello")}, ""},
		{"Paired", []Message{User("hi"), call("a", "1", "2"), result("1"), result("2"), Assistant("a", "done")}, ""},
		{"ResultsAnyOrder", []Message{User("hi"), call("a", "1", "2"), result("2"), result("1")}, ""},
		{"MissingResultAtEnd", []Message{User("hi"), call("a", "1")}, "call without a result"},
		{"MissingResultBeforeUser", []Message{User("hi"), call("a", "1"), User("again")}, "call without a result"},
		{"OrphanResult", []Message{User("hi"), result("9")}, "result without a preceding call"},
		{"DuplicateResult", []Message{User("hi"), call("a", "1"), result("1"), result("1")}, "result without a preceding call"},
		{"DuplicateCallID", []Message{User("hi"), call("a", "1", "1"), result("1"), result("1")}, "duplicate call id"},
		{"EmptyCallID", []Message{User("hi"), call("a", "")}, "tool call without an id"},
		{"CallInUserMessage", []Message{{Role: RoleUser, Parts: []Part{{Type: PartToolCall, CallID: "1"}}}}, "tool call outside an assistant message"},
		{"ResultOutsideTool", []Message{{Role: RoleAssistant, Parts: []Part{{Type: PartToolResult, CallID: "1"}}}}, "tool result outside a tool message"},
		{"EmptyToolMessage", []Message{User("hi"), {Role: RoleTool}}, "tool message without a result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.msgs)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			var pe *PairingError
			if !errors.As(err, &pe) || pe.Reason != tt.reason || !errors.Is(err, ErrUnpaired) {
				t.Fatalf("Validate = %v, want reason %q wrapping ErrUnpaired", err, tt.reason)
			}
		})
	}
}

func TestRepair(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		msgs      []Message
		drop, stb []string
	}{
		{"ValidUnchanged", []Message{User("q"), call("a", "1"), result("1"), Assistant("a", "x")},
			[]string{"U", "C[1]", "R(1)", "A+t"}, []string{"U", "C[1]", "R(1)", "A+t"}},
		{"MissingResult", []Message{User("q"), call("a", "1", "2"), result("1"), Assistant("a", "x")},
			[]string{"U", "C[1]", "R(1)", "A+t"}, []string{"U", "C[1,2]", "R(1)", "R!(2)", "A+t"}},
		{"OnlyCallDropped", []Message{User("q"), call("a", "1"), User("r")},
			[]string{"U", "U"}, []string{"U", "C[1]", "R!(1)", "U"}},
		{"OrphanResultDropped", []Message{User("q"), result("9"), Assistant("a", "x")},
			[]string{"U", "A+t"}, []string{"U", "A+t"}},
		{"LateResultMovedUp", []Message{User("q"), call("a", "1"), User("r"), result("1")},
			[]string{"U", "C[1]", "R(1)", "U"}, []string{"U", "C[1]", "R(1)", "U"}},
		{"ResultBeforeCallMovedAfter", []Message{User("q"), result("1"), call("a", "1")},
			[]string{"U", "C[1]", "R(1)"}, []string{"U", "C[1]", "R(1)"}},
		{"DuplicateResultKeptOnce", []Message{User("q"), call("a", "1"), result("1"), result("1")},
			[]string{"U", "C[1]", "R(1)"}, []string{"U", "C[1]", "R(1)"}},
		{"ReusedIDPairsInOrder", []Message{User("q"), call("a", "1"), result("1"), call("a", "1"), User("r"), result("1")},
			[]string{"U", "C[1]", "R(1)", "C[1]", "R(1)", "U"}, []string{"U", "C[1]", "R(1)", "C[1]", "R(1)", "U"}},
		{"IDRepeatedInOneMessage", []Message{User("q"), call("a", "1", "1"), result("1"), result("1")},
			[]string{"U", "C[1]", "R(1)"}, []string{"U", "C[1]", "R(1)"}},
		{"TextKeptWhenCallsDropped", []Message{User("q"), withText(call("a", "1"), "thinking"), User("r")},
			[]string{"U", "A+t", "U"}, []string{"U", "C[1]+t", "R!(1)", "U"}},
		{"MultiResultToolMessageSplit", []Message{User("q"), call("a", "1", "2"), {Role: RoleTool, Parts: []Part{
			{Type: PartToolResult, CallID: "2", Text: "b"}, {Type: PartToolResult, CallID: "1", Text: "a"}}}},
			[]string{"U", "C[1,2]", "R(2)", "R(1)"}, []string{"U", "C[1,2]", "R(2)", "R(1)"}}, // valid: unchanged
		{"MultiResultRepairedInCallOrder", []Message{User("q"), call("a", "1", "2"), {Role: RoleTool, Parts: []Part{
			{Type: PartToolResult, CallID: "2", Text: "b"}, {Type: PartToolResult, CallID: "1", Text: "a"}}}, result("9")},
			[]string{"U", "C[1,2]", "R(1)", "R(2)"}, []string{"U", "C[1,2]", "R(1)", "R(2)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := cloneAll(tt.msgs)
			for _, c := range []struct {
				s    Strategy
				want []string
			}{{DropOrphans, tt.drop}, {StubMissing, tt.stb}} {
				got := Repair(tt.msgs, c.s)
				if err := Validate(got); err != nil {
					t.Fatalf("%s: repaired history is invalid: %v", c.s, err)
				}
				if s := shape(got); !reflect.DeepEqual(s, c.want) {
					t.Errorf("%s: got %v, want %v", c.s, s, c.want)
				}
			}
			if !reflect.DeepEqual(before, tt.msgs) {
				t.Fatal("Repair modified its input")
			}
		})
	}
}

func withText(m Message, text string) Message {
	m.Parts = append([]Part{{Type: PartText, Text: text}}, m.Parts...)
	return m
}

func cloneAll(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Clone()
	}
	return out
}

func TestRepairValidNoAlloc(t *testing.T) {
	msgs := []Message{User("q"), call("a", "1", "2"), result("1"), result("2"), Assistant("a", "x")}
	if n := testing.AllocsPerRun(100, func() { _ = Repair(msgs, DropOrphans) }); n != 0 {
		t.Fatalf("Repair of a valid history allocates %v times, want 0", n)
	}
}

func TestTextAndToolCalls(t *testing.T) {
	t.Parallel()
	m := Message{Role: RoleAssistant, Parts: []Part{{Type: PartText, Text: "a"}, {Type: PartReasoning, Text: "hidden"},
		{Type: PartToolCall, CallID: "1", Name: "x", Arguments: json.RawMessage(`{"k":1}`)}, {Type: PartText, Text: "b"}}}
	if got := m.Text(); got != "ab" {
		t.Errorf("Text = %q, want ab (reasoning never shown as text)", got)
	}
	if calls := m.ToolCalls(); len(calls) != 1 || calls[0].ID != "1" || string(calls[0].Arguments) != `{"k":1}` {
		t.Errorf("ToolCalls = %+v", calls)
	}
	c := m.Clone()
	c.Parts[2].Arguments[2] = 'z'
	if string(m.Parts[2].Arguments) != `{"k":1}` {
		t.Error("Clone shares argument bytes")
	}
}
