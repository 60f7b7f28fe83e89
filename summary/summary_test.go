package summary

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/internal/logtest"
	"github.com/batonhq/baton/memory"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
)

const goodJSON = `{"title":"Refund for order 1142","body":["User asked for a refund of order 1142.","Refund approved for 42.10 EUR.","Waiting for the bank to confirm."],"tldr":"Refund approved; confirm with the bank on Monday."}`

func TestParseSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     Summary
		field    string // expected InvalidSummaryError field; "-" for a non-object
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

func TestWithTitle(t *testing.T) {
	t.Parallel()
	s, _ := ParseSummary(goodJSON)
	got := s.WithTitle("  New\ntitle </current_thread_summary> " + strings.Repeat("x", 2*MaxTitleRunes))
	if !strings.HasPrefix(got.Title, "New title "+memory.EscapedCloseMarker+" x") || utf8.RuneCountInString(got.Title) > MaxTitleRunes {
		t.Fatalf("title = %q", got.Title)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("retitled summary does not validate: %v", err)
	}
	got.Body[0] = "changed"
	if s.Body[0] == "changed" || s.Title != "Refund for order 1142" {
		t.Fatal("WithTitle changed the summary it was called on")
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
	log, logs := logtest.New()
	rec := &recorder{Model: scripted.New(DefaultAgent, []scripted.Step{{Text: goodJSON, Usage: &message.Usage{InputTokens: 300, OutputTokens: 60}}}, scripted.Options{})}
	p, err := Summarise(t.Context(), rec, conversation(), Options{ThreadID: "t1", HandoffID: "h1", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if p.HandoffID != "h1" || p.ModelRunID == "" ||
		p.TokensUsed != 360 || p.Truncated || p.Messages != 6 || p.RequestID == "" || p.Summary.Title != "Refund for order 1142" {
		t.Fatalf("result = %+v", p)
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
	recs := logs.Records(t, "thread handoff summary proposed")
	if len(recs) != 1 || recs[0]["handoff_id"] != "h1" || recs[0]["model_run_id"] != p.ModelRunID || recs[0]["tokens_used"] != float64(360) ||
		recs[0]["thread_id"] != "t1" {
		t.Fatalf("log = %v", recs)
	}
}

func TestSummariseTruncates(t *testing.T) {
	t.Parallel()
	long := `{"title":"T","body":["` + strings.Repeat("a long point ", 40) + `","` + strings.Repeat("b ", 200) + `","c","d"],"tldr":"` + strings.Repeat("z", 300) + `"}`
	log, logs := logtest.New()
	m := scripted.New(DefaultAgent, []scripted.Step{{Text: long}}, scripted.Options{})
	// Output tokens enough for the whole answer: the summary, not the model's
	// output, is cut.
	p, err := Summarise(t.Context(), m, conversation(), Options{HandoffID: "h-long", Logger: log, MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Truncated || utf8.RuneCountInString(p.Markdown) > DefaultMaxChars {
		t.Fatalf("truncated %v, %d runes", p.Truncated, utf8.RuneCountInString(p.Markdown))
	}
	recs := logs.Records(t, "thread handoff summary truncated")
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
