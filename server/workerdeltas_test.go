package server_test

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/server/internal/runlog"
	"github.com/batonhq/baton/service"
)

// stamps records when a model streamed each text delta, in order.
type stamps struct {
	mu sync.Mutex
	at []time.Time
}

func (s *stamps) take() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.at
	s.at = nil
	return out
}

// withBackground adds network "bg": its agent calls a slow tool (handed
// to a worker), then answers slowAnswer, one word every 20 ms; st, if not
// nil, records when each word was streamed. workers is the process's
// --workers (0: none).
func withBackground(t testing.TB, st *stamps, workers int) servertest.Option {
	return func(o *servertest.Options) {
		sm := scripted.New("worker", []scripted.Step{
			{ToolCalls: []scripted.Call{{Name: "work", Arguments: json.RawMessage(`{}`)}}},
			{Text: slowAnswer},
		}, scripted.Options{ChunkWords: 1, ChunkDelay: 20 * time.Millisecond})
		var m model.Model = sm
		if st != nil {
			m = model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					for c, err := range sm.Stream(ctx, req) {
						if err == nil && c.Type == model.ChunkText && c.Text != "" {
							st.mu.Lock()
							st.at = append(st.at, time.Now())
							st.mu.Unlock()
						}
						if !yield(c, err) {
							return
						}
					}
				}
			})
		}
		tool := &agent.Tool{Name: "work", Description: "Works in the background.", Slow: true, Idempotent: true,
			Func: func(context.Context, json.RawMessage) (string, error) { return `{"done":true}`, nil }}
		net, err := agent.NewNetwork(agent.NetworkConfig{Name: "bg", Agents: []*agent.Agent{{Name: "worker", Model: m, Tools: []*agent.Tool{tool}}}})
		if err != nil {
			t.Fatal(err)
		}
		o.Service.Networks = append(o.Service.Networks, service.Definition{Network: net})
		o.Service.Workers = workers
	}
}

// TestWorkerDeltas: a replica without workers and a process that works
// continuations (a `baton worker`: here a second service, with its own
// connections and LISTEN) on one PostgreSQL database. A run handed to the
// background on the replica is resumed by the worker; a client of its
// thread on the replica, and a client of the run on the replica, get the
// text deltas the worker's run streams, live, in order, before its
// message, and the whole text, with strictly increasing ids. A client of
// the run that reconnects at a delta's id (Last-Event-ID) gets the rest of
// the run, the deltas after it included.
func TestWorkerDeltas(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	schema := testdb.Schema(t, url)
	a := servertest.SetupStore(t, testdb.Postgres(t, url, schema), withBackground(t, nil, 0))
	w := servertest.SetupStore(t, testdb.Postgres(t, url, schema), withBackground(t, nil, 4))
	thread := a.Thread(t, a.KeyA, "bg")
	_, onA := a.Stream(t, a.KeyA, "GET", "/v1/threads/"+thread+"/events", nil)
	servertest.Collect(t, onA, func(e servertest.Event) bool { return e.Type == "thread" })
	time.Sleep(300 * time.Millisecond) // the stream's interest announced
	posted := make(chan *servertest.Response, 1)
	go func() {
		posted <- a.Do(t, a.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "go"})
	}()
	// The run's stream on the replica, opened as soon as the thread's
	// stream names the run (before the worker resumes it).
	evs := servertest.Collect(t, onA, func(e servertest.Event) bool { return e.Type == "run_start" })
	runID, _ := evs[len(evs)-1].Data["run_id"].(string)
	if runID == "" {
		t.Fatalf("no run_start with a run_id: %v", servertest.Types(evs))
	}
	runEvents := "/v1/threads/" + thread + "/runs/" + runID + "/events"
	_, onRun := a.Stream(t, a.KeyA, "GET", runEvents, nil)
	for {
		evs = append(evs, servertest.Collect(t, onA, func(e servertest.Event) bool { return e.Type == "run_end" })...)
		if evs[len(evs)-1].Data["status"] == "completed" {
			break
		}
	}
	if r := <-posted; r.Status/100 != 2 {
		t.Fatalf("run: %d %s", r.Status, r.Body)
	}
	deltas := checkWorkerDeltas(t, "the replica's thread stream", evs)
	checkThreadIDs(t, "the replica", evs)
	t.Logf("the replica's thread stream got %d of the worker's 16 deltas", deltas)

	// The run's stream: it ends with the inline part's run_end
	// (suspended) or goes on across the resume; a client reconnects after
	// its last event until the run is completed.
	var runEvs []servertest.Event
	for {
		runEvs = append(runEvs, servertest.Collect(t, onRun, func(e servertest.Event) bool { return e.Type == "run_end" })...)
		if n := len(runEvs); n > 0 && runEvs[n-1].Data["status"] == "completed" {
			break
		}
		if n := len(runEvs); n == 0 || runEvs[n-1].Type != "run_end" {
			t.Fatalf("the run's stream ended before its run_end: %v", servertest.Types(runEvs))
		}
		_, onRun = a.Stream(t, a.KeyA, "GET", runEvents, nil, "Last-Event-ID", runEvs[len(runEvs)-1].ID)
	}
	deltas = checkWorkerDeltas(t, "the replica's run stream", runEvs)
	for i := 1; i < len(runEvs); i++ {
		if !runStreamLess(t, runEvs[i-1].ID, runEvs[i].ID) {
			t.Fatalf("the replica's run stream: ids not increasing at %d: %s %s then %s %s\n%s", i, runEvs[i-1].ID, runEvs[i-1].Type, runEvs[i].ID, runEvs[i].Type, dump(runEvs))
		}
	}
	t.Logf("the replica's run stream got %d of the worker's 16 deltas", deltas)

	// Reconnecting at a worker's delta: on the replica, the rest of the
	// run, the deltas after it in its log included, no event twice; on a
	// process that has not the delta in its log (here the worker's), the
	// run's stored events after the one the delta follows (its durable
	// base), rebuilt from the store.
	for i, e := range runEvs {
		if e.Type != "text_delta" {
			continue
		}
		if c, err := runlog.ParseCursor(e.ID); err != nil || c.Ext == 0 {
			t.Fatalf("a worker's delta in the run's stream with id %q (%v): want Seq.Sub.Ver.Ext", e.ID, err)
		}
		_, ch := a.Stream(t, a.KeyA, "GET", runEvents, nil, "Last-Event-ID", e.ID)
		rest := servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" })
		if want := runEvs[i+1:]; !slices.Equal(ids(rest), ids(want)) {
			t.Fatalf("reconnected at %s: got\n%s\nwant\n%s", e.ID, dump(rest), dump(want))
		}
		_, ch = w.Stream(t, w.KeyA, "GET", runEvents, nil, "Last-Event-ID", e.ID)
		rest = servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "run_end" && e.Data["status"] == "completed" })
		if want := folded(runEvs[i+1:]); !slices.Equal(ids(rest), ids(want)) {
			t.Fatalf("reconnected at %s on another process: got\n%s\nwant\n%s", e.ID, dump(rest), dump(want))
		}
		break
	}
}

