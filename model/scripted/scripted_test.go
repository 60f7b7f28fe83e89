package scripted_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
)

func TestScriptReplaysFromHistory(t *testing.T) {
	t.Parallel()
	m := scripted.New("a", []scripted.Step{
		{When: regexp.MustCompile("refund"), Text: "refund path"},
		{Text: "first", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"id":1}`)}}},
		{Text: "second"},
	}, scripted.Options{})
	hist := []message.Message{message.User("hello")}
	r1, err := model.Collect(m.Stream(t.Context(), &model.Request{Agent: "a", Messages: hist}))
	if err != nil {
		t.Fatal(err)
	}
	if r1.Message.Text() != "first" || r1.FinishReason != "tool_calls" || len(r1.Message.ToolCalls()) != 1 || r1.Message.ToolCalls()[0].ID != "call_a_2_1" {
		t.Fatalf("first answer = %+v", r1)
	}
	hist = append(hist, r1.Message, message.ToolResult("a", "call_a_2_1", "lookup", "ok", false))
	// The same model, concurrently, for another conversation: the position is per history.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r, err := model.Collect(m.Stream(t.Context(), &model.Request{Agent: "a", Messages: []message.Message{message.User("a refund please")}}))
			if err != nil || r.Message.Text() != "refund path" {
				t.Errorf("concurrent conversation: %v %v", r, err)
			}
		})
	}
	wg.Wait()
	// Through JSON, as a stored state: the step stamp survives.
	b, _ := json.Marshal(hist)
	var stored []message.Message
	_ = json.Unmarshal(b, &stored)
	r2, err := model.Collect(m.Stream(t.Context(), &model.Request{Agent: "a", Messages: stored}))
	if err != nil || r2.Message.Text() != "second" {
		t.Fatalf("second answer = %+v, %v", r2, err)
	}
	_, err = model.Collect(m.Stream(t.Context(), &model.Request{Agent: "a", Messages: append(stored, r2.Message)}))
	var se *scripted.ScriptError
	if !errors.As(err, &se) || se.Agent != "a" || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("exhausted: %v", err)
	}
}

// streamed is what a stream gave: its text deltas, its reasoning and its
// final chunk.
type streamed struct {
	texts     []string
	reasoning string
	done      *model.Chunk
}

// stream streams m's answer to agent a for one user message.
func stream(t *testing.T, m model.Model, user string) streamed {
	t.Helper()
	var got streamed
	for c, err := range m.Stream(t.Context(), &model.Request{Agent: "a", Messages: []message.Message{message.User(user)}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch c.Type {
		case model.ChunkReasoning:
			got.reasoning += c.Text
		case model.ChunkText:
			got.texts = append(got.texts, c.Text)
		case model.ChunkDone:
			got.done = &c
		}
	}
	return got
}

func TestStreamingChunksAndUsage(t *testing.T) {
	t.Parallel()
	m := scripted.New("a", []scripted.Step{{Text: "one two three four five", Usage: &message.Usage{InputTokens: 10, OutputTokens: 5}}}, scripted.Options{ChunkWords: 2, ChunkDelay: time.Millisecond})
	got := stream(t, m, "x")
	deltas, done := got.texts, got.done
	if strings.Join(deltas, "|") != "one two |three four |five" {
		t.Errorf("deltas = %q", deltas)
	}
	if done == nil || done.Usage.InputTokens != 10 || done.Usage.OutputTokens != 5 || done.Message.Text() != "one two three four five" {
		t.Errorf("done = %+v", done)
	}
}

func TestFailTimesThenAnswer(t *testing.T) {
	t.Parallel()
	m := scripted.New("a", []scripted.Step{{Text: "ok", Fail: &scripted.Fail{Status: 429, Transient: true, RetryAfter: time.Second, Times: 1}}}, scripted.Options{})
	req := &model.Request{Agent: "a", Messages: []message.Message{message.User("x")}}
	_, err := model.Collect(m.Stream(t.Context(), req))
	var me *model.Error
	if !errors.As(err, &me) || !me.Transient || me.RetryAfter != time.Second || me.StatusCode != 429 {
		t.Fatalf("err = %v", err)
	}
	if r, err := model.Collect(m.Stream(t.Context(), req)); err != nil || r.Message.Text() != "ok" {
		t.Fatalf("second try = %v, %v", r, err)
	}
}

// TestReplaysHowAnAnswerEnded covers what a recorded answer carries besides
// its text and calls: reasoning, several text blocks, the finish reason and
// a refusal's words.
func TestReplaysHowAnAnswerEnded(t *testing.T) {
	t.Parallel()
	m := scripted.New("a", []scripted.Step{{
		Reasoning: "The user wants two blocks.", Text: "First block.", Texts: []string{"", "Second block."},
		FinishReason: model.FinishRefusal, Refusal: "policy: not this",
		Usage: &message.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 4, CacheCreationTokens: 2, ReasoningTokens: 3},
	}}, scripted.Options{})
	got := stream(t, m, "hi")
	reasoning, text, done := got.reasoning, strings.Join(got.texts, ""), got.done
	want := []message.Part{
		{Type: message.PartReasoning, Text: "The user wants two blocks.", Provider: "scripted"},
		{Type: message.PartText, Text: "First block."},
		{Type: message.PartText, Text: "Second block."},
	}
	if done == nil || !equalParts(done.Message.Parts, want) {
		t.Fatalf("done %+v", done)
	}
	if reasoning != "The user wants two blocks." || text != "First block.Second block." {
		t.Errorf("streamed reasoning %q text %q", reasoning, text)
	}
	if done.FinishReason != model.FinishRefusal || done.Refusal != "policy: not this" || done.Usage.CacheCreationTokens != 2 || done.Usage.ReasoningTokens != 3 {
		t.Errorf("finish %q refusal %q usage %+v", done.FinishReason, done.Refusal, done.Usage)
	}
}

func equalParts(a, b []message.Part) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Text != b[i].Text || a[i].Provider != b[i].Provider {
			return false
		}
	}
	return true
}

// converse plays a conversation of user messages against m, answering tool
// calls with "ok", and returns each turn's answers (texts, or "call NAME").
func converse(t *testing.T, m *scripted.Model, users ...string) [][]string {
	t.Helper()
	var hist []message.Message
	var turns [][]string
	for _, u := range users {
		hist = append(hist, message.User(u))
		var answers []string
		for range 5 {
			r, err := model.Collect(m.Stream(t.Context(), &model.Request{Agent: "a", Messages: hist}))
			if err != nil {
				t.Fatalf("turn %q: %v", u, err)
			}
			hist = append(hist, r.Message)
			calls := r.Message.ToolCalls()
			if len(calls) == 0 {
				answers = append(answers, r.Message.Text())
				break
			}
			for _, c := range calls {
				answers = append(answers, "call "+c.Name)
				hist = append(hist, message.ToolResult("a", c.ID, c.Name, "ok", false))
			}
		}
		turns = append(turns, answers)
	}
	return turns
}

func TestFreeConversation(t *testing.T) {
	t.Parallel()
	m := scripted.New("a", []scripted.Step{
		{When: regexp.MustCompile("(?i)charge"), ToolCalls: []scripted.Call{{Name: "lookup"}}},
		{Text: "two charges"},
	}, scripted.Options{
		Rules: []scripted.Rule{
			{When: regexp.MustCompile("(?i)how long"), Steps: []scripted.Step{{Text: "3-5 days"}}},
			{When: regexp.MustCompile("(?i)status"), Steps: []scripted.Step{{ToolCalls: []scripted.Call{{Name: "status"}}}, {Text: "all good"}}},
		},
		Reply: "Anything else?",
	})
	got := converse(t, m, "I was charged twice", "hello", "how long?", "status please", "status again", "thanks", "charged again?")
	want := [][]string{
		{"call lookup", "two charges"},
		// The script is played: rules and the reply answer from now on.
		{"Anything else?"},
		{"3-5 days"},
		{"call status", "all good"},
		{"call status", "all good"},
		{"Anything else?"},
		{"Anything else?"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("turn %d: got %q, want %q", i+1, got[i], want[i])
		}
	}
	// Without a reply, a turn that neither the script nor a rule answers
	// still ends with a ScriptError.
	strict := scripted.New("a", []scripted.Step{{Text: "only"}}, scripted.Options{Rules: []scripted.Rule{{When: regexp.MustCompile("x"), Steps: []scripted.Step{{Text: "x"}}}}})
	hist := []message.Message{message.User("hi")}
	r, err := model.Collect(strict.Stream(t.Context(), &model.Request{Agent: "a", Messages: hist}))
	if err != nil || r.Message.Text() != "only" {
		t.Fatalf("first: %v %v", r, err)
	}
	hist = append(hist, r.Message, message.User("x marks"))
	if r, err = model.Collect(strict.Stream(t.Context(), &model.Request{Agent: "a", Messages: hist})); err != nil || r.Message.Text() != "x" {
		t.Fatalf("rule: %v %v", r, err)
	}
	hist = append(hist, r.Message, message.User("hello"))
	_, err = model.Collect(strict.Stream(t.Context(), &model.Request{Agent: "a", Messages: hist}))
	var se *scripted.ScriptError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "exhausted") {
		t.Fatalf("no reply: %v", err)
	}
}

func TestSettingsCutTheAnswer(t *testing.T) {
	t.Parallel()
	text := "The duplicate charge is flagged. It will be reversed within 3-5 days."
	m := scripted.New("a", nil, scripted.Options{Rules: []scripted.Rule{{Steps: []scripted.Step{{Text: text, ToolCalls: []scripted.Call{{Name: "t"}}}}}}})
	tests := []struct {
		name     string
		settings model.Settings
		text     string
		finish   string
	}{
		{"Whole", model.Settings{}, text, model.FinishToolCalls},
		{"MaxTokens", model.Settings{MaxTokens: 5}, text[:20], model.FinishLength},
		{"Stop", model.Settings{Stop: []string{". "}}, "The duplicate charge is flagged", model.FinishStop},
		{"StopThenMaxTokens", model.Settings{Stop: []string{"3-5"}, MaxTokens: 2}, text[:8], model.FinishLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := model.Collect(m.Stream(t.Context(), &model.Request{Agent: "a", Messages: []message.Message{message.User("hi")}, Settings: tt.settings}))
			if err != nil {
				t.Fatal(err)
			}
			if r.Message.Text() != tt.text || r.FinishReason != tt.finish {
				t.Errorf("got %q (%s), want %q (%s)", r.Message.Text(), r.FinishReason, tt.text, tt.finish)
			}
			if tt.finish != model.FinishToolCalls && r.Message.HasToolCalls() {
				t.Errorf("a cut answer has no calls: %v", r.Message.ToolCalls())
			}
			if tt.settings.MaxTokens > 0 && r.Usage.OutputTokens > int64(tt.settings.MaxTokens)+1 {
				t.Errorf("usage %+v over max_tokens %d", r.Usage, tt.settings.MaxTokens)
			}
		})
	}
}
