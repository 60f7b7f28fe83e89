package model_test

import (
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// deltas streams text in the given pieces, then a call and the final chunk.
func deltas(pieces ...string) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for _, p := range pieces {
			if !yield(model.Chunk{Type: model.ChunkText, Text: p}, nil) {
				return
			}
		}
		call := &message.ToolCall{ID: "c1", Name: "t", Arguments: []byte(`{}`)}
		if !yield(model.Chunk{Type: model.ChunkToolCall, ToolCall: call}, nil) {
			return
		}
		msg := &message.Message{Role: message.RoleAssistant, Parts: []message.Part{
			{Type: message.PartText, Text: strings.Join(pieces, "")},
			{Type: message.PartToolCall, CallID: "c1", Name: "t", Arguments: []byte(`{}`)}}}
		yield(model.Chunk{Type: model.ChunkDone, Message: msg, FinishReason: model.FinishToolCalls, Usage: message.Usage{OutputTokens: 9}}, nil)
	}
}

func TestCutAtStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		pieces []string
		stops  []string
		// text is what is streamed and kept; cut says the answer ended at a stop.
		text string
		cut  bool
	}{
		{"NoStops", []string{"Hello ", "world"}, nil, "Hello world", false},
		{"NotFound", []string{"Hello ", "world"}, []string{"END"}, "Hello world", false},
		{"InOneDelta", []string{"one two END three"}, []string{"END"}, "one two ", true},
		{"AcrossDeltas", []string{"one tw", "o E", "ND three"}, []string{"END"}, "one two ", true},
		{"FirstOfSeveral", []string{"a, b. c"}, []string{".", ","}, "a", true},
		{"AtStart", []string{"STOP here"}, []string{"STOP"}, "", true},
		{"Multibyte", []string{"héllo wörld", "!"}, []string{"!"}, "héllo wörld", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var streamed strings.Builder
			var done *model.Chunk
			var calls int
			for c, err := range model.CutAtStop(deltas(tt.pieces...), tt.stops) {
				if err != nil {
					t.Fatal(err)
				}
				switch c.Type {
				case model.ChunkText:
					streamed.WriteString(c.Text)
				case model.ChunkToolCall:
					calls++
				case model.ChunkDone:
					done = &c
				}
			}
			if streamed.String() != tt.text {
				t.Errorf("streamed %q, want %q", streamed.String(), tt.text)
			}
			if done == nil {
				t.Fatal("no final chunk")
			}
			if done.Usage.OutputTokens != 9 {
				t.Errorf("usage %+v: the stream's usage is kept", done.Usage)
			}
			if got := done.Message.Text(); got != tt.text {
				t.Errorf("message text %q, want %q", got, tt.text)
			}
			if tt.cut {
				if done.FinishReason != model.FinishStop || calls != 0 || done.Message.HasToolCalls() {
					t.Errorf("cut answer: finish %q, %d calls streamed, message calls %v", done.FinishReason, calls, done.Message.ToolCalls())
				}
			} else if done.FinishReason != model.FinishToolCalls || calls != 1 {
				t.Errorf("whole answer: finish %q, %d calls", done.FinishReason, calls)
			}
		})
	}
	t.Run("StopsEarly", func(t *testing.T) {
		t.Parallel()
		var got []model.ChunkType
		for c := range model.CutAtStop(deltas("a", "b", "c"), []string{"zz"}) {
			got = append(got, c.Type)
			break
		}
		if !slices.Equal(got, []model.ChunkType{model.ChunkText}) {
			t.Errorf("got %v", got)
		}
	})
}
