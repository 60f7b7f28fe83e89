package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/sse"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
)

// api is a client of `baton serve`'s HTTP API (docs/api.md) that looks the
// server's address up at each request: serve may have restarted elsewhere.
type api struct {
	key  string
	base func() string // "" while the server is down
}

// errDown: the server is down (between a kill and its restart).
var errDown = errors.New("baton serve is down")

// httpError is an answer outside 2xx.
type httpError struct {
	status int
	body   string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.status, strings.TrimSpace(e.body))
}

func (a *api) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	base := a.base()
	if base == "" {
		return nil, errDown
	}
	return send(ctx, http.DefaultClient, a.key, method, base+path, body)
}

// send sends a request with API key key and body as JSON (if not nil)
// through client; an answer outside 2xx is an *httpError.
func send(ctx context.Context, client *http.Client, key, method, url string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, &httpError{status: resp.StatusCode, body: string(b)}
	}
	return resp, nil
}

// do sends a request and decodes the JSON answer into out (if not nil),
// within 30 seconds.
func (a *api) do(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := a.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (a *api) createThread(ctx context.Context) (string, error) {
	var th struct {
		ID string `json:"id"`
	}
	err := a.do(ctx, http.MethodPost, "/v1/threads", map[string]string{"network": "shop"}, &th)
	return th.ID, err
}

// threadRun is GET /v1/threads/{id}'s latest run.
type threadRun struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (a *api) latestRun(ctx context.Context, thread string) (*threadRun, error) {
	var th struct {
		Run *threadRun `json:"run"`
	}
	err := a.do(ctx, http.MethodGet, "/v1/threads/"+thread, nil, &th)
	return th.Run, err
}

// runResult is GET /v1/threads/{id}/runs/{run_id}.
type runResult struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Output string `json:"output"`
}

func (a *api) run(ctx context.Context, thread, run string) (*runResult, error) {
	var r runResult
	err := a.do(ctx, http.MethodGet, "/v1/threads/"+thread+"/runs/"+run, nil, &r)
	return &r, err
}

// stream starts a run of input on thread as an SSE stream: started gets the
// run's id (Baton-Run-Id) as soon as the answer's headers arrive, then the
// events are read until stop accepts one (nil: the end of the stream). It
// returns the run's id ("" when the run did not start) and the events read,
// with the error that ended the stream early.
func (a *api) stream(ctx context.Context, thread, input string, started func(run string), stop func(runner.Event) bool) (string, []runner.Event, error) {
	resp, err := a.request(ctx, http.MethodPost, "/v1/threads/"+thread+"/runs", map[string]any{"input": input, "stream": true})
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	run := resp.Header.Get("Baton-Run-Id")
	if started != nil {
		started(run)
	}
	evs, err := readEvents(resp.Body, stop)
	return run, evs, err
}

// events returns the events of a run from its first
// (GET /v1/threads/{id}/runs/{run_id}/events), until the run is final.
func (a *api) events(ctx context.Context, thread, run string) ([]runner.Event, error) {
	resp, err := a.request(ctx, http.MethodGet, "/v1/threads/"+thread+"/runs/"+run+"/events", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readEvents(resp.Body, nil)
}

// readEvents reads an SSE stream until stop accepts an event or the stream
// ends. Events that are not the runner's (draft) are left out.
func readEvents(body io.Reader, stop func(runner.Event) bool) ([]runner.Event, error) {
	var evs []runner.Event
	rd := sse.NewReader(body, 0)
	for {
		se, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		ev, err := decodeEvent(se.Type, se.Data)
		if err != nil {
			return evs, err
		}
		if ev == nil {
			continue
		}
		evs = append(evs, ev)
		if stop != nil && stop(ev) {
			return evs, nil
		}
	}
}

// decodeEvent decodes a run event, as `baton run --json` prints it and SSE
// carries it, into the runner's type for typ; it returns nil for events
// of other types (the server's draft).
func decodeEvent(typ string, data []byte) (runner.Event, error) {
	var ev runner.Event
	switch runner.EventType(typ) {
	case runner.TypeRunStart:
		ev = new(runner.RunStartEvent)
	case runner.TypeAgentStart:
		ev = new(runner.AgentStartEvent)
	case runner.TypeTextDelta:
		ev = new(runner.TextDeltaEvent)
	case runner.TypeMessage:
		ev = new(runner.MessageEvent)
	case runner.TypeToolCall:
		ev = new(runner.ToolCallEvent)
	case runner.TypeToolResult:
		ev = new(runner.ToolResultEvent)
	case runner.TypeTransfer:
		ev = new(runner.TransferEvent)
	case runner.TypeTransferRejected:
		ev = new(runner.TransferRejectedEvent)
	case runner.TypeInterrupt:
		ev = new(runner.InterruptEvent)
	case runner.TypeSuspended:
		ev = new(runner.SuspendedEvent)
	case runner.TypeRunEnd:
		ev = new(runner.RunEndEvent)
	case runner.TypeError:
		ev = new(runner.ErrorEvent)
	default:
		return nil, nil
	}
	if err := json.Unmarshal(data, ev); err != nil {
		return nil, fmt.Errorf("event %s %s: %w", typ, data, err)
	}
	return ev, nil
}

// decodeLine decodes a line of `baton run --json`; ok is false for a line
// that is not an event (a log line).
func decodeLine(line string) (runner.Event, bool) {
	var h runner.Header
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &h) != nil {
		return nil, false
	}
	ev, err := decodeEvent(string(h.Type), []byte(line))
	return ev, err == nil && ev != nil
}

// firstEnd reports whether ev is a run_end, the hand-over's included.
func firstEnd(ev runner.Event) bool {
	_, ok := ev.(*runner.RunEndEvent)
	return ok
}

// first returns the run_start that opens evs.
func first(evs []runner.Event) (*runner.RunStartEvent, bool) {
	if len(evs) == 0 {
		return nil, false
	}
	start, ok := evs[0].(*runner.RunStartEvent)
	return start, ok
}

// effectResults returns the results of the calls of the tools that the
// effects service implements (lookup, ship) among evs.
func effectResults(evs []runner.Event) []*runner.ToolResultEvent {
	var out []*runner.ToolResultEvent
	for _, ev := range evs {
		if r, ok := ev.(*runner.ToolResultEvent); ok && (r.Name == "lookup" || r.Name == "ship") {
			out = append(out, r)
		}
	}
	return out
}

// completed reports whether evs end with a run_end of a completed run.
func completed(evs []runner.Event) bool {
	if len(evs) == 0 {
		return false
	}
	end, ok := evs[len(evs)-1].(*runner.RunEndEvent)
	return ok && end.Status == runstate.StatusCompleted
}
