package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
)

// ThreadHeader names the thread of a chat completion: sent by a client to
// continue a stored thread (only the last user message is then used), and
// answered by the server on every completion.
const ThreadHeader = "Baton-Thread-Id"

// maxChatMessages bounds the messages of a chat completion request.
const maxChatMessages = 1000

// chatCompletions is OpenAI's POST /v1/chat/completions where the model is
// a network: each request is a run on a new thread seeded with the
// request's earlier messages (or on the thread named by Baton-Thread-Id).
// The answer is the text of every assistant message of the run, in order,
// separated by blank lines.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, c *caller) error {
	var req wire.ChatRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if req.Model == "" {
		return badParam("model", "model is required: the name of a baton network (GET /v1/models)")
	}
	nw, ok := s.nets[req.Model]
	if !ok {
		e := errorf(http.StatusNotFound, wire.ErrNotFound, "the model %q does not exist: models are this server's networks (GET /v1/models)", req.Model)
		e.param = "model"
		return e
	}
	hist, input, err := chatHistory(req.Messages)
	if err != nil {
		return err
	}
	if err := s.checkInput(input); err != nil {
		return err
	}
	r, cancel := s.withTimeout(r, req.Stream)
	defer cancel()
	ctx := r.Context()
	threadID := r.Header.Get(ThreadHeader)
	if threadID != "" {
		th, err := s.thread(ctx, c, threadID)
		if err != nil {
			return err
		}
		if th.Network != nw.name {
			return badParam("model", "thread %s belongs to network %q, not %q", th.ID, th.Network, nw.name)
		}
	} else {
		if _, err := s.st.EnsureOwner(ctx, &store.EnsureOwnerParams{ID: c.owner}); err != nil {
			return err
		}
		md := map[string]json.RawMessage{"source": json.RawMessage(`"chat.completions"`)}
		if req.User != "" && len(req.User) <= 256 {
			u, _ := json.Marshal(req.User)
			md["user"] = u
		}
		th, err := s.st.CreateThread(ctx, &store.CreateThreadParams{OwnerID: c.owner, Network: nw.name, Name: chatName(input), Metadata: md})
		if err != nil {
			return err
		}
		threadID = th.ID
		if len(hist) > 0 {
			nm := make([]store.NewMessage, len(hist))
			for i, m := range hist {
				nm[i] = store.NewMessage{Message: m}
			}
			if _, err := s.st.AppendMessages(ctx, &store.AppendMessagesParams{OwnerID: c.owner, ThreadID: threadID, Messages: nm}); err != nil {
				return err
			}
		}
	}
	run, err := s.startTurn(ctx, c.owner, threadID, nw, input, nil)
	if err != nil {
		return err
	}
	w.Header().Set(ThreadHeader, threadID)
	w.Header().Set("Baton-Run-Id", run.id)
	cc := &chatAcc{id: "chatcmpl-" + strings.TrimPrefix(run.id, "run_"), model: nw.name, created: time.Now().Unix()}
	if req.Stream {
		return s.streamChat(w, r, run, cc, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	}
	var cur runlog.Cursor
	for {
		rd := run.log.Since(cur, 0, nil)
		for _, e := range rd.Entries {
			cc.add(e)
			cur = e.At
		}
		if rd.Done {
			break
		}
		select {
		case <-rd.Wait:
		case <-s.runCtx.Done():
			return errShuttingDown
		case <-ctx.Done():
			return errorf(http.StatusGatewayTimeout, wire.ErrTimeout, "the run did not finish within %s; follow it at %s", s.cfg.RequestTimeout, eventsURL(run.threadID, run.id))
		}
	}
	if cc.failed != nil {
		return cc.failed
	}
	text := cc.text.String()
	stop := "stop"
	writeJSON(w, http.StatusOK, wire.ChatCompletion{ID: cc.id, Object: "chat.completion", Created: cc.created, Model: cc.model,
		Choices: []wire.ChatChoice{{Index: 0, Message: &wire.ChatOutput{Role: "assistant", Content: &text}, FinishReason: &stop}},
		Usage:   cc.usage()})
	return nil
}

// chatHistory turns the request's messages into the thread's earlier
// messages and the input (the last message, a user message).
func chatHistory(msgs []wire.ChatMessage) ([]message.Message, string, error) {
	if len(msgs) == 0 {
		return nil, "", badParam("messages", "messages must hold at least one message, the last from the user")
	}
	if len(msgs) > maxChatMessages {
		return nil, "", badParam("messages", "at most %d messages", maxChatMessages)
	}
	var hist []message.Message
	for i, m := range msgs {
		text, err := chatText(m.Content)
		if err != nil {
			return nil, "", badParam("messages", "messages[%d].content: %s", i, err.Error())
		}
		last := i == len(msgs)-1
		switch m.Role {
		case "user":
			if last {
				return hist, text, nil
			}
			hist = append(hist, message.User(text))
		case "system", "developer":
			if last {
				break
			}
			hist = append(hist, message.System(text))
		case "assistant":
			if last {
				break
			}
			if text != "" {
				hist = append(hist, message.Assistant("", text))
			}
		case "tool", "function":
			// Tools are the network's own; the client's tool traffic is
			// not part of the conversation baton runs.
		default:
			return nil, "", badParam("messages", "messages[%d].role %q is not system, developer, user, assistant or tool", i, m.Role)
		}
	}
	return nil, "", badParam("messages", "the last message must be from the user")
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
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text", "input_text":
			b.WriteString(p.Text)
		default:
			return "", errorf(http.StatusBadRequest, wire.ErrInvalidRequest, "content part type %q is not supported (only text)", p.Type)
		}
	}
	return b.String(), nil
}

