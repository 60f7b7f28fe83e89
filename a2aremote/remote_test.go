package a2aremote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/batonhq/baton/a2aremote"
	"github.com/batonhq/baton/internal/memotest"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/netspec"
)

// executor is the fake remote agent; what it does depends on the input:
// "slow" streams three words 150ms apart, "ask" asks a question (and
// completes when answered), "fail" fails, anything else streams
// "Hello world" at once. The answer repeats the history it was given.
type executor struct {
	mu     sync.Mutex
	inputs []*a2a.Message
	tasks  []string // the task id of each execution
	// gate, when set, replaces the delay of "slow": each word after the
	// first waits for a signal on it (at most gateWait, counted in
	// gateTimeouts).
	gate         chan struct{}
	gateTimeouts atomic.Int32
}

const gateWait = 5 * time.Second

// release lets n more words of a gated "slow" answer go.
func (e *executor) release(n int) {
	for range n {
		select {
		case e.gate <- struct{}{}:
		default:
		}
	}
}

func (e *executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	e.mu.Lock()
	e.inputs = append(e.inputs, rc.Message)
	e.tasks = append(e.tasks, string(rc.TaskID))
	e.mu.Unlock()
	write := func(ev a2a.Event) error { return q.Write(ctx, ev) }
	// (A status update, not the submitted Task: the SDK's in-memory
	// handler mutates a Task event while its SSE writer encodes it, a data
	// race in a2a-go v0.3.3.)
	if err := write(a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	input := ""
	for _, p := range rc.Message.Parts {
		if t, ok := p.(a2a.TextPart); ok {
			input += t.Text
		}
	}
	words := []string{"Hello ", "world"}
	delay := time.Duration(0)
	switch {
	case rc.StoredTask != nil:
		words = []string{"Noted: " + input}
	case input == "slow":
		words, delay = []string{"one ", "two ", "three"}, 150*time.Millisecond
	case input == "ask":
		ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateInputRequired, a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "Which order?"}))
		ev.Final = true
		return write(ev)
	case input == "fail":
		ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateFailed, a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "boom"}))
		ev.Final = true
		return write(ev)
	}
	var id a2a.ArtifactID
	for i, w := range words {
		switch {
		case i > 0 && delay > 0 && e.gate != nil:
			select {
			case <-e.gate:
			case <-time.After(gateWait):
				e.gateTimeouts.Add(1)
			}
		case i > 0 && delay > 0:
			time.Sleep(delay)
		}
		var ev *a2a.TaskArtifactUpdateEvent
		if id == "" {
			ev = a2a.NewArtifactEvent(rc, a2a.TextPart{Text: w})
			id = ev.Artifact.ID
		} else {
			ev = a2a.NewArtifactUpdateEvent(rc, id, a2a.TextPart{Text: w})
		}
		if err := write(ev); err != nil {
			return err
		}
	}
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCompleted, nil)
	ev.Final = true
	ev.Metadata = map[string]any{"baton": map[string]any{"usage": map[string]any{"input_tokens": 7, "output_tokens": 3}}}
	return write(ev)
}

func (e *executor) taskIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.tasks)
}

func (e *executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil))
}

type remote struct {
	srv    *httptest.Server
	exec   *executor
	sends  atomic.Int32 // message/send and message/stream requests
	gets   atomic.Int32
	stream bool
	token  string
}

