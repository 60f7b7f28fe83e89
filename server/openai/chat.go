package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/server/openai/internal/oai"
)

// maxChatMessages bounds the messages of a chat completion request (and
// the input items of a response).
const maxChatMessages = 1000

// chatCompletions is OpenAI's POST /v1/chat/completions where the model is
// a network: each request is a run on a new thread seeded with the
// request's earlier messages (or on the thread named by Baton-Thread-Id).
// The answer is the text of every assistant message of the run, in order,
// separated by blank lines. Every field of the request is honoured,
// accepted without effect where OpenAI's answer could be the same
// (docs/api.md lists them), or refused (400).
func (s *api) chatCompletions(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	return serveOpenAI(s, w, r, c, s.chatRequest, s.chatAnswer)
}

// chatAnswer answers a chat completion request with its started run: a
// chat completion, or its chunks when the request streams.
func (s *api) chatAnswer(w http.ResponseWriter, r *http.Request, a *answer, req *oai.ChatRequest) error {
	cc := chatCompletion{ID: "chatcmpl-" + strings.TrimPrefix(a.run.ID(), "run_"), Model: a.run.Network(), Created: time.Now().Unix()}
	if req.Stream {
		return s.streamChat(w, r, a, cc, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	}
	if err := s.openAIAnswer(w, r, a); err != nil {
		return err
	}
	text, finish := a.text.String(), a.finishReason()
	cc.Object, cc.Usage, cc.Baton = "chat.completion", chatUsage(a), a.baton()
	cc.Choices = []oai.ChatChoice{{Index: 0, Message: &oai.ChatOutput{Role: "assistant", Content: &text}, FinishReason: &finish}}
	server.WriteJSON(w, http.StatusOK, cc)
	return nil
}

type chatCompletion = oai.ChatCompletion

// chatRequest checks a chat request's fields and turns it into the run it
// asks for: the network it names, the run options that honour its
// settings, its messages; what baton cannot honour is refused.
func (s *api) chatRequest(req *oai.ChatRequest) (openAIRun, error) {
	nw, err := s.model(req.Model)
	if err != nil {
		return openAIRun{}, err
	}
	switch {
	case req.N != nil && *req.N != 1:
		return openAIRun{}, unsupported("n", "n must be 1: a network gives one answer per request")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "text":
		return openAIRun{}, unsupported("response_format", "response_format %q is not supported: a network answers text (an agent's output schema is declared in the network file)", req.ResponseFormat.Type)
	case req.Logprobs != nil && *req.Logprobs:
		return openAIRun{}, unsupported("logprobs", "log probabilities are not available from a network")
	case len(req.Modalities) > 0 && (len(req.Modalities) != 1 || req.Modalities[0] != "text"):
		return openAIRun{}, unsupported("modalities", "a network answers text only: modalities must be [\"text\"]")
	case len(req.Audio) > 0 && string(req.Audio) != "null":
		return openAIRun{}, unsupported("audio", "a network answers text only: leave audio out")
	case len(req.WebSearchOptions) > 0 && string(req.WebSearchOptions) != "null":
		return openAIRun{}, unsupported("web_search_options", "web search is not available from a network: a network's agents call the tools declared in its file")
	case req.MaxTokens != nil && req.MaxCompletionTokens != nil:
		return openAIRun{}, server.BadParam("max_tokens", "send max_completion_tokens or max_tokens, not both")
	}
	limit := req.MaxCompletionTokens
	if limit == nil {
		limit = req.MaxTokens
	}
	opts, err := runOptions(&req.OpenAIRequest, knobs{maxTokens: limit, stop: req.Stop, effort: req.ReasoningEffort,
		seed: req.Seed, presence: req.PresencePenalty, frequency: req.FrequencyPenalty, logitBias: req.LogitBias,
		verbosity: req.Verbosity, verbosityParam: "verbosity"})
	if err != nil {
		return openAIRun{}, err
	}
	hist, input, err := chatHistory(req.Messages)
	return openAIRun{nw: nw, req: &req.OpenAIRequest, source: "chat.completions", hist: hist, input: input, opts: opts}, err
}

// chatHistory turns the request's messages into the thread's earlier
// messages and the input (the last message, a user message).
func chatHistory(msgs []oai.ChatMessage) ([]message.Message, string, error) {
	turns := make([]turn, len(msgs))
	for i, m := range msgs {
		if len(m.ToolCalls) > 0 || m.Role == "tool" || m.Role == "function" {
			return nil, "", unsupported("messages", "messages[%d]: client-side tools are not supported (tool calls and tool messages): a network's agents call the tools declared in its file", i)
		}
		turns[i] = turn{m.Role, m.Content}
	}
	return conversation(nil, turns, "messages")
}

// chatText returns the text of a content: a string, or an array of parts
// of which the text parts count.
func chatText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var parts []wire.ContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", server.Errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
		default:
			return "", server.Errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "content part type %q is not supported (only text)", p.Type)
		}
	}
	return b.String(), nil
}

func chatUsage(a *answer) *oai.ChatUsage {
	u := a.usage()
	return &oai.ChatUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

// streamChat streams a run as chat completion chunks, data-only, ending
// with "data: [DONE]"; comment pings keep it open while the run is quiet.
func (s *api) streamChat(w http.ResponseWriter, r *http.Request, a *answer, cc chatCompletion, includeUsage bool) error {
	return s.openAIStream(w, r, a, func(ctx context.Context, sw *sse.Writer) {
		cc.Object = "chat.completion.chunk"
		chunk := func(delta *oai.ChatOutput, finish *string) chatCompletion {
			c := cc
			c.Choices = []oai.ChatChoice{{Index: 0, Delta: delta, FinishReason: finish}}
			return c
		}
		empty := ""
		if sw.Send(data(chunk(&oai.ChatOutput{Role: "assistant", Content: &empty}, nil))) != nil {
			return
		}
		if !s.followOpenAI(ctx, sw, a, func(text string) error { return sw.Put(data(chunk(&oai.ChatOutput{Content: &text}, nil))) }) {
			return
		}
		if a.failed != nil {
			_ = sw.Send(data(wire.ErrorBody{Error: openAIError(a.failed)}))
			return
		}
		finish := a.finishReason()
		last := chunk(&oai.ChatOutput{}, &finish)
		last.Baton = a.baton()
		if sw.Put(data(last)) != nil {
			return
		}
		if includeUsage {
			u := cc
			u.Choices, u.Usage = []oai.ChatChoice{}, chatUsage(a)
			if sw.Put(data(u)) != nil {
				return
			}
		}
		_ = sw.Send(sse.Event{Data: []byte("[DONE]")})
	})
}
