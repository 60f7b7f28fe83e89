package summary

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

const goodJSON = `{"title":"Refund for order 1142","body":["User asked for a refund of order 1142.","Refund approved for 42.10 EUR.","Waiting for the bank to confirm."],"tldr":"Refund approved; confirm with the bank on Monday."}`

func TestParseSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		in    string
		want  Summary
		field string // expected InvalidSummaryError field; "-" for a non-object
	}{
		{name: "Plain", in: goodJSON, want: Summary{Title: "Refund for order 1142", Body: []string{"User asked for a refund of order 1142.", "Refund approved for 42.10 EUR.", "Waiting for the bank to confirm."}, TLDR: "Refund approved; confirm with the bank on Monday."}},
		{name: "Fenced", in: "Here you go:\n```json\n{\"title\":\"T\",\"body\":[\"a\",\"b\",\"c\"],\"tldr\":\"x\"}\n```", want: Summary{Title: "T", Body: []string{"a", "b", "c"}, TLDR: "x"}},
		{name: "Normalised", in: `{"title":"  Multi\nline\ttitle ","body":["- one","* two\nlines","1. three","","  "],"tldr":" done\n"}`,
			want: Summary{Title: "Multi line title", Body: []string{"one", "two lines", "three"}, TLDR: "done"}},
		{name: "BodyAsString", in: `{"title":"T","body":"- a\n- b\n- c","tldr":"x"}`, want: Summary{Title: "T", Body: []string{"a", "b", "c"}, TLDR: "x"}},
		{name: "TooMany", in: `{"title":"T","body":["1","2","3","4","5","6","7","8"],"tldr":"x"}`, want: Summary{Title: "T", Body: []string{"1", "2", "3", "4", "5", "6"}, TLDR: "x"}},
		{name: "MarkersEscaped", in: `{"title":"</current_thread_summary>","body":["a","b","<current_thread_summary>"],"tldr":"x"}`,
			want: Summary{Title: memory.EscapedCloseMarker, Body: []string{"a", "b", memory.EscapedOpenMarker}, TLDR: "x"}},
		{name: "NegativeNumberKept", in: `{"title":"T","body":["-5 degrees","2.5 kg","3) left"],"tldr":"x"}`, want: Summary{Title: "T", Body: []string{"-5 degrees", "2.5 kg", "left"}, TLDR: "x"}},
		{name: "TooFew", in: `{"title":"T","body":["a","b"],"tldr":"x"}`, field: "body"},
		{name: "EmptyTitle", in: `{"title":" ","body":["a","b","c"],"tldr":"x"}`, field: "title"},
		{name: "MissingTLDR", in: `{"title":"T","body":["a","b","c"]}`, field: "tldr"},
		{name: "BodyNotStrings", in: `{"title":"T","body":[1,2,3],"tldr":"x"}`, field: "body"},
		{name: "TitleNotString", in: `{"title":5,"body":["a","b","c"],"tldr":"x"}`, field: "title"},
		{name: "NotJSON", in: "I cannot do that.", field: "-"},
		{name: "Truncated", in: `{"title":"T","body":["a","b"`, field: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSummary(tc.in)
			if tc.field != "" {
				var ie *InvalidSummaryError
				if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidSummary) {
					t.Fatalf("err = %v; want an InvalidSummaryError", err)
				}
				if want := strings.TrimPrefix(tc.field, "-"); ie.Field != want {
					t.Fatalf("field = %q; want %q (%v)", ie.Field, want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equalJSON(got, tc.want) {
				t.Fatalf("ParseSummary = %+v; want %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("result does not validate: %v", err)
			}
		})
	}
}

func TestMarkdownAndTruncate(t *testing.T) {
	t.Parallel()
	s, _ := ParseSummary(goodJSON)
	want := "### Refund for order 1142\n\n- User asked for a refund of order 1142.\n- Refund approved for 42.10 EUR.\n- Waiting for the bank to confirm.\n\n**TL;DR:** Refund approved; confirm with the bank on Monday."
	if md := s.Markdown(); md != want {
		t.Fatalf("Markdown =\n%s\nwant\n%s", md, want)
	}
	if md, cut := Truncate(want, 0); cut || md != want {
		t.Fatal("short Markdown truncated")
	}
	for _, tc := range []struct {
		in  string
		max int
	}{
		{strings.Repeat("word ", 300), 1000},
		{strings.Repeat("é", 1500), 1000},
		{strings.Repeat("x", 2000), 1000},
		{strings.Repeat("日本語 ", 400), 50},
		{"ab", 1},
	} {
		got, cut := Truncate(tc.in, tc.max)
		if !cut || utf8.RuneCountInString(got) > tc.max || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
			t.Fatalf("Truncate(%d runes, %d) = %d runes %q…, cut %v", utf8.RuneCountInString(tc.in), tc.max, utf8.RuneCountInString(got), got[:min(20, len(got))], cut)
		}
		if !strings.HasPrefix(tc.in, strings.TrimSuffix(got, "…")) {
			t.Fatal("truncation is not a prefix")
		}
	}
	// A cut lands on a word boundary when there is one near the end.
	if got, _ := Truncate(strings.Repeat("word ", 300), 1000); !strings.HasSuffix(got, "word…") {
		t.Fatalf("cut mid-word: …%q", got[len(got)-12:])
	}
}

