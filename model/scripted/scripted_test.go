package scripted_test

import (
	"encoding/json"
	"errors"
	"regexp"
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

func TestStreamingChunksAndUsage(t *testing.T) {
	t.Parallel()
	m := scripted.New("a", []scripted.Step{{Text: "one two three four five", Usage: &message.Usage{InputTokens: 10, OutputTokens: 5}}}, scripted.Options{ChunkWords: 2, ChunkDelay: time.Millisecond})
	var deltas []string
	var done *model.Chunk
	for c, err := range m.Stream(t.Context(), &model.Request{Agent: "a", Messages: []message.Message{message.User("x")}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch c.Type {
		case model.ChunkText:
			deltas = append(deltas, c.Text)
		case model.ChunkDone:
			done = &c
		}
	}
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
	var reasoning, text strings.Builder
	var done *model.Chunk
	for c, err := range m.Stream(t.Context(), &model.Request{Agent: "a", Messages: []message.Message{message.User("hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		switch c.Type {
		case model.ChunkReasoning:
			reasoning.WriteString(c.Text)
		case model.ChunkText:
			text.WriteString(c.Text)
		case model.ChunkDone:
			done = &c
		}
	}
	want := []message.Part{
		{Type: message.PartReasoning, Text: "The user wants two blocks.", Provider: "scripted"},
		{Type: message.PartText, Text: "First block."},
		{Type: message.PartText, Text: "Second block."},
	}
	if done == nil || !equalParts(done.Message.Parts, want) {
		t.Fatalf("done %+v", done)
	}
	if reasoning.String() != "The user wants two blocks." || text.String() != "First block.Second block." {
		t.Errorf("streamed reasoning %q text %q", reasoning.String(), text.String())
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