// newRemote serves the fake agent: its card at /.well-known/agent-card.json
// and JSON-RPC at /rpc, which need "Authorization: Bearer secret".
func newRemote(t *testing.T, streaming bool) *remote {
	t.Helper()
	r := &remote{exec: &executor{}, stream: streaming, token: "Bearer secret"}
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(r.exec))
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/agent-card.json", func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != r.token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		card := a2a.AgentCard{Name: "fake", Description: "A fake agent.", URL: r.srv.URL + "/rpc", PreferredTransport: a2a.TransportProtocolJSONRPC,
			ProtocolVersion: "0.3.0", Capabilities: a2a.AgentCapabilities{Streaming: r.stream}, DefaultInputModes: []string{"text/plain"},
			DefaultOutputModes: []string{"text/plain"}, Skills: []a2a.AgentSkill{}}
		_ = json.NewEncoder(w).Encode(card)
	})
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != r.token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var head struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &head)
		switch head.Method {
		case "message/send", "message/stream":
			r.sends.Add(1)
		case "tasks/get":
			r.gets.Add(1)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		rpc.ServeHTTP(w, req)
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *remote) agent(t *testing.T, reconnect time.Duration) *a2aremote.Agent {
	t.Helper()
	a, err := a2aremote.New(netspec.Remote{Agent: "billing", Spec: netspec.RemoteSpec{Card: r.srv.URL, Headers: map[string]string{"Authorization": "Bearer ${KEY}"}, Reconnect: netspec.Duration(reconnect)}},
		a2aremote.Options{LookupEnv: func(k string) (string, bool) { return "secret", k == "KEY" }, Backoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func request(msgs ...message.Message) *model.Request {
	return &model.Request{Agent: "billing", Messages: msgs}
}

// stream runs one turn; onDelta is called with each delta.
func stream(ctx context.Context, a *a2aremote.Agent, req *model.Request, onDelta func(string)) (deltas []string, msg *message.Message, usage message.Usage, err error) {
	for c, err := range a.Stream(ctx, req) {
		if err != nil {
			return deltas, nil, usage, err
		}
		switch c.Type {
		case model.ChunkText:
			deltas = append(deltas, c.Text)
			if onDelta != nil {
				onDelta(c.Text)
			}
		case model.ChunkDone:
			c.Message.Agent = req.Agent // as the runner records it
			return deltas, c.Message, c.Usage, nil
		}
	}
	return deltas, nil, usage, errors.New("no done chunk")
}

func meta(m *message.Message) map[string]any {
	md, _ := m.Metadata[a2aremote.MetadataKey].(map[string]any)
	return md
}

func TestStreamingAnswer(t *testing.T) {
	t.Parallel()
	r := newRemote(t, true)
	a := r.agent(t, time.Second)
	m := memotest.New("run/turn/1", nil)
	hist := request(message.User("I was charged twice"), message.Assistant("triage", "Let me get billing."), message.User("hello"))
	hist.System = "You got a transfer."
	deltas, msg, usage, err := stream(m.Context(t.Context()), a, hist, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "") != "Hello world" || msg.Text() != "Hello world" || usage.InputTokens != 7 || usage.OutputTokens != 3 {
		t.Errorf("deltas %q, answer %q, usage %+v", deltas, msg.Text(), usage)
	}
	md := meta(msg)
	if md["state"] != "completed" || md["task_id"] == "" || md["context_id"] == "" {
		t.Errorf("metadata %v", msg.Metadata)
	}
	if !strings.Contains(string(m.Value()), md["task_id"].(string)) {
		t.Errorf("memo %s does not name task %v", m.Value(), md["task_id"])
	}
	// The first contact carried the history and the system prompt.
	in := r.exec.inputs[0]
	if len(in.Parts) != 2 {
		t.Fatalf("parts sent: %+v", in.Parts)
	}
	data, _ := json.Marshal(in.Parts[1].(a2a.DataPart).Data)
	if !strings.Contains(string(data), "You got a transfer.") || !strings.Contains(string(data), "I was charged twice") || strings.Contains(string(data), `"hello"`) {
		t.Errorf("history part %s", data)
	}

	// The next turn goes to the same context, without the history.
	next := request(message.User("I was charged twice"), *msg, message.User("thanks"))
	if _, _, _, err := stream(t.Context(), a, next, nil); err != nil {
		t.Fatal(err)
	}
	if in := r.exec.inputs[1]; in.ContextID != md["context_id"] || in.TaskID != "" || len(in.Parts) != 1 {
		t.Errorf("second message %+v", in)
	}
}

// TestPickUpTheTask: a turn whose memo names a task (a retry, a resumed
// run) follows it instead of sending the message again.
func TestPickUpTheTask(t *testing.T) {
	t.Parallel()
	r := newRemote(t, true)
	a := r.agent(t, time.Second)
	m := memotest.New("run/turn/1", nil)
	ctx, cancel := context.WithCancel(m.Context(t.Context()))
	// The process dies after the first word.
	_, _, _, err := stream(ctx, a, request(message.User("slow")), func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first attempt: %v", err)
	}
	if m.Value() == nil {
		t.Fatal("no memo saved")
	}
	deltas, msg, _, err := stream(m.Context(t.Context()), r.agent(t, time.Second), request(message.User("slow")), nil)
	if err != nil {
		t.Fatal(err)
	}
	// (The deltas may miss a word: this fake remote does not replay what
	// happened between tasks/get and tasks/resubscribe; baton's A2A server
	// does.)
	if msg.Text() != "one two three" || !strings.HasPrefix(strings.Join(deltas, ""), "one ") {
		t.Errorf("picked up: deltas %q, answer %q", deltas, msg.Text())
	}
	if n := r.sends.Load(); n != 1 {
		t.Errorf("%d messages sent, want 1", n)
	}
}

// TestStreamBreaks: the remote's connections are cut during the answer;
// the turn follows the task again and the answer is whole.
func TestStreamBreaks(t *testing.T) {
	t.Parallel()
	r := newRemote(t, true)
	a := r.agent(t, 5*time.Second)
	var once sync.Once
	deltas, msg, _, err := stream(t.Context(), a, request(message.User("slow")), func(string) {
		once.Do(func() { go r.srv.CloseClientConnections() })
	})
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text() != "one two three" || !strings.HasPrefix(strings.Join(deltas, ""), "one ") {
		t.Errorf("deltas %q, answer %q", deltas, msg.Text())
	}
	if r.gets.Load() == 0 || r.sends.Load() != 1 {
		t.Errorf("%d tasks/get, %d sends", r.gets.Load(), r.sends.Load())
	}
}

// TestRemoteGone: the remote does not come back within the reconnect
// window: a transient model error, the memo kept for a later resume.
func TestRemoteGone(t *testing.T) {
	t.Parallel()
	r := newRemote(t, true)
	a := r.agent(t, 300*time.Millisecond)
	m := memotest.New("run/turn/1", nil)
	var once sync.Once
	_, _, _, err := stream(m.Context(t.Context()), a, request(message.User("slow")), func(string) {
		once.Do(func() { r.token = "revoked"; go r.srv.CloseClientConnections() })
	})
	var me *model.Error
	if !errors.As(err, &me) || !me.Transient || !strings.Contains(err.Error(), "could not be followed") {
		t.Fatalf("error %v", err)
	}
	if m.Value() == nil {
		t.Error("memo lost")
	}
}

func TestInputRequiredAndFailure(t *testing.T) {
	t.Parallel()
	r := newRemote(t, true)
	a := r.agent(t, time.Second)
	_, msg, _, err := stream(t.Context(), a, request(message.User("ask")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Text() != "Which order?" || meta(msg)["state"] != "input-required" {
		t.Fatalf("answer %q %v", msg.Text(), msg.Metadata)
	}
	time.Sleep(100 * time.Millisecond) // the SDK's in-memory server ends the execution after its final event
	_, msg2, _, err := stream(t.Context(), a, request(message.User("ask"), *msg, message.User("order 1234")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg2.Text() != "Noted: order 1234" || meta(msg2)["task_id"] != meta(msg)["task_id"] {
		t.Errorf("answer to the question: %q %v", msg2.Text(), msg2.Metadata)
	}

	_, _, _, err = stream(t.Context(), a, request(message.User("fail")), nil)
	var me *model.Error
	if !errors.As(err, &me) || me.Transient || !strings.Contains(err.Error(), "is failed: boom") {
		t.Errorf("failed task: %v", err)
	}
}

func TestNonStreamingCard(t *testing.T) {
	t.Parallel()
	r := newRemote(t, false)
	_, msg, _, err := stream(t.Context(), r.agent(t, time.Second), request(message.User("hello")), nil)
	if err != nil || msg.Text() != "Hello world" {
		t.Fatalf("answer %v, %v", msg, err)
	}
}

func TestCardProblems(t *testing.T) {
	t.Parallel()
	r := newRemote(t, true)
	r.token = "other"
	_, _, _, err := stream(t.Context(), r.agent(t, time.Second), request(message.User("hello")), nil)
	var me *model.Error
	if !errors.As(err, &me) || me.Transient || !strings.Contains(err.Error(), "401") {
		t.Errorf("card refused: %v", err)
	}
	_, err = a2aremote.New(netspec.Remote{Agent: "x", Spec: netspec.RemoteSpec{Card: "http://h", Headers: map[string]string{"A": "${NOPE}"}}}, a2aremote.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err == nil || !strings.Contains(err.Error(), "NOPE is not set") {
		t.Errorf("missing variable: %v", err)
	}
}
