package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
)

// BodyClient returns an HTTP client whose every request is answered, in
// process, with a 200 of contentType and body: the handler runs through
// httptest.NewRecorder behind a RoundTripper, so the adapter's whole HTTP path
// (SDK, headers, body reading) runs without sockets or extra goroutines.
// Fuzz targets use it because their coverage must not depend on scheduling.
func BodyClient(contentType string, body []byte) *http.Client {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("X-Request-Id", "req_fuzz")
		_, _ = w.Write(body)
	})
	return &http.Client{Transport: recorderTransport{h}}
}

type recorderTransport struct{ h http.Handler }

func (rt recorderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	rec := httptest.NewRecorder()
	rt.h.ServeHTTP(rec, req)
	res := rec.Result()
	res.Request = req
	return res, nil
}

// FuzzKey is the API key fuzz targets configure; bodies may echo it, errors
// never do.
const FuzzKey = "sk-fuzz-0123456789abcdef"

// CheckStream drains seq and fails t unless it ended with exactly one
// ChunkDone (whose message is a well-formed assistant message) or exactly one
// error, before ctx's deadline. An error must be a *model.Error that does
// not hold [FuzzKey], with a message of bounded length.
func CheckStream(ctx context.Context, t *testing.T, req *model.Request, seq iter.Seq2[model.Chunk, error]) {
	t.Helper()
	if err := drain(ctx, t, req, seq); err != nil {
		var me *model.Error
		if !errors.As(err, &me) {
			t.Fatalf("error %T %v is not a *model.Error", err, err)
		}
		if strings.Contains(err.Error(), FuzzKey) {
			t.Fatalf("error holds the API key: %v", err)
		}
		if len(me.Message) > 8<<10 {
			t.Fatalf("error message of %d bytes", len(me.Message))
		}
	}
}

// drain is CheckStream's walk over seq; it returns the stream's error.
func drain(ctx context.Context, t *testing.T, req *model.Request, seq iter.Seq2[model.Chunk, error]) (last error) {
	t.Helper()
	ended := false
	var calls []message.ToolCall
	for c, err := range seq {
		if ended {
			t.Fatal("item after the end of the stream")
		}
		if err != nil {
			ended = true
			last = err
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
	return last
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
