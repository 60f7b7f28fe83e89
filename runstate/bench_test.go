package runstate

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
)

// benchState is a state like the one a continuation checkpoints: a user
// question, a tool call, its result and the answer, in the history and the
// transcript.
func benchState() *State {
	msgs := []message.Message{
		message.User("Where is order 1234?"),
		{Role: message.RoleAssistant, Agent: "assistant", Parts: []message.Part{
			{Type: message.PartToolCall, CallID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}},
			Usage: &message.Usage{InputTokens: 120, OutputTokens: 18}, FinishReason: "tool_calls", RequestID: "req_1",
			Metadata: map[string]any{"model": "scripted", "latency_ms": 12.5}},
		message.ToolResult("assistant", "call_1", "lookup", `{"status":"shipped"}`, false),
		message.Assistant("assistant", "Your order 1234 has shipped."),
	}
	return &State{SchemaVersion: SchemaVersion, RunID: "run_01JDZ4X6C3B8Q2M5N7P9R1S3T5", ThreadID: "thr_01JDZ4X6C3B8Q2M5N7P9R1S3T4",
		Network: "bench", Fingerprint: "sha256:0123456789abcdef", Agent: "assistant",
		Messages: msgs, Transcript: msgs, Trail: []string{"assistant"}, Turns: 2,
		Usage: message.Usage{InputTokens: 240, OutputTokens: 30}, Step: 3, Status: StatusCompleted,
		FinalOutput: "Your order 1234 has shipped.", StartedAt: time.Date(2026, 11, 26, 9, 0, 0, 123456789, time.UTC),
		Elapsed: 12 * time.Millisecond, Seq: 9,
		Values: map[string]json.RawMessage{"continuation": json.RawMessage(`{"id":"c1"}`)},
	}
}

func BenchmarkEncode(b *testing.B) {
	s := benchState()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	enc, err := Encode(benchState())
	benchDecode(b, enc, err, Decode)
}

// benchDecode measures decode of enc, per byte, once err (enc's
// encoding's) is nil.
func benchDecode[T any](b *testing.B, enc []byte, err error, decode func([]byte) (T, error)) {
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStoredState is benchState after a history of n rows, with the rows
// its stored form refers to.
func benchStoredState(n int) (*State, *Rows) {
	s := benchState()
	tr := make([]message.Message, len(s.Transcript))
	for i := range tr {
		tr[i] = s.Transcript[i]
		tr[i].ID = MessageID(s.RunID, i+1)
	}
	var hist []message.Message
	var rows []Row
	for i := range n {
		m := message.User("history message " + strconv.Itoa(i))
		m.ID = "m" + strconv.Itoa(i)
		hist = append(hist, m)
		rows = append(rows, Row{Seq: int64(i + 1), Message: m})
	}
	s.Transcript, s.Messages = tr, append(hist, tr...)
	return s, NewRows(len(tr), rows)
}

// BenchmarkDecodeStored: the parse of a stored form (BenchmarkEncodeStored's,
// history=10), as a resume reads a checkpoint before its rows.
func BenchmarkDecodeStored(b *testing.B) {
	s, r := benchStoredState(10)
	enc, err := EncodeStored(s, r)
	benchDecode(b, enc, err, DecodeStored)
}

// BenchmarkEncodeStored: a step's stored form after a history of n rows
// (the run's transcript: 4 messages), as the threads checkpointer writes
// it. Its cost is the walk of the working history, one map probe and a
// pointer compare per message; its bytes do not grow with n.
func BenchmarkEncodeStored(b *testing.B) {
	for _, n := range []int{10, 500} {
		b.Run("history="+strconv.Itoa(n), func(b *testing.B) {
			s, r := benchStoredState(n)
			var size int
			for b.Loop() {
				out, err := EncodeStored(s, r)
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size), "bytes")
		})
	}
}
