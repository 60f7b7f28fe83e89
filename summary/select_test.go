package summary

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
)

func call(agent, id, name string) message.Message {
	return message.Message{Role: message.RoleAssistant, Agent: agent, Parts: []message.Part{
		{Type: message.PartToolCall, CallID: id, Name: name, Arguments: json.RawMessage(`{"q":"x"}`)}}}
}

func result(id, name, out string) message.Message {
	return message.ToolResult("a", id, name, out, false)
}

// ids returns the text or call id of each message, for compact comparisons.
func ids(msgs []message.Message) []string {
	var out []string
	for _, m := range msgs {
		switch {
		case m.Role == message.RoleTool:
			out = append(out, "R:"+m.Parts[0].CallID)
		case m.HasToolCalls():
			out = append(out, "C:"+m.Parts[0].CallID)
		default:
			out = append(out, m.Text())
		}
	}
	return out
}

func TestSelect(t *testing.T) {
	t.Parallel()
	u, a := message.User, func(s string) message.Message { return message.Assistant("a", s) }
	var chatter []message.Message // 40 user + 40 assistant, alternating
	for i := range 40 {
		chatter = append(chatter, u(fmt.Sprintf("u%d", i)), a(fmt.Sprintf("a%d", i)))
	}
	var long []message.Message // 200 messages: only the last 120 count
	for i := range 100 {
		long = append(long, u(fmt.Sprintf("u%d", i)), a(fmt.Sprintf("a%d", i)))
	}
	for _, tc := range []struct {
		name string
		in   []message.Message
		opts SelectOptions
		want []string // nil: checked by check only
		// check is run on the result, with the result of ids.
		check func(t *testing.T, got []string)
	}{
		{name: "Empty", in: nil, want: nil},
		{name: "Short", in: []message.Message{message.System("sys"), u("hi"), a("hello"), u("refund?"), call("a", "c1", "lookup"), result("c1", "lookup", "ok"), a("done")},
			want: []string{"hi", "hello", "refund?", "C:c1", "R:c1", "done"}},
		{name: "DraftsLeftOut", in: []message.Message{u("q"), {Role: message.RoleAssistant, Status: message.StatusStreaming, Parts: []message.Part{{Type: message.PartText, Text: "half"}}}},
			want: []string{"q"}},
		{name: "OrphanResultDropped", in: []message.Message{result("c0", "lookup", "stale"), u("q"), a("a")},
			want: []string{"q", "a"}},
		{name: "UnansweredCallDropped", in: []message.Message{u("q"), call("a", "c1", "lookup"), u("next"), a("ok")},
			want: []string{"q", "next", "ok"}},
		{name: "UserIntentBeatsChatter", in: chatter, check: func(t *testing.T, got []string) {
			if len(got) != DefaultKeep {
				t.Fatalf("kept %d; want %d", len(got), DefaultKeep)
			}
			for i, s := range got {
				if want := fmt.Sprintf("u%d", 15+i); s != want {
					t.Fatalf("kept %v; want the latest 25 user messages in order", got)
				}
			}
		}},
		{name: "Window", in: long, opts: SelectOptions{Window: 120, Keep: 200}, check: func(t *testing.T, got []string) {
			if len(got) != 120 || got[0] != "u40" || got[119] != "a99" {
				t.Fatalf("kept %d from %s to %s; want the last 120", len(got), got[0], got[len(got)-1])
			}
		}},
		{name: "WindowCutsAGroup", in: []message.Message{u("old"), call("a", "c1", "lookup"), result("c1", "lookup", "r"), u("q"), a("x")},
			opts: SelectOptions{Window: 3}, want: []string{"q", "x"}},
		{name: "KeepSmall", in: []message.Message{u("first"), a("x"), u("second"), a("y"), u("last")}, opts: SelectOptions{Keep: 2},
			want: []string{"second", "last"}},
		{name: "GroupKeptWhole", in: []message.Message{u("q"), {Role: message.RoleAssistant, Parts: []message.Part{
			{Type: message.PartText, Text: "checking"},
			{Type: message.PartToolCall, CallID: "c1", Name: "a"}, {Type: message.PartToolCall, CallID: "c2", Name: "b"}}},
			result("c1", "a", "1"), result("c2", "b", "2"), a("both done")}, opts: SelectOptions{Keep: 3},
			want: []string{"q", "both done"}},
		{name: "GroupFits", in: []message.Message{u("q"), call("a", "c1", "lookup"), result("c1", "lookup", "1"), a("done")}, opts: SelectOptions{Keep: 4},
			want: []string{"q", "C:c1", "R:c1", "done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := cloneAll(tc.in)
			out := Select(tc.in, tc.opts)
			if err := message.Validate(out); err != nil {
				t.Fatalf("result breaks pairing: %v", err)
			}
			if !equalJSON(in, tc.in) {
				t.Fatal("Select modified its input")
			}
			got := ids(out)
			if tc.check != nil {
				tc.check(t, got)
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Select = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestTrim(t *testing.T) {
	t.Parallel()
	u, a := message.User, func(s string) message.Message { return message.Assistant("a", s) }
	big := strings.Repeat("word ", 400) // 2000 bytes, 500 tokens
	for _, tc := range []struct {
		name   string
		in     []message.Message
		budget int
		want   []string
	}{
		{name: "Fits", in: []message.Message{u("q"), a("x")}, budget: 100, want: []string{"q", "x"}},
		{name: "StartsOnUser", in: []message.Message{a("hello"), u("q"), a("x")}, budget: 100, want: []string{"q", "x"}},
		{name: "CutsOldest", in: []message.Message{u(big), a(big), u("q"), a("x")}, budget: 600, want: []string{"q", "x"}},
		{name: "CutLandsOnAssistant", in: []message.Message{u("q1"), a(big), u("q2"), a("x")}, budget: 300, want: []string{"q2", "x"}},
		{name: "GroupNotSplit", in: []message.Message{u("q1"), call("a", "c1", "t"), result("c1", "t", big), u("q2"), a("x")}, budget: 100,
			want: []string{"q2", "x"}},
		{name: "GroupKept", in: []message.Message{u("q1"), call("a", "c1", "t"), result("c1", "t", "small"), a("x")}, budget: 100,
			want: []string{"q1", "C:c1", "R:c1", "x"}},
		{name: "NoUser", in: []message.Message{a("x"), a("y")}, budget: 100, want: nil},
		{name: "DefaultBudget", in: []message.Message{u(big), a(big), u(big), a(big), u(big), a(big), u(big), a(big), u("q"), a("x")}, budget: 0,
			want: []string{big, big, big, big, big, big, big, "q", "x"}[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := Trim(tc.in, tc.budget)
			if got := ids(out); !slices.Equal(got, tc.want) {
				t.Fatalf("Trim = %q; want %q", short(got), short(tc.want))
			}
			b := tc.budget
			if b <= 0 {
				b = DefaultBudget
			}
			if n := HistoryTokens(out); n > b {
				t.Fatalf("%d tokens over budget %d", n, b)
			}
		})
	}
	t.Run("OversizedLastUser", func(t *testing.T) {
		t.Parallel()
		huge := strings.Repeat("é", 5000) // 10000 bytes
		out := Trim([]message.Message{u("old"), u(huge), a("x")}, 100)
		if len(out) != 1 || out[0].Role != message.RoleUser || MessageTokens(&out[0]) > 100 || !strings.HasSuffix(out[0].Text(), " …") {
			t.Fatalf("Trim = %d messages, %d tokens", len(out), HistoryTokens(out))
		}
		if !strings.HasPrefix(huge, strings.TrimSuffix(out[0].Text(), " …")) {
			t.Fatal("cut text is not a prefix (split rune?)")
		}
	})
}

func short(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		if len(v) > 12 {
			v = v[:12] + "…"
		}
		out[i] = v
	}
	return out
}

func TestApproxTokens(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, strings.Repeat("x", 4000): 1000} {
		if got := ApproxTokens(s); got != want {
			t.Errorf("ApproxTokens(%d bytes) = %d; want %d", len(s), got, want)
		}
	}
	m := message.Message{Role: message.RoleAssistant, Parts: []message.Part{
		{Type: message.PartText, Text: "abcdefgh"},
		{Type: message.PartToolCall, Name: "tool", Arguments: json.RawMessage(`{"a":1}`)},
		{Type: message.PartImage, URL: "http://x"}}}
	if got, want := MessageTokens(&m), MessageOverheadTokens+2+1+2+ImageTokens; got != want {
		t.Errorf("MessageTokens = %d; want %d", got, want)
	}
}

// TestSelectTrimProperties checks the invariants on random histories.
func TestSelectTrimProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		in := randomHistory(r, r.IntN(300))
		sel := Select(in, SelectOptions{})
		checkSubsequence(t, in, sel)
		if len(sel) > DefaultKeep {
			t.Fatalf("selected %d", len(sel))
		}
		budget := 20 + r.IntN(400)
		out := Trim(sel, budget)
		if err := message.Validate(out); err != nil {
			t.Fatalf("invalid: %v", err)
		}
		if len(out) == 0 {
			continue
		}
		if out[0].Role != message.RoleUser {
			t.Fatalf("starts with %s", out[0].Role)
		}
		if HistoryTokens(out) > budget {
			t.Fatalf("%d tokens over %d", HistoryTokens(out), budget)
		}
	}
}

func checkSubsequence(t *testing.T, in, out []message.Message) {
	t.Helper()
	if err := message.Validate(out); err != nil {
		t.Fatalf("invalid: %v", err)
	}
	j := 0
	for _, m := range out {
		for j < len(in) && in[j].ID != m.ID {
			j++
		}
		if j == len(in) {
			t.Fatalf("message %s is out of order or not from the input", m.ID)
		}
		j++
	}
}

// randomHistory returns n-ish messages with ids: users, assistants, tool
// groups (sometimes broken), system messages.
func randomHistory(r *rand.Rand, n int) []message.Message {
	var out []message.Message
	id := 0
	next := func() string { id++; return fmt.Sprintf("m%d", id) }
	for len(out) < n {
		switch r.IntN(7) {
		case 0, 1:
			m := message.User(strings.Repeat("u", 1+r.IntN(600)))
			m.ID = next()
			out = append(out, m)
		case 2, 3:
			m := message.Assistant("a", strings.Repeat("a", 1+r.IntN(600)))
			m.ID = next()
			out = append(out, m)
		case 4:
			k := 1 + r.IntN(3)
			c := message.Message{ID: next(), Role: message.RoleAssistant, Agent: "a"}
			var res []message.Message
			for range k {
				cid := next()
				c.Parts = append(c.Parts, message.Part{Type: message.PartToolCall, CallID: cid, Name: "t", Arguments: json.RawMessage(`{}`)})
				if r.IntN(8) > 0 {
					m := message.ToolResult("a", cid, "t", strings.Repeat("r", r.IntN(400)), false)
					m.ID = next()
					res = append(res, m)
				}
			}
			out = append(out, c)
			out = append(out, res...)
		case 5:
			m := message.ToolResult("a", "orphan"+next(), "t", "x", false)
			m.ID = next()
			out = append(out, m)
		case 6:
			m := message.System("s")
			m.ID = next()
			out = append(out, m)
		}
	}
	return out
}

func cloneAll(msgs []message.Message) []message.Message {
	if msgs == nil {
		return nil
	}
	out := make([]message.Message, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Clone()
	}
	return out
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
