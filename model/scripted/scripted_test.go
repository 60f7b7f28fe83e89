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
