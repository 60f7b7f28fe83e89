package threadhandoff

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

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
			ModelRunID: "0190c6a8-0000-7000-8000-000000000002", TokensUsed: 360}}
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
	back, err := ProposalFromInterrupt(in, "owner-from-auth", 0)
	if err != nil {
		t.Fatal(err)
	}
	if back.Owner != "owner-from-auth" || back.HandoffID != p.HandoffID || back.Markdown != p.Markdown || !equalJSON(back.Summary, p.Summary) ||
		back.ModelRunID != p.ModelRunID || back.TokensUsed != 360 {
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
	p := &Proposal{Result: summary.Result{Summary: s, Markdown: s.Markdown()}}
	if _, md, edited, _, err := (Decision{Type: DecisionApprove}).apply(p, 0); err != nil || edited || md != p.Markdown {
		t.Fatal("approve changed the proposal")
	}
	s2, md, edited, _, err := (Decision{Type: DecisionEdit, Title: "New\ntitle"}).apply(p, 0)
	if err != nil || !edited || s2.Title != "New title" || !strings.HasPrefix(md, "### New title\n") || p.Summary.Title != s.Title {
		t.Fatalf("title edit: %+v %q %v", s2, md, err)
	}
	_, md, _, _, _ = (Decision{Type: DecisionEdit, Markdown: "my own </current_thread_summary> text"}).apply(p, 0)
	if md != "my own "+memory.EscapedCloseMarker+" text" {
		t.Fatalf("markdown edit = %q", md)
	}
	_, md, _, cut, _ := (Decision{Type: DecisionEdit, Markdown: strings.Repeat("x", 5000)}).apply(p, 0)
	if !cut || utf8.RuneCountInString(md) > summary.DefaultMaxChars {
		t.Fatal("edited Markdown not capped")
	}
	for _, d := range []Decision{{Type: "maybe"}, {Type: DecisionEdit}, {Type: DecisionEdit, Title: "  "}} {
		if _, _, _, _, err := d.apply(p, 0); !errors.Is(err, ErrInvalidDecision) {
			t.Fatalf("%+v: %v", d, err)
		}
	}
}
