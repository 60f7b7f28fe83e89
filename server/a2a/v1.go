package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/webhook/a2apush"
)

// rpcRequest is a JSON-RPC request of protocol 1.0.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// method1 returns the method of a JSON-RPC request body if it is one of
// protocol 1.0 (SendMessage, GetTask …); "" for any other body, which the
// 0.3 handler answers.
func method1(body []byte) string {
	var req struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	if _, ok := a2av1.Methods[req.Method]; ok {
		return req.Method
	}
	return ""
}

// serve1 answers a request of protocol 1.0 with the handler that answers
// 0.3: its params and results converted (a2av1), its streams as SSE events
// whose data are JSON-RPC responses holding StreamResponses.
func (h *a2aHandler) serve1(w http.ResponseWriter, r *http.Request, body []byte) {
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil || req.JSONRPC != "2.0" {
		writeRPC(w, req.ID, nil, fmt.Errorf("%w: not a JSON-RPC 2.0 request", a2a.ErrInvalidRequest))
		return
	}
	ctx := r.Context()
	switch req.Method {
	case "SendMessage":
		p, err := sendParams(req.Params)
		if err != nil {
			writeRPC(w, req.ID, nil, err)
			return
		}
		res, err := h.OnSendMessage(ctx, p)
		if err != nil {
			writeRPC(w, req.ID, nil, err)
			return
		}
		out, err := a2av1.ToResponse(res)
		writeRPC(w, req.ID, out, err)
	case "SendStreamingMessage":
		p, err := sendParams(req.Params)
		if err != nil {
			writeRPC(w, req.ID, nil, err)
			return
		}
		streamRPC(w, req.ID, h.OnSendMessageStream(ctx, p))
	case "GetTask", "CancelTask", "SubscribeToTask":
		var p a2av1.TaskParams
		if err := json.Unmarshal(req.Params, &p); err != nil || p.ID == "" {
			writeRPC(w, req.ID, nil, fmt.Errorf("%w: params {\"id\"} are required", a2a.ErrInvalidParams))
			return
		}
		var (
			task *a2a.Task
			err  error
		)
		switch req.Method {
		case "SubscribeToTask":
			streamRPC(w, req.ID, h.OnResubscribeToTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(p.ID)}))
			return
		case "GetTask":
			task, err = h.OnGetTask(ctx, &a2a.TaskQueryParams{ID: a2a.TaskID(p.ID), HistoryLength: p.HistoryLength})
		default:
			task, err = h.OnCancelTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(p.ID), Metadata: p.Metadata})
		}
		if err != nil {
			writeRPC(w, req.ID, nil, err)
			return
		}
		writeRPC(w, req.ID, a2av1.ToTask(task), nil)
	case "GetExtendedAgentCard":
		writeRPC(w, req.ID, nil, a2a.ErrAuthenticatedExtendedCardNotConfigured)
	default: // the push notification configs
		out, err := h.push1(ctx, req.Method, req.Params)
		writeRPC(w, req.ID, out, err)
	}
}

// push1 answers the push notification config methods of protocol 1.0.
func (h *a2aHandler) push1(ctx context.Context, method string, raw json.RawMessage) (any, error) {
	if method == "CreateTaskPushNotificationConfig" {
		var p a2av1.PushConfig
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err)
		}
		c, err := h.setPush(ctx, a2apush.From10(p.TaskID, &p))
		if err != nil {
			return nil, err
		}
		return a2apush.To10(c), nil
	}
	var p a2av1.PushConfigParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err)
	}
	task := a2a.TaskID(p.TaskID)
	switch method {
	case "GetTaskPushNotificationConfig":
		if p.ID == "" {
			return nil, fmt.Errorf("%w: the config's id is required", a2a.ErrInvalidParams)
		}
		c, err := h.getPush(ctx, task, p.ID)
		if err != nil {
			return nil, err
		}
		return a2apush.To10(c), nil
	case "ListTaskPushNotificationConfigs":
		cs, err := h.listPush(ctx, task)
		if err != nil {
			return nil, err
		}
		cs, next, err := pushPage(cs, p.PageSize, p.PageToken)
		if err != nil {
			return nil, err
		}
		out := a2av1.PushConfigList{Configs: make([]a2av1.PushConfig, len(cs)), NextPageToken: next}
		for i, c := range cs {
			out.Configs[i] = a2apush.To10(c)
		}
		return out, nil
	case "DeleteTaskPushNotificationConfig":
		if err := h.deletePush(ctx, task, p.ID); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	}
	return nil, fmt.Errorf("%w: %s", a2a.ErrMethodNotFound, method)
}

func sendParams(raw json.RawMessage) (*a2a.MessageSendParams, error) {
	var p a2av1.SendParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err)
	}
	out, err := a2av1.FromSend(&p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err)
	}
	return out, nil
}

// rpcError is the JSON-RPC error of err: A2A's code, the message in data.
func rpcError(err error) map[string]any {
	for code, e := range a2av1.Codes {
		if errors.Is(err, e) {
			return map[string]any{"code": code, "message": e.Error(), "data": map[string]any{"error": err.Error()}}
		}
	}
	return map[string]any{"code": -32603, "message": a2a.ErrInternalError.Error(), "data": map[string]any{"error": err.Error()}}
}

func rpcBody(id json.RawMessage, result any, err error) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if err != nil {
		m["error"] = rpcError(err)
	} else {
		m["result"] = result
	}
	b, merr := json.Marshal(m)
	if merr != nil {
		return rpcBody(id, nil, fmt.Errorf("%w: %v", a2a.ErrInternalError, merr))
	}
	return b
}

// writeRPC answers a request that is not a stream (200, as JSON-RPC over
// HTTP answers errors too).
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(rpcBody(id, result, err))
}

// streamRPC answers a stream: each event a JSON-RPC response holding its
// StreamResponse; an error ends the stream as a JSON-RPC error.
func streamRPC(w http.ResponseWriter, id json.RawMessage, events iter.Seq2[a2a.Event, error]) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(b []byte) bool {
		var buf bytes.Buffer
		buf.WriteString("data: ")
		buf.Write(b)
		buf.WriteString("\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for ev, err := range events {
		if err != nil {
			send(rpcBody(id, nil, err))
			return
		}
		out, cerr := a2av1.ToResponse(ev)
		if !send(rpcBody(id, out, cerr)) || cerr != nil {
			return
		}
	}
}

// readBody reads a request's body (the core bounds its size) and puts it
// back for the next reader.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}
