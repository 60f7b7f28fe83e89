package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/store"
)

// slowAnswer streams a word every 20ms.
const slowAnswer = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"

// withSlow adds the network "slow": one agent that answers every message
// with slowAnswer, a word at a time, 60 ms apart: about a second in all,
// so that a request made after its first word (busyThread) finds it still
// running even on a loaded machine with -race (at 20 ms apart, 320 ms in
// all, CI once saw the interrupted run end before the interrupt came).
func withSlow(t testing.TB) servertest.Option {
	return func(o *servertest.Options) {
		m := scripted.New("talker", nil, scripted.Options{ChunkWords: 1, ChunkDelay: 60 * time.Millisecond, Reply: slowAnswer})
		net, err := agent.NewNetwork(agent.NetworkConfig{Name: "slow", Agents: []*agent.Agent{{Name: "talker", Model: m}}})
		if err != nil {
			t.Fatal(err)
		}
		o.Service.Networks = append(o.Service.Networks, service.Definition{Network: net})
	}
}

// TestMultitask: POST /v1/threads/{id}/runs with each multitask_strategy
// on a busy thread, on SQLite and PostgreSQL.
func TestMultitask(t *testing.T) {
	t.Parallel()
	servertest.Each(t, testMultitask, withSlow)
}

// message is a stored message as GET …/messages lists it.
type listed struct {
	Role     string
	Text     string
	Metadata map[string]any
}

func messages(t *testing.T, b *servertest.Bundle, thread string) []string {
	t.Helper()
	var page struct{ Data []listed }
	b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread+"/messages?limit=1000", nil).JSON(t, &page)
	var out []string
	for _, m := range page.Data {
		line := m.Role + ":" + m.Text
		if m.Metadata["partial"] == true {
			line += " [partial]"
		}
		out = append(out, line)
	}
	return out
}

// busyThread returns a thread whose run (the first message "question")
// streams, and the channel of that stream's events.
func busyThread(t *testing.T, b *servertest.Bundle) (thread string, events <-chan servertest.Event) {
	t.Helper()
	thread = b.Thread(t, b.KeyA, "slow")
	resp, ch := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "question", "stream": true})
	if resp.StatusCode != 200 {
		t.Fatalf("busy run: %d", resp.StatusCode)
	}
	servertest.Collect(t, ch, func(e servertest.Event) bool { return e.Type == "text_delta" })
	return thread, ch
}

// checkStopAudited fails unless the thread's audit log holds one cancel:
// the busy run stopped by the new run newRun's strategy, by key A.
func checkStopAudited(t *testing.T, b *servertest.Bundle, thread, strategy string, newRun any) {
	t.Helper()
	var l auditList
	if r := b.Do(t, b.KeyA, "GET", "/v1/audit?kind=run.cancel&thread_id="+thread, nil); r.Status != http.StatusOK {
		t.Fatalf("GET /v1/audit: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &l)
	}
	if len(l.Data) != 1 {
		t.Fatalf("audit of the %s: %d cancels, want 1: %+v", strategy, len(l.Data), l.Data)
	}
	e := l.Data[0]
	var d struct {
		Reason    string `json:"reason"`
		StoppedBy string `json:"stopped_by"`
	}
	if err := json.Unmarshal(e.Detail, &d); err != nil || d.Reason != strategy || d.StoppedBy != newRun || e.RunID == "" || e.RunID == newRun ||
		e.KeyID == "" || e.RequestID == "" || e.Actor != "api_key" {
		t.Fatalf("audit of the %s: %+v %s", strategy, e, e.Detail)
	}
}

// waitMessages waits until the thread's messages are want.
func waitMessages(t *testing.T, b *servertest.Bundle, thread string, want ...string) {
	t.Helper()
	servertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() (bool, string) {
		got := messages(t, b, thread)
		return strings.Join(got, "|") == strings.Join(want, "|"), fmt.Sprintf("messages %q, want %q", got, want)
	})
}

