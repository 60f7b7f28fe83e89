package a2av1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/batonhq/baton/internal/sse"
)

// Transport is an a2aclient.Transport that speaks protocol 1.0 to a
// JSON-RPC endpoint: a caller written for a2a-go's 0.3 transport calls a
// 1.0 agent unchanged.
type Transport struct {
	endpoint string
	hc       *http.Client
	ids      atomic.Int64
}

var _ a2aclient.Transport = (*Transport)(nil)

// NewTransport returns a 1.0 transport to endpoint over hc.
func NewTransport(endpoint string, hc *http.Client) *Transport {
	return &Transport{endpoint: endpoint, hc: hc}
}

// maxBody bounds a response that is not a stream.
const maxBody = 16 << 20

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

// rpcResponse is a JSON-RPC response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// Codes are the JSON-RPC error codes of A2A's errors (the same in 0.3 and
// 1.0).
var Codes = map[int]error{
	-32700: a2a.ErrParseError, -32600: a2a.ErrInvalidRequest, -32601: a2a.ErrMethodNotFound,
	-32602: a2a.ErrInvalidParams, -32603: a2a.ErrInternalError, -32000: a2a.ErrServerError,
	-32001: a2a.ErrTaskNotFound, -32002: a2a.ErrTaskNotCancelable, -32003: a2a.ErrPushNotificationNotSupported,
	-32004: a2a.ErrUnsupportedOperation, -32005: a2a.ErrUnsupportedContentType, -32006: a2a.ErrInvalidAgentResponse,
	-32007: a2a.ErrAuthenticatedExtendedCardNotConfigured,
}

func (e *rpcError) err() error {
	base, ok := Codes[e.Code]
	if !ok {
		base = a2a.ErrInternalError
	}
	return fmt.Errorf("%s: %w", e.Message, base)
}

func (t *Transport) post(ctx context.Context, method string, params any, accept string) (*http.Response, int64, error) {
	id := t.ids.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set("A2A-Version", Version)
	resp, err := t.hc.Do(req)
	return resp, id, err
}

// call sends a request that is not a stream and decodes its result into
// out.
func (t *Transport) call(ctx context.Context, method string, params, out any) error {
	resp, _, err := t.post(ctx, method, params, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: HTTP %s: not a JSON-RPC response: %w", method, resp.Status, a2a.ErrInvalidAgentResponse)
	}
	if r.Error != nil {
		return r.Error.err()
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("%s: result: %v: %w", method, err, a2a.ErrInvalidAgentResponse)
	}
	return nil
}

// stream sends a streaming request and yields its events.
func (t *Transport) stream(ctx context.Context, method string, params any) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		resp, _, err := t.post(ctx, method, params, "text/event-stream")
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
			var r rpcResponse
			if json.Unmarshal(b, &r) == nil && r.Error != nil {
				yield(nil, r.Error.err())
				return
			}
			yield(nil, fmt.Errorf("%s: HTTP %s, not an event stream: %w", method, resp.Status, a2a.ErrInvalidAgentResponse))
			return
		}
		rd := sse.NewReader(resp.Body, 0)
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			out, err := ParseEvent(ev.Data)
			if !yield(out, err) || err != nil {
				return
			}
		}
	}
}

// ParseEvent reads the data of a stream's event: a JSON-RPC response
// whose result is a 1.0 StreamResponse.
func ParseEvent(data []byte) (a2a.Event, error) {
	var r rpcResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: a stream event is not a JSON-RPC response: %v", errWire, err)
	}
	if r.Error != nil {
		return nil, r.Error.err()
	}
	var sr StreamResponse
	if err := json.Unmarshal(r.Result, &sr); err != nil {
		return nil, fmt.Errorf("%w: %v", errWire, err)
	}
	return FromResponse(&sr)
}

// SendMessage calls SendMessage.
func (t *Transport) SendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	var sr StreamResponse
	if err := t.call(ctx, "SendMessage", ToSend(p), &sr); err != nil {
		return nil, err
	}
	ev, err := FromResponse(&sr)
	if err != nil {
		return nil, err
	}
	res, ok := ev.(a2a.SendMessageResult)
	if !ok {
		return nil, fmt.Errorf("SendMessage: a %T: %w", ev, a2a.ErrInvalidAgentResponse)
	}
	return res, nil
}

// SendStreamingMessage calls SendStreamingMessage.
func (t *Transport) SendStreamingMessage(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return t.stream(ctx, "SendStreamingMessage", ToSend(p))
}

