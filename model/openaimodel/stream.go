package openaimodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/internal/httperr"
)

// rawStream maps req to the parameters of one API call with build, sends
// them as a streaming request through the SDK method call, and returns the
// raw response, whose body the caller closes. On failure it yields the
// error (a call failure classified by callError) and returns nil.
func rawStream[P, R any](ctx context.Context, m *Model, req *model.Request, build func(*model.Request) (P, error),
	call func(context.Context, P, ...option.RequestOption) (R, error), yield func(model.Chunk, error) bool) *http.Response {
	params, err := build(req)
	if err != nil {
		yield(model.Chunk{}, fmt.Errorf("%s: %w", m.provider, err))
		return nil
	}
	var capture httperr.Capture
	var res *http.Response
	_, err = call(ctx, params, option.WithJSONSet("stream", true), option.WithMiddleware(capture.Middleware), option.WithResponseBodyInto(&res))
	if err == nil && res == nil {
		err = errors.New("no response")
	}
	if err != nil {
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		yield(model.Chunk{}, m.callError(ctx, &capture, err))
		return nil
	}
	return res
}

// apiStream is what one API adds to the reading of its streamed answer
// that [streamCall] does: the accumulator of its events.
type apiStream interface {
	// whole folds in a whole JSON body from a server that ignored
	// "stream": true.
	whole(b []byte, yield func(model.Chunk, error) bool)
	// event folds in the data of one event; false stops the stream (an
	// error was yielded, or the consumer stopped).
	event(data []byte, yield func(model.Chunk, error) bool) bool
	// terminal reports that the API's terminal event was read: no more is.
	terminal() bool
	// end finishes the answer once the events are read (ev tells whether
	// [DONE] came, body what the stream held).
	end(ctx context.Context, ev *events, body *httperr.Content, yield func(model.Chunk, error) bool)
}

// streamCall sends one streaming call through rawStream and reads its
// answer: an event stream, event by event, or a whole JSON body, into the
// accumulator start makes with the response's request id.
func streamCall[P, R any](ctx context.Context, m *Model, req *model.Request, build func(*model.Request) (P, error),
	call func(context.Context, P, ...option.RequestOption) (R, error), start func(requestID string) apiStream, yield func(model.Chunk, error) bool) {
	res := rawStream(ctx, m, req, build, call, yield)
	if res == nil {
		return
	}
	defer res.Body.Close()
	requestID := httperr.RequestID(res.Header)
	acc := start(requestID)
	body := m.eventStream(ctx, res, requestID, func(b []byte) { acc.whole(b, yield) }, yield)
	if body == nil {
		return
	}
	ev := events{dec: ssestream.NewDecoder(res)}
	for data := range ev.all {
		if !acc.event(data, yield) {
			return
		}
		if acc.terminal() {
			break
		}
	}
	acc.end(ctx, &ev, body, yield)
}

// eventStream opens a successful response's body and returns it when it is
// an event stream; a whole JSON body goes to whole (see
// [httperr.EventStream]), unless it is an error object, which is the
// provider's error.
func (m *Model) eventStream(ctx context.Context, res *http.Response, requestID string, whole func([]byte), yield func(model.Chunk, error) bool) *httperr.Content {
	return httperr.EventStream(ctx, res, m.provider, requestID, func(b []byte) {
		if isErrorEvent(b) {
			yield(model.Chunk{}, httperr.StreamEvent(m.provider, requestID, b, m.cfg.APIKey))
			return
		}
		whole(b)
	}, yield, m.cfg.APIKey)
}

// events reads the data of an event stream's events, trimmed, skipping
// events without data, up to a [DONE] line, which sets done.
type events struct {
	dec  ssestream.Decoder
	done bool
}

// all yields the data of each event until [DONE] or the end of the stream.
func (e *events) all(yield func([]byte) bool) {
	for e.dec.Next() {
		data := bytes.TrimSpace(e.dec.Event().Data)
		if len(data) == 0 {
			continue
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			e.done = true
			return
		}
		if !yield(data) {
			return
		}
	}
}

// unfinished is the error of an event stream that ended before its terminal
// event: a broken connection, the end of ctx, or a body that holds no event
// at all; then, when the API has a terminal event (named by terminal), the
// stream's having stopped short; nil when terminal is "" and the stream just
// stopped.
func (m *Model) unfinished(ctx context.Context, requestID string, dec ssestream.Decoder, body *httperr.Content, terminal string) error {
	if err := dec.Err(); err != nil || ctx.Err() != nil {
		return m.streamError(ctx, requestID, err)
	}
	if terminal == "" {
		return body.Eventless(m.provider, requestID, m.cfg.APIKey)
	}
	return body.Cut(m.provider, requestID, terminal, m.cfg.APIKey)
}

// malformed is the permanent error of a body the adapter cannot use, with a
// snippet of it.
func (m *Model) malformed(requestID, what string, body []byte, err error) *model.Error {
	return httperr.Malformed(m.provider, requestID, what, body, err, m.cfg.APIKey)
}

// isErrorEvent reports whether a stream event is an error object rather than
// a chunk: {"error":...} (OpenAI and most servers) or {"object":"error",...}
// (vLLM).
func isErrorEvent(data []byte) bool {
	if !bytes.Contains(data, []byte(`"error"`)) {
		return false
	}
	var probe struct {
		Error  json.RawMessage `json:"error"`
		Object string          `json:"object"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	e := bytes.TrimSpace(probe.Error)
	return (len(e) > 0 && !bytes.Equal(e, []byte("null"))) || probe.Object == "error"
}
