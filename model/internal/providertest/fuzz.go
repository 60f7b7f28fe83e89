package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// FuzzServer serves fuzz bodies: each body is registered under an id, which
// the model under test sends in the X-Fuzz-Id header.
type FuzzServer struct {
	*httptest.Server
	contentType string
	bodies      sync.Map
	next        atomic.Int64
}

// NewFuzzServer starts a FuzzServer that answers 200 with contentType.
func NewFuzzServer(f *testing.F, contentType string) *FuzzServer {
	s := &FuzzServer{contentType: contentType}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := s.bodies.Load(r.Header.Get("X-Fuzz-Id"))
		body, _ := b.([]byte)
		w.Header().Set("Content-Type", s.contentType)
		w.Header().Set("X-Request-Id", "req_fuzz")
		_, _ = w.Write(body)
	}))
	f.Cleanup(s.Close)
	return s
}

// Register stores body and returns the header that selects it; the body is
// dropped when t ends.
func (s *FuzzServer) Register(t *testing.T, body []byte) map[string]string {
	id := strconv.FormatInt(s.next.Add(1), 10)
	s.bodies.Store(id, body)
	t.Cleanup(func() { s.bodies.Delete(id) })
	return map[string]string{"X-Fuzz-Id": id}
}

// CheckStream drains seq and fails t unless it ended with exactly one
// ChunkDone (whose message is a well-formed assistant message) or exactly one
// error, before ctx's deadline.
func CheckStream(ctx context.Context, t *testing.T, req *model.Request, seq iter.Seq2[model.Chunk, error]) {
	t.Helper()
	ended := false
	var calls []message.ToolCall
	for c, err := range seq {
		if ended {
			t.Fatal("item after the end of the stream")
		}
		if err != nil {
			ended = true
			if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
				t.Fatal("stream hung until the deadline")
			}
			continue
		}
		switch c.Type {
		case model.ChunkText, model.ChunkReasoning:
		case model.ChunkToolCall:
			if c.ToolCall == nil {
				t.Fatal("ChunkToolCall without a call")
			}
			calls = append(calls, *c.ToolCall)
		case model.ChunkDone:
			ended = true
			checkDone(t, req, c, calls)
		default:
			t.Fatalf("chunk type %d", c.Type)
		}
	}
	if !ended {
		t.Fatal("stream ended without ChunkDone or error")
	}
}

func checkDone(t *testing.T, req *model.Request, c model.Chunk, calls []message.ToolCall) {
	t.Helper()
	if c.Message == nil || c.Message.Role != message.RoleAssistant || c.FinishReason == "" {
		t.Fatalf("bad final chunk %+v", c)
	}
	got := c.Message.ToolCalls()
	if len(got) != len(calls) {
		t.Fatalf("%d call chunks, %d calls in the message", len(calls), len(got))
	}
	hist := append(append([]message.Message(nil), req.Messages...), *c.Message)
	for i, tc := range got {
		if tc.ID == "" || tc.Name == "" || tc.ID != calls[i].ID {
			t.Fatalf("bad call %+v (chunk %+v)", tc, calls[i])
		}
		var obj map[string]any
		if err := json.Unmarshal(tc.Arguments, &obj); err != nil || obj == nil {
			t.Fatalf("call arguments %q are not a JSON object", tc.Arguments)
		}
		hist = append(hist, message.ToolResult("", tc.ID, tc.Name, "ok", false))
	}
	if err := message.Validate(hist); err != nil {
		t.Fatalf("final message breaks the history: %v", err)
	}
}
