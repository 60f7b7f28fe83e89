package openai_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/batonhq/baton/server"
)

func sdkClient(b *servertest.Bundle, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(b.URL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// The official OpenAI Go SDK works against /v1/chat/completions unchanged.
func TestChatCompletionsSDK(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	c := sdkClient(b, b.KeyA)
	ctx := t.Context()
	res, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "support",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Be brief."),
			openai.UserMessage("I was charged twice for order 1234"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || res.Choices[0].FinishReason != "stop" || !strings.Contains(res.Choices[0].Message.Content, "duplicate") ||
		res.Usage.TotalTokens == 0 || res.Model != "support" || res.Object != "chat.completion" {
		t.Fatalf("completion: %+v", res)
	}
	// Both agents' answers, in order.
	if !strings.HasPrefix(res.Choices[0].Message.Content, "Let me get billing") {
		t.Fatalf("content: %q", res.Choices[0].Message.Content)
	}

	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "research",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("How did EV sales develop in 2025?")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks, usage := 0, int64(0)
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		chunks++
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage.TotalTokens
			if len(ch.Choices) != 0 {
				t.Fatalf("usage chunk with choices: %+v", ch)
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	got := acc.Choices[0].Message.Content
	// The stream carried the background worker's answer to the end.
	if chunks < 10 || usage == 0 || !strings.Contains(got, "I'll ask our analyst") || !strings.Contains(got, "RPT-42") {
		t.Fatalf("stream: %d chunks, usage %d, content %q", chunks, usage, got)
	}

	// Errors are OpenAI-shaped: the SDK reports the status and message.
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || !strings.Contains(apiErr.Message, "does not exist") {
		t.Fatalf("unknown model: %v", err)
	}
	bad := sdkClient(b, "wrong")
	_, err = bad.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "support", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bad key: %v", err)
	}
	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 2 {
		t.Fatalf("models: %+v %v", models, err)
	}
}

// A plain HTTP client (curl) sees data-only chunks and [DONE], and can
// continue a thread by its id.
func TestChatCompletionsHTTP(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", b.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"support","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"I want a refund for order 1234"}]}]}`))
	req.Header.Set("Authorization", "Bearer "+b.KeyA)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	if resp.StatusCode != 200 || !strings.HasSuffix(text, "data: [DONE]\n\n") || strings.Contains(text, "event:") || strings.Contains(text, "retry:") {
		t.Fatalf("stream: %d %s", resp.StatusCode, text)
	}
	// The run waits for approval: the answer says so and names the
	// interrupt; clients detect it by the finish reason and the "baton"
	// field of the last chunk.
	if !strings.Contains(text, "Waiting for approval of issue_refund") || !strings.Contains(text, `"finish_reason":"interrupted"`) ||
		!strings.Contains(text, `"status":"interrupted","last_agent":"refunds","interrupt":{"id":"run_`) {
		t.Fatalf("interrupt not reported: %s", text)
	}
	thread := resp.Header.Get(server.ThreadHeader)
	if thread == "" {
		t.Fatal("no thread header")
	}
	r := b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/messages", nil)
	if !strings.Contains(string(r.Body), "I want a refund") {
		t.Fatalf("thread: %s", r.Body)
	}
	// Earlier messages of the request become the new thread's history.
	r = b.Do(t, b.KeyA, "POST", "/v1/chat/completions", map[string]any{"model": "support", "messages": []any{
		map[string]any{"role": "user", "content": "Hello"},
		map[string]any{"role": "assistant", "content": "Hi, how can I help?"},
		map[string]any{"role": "user", "content": "The app crashes when I log in"},
	}})
	if r.Status != 200 || !strings.Contains(string(r.Body), "degraded") {
		t.Fatalf("with history: %d %s", r.Status, r.Body)
	}
	thread2 := r.Header.Get(server.ThreadHeader)
	r = b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread2+"/messages", nil)
	if !strings.Contains(string(r.Body), "Hi, how can I help?") {
		t.Fatalf("history not stored: %s", r.Body)
	}
}
