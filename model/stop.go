package model

import (
	"iter"
	"strings"

	"github.com/batonhq/baton/message"
)

// CutAtStop applies stop sequences to a stream whose API has no stop
// parameter (OpenAI's Responses API): text is held back until it cannot
// begin a stop sequence, and at the first one the answer ends: the rest of
// the stream is read for its usage but not passed on, and the final chunk's
// message holds the text before the sequence, no tool calls and finish
// reason "stop". With no stops, seq is returned as is.
func CutAtStop(seq iter.Seq2[Chunk, error], stops []string) iter.Seq2[Chunk, error] {
	longest := 0
	for _, s := range stops {
		longest = max(longest, len(s))
	}
	if longest == 0 {
		return seq
	}
	return func(yield func(Chunk, error) bool) {
		var text strings.Builder // the answer's text, passed on or held
		sent := 0                // bytes of text passed on
		cut := -1                // where the answer ended, once it did
		flush := func(upto int) bool {
			if upto <= sent {
				return true
			}
			t := text.String()[sent:upto]
			sent = upto
			return yield(Chunk{Type: ChunkText, Text: t}, nil)
		}
		for c, err := range seq {
			if err != nil {
				yield(c, err)
				return
			}
			switch {
			case c.Type == ChunkDone && cut >= 0:
				c.Message = cutMessage(c.Message, text.String()[:cut])
				c.FinishReason = FinishStop
				yield(c, nil)
				return
			case c.Type == ChunkDone:
				if !flush(text.Len()) {
					return
				}
				yield(c, nil)
				return
			case cut >= 0:
				// Past the stop: read on for the usage only.
			case c.Type == ChunkText:
				text.WriteString(c.Text)
				all := text.String()
				if k := firstStop(all, stops, sent); k >= 0 {
					cut = k
					if !flush(k) {
						return
					}
					continue
				}
				// Hold back what could be the start of a stop sequence.
				safe := max(sent, len(all)-longest+1)
				for safe > sent && !utf8Start(all, safe) {
					safe--
				}
				if !flush(safe) {
					return
				}
			case c.Type == ChunkToolCall:
				if !flush(text.Len()) || !yield(c, nil) {
					return
				}
			default:
				if !yield(c, nil) {
					return
				}
			}
		}
	}
}

// firstStop returns the index of the first stop sequence in s that ends
// after from, -1 if none.
func firstStop(s string, stops []string, from int) int {
	first := -1
	for _, stop := range stops {
		if stop == "" {
			continue
		}
		lo := max(0, from-len(stop)+1)
		if k := strings.Index(s[lo:], stop); k >= 0 && (first < 0 || lo+k < first) {
			first = lo + k
		}
	}
	return first
}

func utf8Start(s string, i int) bool { return i >= len(s) || s[i]&0xC0 != 0x80 }

// cutMessage returns m with its text replaced by text and without tool
// calls (reasoning kept).
func cutMessage(m *message.Message, text string) *message.Message {
	if m == nil {
		return nil
	}
	out := *m
	out.Parts = nil
	for _, p := range m.Parts {
		if p.Type == message.PartReasoning {
			out.Parts = append(out.Parts, p)
		}
	}
	if text != "" {
		out.Parts = append(out.Parts, message.Part{Type: message.PartText, Text: text})
	}
	return &out
}