// GetTask calls GetTask.
func (t *Transport) GetTask(ctx context.Context, q *a2a.TaskQueryParams) (*a2a.Task, error) {
	var task Task
	if err := t.call(ctx, "GetTask", TaskParams{ID: string(q.ID), HistoryLength: q.HistoryLength, Metadata: q.Metadata}, &task); err != nil {
		return nil, err
	}
	return FromTask(&task)
}

// CancelTask calls CancelTask.
func (t *Transport) CancelTask(ctx context.Context, p *a2a.TaskIDParams) (*a2a.Task, error) {
	var task Task
	if err := t.call(ctx, "CancelTask", TaskParams{ID: string(p.ID), Metadata: p.Metadata}, &task); err != nil {
		return nil, err
	}
	return FromTask(&task)
}

// ResubscribeToTask calls SubscribeToTask.
func (t *Transport) ResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return t.stream(ctx, "SubscribeToTask", TaskParams{ID: string(p.ID), Metadata: p.Metadata})
}

// GetTaskPushConfig calls GetTaskPushNotificationConfig.
func (t *Transport) GetTaskPushConfig(ctx context.Context, p *a2a.GetTaskPushConfigParams) (*a2a.TaskPushConfig, error) {
	var out PushConfig
	if err := t.call(ctx, "GetTaskPushNotificationConfig", PushConfigParams{TaskID: string(p.TaskID), ID: p.ConfigID}, &out); err != nil {
		return nil, err
	}
	return FromPushConfig(&out), nil
}

// ListTaskPushConfig calls ListTaskPushNotificationConfigs, page after
// page, and returns every config.
func (t *Transport) ListTaskPushConfig(ctx context.Context, p *a2a.ListTaskPushConfigParams) ([]*a2a.TaskPushConfig, error) {
	var cs []*a2a.TaskPushConfig
	token := ""
	for {
		var out PushConfigList
		if err := t.ListTaskPushConfigPage(ctx, PushConfigParams{TaskID: string(p.TaskID), PageToken: token}, &out); err != nil {
			return nil, err
		}
		for i := range out.Configs {
			cs = append(cs, FromPushConfig(&out.Configs[i]))
		}
		if out.NextPageToken == "" || out.NextPageToken == token {
			return cs, nil
		}
		token = out.NextPageToken
	}
}

// ListTaskPushConfigPage calls ListTaskPushNotificationConfigs for one page.
func (t *Transport) ListTaskPushConfigPage(ctx context.Context, p PushConfigParams, out *PushConfigList) error {
	return t.call(ctx, "ListTaskPushNotificationConfigs", p, out)
}

// SetTaskPushConfig calls CreateTaskPushNotificationConfig.
func (t *Transport) SetTaskPushConfig(ctx context.Context, p *a2a.TaskPushConfig) (*a2a.TaskPushConfig, error) {
	in := ToPushConfig(&p.Config)
	in.TaskID = string(p.TaskID)
	var out PushConfig
	if err := t.call(ctx, "CreateTaskPushNotificationConfig", in, &out); err != nil {
		return nil, err
	}
	return FromPushConfig(&out), nil
}

// DeleteTaskPushConfig calls DeleteTaskPushNotificationConfig.
func (t *Transport) DeleteTaskPushConfig(ctx context.Context, p *a2a.DeleteTaskPushConfigParams) error {
	var out struct{}
	return t.call(ctx, "DeleteTaskPushNotificationConfig", PushConfigParams{TaskID: string(p.TaskID), ID: p.ConfigID}, &out)
}

// GetAgentCard: the card is read from its URL, not through the transport.
func (t *Transport) GetAgentCard(context.Context) (*a2a.AgentCard, error) {
	return nil, a2a.ErrUnsupportedOperation
}

// Destroy releases nothing.
func (t *Transport) Destroy() error { return nil }

// CardInterface returns the JSON-RPC interface of protocol 1.0 that a
// card's supportedInterfaces declare, if any.
func CardInterface(card []byte) (Interface, bool) {
	var c struct {
		SupportedInterfaces []Interface `json:"supportedInterfaces"`
	}
	if json.Unmarshal(card, &c) != nil {
		return Interface{}, false
	}
	for _, i := range c.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") && i.URL != "" && (i.ProtocolVersion == "" || strings.HasPrefix(i.ProtocolVersion, "1.")) {
			return i, true
		}
	}
	return Interface{}, false
}