// checkWorkerDeltas fails unless evs, a stream's events, hold most of the
// text deltas of slowAnswer, in order, after the stored events of the
// resumed run before them (its run_start and the tool's result) and before
// its message; it returns how many.
func checkWorkerDeltas(t *testing.T, name string, evs []servertest.Event) int {
	t.Helper()
	var sb strings.Builder
	deltas, afterMessage, resumed, result := 0, false, false, false
	for _, e := range evs {
		switch e.Type {
		case "run_start":
			resumed = resumed || e.Data["resumed"] == true
		case "tool_result":
			result = result || resumed
		case "text_delta":
			deltas++
			sb.WriteString(e.Data["delta"].(string))
			if afterMessage {
				t.Errorf("%s: a delta after the answer's message: %s", name, e.Raw)
			}
			if !result {
				t.Errorf("%s: a delta before the resumed run's stored run_start and tool result: %s", name, e.Raw)
			}
		case "message":
			if e.Data["text"] == slowAnswer {
				afterMessage = true
			}
		}
	}
	if deltas < 8 || !strings.HasSuffix(slowAnswer, sb.String()) || !afterMessage {
		for _, e := range evs {
			t.Logf("%s %s %.120s", e.ID, e.Type, e.Raw)
		}
		t.Fatalf("%s got %d deltas %q of the worker's run (want most of %q, then its message):\n%v", name, deltas, sb.String(), slowAnswer, servertest.Types(evs))
	}
	return deltas
}

// ids returns the ids of evs.
func ids(evs []servertest.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// BenchmarkWorkerDeltas measures what the text deltas of a continuation
// that a worker process executes add, in latency, to reach a client of its
// thread on a replica: a replica without workers and a worker process on
// one PostgreSQL database (two services, as two processes), a background
// run per iteration whose resumed answer streams sixteen deltas 20 ms
// apart in the worker; each delta's arrival at the client minus the moment
// the worker's model streamed it. It reports the p50 and p99 of that added
// latency (ms) and the share of the deltas the client got.
//
//	BATON_TEST_DATABASE_URL=… go test ./server -run '^$' -bench WorkerDeltas -benchtime 30x
func BenchmarkWorkerDeltas(b *testing.B) {
	url := testdb.URL(b)
	schema := testdb.Schema(b, url)
	st := &stamps{}
	ra := servertest.SetupStore(b, testdb.Postgres(b, url, schema), withBackground(b, nil, 0))
	servertest.SetupStore(b, testdb.Postgres(b, url, schema), withBackground(b, st, 4))
	var added []float64
	got, sent := 0, 0
	for b.Loop() {
		b.StopTimer()
		thread := ra.Thread(b, ra.KeyA, "bg")
		onA, closeA, err := timedStream(ra, ra.KeyA, "/v1/threads/"+thread+"/events")
		if err != nil {
			b.Fatal(err)
		}
		<-onA // the snapshot
		time.Sleep(100 * time.Millisecond)
		st.take()
		b.StartTimer()
		if r := ra.Do(b, ra.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "go"}); r.Status/100 != 2 {
			b.Fatalf("run: %d %s", r.Status, r.Body)
		}
		var arrived []time.Time
		ends := 0
		for e := range onA {
			if e.typ == "text_delta" {
				arrived = append(arrived, e.at)
			}
			if e.typ == "run_end" {
				if ends++; ends == 2 { // the suspension's, then the worker's
					break
				}
			}
		}
		b.StopTimer()
		closeA()
		streamed := st.take()
		sent += len(streamed)
		got += len(arrived)
		// The client got the last len(arrived) deltas (a batch may be
		// dropped at the start, never in the middle).
		for i, at := range arrived {
			if j := len(streamed) - len(arrived) + i; j >= 0 {
				added = append(added, float64(at.Sub(streamed[j]).Microseconds())/1000)
			}
		}
		b.StartTimer()
	}
	reportDeltas(b, "the client", added, got, sent)
}
