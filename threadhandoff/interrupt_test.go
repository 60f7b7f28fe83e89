package threadhandoff

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/summary"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

const goodJSON = `{"title":"Refund for order 1142","body":["User asked for a refund of order 1142.","Refund approved for 42.10 EUR.","Waiting for the bank to confirm."],"tldr":"Refund approved; confirm with the bank on Monday."}`

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestInterruptGolden(t *testing.T) {
	t.Parallel()
	s, _ := summary.ParseSummary(goodJSON)
	p := &Proposal{Owner: "o", AssistantID: "support", ParentThreadID: "thread-1",
		Result: summary.Result{HandoffID: "0190c6a8-0000-7000-8000-000000000001", Summary: s, Markdown: s.Markdown(),
			ModelRunID: "0190c6a8-0000-7000-8000-000000000002", TokensUsed: 360}, ThroughSeq: 12}
	got, err := json.MarshalIndent(p.Interrupt(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "interrupt_v1.json")
	if *update {
		if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(got)+"\n" != string(want) {
		t.Fatalf("interrupt payload changed; run with -update if intended:\n%s", got)
	}
	in, err := ParseInterrupt(want)
	if err != nil {
		t.Fatal(err)
	}
	back := proposalOf(in, "owner-from-auth")
	if back.Owner != "owner-from-auth" || back.HandoffID != p.HandoffID || back.Markdown != p.Markdown || !equalJSON(back.Summary, p.Summary) ||
		back.ModelRunID != p.ModelRunID || back.TokensUsed != 360 || back.ThroughSeq != 12 {
		t.Fatalf("round trip = %+v", back)
	}
}

func TestParseInterruptErrors(t *testing.T) {
	t.Parallel()
	s, _ := summary.ParseSummary(goodJSON)
	base := (&Proposal{AssistantID: "a", ParentThreadID: "t", Result: summary.Result{HandoffID: "h", Summary: s, Markdown: "md"}}).Interrupt()
	for name, mutate := range map[string]func(*Interrupt){
		"Version":      func(in *Interrupt) { in.SchemaVersion = 2 },
		"Source":       func(in *Interrupt) { in.MiddlewareSource = "other" },
		"NoAction":     func(in *Interrupt) { in.ActionRequests = nil },
		"ActionName":   func(in *Interrupt) { in.ActionRequests[0].Name = "x" },
		"NoAssistant":  func(in *Interrupt) { in.ActionRequests[0].Args.AssistantID = "" },
		"IDMismatch":   func(in *Interrupt) { in.ID = "other" },
		"NoMarkdown":   func(in *Interrupt) { in.ActionRequests[0].Args.Markdown = " " },
		"BadSummary":   func(in *Interrupt) { in.ActionRequests[0].Args.Summary.Body = []string{"a"} },
		"Unnormalised": func(in *Interrupt) { in.ActionRequests[0].Args.Summary.Title = " T\n" },
		"TopMismatch":  func(in *Interrupt) { in.HandoffID = "other" },
		"TopMarkdown":  func(in *Interrupt) { in.Markdown = "other" },
		"NegativeSeq":  func(in *Interrupt) { in.ThroughSeq = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, _ := json.Marshal(base)
			var in Interrupt
			_ = json.Unmarshal(b, &in)
			mutate(&in)
			b, _ = json.Marshal(in)
			if _, err := ParseInterrupt(b); !errors.Is(err, ErrInvalidInterrupt) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	if _, err := ParseInterrupt([]byte(`{`)); !errors.Is(err, ErrInvalidInterrupt) {
		t.Fatalf("bad JSON: %v", err)
	}
}

func TestDecisionApply(t *testing.T) {
	t.Parallel()
	s, _ := summary.ParseSummary(goodJSON)
	p := &Proposal{Result: summary.Result{Summary: s, Markdown: s.Markdown(), Truncated: true}}
	if _, md, edited, truncated := (Decision{Type: DecisionApprove}).apply(p); edited || md != p.Markdown || !truncated {
		t.Fatal("approve changed the proposal")
	}
	s2, md, edited, truncated := (Decision{Type: DecisionEdit, Title: "New\ntitle"}).apply(p)
	if !edited || truncated || s2.Title != "New title" || !strings.HasPrefix(md, "### New title\n") || p.Summary.Title != s.Title {
		t.Fatalf("title edit: %+v %q", s2, md)
	}
	_, md, _, _ = (Decision{Type: DecisionEdit, Markdown: "my own </current_thread_summary> text"}).apply(p)
	if md != "my own "+memory.EscapedCloseMarker+" text" {
		t.Fatalf("markdown edit = %q", md)
	}
}

func TestDecisionValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d     Decision
		field string // "" : valid
	}{
		{Decision{Type: DecisionApprove}, ""},
		{Decision{Type: "Decline"}, ""},
		{Decision{Type: DecisionEdit, Markdown: strings.Repeat("é", summary.DefaultMaxChars)}, ""},
		{Decision{Type: "maybe"}, "type"},
		{Decision{Type: DecisionEdit}, "args"},
		{Decision{Type: DecisionEdit, Title: "  ", Markdown: "\n"}, "args"},
		{Decision{Type: DecisionEdit, Markdown: strings.Repeat("x", summary.DefaultMaxChars+1)}, "args.summary_md"},
		{Decision{Type: DecisionEdit, Title: strings.Repeat("t", MaxTitleBytes+1)}, "args.title"},
		{Decision{Type: DecisionReject, Reason: strings.Repeat("r", MaxReasonBytes+1)}, "reason"},
	} {
		err := tc.d.Validate(0)
		var de *DecisionError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v", tc.d, err)
		case tc.field != "" && (!errors.As(err, &de) || de.Field != tc.field || !errors.Is(err, ErrInvalidDecision)):
			t.Errorf("%+v: %v, want a DecisionError on %s", tc.d, err, tc.field)
		}
	}
	if err := (Decision{Type: DecisionEdit, Markdown: "12345"}).Validate(4); err == nil {
		t.Error("maxChars 4 accepted 5 characters")
	}
}

func TestParseDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		typ, args string
		want      Decision
		field     string // "": valid
	}{
		{"approve", "", Decision{Type: DecisionApprove}, ""},
		{" APPROVE ", "{}", Decision{Type: DecisionApprove}, ""},
		{"decline", "null", Decision{Type: DecisionReject}, ""},
		{"reject", "", Decision{Type: DecisionReject}, ""},
		{"edit", `{"summary_md": "### New\n- a"}`, Decision{Type: DecisionEdit, Markdown: "### New\n- a"}, ""},
		{"edit", `{"title": "Refund"}`, Decision{Type: DecisionEdit, Title: "Refund"}, ""},
		{"edit", `{"title": "T", "summary_md": "md"}`, Decision{Type: DecisionEdit, Title: "T", Markdown: "md"}, ""},
		{"maybe", "", Decision{}, "type"},
		{"approve", `{"title": "x"}`, Decision{}, "args"},
		{"edit", "", Decision{}, "args"},
		{"edit", "null", Decision{}, "args"},
		{"edit", "{}", Decision{}, "args"},
		{"edit", `[1]`, Decision{}, "args"},
		{"edit", `"text"`, Decision{}, "args"},
		{"edit", `{"markdown": "x"}`, Decision{}, "args"},
		{"edit", `{"summary_md": 1}`, Decision{}, "args.summary_md"},
		{"edit", `{"summary_md": null}`, Decision{}, "args.summary_md"},
		{"edit", `{"summary_md": "  "}`, Decision{}, "args.summary_md"},
		{"edit", `{"title": ["x"]}`, Decision{}, "args.title"},
		{"edit", `{"summary_md": "` + strings.Repeat("x", summary.DefaultMaxChars+1) + `"}`, Decision{}, "args.summary_md"},
	} {
		got, err := ParseDecision(tc.typ, []byte(tc.args))
		var de *DecisionError
		switch {
		case tc.field == "" && (err != nil || got != tc.want):
			t.Errorf("ParseDecision(%q, %s) = %+v, %v; want %+v", tc.typ, tc.args, got, err, tc.want)
		case tc.field != "" && (!errors.As(err, &de) || de.Field != tc.field):
			t.Errorf("ParseDecision(%q, %s): %v, want a DecisionError on %s", tc.typ, tc.args, err, tc.field)
		}
	}
}
