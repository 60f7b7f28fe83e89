package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/openai/internal/oai"
)

// responses is OpenAI's POST /v1/responses (the Responses API) where the
// model is a network, fronting it as chat completions do: a run on a new
// thread seeded with the input's earlier messages (or on the thread named
// by Baton-Thread-Id); one output message holding the text of every
// assistant message of the run. Streamed as data-only events (response.*,
// no [DONE]). Every field of the request is honoured, accepted without
// effect where OpenAI's answer could be the same (docs/api.md lists them),
// or refused (400).
func (s *api) responses(w http.ResponseWriter, r *http.Request, c *server.Caller) error {
	return serveOpenAI(s, w, r, c, s.responsesRequest, s.responsesAnswer)
}

// responsesAnswer answers a responses request with its started run: a
// response, or its events when the request streams.
func (s *api) responsesAnswer(w http.ResponseWriter, r *http.Request, a *answer, req *oai.ResponsesRequest) error {
	id := strings.TrimPrefix(a.run.ID(), "run_")
	resp := oai.Response{ID: "resp_" + id, Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress", Model: a.run.Network(),
		Output: []oai.ResponseItem{}, Metadata: req.Metadata, Temperature: req.Temperature, TopP: req.TopP, MaxOutputTokens: req.MaxOutputTokens,
		ToolChoice: "auto", Tools: []struct{}{}, Store: true, Truncation: "disabled"}
	if req.Truncation != "" {
		resp.Truncation = req.Truncation
	}
	if req.Text != nil {
		resp.Text.Verbosity = req.Text.Verbosity
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]string{}
	}
	if req.Instructions != "" {
		resp.Instructions = &req.Instructions
	}
	resp.Text.Format.Type = "text"
	if req.Stream {
		return s.streamResponse(w, r, a, resp, "msg_"+id)
	}
	if err := s.openAIAnswer(w, r, a); err != nil {
		return err
	}
	finishResponse(&resp, a, "msg_"+id)
	server.WriteJSON(w, http.StatusOK, resp)
	return nil
}

// responsesRequest checks a responses request's fields and turns it into
// the run it asks for: the network it names, the run options that honour
// its settings, its instructions and input; what baton cannot honour is
// refused.
func (s *api) responsesRequest(req *oai.ResponsesRequest) (openAIRun, error) {
	nw, err := s.model(req.Model)
	if err != nil {
		return openAIRun{}, err
	}
	switch {
	case req.PreviousResponseID != "":
		return openAIRun{}, unsupported("previous_response_id", "previous_response_id is not supported: continue a conversation by sending the Baton-Thread-Id header of the previous response, or the whole conversation as input")
	case len(req.Conversation) > 0 && string(req.Conversation) != "null":
		return openAIRun{}, unsupported("conversation", "conversation is not supported: continue a conversation by sending the Baton-Thread-Id header of the previous response")
	case req.Text != nil && req.Text.Format != nil && req.Text.Format.Type != "text":
		return openAIRun{}, unsupported("text.format", "text.format %q is not supported: a network answers text (an agent's output schema is declared in the network file)", req.Text.Format.Type)
	case req.Reasoning != nil && !oneOf(req.Reasoning.Summary, "", "auto", "concise", "detailed"):
		return openAIRun{}, server.BadParam("reasoning.summary", "reasoning.summary %q: want auto, concise or detailed", req.Reasoning.Summary)
	case req.Truncation != "" && req.Truncation != "disabled" && req.Truncation != "auto":
		return openAIRun{}, server.BadParam("truncation", "truncation must be \"auto\" or \"disabled\"")
	case req.MaxToolCalls != nil:
		return openAIRun{}, unsupported("max_tool_calls", "max_tool_calls is not supported: a network's agents call the tools declared in its file, within the limits declared there")
	case req.Background != nil && *req.Background:
		return openAIRun{}, unsupported("background", "background responses are not supported: runs that reach slow tools continue in baton's workers by themselves; stream the response to follow them")
	}
	if err := checkInclude(req.Include); err != nil {
		return openAIRun{}, err
	}
	k := knobs{maxTokens: req.MaxOutputTokens, verbosityParam: "text.verbosity"}
	if req.Reasoning != nil {
		k.effort = req.Reasoning.Effort
	}
	if req.Text != nil {
		k.verbosity = req.Text.Verbosity
	}
	opts, err := runOptions(&req.OpenAIRequest, k)
	if ae, ok := err.(*server.Error); ok && ae.Param == "max_tokens" {
		ae.Param = "max_output_tokens"
	}
	if err != nil {
		return openAIRun{}, err
	}
	hist, input, err := responsesInput(req.Instructions, req.Input)
	return openAIRun{nw: nw, req: &req.OpenAIRequest, source: "responses", hist: hist, input: input, opts: opts}, err
}

// ignoredIncludes are the values of include that are accepted and have no
// effect: each adds to output items a response from a network never has
// (built-in tool calls, input images, reasoning items).
var ignoredIncludes = []string{"reasoning.encrypted_content", "web_search_call.action.sources", "web_search_call.results",
	"code_interpreter_call.outputs", "computer_call_output.output.image_url", "file_search_call.results", "message.input_image.image_url"}

