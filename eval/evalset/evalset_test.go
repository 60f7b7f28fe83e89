package evalset_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/batonhq/baton/eval/evalset"
)

func TestParseYAML(t *testing.T) {
	t.Parallel()
	s, err := evalset.Load("testdata/support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "support-sample" || len(s.Cases) != 3 || s.Network == "" {
		t.Fatalf("set = %+v", s)
	}
	c := s.Cases[0]
	if c.Line != 8 {
		t.Errorf("case %s at line %d, want 8", c.ID, c.Line)
	}
	e := c.Turns[0].Expect
	if e.Routing != "triage" || len(*e.Transfers) != 1 || (*e.Transfers)[0].Context["issue"] != "double_charge" {
		t.Errorf("expect = %+v", e)
	}
	if e.Tools.Match != evalset.MatchInOrder || e.Tools.Calls[0].Fields[0] != "order_id" {
		t.Errorf("tools = %+v", e.Tools)
	}
	if e.Answer.ROUGE1.Threshold != 0.5 || len(e.Answer.Contains) != 2 {
		t.Errorf("answer = %+v", e.Answer)
	}
	if d := s.Cases[1].Turns[0].Decisions; len(d) != 1 || d[0].Type != evalset.DecisionApprove {
		t.Errorf("decisions = %+v", d)
	}
	small := s.Cases[2]
	if tr := small.Turns[0].Expect.Transfers; tr == nil || len(*tr) != 0 {
		t.Errorf("transfers: [] should expect none, got %v", tr)
	}
	rec := small.Recording
	if rec == nil || rec.Version != evalset.RecordingVersion || rec.Agents["triage"] == "" || len(rec.Turns) != 1 {
		t.Fatalf("recording = %+v", rec)
	}
	mc := rec.Turns[0].ModelCalls[0]
	if mc.Message.Text() == "" || mc.Message.Metadata["scripted_rule"] != "reply" {
		t.Errorf("model call = %+v", mc)
	}
}

// TestRoundTrip: what Write writes, Parse reads back the same, in YAML and
// in JSON Lines.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s, err := evalset.Load("testdata/support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []evalset.Format{evalset.FormatYAML, evalset.FormatJSONL} {
		back, written := writeRead(t, s, f, "written by a test", "set")
		for i := range back.Cases {
			back.Cases[i].Line = s.Cases[i].Line
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("%s: read back differs:\n%s", f, written)
		}
	}
}