func chatName(input string) string {
	input = strings.Join(strings.Fields(input), " ")
	if len(input) > 60 {
		cut := 60
		for cut > 0 && (input[cut]&0xC0) == 0x80 {
			cut--
		}
		input = input[:cut] + "…"
	}
	return input
}

// chatAcc folds a run's events into a chat completion.
type chatAcc struct {
	id      string
	model   string
	created int64
	text    strings.Builder
	// deltas is set when the current message's text came as deltas.
	deltas bool
	end    *runner.RunEndEvent
	failed error
}

// add folds an event and returns the content it adds.
func (cc *chatAcc) add(e runlog.Entry) string {
	sep := func() string {
		if cc.text.Len() > 0 {
			return "\n\n"
		}
		return ""
	}
	var out string
	switch runner.EventType(e.Type) {
	case runner.TypeTextDelta:
		var ev runner.TextDeltaEvent
		if json.Unmarshal(e.Data, &ev) == nil && ev.Delta != "" {
			if !cc.deltas {
				out = sep()
				cc.deltas = true
			}
			out += ev.Delta
		}
	case runner.TypeMessage:
		if !cc.deltas {
			var ev runner.MessageEvent
			if json.Unmarshal(e.Data, &ev) == nil && ev.Text != "" {
				out = sep() + ev.Text
			}
		}
		cc.deltas = false
	case runner.TypeInterrupt:
		var ev runner.InterruptEvent
		if json.Unmarshal(e.Data, &ev) == nil && ev.Interrupt != nil {
			var names []string
			for _, ar := range ev.Interrupt.ActionRequests {
				names = append(names, ar.Name)
			}
			out = sep() + "[Waiting for approval of " + strings.Join(names, ", ") + ": interrupt " + ev.Interrupt.ID +
				". Decide with POST /v1/interrupts/" + ev.Interrupt.ID + "/decision.]"
		}
	case runner.TypeError:
		var ev runner.ErrorEvent
		if json.Unmarshal(e.Data, &ev) == nil {
			status := http.StatusInternalServerError
			typ := wire.ErrInternal
			switch ev.Kind {
			case runner.KindModelTransient, runner.KindToolTransient:
				status, typ = http.StatusBadGateway, wire.ErrUpstream
			case runner.KindUserInput:
				status, typ = http.StatusBadRequest, wire.ErrInvalidRequest
			}
			cc.failed = errorf(status, typ, "the run failed: %s", ev.Message)
		}
	case runner.TypeRunEnd:
		var ev runner.RunEndEvent
		if json.Unmarshal(e.Data, &ev) == nil && ev.Status != runstate.StatusSuspended {
			cc.end = &ev
		}
	}
	cc.text.WriteString(out)
	return out
}

func (cc *chatAcc) usage() *wire.ChatUsage {
	if cc.end == nil {
		return &wire.ChatUsage{}
	}
	u := cc.end.Usage
	return &wire.ChatUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

// streamChat streams a run as chat completion chunks, ending with
// "data: [DONE]".
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, run *runEntry, cc *chatAcc, includeUsage bool) error {
	ctx := r.Context()
	if !s.acquireStream(ctx) {
		return s.tooManyStreams()
	}
	defer s.releaseStream(ctx)
	run.addReader(1)
	defer run.addReader(-1)
	sw, err := sse.NewWriter(w, s.sseOptions(nil))
	if err != nil {
		return nil
	}
	chunk := func(delta *wire.ChatOutput, finish *string) sse.Event {
		c := wire.ChatCompletion{ID: cc.id, Object: "chat.completion.chunk", Created: cc.created, Model: cc.model,
			Choices: []wire.ChatChoice{{Index: 0, Delta: delta, FinishReason: finish}}}
		data, _ := json.Marshal(c)
		return sse.Event{Data: data}
	}
	empty := ""
	if sw.Send(chunk(&wire.ChatOutput{Role: "assistant", Content: &empty}, nil)) != nil {
		return nil
	}
	hb := time.NewTimer(s.cfg.Heartbeat)
	defer hb.Stop()
	var cur runlog.Cursor
	for {
		rd := run.log.Since(cur, 256, nil)
		for _, e := range rd.Entries {
			cur = e.At
			if out := cc.add(e); out != "" {
				if queue(sw, chunk(&wire.ChatOutput{Content: &out}, nil)) != nil {
					return nil
				}
			}
		}
		if len(rd.Entries) > 0 {
			if sw.Flush() != nil {
				return nil
			}
			resetTimer(hb, s.cfg.Heartbeat)
		}
		if rd.Done {
			break
		}
		select {
		case <-rd.Wait:
		case <-ctx.Done():
			return nil
		case <-s.runCtx.Done():
			return nil
		case <-hb.C:
			if sw.Comment("ping") != nil {
				return nil
			}
			hb.Reset(s.cfg.Heartbeat)
		}
	}
	if cc.failed != nil {
		ae := classify(cc.failed)
		data, _ := json.Marshal(wire.ErrorBody{Error: wire.ErrorDetail{Type: ae.typ, Message: ae.msg, Code: ae.typ}})
		_ = sw.Send(sse.Event{Data: data})
		return nil
	}
	stop := "stop"
	if queue(sw, chunk(&wire.ChatOutput{}, &stop)) != nil {
		return nil
	}
	if includeUsage {
		c := wire.ChatCompletion{ID: cc.id, Object: "chat.completion.chunk", Created: cc.created, Model: cc.model, Choices: []wire.ChatChoice{}, Usage: cc.usage()}
		data, _ := json.Marshal(c)
		if queue(sw, sse.Event{Data: data}) != nil {
			return nil
		}
	}
	_ = sw.Send(sse.Event{Data: []byte("[DONE]")})
	return nil
}