// checkInclude accepts the include values a response can do without and
// refuses log probabilities, which a network does not have.
func checkInclude(include []string) error {
	for _, v := range include {
		switch {
		case v == "message.output_text.logprobs":
			return unsupported("include", "log probabilities are not available from a network: leave %q out of include", v)
		case !slices.Contains(ignoredIncludes, v):
			return server.BadParam("include", "include %q is not a value of the Responses API", v)
		}
	}
	return nil
}

func oneOf(v string, vs ...string) bool { return slices.Contains(vs, v) }

// responsesInput turns a request's instructions and input into the
// thread's earlier messages and the input (the last item, a user message).
func responsesInput(instructions string, raw json.RawMessage) ([]message.Message, string, error) {
	var hist []message.Message
	if instructions != "" {
		hist = append(hist, message.System(instructions))
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", server.BadParam("input", "input is required: the user's message, or an array of messages ending with the user's")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return hist, text, nil
	}
	var items []oai.ResponseInputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, "", server.BadParam("input", "input must be a string or an array of input items")
	}
	turns := make([]turn, len(items))
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return nil, "", unsupported("input", "input[%d]: items of type %q are not supported (only messages): a network's agents call the tools declared in its file", i, it.Type)
		}
		turns[i] = turn{it.Role, it.Content}
	}
	return conversation(hist, turns, "input")
}

// finishResponse completes resp with the answer: status, output, usage.
func finishResponse(resp *oai.Response, a *answer, itemID string) {
	text := a.text.String()
	resp.Status, resp.OutputText, resp.Baton = "completed", text, a.baton()
	switch a.finishReason() {
	case "length":
		resp.Status, resp.IncompleteDetails = "incomplete", &oai.IncompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		resp.Status, resp.IncompleteDetails = "incomplete", &oai.IncompleteDetails{Reason: "content_filter"}
	case "interrupted":
		resp.Status, resp.IncompleteDetails = "incomplete", &oai.IncompleteDetails{Reason: "interrupted"}
	}
	resp.Output = []oai.ResponseItem{responseItem(itemID, "completed", text)}
	u := a.usage()
	resp.Usage = &oai.ResponseUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
	resp.Usage.InputTokensDetails.CachedTokens = u.CachedTokens
	resp.Usage.OutputTokensDetails.ReasoningTokens = u.ReasoningTokens
}

func responseItem(id, status, text string) oai.ResponseItem {
	it := oai.ResponseItem{Type: "message", ID: id, Status: status, Role: "assistant", Content: []oai.ResponseContent{}}
	if status == "completed" {
		it.Content = append(it.Content, outputText(text))
	}
	return it
}

func outputText(text string) oai.ResponseContent {
	return oai.ResponseContent{Type: "output_text", Text: text, Annotations: []struct{}{}, Logprobs: []struct{}{}}
}

// streamResponse streams a run as the Responses API's events, data-only
// (each names its type), ending with response.completed or
// response.incomplete (or an error event); comment pings keep it open while
// the run is quiet.
func (s *api) streamResponse(w http.ResponseWriter, r *http.Request, a *answer, resp oai.Response, itemID string) error {
	return s.openAIStream(w, r, a, func(ctx context.Context, sw *sse.Writer) {
		seq := 0
		events := func(evs ...oai.ResponseEvent) error {
			for _, ev := range evs {
				ev.SequenceNumber = seq
				seq++
				if err := sw.Put(data(ev)); err != nil {
					return err
				}
			}
			return sw.Flush()
		}
		zero := 0
		snapshot := resp
		item := responseItem(itemID, "in_progress", "")
		empty := outputText("")
		if events(
			oai.ResponseEvent{Type: "response.created", Response: &snapshot},
			oai.ResponseEvent{Type: "response.in_progress", Response: &snapshot},
			oai.ResponseEvent{Type: "response.output_item.added", OutputIndex: &zero, Item: &item},
			oai.ResponseEvent{Type: "response.content_part.added", ItemID: itemID, OutputIndex: &zero, ContentIndex: &zero, Part: &empty},
		) != nil {
			return
		}
		if !s.followOpenAI(ctx, sw, a, func(text string) error {
			ev := oai.ResponseEvent{Type: "response.output_text.delta", ItemID: itemID, OutputIndex: &zero, ContentIndex: &zero, Delta: &text, Logprobs: []struct{}{}, SequenceNumber: seq}
			seq++
			return sw.Put(data(ev))
		}) {
			return
		}
		if a.failed != nil {
			d := openAIError(a.failed)
			_ = events(oai.ResponseEvent{Type: "error", Code: d.Code, Message: d.Message, Param: d.Param})
			return
		}
		finishResponse(&resp, a, itemID)
		text := resp.OutputText
		part := outputText(text)
		final := "response.completed"
		if resp.Status == "incomplete" {
			final = "response.incomplete"
		}
		_ = events(
			oai.ResponseEvent{Type: "response.output_text.done", ItemID: itemID, OutputIndex: &zero, ContentIndex: &zero, Text: &text, Logprobs: []struct{}{}},
			oai.ResponseEvent{Type: "response.content_part.done", ItemID: itemID, OutputIndex: &zero, ContentIndex: &zero, Part: &part},
			oai.ResponseEvent{Type: "response.output_item.done", OutputIndex: &zero, Item: &resp.Output[0]},
			oai.ResponseEvent{Type: final, Response: &resp},
		)
	})
}