func testMultitask(t *testing.T, b *servertest.Bundle) {
	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		thread := b.Thread(t, b.KeyA, "slow")
		r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "hi", "multitask_strategy": "replace"})
		if r.Status != 400 || !strings.Contains(string(r.Body), `"param":"multitask_strategy"`) {
			t.Fatalf("unknown strategy: %d %s", r.Status, r.Body)
		}
	})
	t.Run("Reject", func(t *testing.T) {
		t.Parallel()
		thread, ch := busyThread(t, b)
		for _, strat := range []string{"", "reject"} {
			r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "second", "multitask_strategy": strat})
			if r.Status != http.StatusConflict || r.ErrType(t) != "thread_busy" {
				t.Fatalf("reject %q: %d %s", strat, r.Status, r.Body)
			}
		}
		servertest.Collect(t, ch, nil)
		waitMessages(t, b, thread, "user:question", "assistant:"+slowAnswer)
	})
	t.Run("Enqueue", func(t *testing.T) {
		t.Parallel()
		thread, ch := busyThread(t, b)
		var runs []string
		for i, input := range []string{"second", "third"} {
			r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": input, "multitask_strategy": "enqueue"})
			var run struct {
				ID, Status string
				Position   int
				EventsURL  string `json:"events_url"`
			}
			r.JSON(t, &run)
			if r.Status != http.StatusAccepted || run.Status != "queued" || run.Position != i+1 || r.Header.Get("Location") != run.EventsURL {
				t.Fatalf("enqueue %s: %d %s", input, r.Status, r.Body)
			}
			runs = append(runs, run.EventsURL)
		}
		// The queue is on the thread.
		var th struct {
			Metadata struct {
				Queue struct{ Runs []struct{ Input string } } `json:"queue"`
			} `json:"metadata"`
		}
		b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil).JSON(t, &th)
		if len(th.Metadata.Queue.Runs) != 2 || th.Metadata.Queue.Runs[0].Input != "second" {
			t.Fatalf("thread's queue: %+v", th.Metadata.Queue)
		}
		// A queued run's stream waits for it and follows it.
		_, q2 := b.Stream(t, b.KeyA, "GET", runs[1], nil)
		servertest.Collect(t, ch, nil)
		evs := servertest.Collect(t, q2, func(e servertest.Event) bool { return e.Type == "run_end" })
		if evs[0].Type != "run_start" || evs[len(evs)-1].Data["status"] != "completed" || evs[len(evs)-1].Data["output"] != slowAnswer {
			t.Fatalf("the queued run's stream: %v", servertest.Types(evs))
		}
		waitMessages(t, b, thread, "user:question", "assistant:"+slowAnswer, "user:second", "assistant:"+slowAnswer, "user:third", "assistant:"+slowAnswer)
	})
	t.Run("Interrupt", func(t *testing.T) {
		t.Parallel()
		thread, ch := busyThread(t, b)
		_, next := b.Stream(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "second", "multitask_strategy": "interrupt", "stream": true})
		busyEnd := servertest.Collect(t, ch, nil)
		end := busyEnd[len(busyEnd)-1]
		partial, _ := end.Data["output"].(string)
		stopped, _ := end.Data["stopped"].(map[string]any)
		if end.Type != "run_end" || end.Data["status"] != "cancelled" || partial == "" || partial == slowAnswer || stopped["reason"] != "interrupt" || stopped["run_id"] == "" {
			t.Fatalf("the interrupted run's end: %s %s", end.Type, end.Raw)
		}
		checkStopAudited(t, b, thread, "interrupt", stopped["run_id"])
		evs := servertest.Collect(t, next, func(e servertest.Event) bool { return e.Type == "run_end" })
		if evs[len(evs)-1].Data["output"] != slowAnswer {
			t.Fatalf("the new run's stream: %v", servertest.Types(evs))
		}
		waitMessages(t, b, thread, "user:question", "assistant:"+partial+" [partial]", "user:second", "assistant:"+slowAnswer)
	})
	t.Run("Rollback", func(t *testing.T) {
		t.Parallel()
		thread, ch := busyThread(t, b)
		r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "second", "multitask_strategy": "rollback"})
		if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"completed"`) {
			t.Fatalf("rollback: %d %s", r.Status, r.Body)
		}
		// The rolled-back run ends cancelled, naming what stopped it.
		busyEnd := servertest.Collect(t, ch, nil)
		end := busyEnd[len(busyEnd)-1]
		stopped, _ := end.Data["stopped"].(map[string]any)
		if end.Type != "run_end" || end.Data["status"] != "cancelled" || stopped["reason"] != "rollback" || stopped["run_id"] == "" {
			t.Fatalf("the rolled-back run's end: %s %s", end.Type, end.Raw)
		}
		checkStopAudited(t, b, thread, "rollback", stopped["run_id"])
		waitMessages(t, b, thread, "user:second", "assistant:"+slowAnswer)
		// The rolled-back messages stay in the store, marked.
		msgs, err := b.St.ListMessages(t.Context(), &store.ListMessagesParams{OwnerID: "alice", ThreadID: thread})
		if err != nil || len(msgs) != 4 || msgs[0].Metadata["rolled_back"] == nil {
			t.Fatalf("stored messages: %d, %v", len(msgs), err)
		}
	})
	for _, strat := range []string{"enqueue", "interrupt", "rollback"} {
		t.Run("TwoConcurrent_"+strat, func(t *testing.T) {
			t.Parallel()
			thread, ch := busyThread(t, b)
			var wg sync.WaitGroup
			status := make([]int, 2)
			for i := range 2 {
				wg.Go(func() {
					r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": fmt.Sprintf("post %d", i), "multitask_strategy": strat})
					status[i] = r.Status
				})
			}
			wg.Wait()
			for i, s := range status {
				if s != 200 && s != 202 {
					t.Fatalf("post %d: %d", i, s)
				}
			}
			servertest.Collect(t, ch, nil)
			// Both posts are in the thread (a rollback may remove the
			// other post's run: then one), the last answered in full, and
			// no run is left running.
			servertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() (bool, string) {
				got := messages(t, b, thread)
				posts := 0
				for _, m := range got {
					if strings.HasPrefix(m, "user:post ") {
						posts++
					}
				}
				var th struct {
					Run      struct{ Status string } `json:"run"`
					Metadata map[string]any          `json:"metadata"`
				}
				b.Do(t, b.KeyA, "GET", "/v1/threads/"+thread, nil).JSON(t, &th)
				wantPosts := 2
				if strat == "rollback" {
					wantPosts = posts // 1 or 2
				}
				done := posts >= 1 && posts == wantPosts && got[len(got)-1] == "assistant:"+slowAnswer && th.Run.Status == "completed" && th.Metadata["queue"] == nil
				return done, fmt.Sprintf("messages %q, run %s, queue %v", got, th.Run.Status, th.Metadata["queue"])
			})
		})
	}
}