// TestNoArgs: args: {} (a call expected without arguments) is not args
// left out (arguments not compared), and stays so when written.
func TestNoArgs(t *testing.T) {
	t.Parallel()
	s, err := evalset.Parse([]byte("version: 1\nname: x\ncases:\n  - id: a\n    turns: [{user: hi, expect: {tools: {calls: [{name: t, args: {}}, {name: u}]}}}]\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []evalset.Format{evalset.FormatYAML, evalset.FormatJSONL} {
		back, written := writeRead(t, s, f, "", "s")
		calls := back.Cases[0].Turns[0].Expect.Tools.Calls
		if calls[0].Args == nil || len(calls[0].Args) != 0 || calls[1].Args != nil {
			t.Errorf("%s: args %#v, %#v; want {} and none\n%s", f, calls[0].Args, calls[1].Args, written)
		}
	}
}

// writeRead writes s in format f under the comment and parses it back as
// the file name.f; it returns the set read and the text written.
func writeRead(t *testing.T, s *evalset.Set, f evalset.Format, comment, name string) (*evalset.Set, string) {
	t.Helper()
	var b bytes.Buffer
	if err := evalset.Write(&b, s, f, comment); err != nil {
		t.Fatal(err)
	}
	back, err := evalset.Parse(b.Bytes(), name+"."+string(f))
	if err != nil {
		t.Fatalf("%s: %v\n%s", f, err, b.String())
	}
	return back, b.String()
}

func TestParseJSONL(t *testing.T) {
	t.Parallel()
	src := `{"set": {"version": 1, "name": "big"}}

{"id": "a", "turns": [{"user": "hi", "expect": {"status": "completed"}}]}
{"id": "b", "turns": [{"user": "refund please", "expect": {"tools": {"match": "ANY_ORDER", "calls": [{"name": "lookup_order"}]}}}]}
`
	s, err := evalset.Parse([]byte(src), "big.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "big" || len(s.Cases) != 2 || s.Cases[1].Line != 4 {
		t.Fatalf("set = %+v", s)
	}
	// Without a header the set is named after its file.
	s, err = evalset.Parse([]byte(`{"id": "a", "turns": [{"user": "hi"}]}`), "dir/nightly.jsonl")
	if err != nil || s.Name != "nightly" || s.Version != evalset.Version {
		t.Fatalf("set = %+v, %v", s, err)
	}
}

// TestMalformed: every malformed set is an *Error naming each problem
// with its line.
func TestMalformed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, src string
		want            []string // "line N: text"
	}{
		{"unknown field", "s.yaml", "version: 1\nname: x\ncases:\n  - id: a\n    turns:\n      - user: hi\n        expekt: {}\n",
			[]string{`line 7: unknown field "expekt"`}},
		{"bad values", "s.yaml", "version: 2\nname: x\ncases:\n  - id: a\n    turns:\n      - user: hi\n        expect:\n          status: done\n          tools: {match: sometimes, calls: [{args: {a: 1}}]}\n          answer: {regex: \"(\", rouge1: {reference: \"\", threshold: 2}}\n  - id: a\n    turns: []\n",
			[]string{"line 1: $.version: version must be 1", "line 8: $.cases[0].turns[0].expect.status: status \"done\"", "line 9: $.cases[0].turns[0].expect.tools.match", "an expected tool call needs a name",
				"line 10: $.cases[0].turns[0].expect.answer.regex: invalid regular expression", "ROUGE-1 needs a reference", "threshold 2", "line 11: $.cases[1].id: case id \"a\" is used by case 1", "case \"a\" has no turns"}},
		{"syntax", "s.yaml", "version: 1\ncases: [\n", []string{"line 2:"}},
		{"not a mapping", "s.yaml", "- a\n- b\n", []string{"an eval set is a mapping"}},
		{"empty", "s.yaml", "# nothing\n", []string{"the set is empty"}},
		{"two documents", "s.yaml", "version: 1\n---\nversion: 1\n", []string{"one YAML document, not 2"}},
		{"billion laughs", "s.yaml", laughs(), []string{"expands to more than"}},
		{"schema", "s.yaml", "version: 1\nname: x\ncases:\n  - id: a\n    turns:\n      - user: hi\n        expect: {answer: {json_schema: {type: nope}}}\n", []string{"line 7:"}},
		{"recording", "s.yaml", "version: 1\nname: x\ncases:\n  - id: a\n    turns: [{user: hi}]\n    recording:\n      version: 3\n      turns: [{model_calls: [{message: {role: assistant}}]}, {}]\n",
			[]string{"line 7: $.cases[0].recording.version: recording version must be 1", "the recording has 2 turns, the case 1", "needs its agent"}},
		{"decision", "s.yaml", "version: 1\nname: x\ncases:\n  - id: a\n    turns: [{user: hi, decisions: [{type: maybe}, {type: edit}]}]\n",
			[]string{"decision type \"maybe\"", "an edit decision needs args"}},
		{"jsonl line", "s.jsonl", "{\"id\": \"a\", \"turns\": [{\"user\": \"hi\"}]}\n{\"id\": \"b\", \"turns\": [{\"user\": 3}]}\n{\"id\": \"c\", \"turns\": [{\"user\": \"\"}]}\n",
			[]string{"line 2: cannot unmarshal number"}},
		{"jsonl semantic", "s.jsonl", "{\"id\": \"a\", \"turns\": [{\"user\": \"hi\"}]}\n\n{\"id\": \"a\", \"turns\": [{\"user\": \"\"}]}\n",
			[]string{"line 3: $.cases[1].id: case id \"a\" is used by case 1", "line 3: $.cases[1].turns[0].user: turn 1 has no user message"}},
		{"jsonl two values", "s.jsonl", "{\"id\": \"a\", \"turns\": [{\"user\": \"hi\"}]} {}\n", []string{"line 1: more than one JSON value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := evalset.Parse([]byte(tc.src), tc.file)
			var e *evalset.Error
			if !errors.As(err, &e) || !errors.Is(err, evalset.ErrInvalid) {
				t.Fatalf("err = %v, want an *evalset.Error", err)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("missing %q in:\n%s", w, msg)
				}
			}
		})
	}
}

// laughs is a small YAML whose aliases expand to billions of values.
func laughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}