// recorder wraps a model and keeps its requests.
type recorder struct {
	model.Model
	mu   sync.Mutex
	reqs []*model.Request
}

func (r *recorder) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Model.Stream(ctx, req)
}

// logBuffer returns a JSON logger writing to a buffer.
func logBuffer() (*slog.Logger, *syncBuffer) {
	b := &syncBuffer{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records returns the log records with msg.
func (s *syncBuffer) records(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(s.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func conversation() []message.Message {
	return []message.Message{
		message.System("you are support"),
		message.User("I want a refund for order 1142"),
		call("support", "c1", "lookup_order"),
		result("c1", "lookup_order", `{"order":1142,"total":"42.10 EUR"}`),
		message.Assistant("support", "Order 1142 is eligible. I have approved the refund."),
		message.User("When will I get the money?"),
		message.Assistant("support", "The bank confirms within 3 working days."),
	}
}

func TestSummarise(t *testing.T) {
	t.Parallel()
	log, logs := logBuffer()
	rec := &recorder{Model: scripted.New(DefaultAgent, []scripted.Step{{Text: goodJSON, Usage: &message.Usage{InputTokens: 300, OutputTokens: 60}}}, scripted.Options{})}
	p, err := Summarise(t.Context(), rec, conversation(), Options{Owner: "o", AssistantID: "support", ParentThreadID: "t1", HandoffID: "h1", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if p.HandoffID != "h1" || p.Owner != "o" || p.AssistantID != "support" || p.ParentThreadID != "t1" || p.ModelRunID == "" ||
		p.TokensUsed != 360 || p.Truncated || p.Messages != 6 || p.RequestID == "" || p.Summary.Title != "Refund for order 1142" {
		t.Fatalf("proposal = %+v", p)
	}
	if p.Markdown != p.Summary.Markdown() {
		t.Fatal("Markdown is not the rendering of the summary")
	}
	req := rec.reqs[0]
	if req.Settings.MaxTokens != DefaultMaxTokens || req.Output == nil || !req.Output.Strict || !json.Valid(req.Output.Schema) ||
		req.Agent != DefaultAgent || req.System != DefaultInstructions || len(req.Messages) != 1 {
		t.Fatalf("request = %+v", req)
	}
	tr := req.Messages[0].Text()
	for _, want := range []string{"user: I want a refund for order 1142", "assistant (support) called lookup_order", `tool lookup_order: {"order":1142`, "user: When will I get the money?"} {
		if !strings.Contains(tr, want) {
			t.Errorf("transcript lacks %q:\n%s", want, tr)
		}
	}
	if strings.Contains(tr, "you are support") {
		t.Error("system message in the transcript")
	}
	recs := logs.records("handoff summary proposed")
	if len(recs) != 1 || recs[0]["handoff_id"] != "h1" || recs[0]["model_run_id"] != p.ModelRunID || recs[0]["tokens_used"] != float64(360) {
		t.Fatalf("log = %v", recs)
	}
}

func TestSummariseTruncates(t *testing.T) {
	t.Parallel()
	long := `{"title":"T","body":["` + strings.Repeat("a long point ", 40) + `","` + strings.Repeat("b ", 200) + `","c","d"],"tldr":"` + strings.Repeat("z", 300) + `"}`
	log, logs := logBuffer()
	m := scripted.New(DefaultAgent, []scripted.Step{{Text: long}}, scripted.Options{})
	p, err := Summarise(t.Context(), m, conversation(), Options{HandoffID: "h-long", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || utf8.RuneCountInString(p.Markdown) > DefaultMaxChars {
		t.Fatalf("truncated %v, %d runes", p.Truncated, utf8.RuneCountInString(p.Markdown))
	}
	recs := logs.records("handoff summary truncated")
	if len(recs) != 1 || recs[0]["handoff_id"] != "h-long" || recs[0]["max_chars"] != float64(DefaultMaxChars) {
		t.Fatalf("truncation log = %v", recs)
	}
}

func TestSummariseErrors(t *testing.T) {
	t.Parallel()
	t.Run("InvalidOutput", func(t *testing.T) {
		t.Parallel()
		m := scripted.New(DefaultAgent, []scripted.Step{{Text: `{"title":"T","body":["a"],"tldr":"x"}`}}, scripted.Options{})
		_, err := Summarise(t.Context(), m, conversation(), Options{Logger: slog.New(slog.DiscardHandler)})
		if !errors.Is(err, ErrInvalidSummary) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("CutAtMaxTokens", func(t *testing.T) {
		t.Parallel()
		m := model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
			return func(yield func(model.Chunk, error) bool) {
				msg := message.Assistant(DefaultAgent, `{"title":"T","body":["a","b`)
				yield(model.Chunk{Type: model.ChunkDone, Message: &msg, FinishReason: "length"}, nil)
			}
		})
		_, err := Summarise(t.Context(), m, conversation(), Options{Logger: slog.New(slog.DiscardHandler)})
		if !errors.Is(err, ErrInvalidSummary) || !strings.Contains(err.Error(), "cut at 200 tokens") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NothingToSummarise", func(t *testing.T) {
		t.Parallel()
		m := scripted.New(DefaultAgent, []scripted.Step{{Text: goodJSON}}, scripted.Options{})
		_, err := Summarise(t.Context(), m, []message.Message{message.Assistant("a", "hi")}, Options{})
		if !errors.Is(err, ErrNothingToSummarise) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("TransientRetried", func(t *testing.T) {
		t.Parallel()
		m := scripted.New(DefaultAgent, []scripted.Step{{Text: goodJSON, Fail: &scripted.Fail{Status: 529, Transient: true, Times: 2}}}, scripted.Options{})
		var waits []time.Duration
		p, err := Summarise(t.Context(), m, conversation(), Options{Logger: slog.New(slog.DiscardHandler),
			Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }})
		if err != nil || p == nil || len(waits) != 2 {
			t.Fatalf("p %v err %v waits %v", p, err, waits)
		}
	})
	t.Run("PermanentNotRetried", func(t *testing.T) {
		t.Parallel()
		m := scripted.New(DefaultAgent, []scripted.Step{{Text: goodJSON, Fail: &scripted.Fail{Status: 400, Message: "bad request"}}}, scripted.Options{})
		_, err := Summarise(t.Context(), m, conversation(), Options{Logger: slog.New(slog.DiscardHandler),
			Sleep: func(context.Context, time.Duration) error { t.Error("retried"); return nil }})
		var me *model.Error
		if !errors.As(err, &me) || me.StatusCode != 400 {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestInterruptGolden(t *testing.T) {
	t.Parallel()
	s, _ := ParseSummary(goodJSON)
	p := &Proposal{HandoffID: "0190c6a8-0000-7000-8000-000000000001", Owner: "o", AssistantID: "support", ParentThreadID: "thread-1",
		Summary: s, Markdown: s.Markdown(), ModelRunID: "0190c6a8-0000-7000-8000-000000000002", TokensUsed: 360}
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
	s, _ := ParseSummary(goodJSON)
	base := (&Proposal{HandoffID: "h", AssistantID: "a", ParentThreadID: "t", Summary: s, Markdown: "md"}).Interrupt()
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
	s, _ := ParseSummary(goodJSON)
	p := &Proposal{Summary: s, Markdown: s.Markdown()}
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
	if !cut || utf8.RuneCountInString(md) > DefaultMaxChars {
		t.Fatal("edited Markdown not capped")
	}
	for _, d := range []Decision{{Type: "maybe"}, {Type: DecisionEdit}, {Type: DecisionEdit, Title: "  "}} {
		if _, _, _, _, err := d.apply(p, 0); !errors.Is(err, ErrInvalidDecision) {
			t.Fatalf("%+v: %v", d, err)
		}
	}
}

// FuzzParseSummary checks that ParseSummary never panics and that what it
// accepts is valid, renders to Markdown that the memory block accepts, and
// round-trips through JSON.
func FuzzParseSummary(f *testing.F) {
	for _, s := range []string{goodJSON, "", "{}", `{"title":"T","body":"a\nb\nc","tldr":"x"}`, "```json\n" + goodJSON + "\n```",
		`{"title":"</current_thread_summary>","body":["- 1. a","* b","• c"],"tldr":"\u0000x"}`, `{"title":"T","body":[null,"a","b","c"],"tldr":"x"}`,
		`{"title":"\xff\xfe","body":["a","b","c"],"tldr":"x"}`, `{"body":["a","b","c"],"title":"T","tldr":"x","extra":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		s, err := ParseSummary(out)
		if err != nil {
			if !errors.Is(err, ErrInvalidSummary) {
				t.Fatalf("error does not wrap ErrInvalidSummary: %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted summary does not validate: %v (%+v)", err, s)
		}
		if len(s.Body) < MinBody || len(s.Body) > MaxBody || s.Title == "" || s.TLDR == "" || utf8.RuneCountInString(s.Title) > MaxTitleRunes {
			t.Fatalf("accepted %+v", s)
		}
		md, _ := Truncate(s.Markdown(), 0)
		if !utf8.ValidString(md) || utf8.RuneCountInString(md) > DefaultMaxChars {
			t.Fatal("bad Markdown")
		}
		doc, err := memory.Set("notes\n", md)
		if err != nil {
			t.Fatalf("memory block refused the Markdown: %v", err)
		}
		if b, err := memory.Parse(doc); err != nil || b.Content != md {
			t.Fatal("Markdown did not round-trip through the memory block")
		}
		b, _ := json.Marshal(s)
		again, err := ParseSummary(string(b))
		if err != nil || !equalJSON(again, s) {
			t.Fatalf("JSON round trip: %+v, %v", again, err)
		}
	})
}
