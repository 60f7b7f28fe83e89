package a2aremote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/batonhq/baton/a2aremote"
	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
)

// remote1 is the fake agent of protocol 1.0: a card with
// supportedInterfaces only (no url, preferredTransport or
// protocolVersion), and a JSON-RPC endpoint that answers the 1.0 methods
// (converted by a2av1 onto the SDK's 0.3 handler) and nothing else. Its
// executor is gated: each word of "slow" after the first waits for
// exec.release.
type remote1 struct {
	srv  *httptest.Server
	exec *executor

	mu       sync.Mutex
	methods  []string // every method called, in order
	versions []string // the A2A-Version header of each call
	cancels  []string // the task ids of CancelTask
}

func newRemote1(t *testing.T) *remote1 {
	t.Helper()
	r := &remote1{exec: &executor{gate: make(chan struct{}, 8)}}
	h := a2asrv.NewHandler(r.exec)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "fake1", "description": "A fake 1.0 agent.", "version": "1",
			"supportedInterfaces": []a2av1.Interface{{URL: r.srv.URL + "/rpc", ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}},
			"capabilities":        map[string]any{"streaming": true}, "defaultInputModes": []string{"text/plain"},
			"defaultOutputModes": []string{"text/plain"}, "skills": []any{}})
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, req *http.Request) {
		var rpc struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(req.Body).Decode(&rpc); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.methods, r.versions = append(r.methods, rpc.Method), append(r.versions, req.Header.Get("A2A-Version"))
		r.mu.Unlock()
		result, stream, err := r.call(req.Context(), rpc.Method, rpc.Params, h)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case err != nil:
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": rpc.ID, "error": map[string]any{"code": -32601, "message": err.Error()}})
		case stream != nil:
			w.Header().Set("Content-Type", "text/event-stream")
			for ev, err := range stream {
				if err != nil {
					return
				}
				out, err := a2av1.ToResponse(ev)
				if err != nil {
					return
				}
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpc.ID, "result": out})
				if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": rpc.ID, "result": result})
		}
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

// call answers one 1.0 method with h: a result, or a stream of events.
func (r *remote1) call(ctx context.Context, method string, raw json.RawMessage, h a2asrv.RequestHandler) (any, iter.Seq2[a2a.Event, error], error) {
	switch method {
	case "SendMessage", "SendStreamingMessage":
		var p a2av1.SendParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, err
		}
		sp, err := a2av1.FromSend(&p)
		if err != nil {
			return nil, nil, err
		}
		if method == "SendStreamingMessage" {
			return nil, h.OnSendMessageStream(ctx, sp), nil
		}
		res, err := h.OnSendMessage(ctx, sp)
		if err != nil {
			return nil, nil, err
		}
		out, err := a2av1.ToResponse(res)
		return out, nil, err
	case "GetTask", "CancelTask", "SubscribeToTask":
		var p a2av1.TaskParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, nil, err
		}
		var (
			task *a2a.Task
			err  error
		)
		switch method {
		case "SubscribeToTask":
			return nil, h.OnResubscribeToTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(p.ID)}), nil
		case "GetTask":
			task, err = h.OnGetTask(ctx, &a2a.TaskQueryParams{ID: a2a.TaskID(p.ID), HistoryLength: p.HistoryLength})
		default:
			r.mu.Lock()
			r.cancels = append(r.cancels, p.ID)
			r.mu.Unlock()
			// (The SDK's handler cancels a task once its execution
			// ends: let it end.)
			r.exec.release(8)
			task, err = h.OnCancelTask(ctx, &a2a.TaskIDParams{ID: a2a.TaskID(p.ID)})
		}
		if err != nil {
			return nil, nil, err
		}
		return a2av1.ToTask(task), nil, nil
	}
	return nil, nil, fmt.Errorf("method %q not found", method)
}

func (r *remote1) calls() (methods, versions, cancels []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.methods), slices.Clone(r.versions), slices.Clone(r.cancels)
}

func (r *remote1) agent(t *testing.T) *a2aremote.Agent {
	t.Helper()
	a, err := a2aremote.New(netspec.Remote{Agent: "billing", Spec: netspec.RemoteSpec{Card: r.srv.URL, Reconnect: netspec.Duration(time.Second)}},
		a2aremote.Options{Backoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A remote agent whose card declares only supportedInterfaces is called
// with protocol 1.0 (SendStreamingMessage, A2A-Version 1.0), and its
// answer streams: the remote sends each word only once the turn has
// yielded the one before (the gate), so an answer delivered whole at its
// end would leave the remote waiting.
func TestRemoteV1Streams(t *testing.T) {
	t.Parallel()
	r := newRemote1(t)
	deltas, msg, _, err := stream(t.Context(), r.agent(t), request(message.User("slow")), func(string) { r.exec.release(1) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(deltas, []string{"one ", "two ", "three"}) || msg.Text() != "one two three" || meta(msg)["state"] != "completed" {
		t.Errorf("deltas %q, answer %q, metadata %v", deltas, msg.Text(), msg.Metadata)
	}
	if n := r.exec.gateTimeouts.Load(); n != 0 {
		t.Errorf("the remote waited %d times for a word to reach the turn: not streamed", n)
	}
	methods, versions, _ := r.calls()
	if !slices.Equal(methods, []string{"SendStreamingMessage"}) || versions[0] != a2av1.Version {
		t.Errorf("methods %q, A2A-Version %q", methods, versions)
	}
}

// A run stopped (model.ErrStopRequested) while a 1.0 remote works sends
// CancelTask for the remote's task; a call cut for another reason (a
// shutdown, which hands the run to another process) leaves the task going.
func TestRemoteV1Cancel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cause  error
		cancel bool
	}{{"Stopped", model.ErrStopRequested, true}, {"Shutdown", context.Canceled, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRemote1(t)
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			deltas, _, _, err := stream(ctx, r.agent(t), request(message.User("slow")), func(string) { cancel(tc.cause) })
			if err == nil {
				t.Fatalf("the cut turn answered: %q", deltas)
			}
			if strings.Join(deltas, "") != "one " {
				t.Errorf("deltas %q, want the first word only", deltas)
			}
			var cancels []string
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, _, cancels = r.calls(); len(cancels) > 0 || !tc.cancel {
					break
				}
			}
			if !tc.cancel {
				time.Sleep(200 * time.Millisecond) // a CancelTask would have been sent by now
				_, _, cancels = r.calls()
				r.exec.release(8)
				if len(cancels) != 0 {
					t.Errorf("CancelTask %q sent for a run that was not stopped (%v)", cancels, err)
				}
				return
			}
			tasks := r.exec.taskIDs()
			if len(cancels) != 1 || len(tasks) != 1 || cancels[0] != tasks[0] {
				t.Errorf("CancelTask for %q, the remote's tasks %q (turn error %v)", cancels, tasks, err)
			}
			if !errors.Is(err, context.Canceled) && !errors.Is(err, model.ErrStopRequested) {
				t.Errorf("turn error %v", err)
			}
		})
	}
}
