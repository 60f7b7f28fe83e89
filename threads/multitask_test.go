package threads_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
)

// longAnswer is streamed a word every 20ms: a run that is busy for a while.
const longAnswer = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"

// chatty is a network whose agent answers every message with longAnswer,
// slowly, and asks approval for "refund" when told "refund".
func chatty(t *testing.T) *runner.Runner {
	t.Helper()
	m := scripted.New("a", nil, scripted.Options{ChunkWords: 1, ChunkDelay: 20 * time.Millisecond, Reply: longAnswer,
		Rules: []scripted.Rule{{When: regexp.MustCompile("refund"), Steps: []scripted.Step{call("refund", `{}`), {Text: "refunded"}}}}})
	a := &agent.Agent{Name: "a", Model: m, Tools: []*agent.Tool{{Name: "refund", Func: func(context.Context, json.RawMessage) (string, error) {
		return "ok", nil
	}, RequireApproval: func(context.Context, json.RawMessage) bool { return true }}}}
	net, err := agent.NewNetwork(agent.NetworkConfig{Name: "chatty", Agents: []*agent.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{Network: net, Logger: slog.New(slog.DiscardHandler), Extensions: []runner.Extension{threads.InterruptExtension()}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newThread makes a thread with one finished turn.
func newThread(t *testing.T, svc *threads.Service) string {
	t.Helper()
	id, end, err := threadOf(t, svc.Turn(t.Context(), owner, "hello", threads.TurnOptions{}))
	if err != nil || end.Status != runstate.StatusCompleted {
		t.Fatalf("first turn: %v, %v", end, err)
	}
	return id
}

// busy starts a turn on thread in a goroutine and returns once its answer
// streams (or it waits for a decision); done gets its end.
func busy(t *testing.T, svc *threads.Service, thread, input string) (runID string, done chan *runner.RunEndEvent) {
	t.Helper()
	started := make(chan string, 1)
	done = make(chan *runner.RunEndEvent, 1)
	go func() {
		var end *runner.RunEndEvent
		id, sent := "", false
		for ev, err := range svc.Turn(context.Background(), owner, input, threads.TurnOptions{ThreadID: thread}) {
			if err != nil {
				end = &runner.RunEndEvent{Status: runstate.Status("error: " + err.Error())}
				break
			}
			switch e := ev.(type) {
			case *runner.RunStartEvent:
				id = e.RunID
			case *runner.TextDeltaEvent, *runner.InterruptEvent:
				if !sent {
					sent = true
					started <- id
				}
			case *runner.RunEndEvent:
				end = e
			}
		}
		if !sent {
			started <- ""
		}
		done <- end
	}()
	select {
	case runID = <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the busy turn did not start")
	}
	if runID == "" {
		t.Fatal("the busy turn ended before streaming")
	}
	return runID, done
}

// settled waits until every run of runIDs is completed or failed and the
// thread's queue is empty, and returns their final states.
func settled(t *testing.T, st store.Store, thread string, runIDs ...string) map[string]*runstate.State {
	t.Helper()
	ctx := store.ContextWithOwner(t.Context(), owner)
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := map[string]*runstate.State{}
		for _, id := range runIDs {
			cp, err := st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, RunID: id})
			if err == nil && cp.State.Status.Terminal() {
				out[id] = cp.State
			}
		}
		th, err := st.GetThread(ctx, &store.GetThreadParams{OwnerID: owner, ID: thread})
		if err != nil {
			t.Fatal(err)
		}
		if len(out) == len(runIDs) && len(threads.QueueOf(th)) == 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs not settled: %d of %d final, queue %+v", len(out), len(runIDs), threads.QueueOf(th))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// transcript is the thread's messages as "role:text" lines, rolled-back
// ones marked.
func transcript(t *testing.T, st store.Store, thread string) []string {
	t.Helper()
	msgs, err := st.ListMessages(t.Context(), &store.ListMessagesParams{OwnerID: owner, ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		line := string(m.Role) + ":" + m.Text()
		if threads.IsRolledBack(&m.Message) {
			line = "rolledback " + line
		}
		if m.Metadata[runner.PartialMetadata] == true {
			line += " [partial]"
		}
		out = append(out, line)
	}
	return out
}

// fixture is a thread with one finished turn and a second one streaming
// (r0, whose end done gets).
type fixture struct {
	st     store.Store
	svc    *threads.Service
	thread string
	r0     string
	done   chan *runner.RunEndEvent
}

func newFixture(t *testing.T, open func(t *testing.T) store.Store, input string) *fixture {
	t.Helper()
	f := &fixture{st: open(t)}
	f.svc = threads.New(f.st, chatty(t), nil)
	t.Cleanup(f.svc.Wait)
	f.thread = newThread(t, f.svc)
	f.r0, f.done = busy(t, f.svc, f.thread, input)
	return f
}

// post submits input with strategy s and checks that it was queued behind
// the busy run.
func (f *fixture) post(t *testing.T, input string, s threads.Strategy) *threads.Submission {
	t.Helper()
	sub, err := submit(t, f.svc, f.thread, input, s)
	if err != nil || !sub.Queued || sub.Busy != f.r0 {
		t.Fatalf("%s: %+v, %v", s, sub, err)
	}
	return sub
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("transcript %q, want %q", got, want)
	}
}

func submit(t *testing.T, svc *threads.Service, thread, input string, s threads.Strategy) (*threads.Submission, error) {
	t.Helper()
	return svc.Submit(t.Context(), owner, input, threads.TurnOptions{ThreadID: thread, RunID: runstate.NewRunID(), Strategy: s})
}

func TestParseStrategy(t *testing.T) {
	for _, s := range []string{"", "reject", "enqueue", "interrupt", "rollback"} {
		if _, err := threads.ParseStrategy(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := threads.ParseStrategy("replace"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("unknown strategy: %v, want ErrInvalid", err)
	}
}

// TestMultitask: each double-texting strategy on SQLite and PostgreSQL,
// with one post and with two concurrent ones.
func TestMultitask(t *testing.T) {
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		testMultitask(t, func(t *testing.T) store.Store { return open(t) })
	})
}

func testMultitask(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Reject", func(t *testing.T) {
		f := newFixture(t, open, "question")
		_, err := submit(t, f.svc, f.thread, "second", threads.Reject)
		var be *threads.BusyError
		if !errors.As(err, &be) || be.RunID != f.r0 {
			t.Fatalf("reject on a busy thread: %v", err)
		}
		if end := <-f.done; end.Status != runstate.StatusCompleted || end.Output != longAnswer {
			t.Fatalf("the busy run: %+v", end)
		}
		// A free thread: nothing to do, the caller runs the turn.
		if sub, err := submit(t, f.svc, f.thread, "third", threads.Reject); err != nil || sub.Queued {
			t.Fatalf("reject on a free thread: %+v, %v", sub, err)
		}
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question", "assistant:" + longAnswer})
	})
	t.Run("Enqueue", func(t *testing.T) {
		f := newFixture(t, open, "question")
		s1 := f.post(t, "second", threads.Enqueue)
		s2 := f.post(t, "third", threads.Enqueue)
		if s1.Position != 1 || s2.Position != 2 {
			t.Fatalf("positions %d, %d", s1.Position, s2.Position)
		}
		// A plain turn now finds the thread busy (its queue).
		if _, err := drain(t, f.svc.Turn(t.Context(), owner, "cut in", threads.TurnOptions{ThreadID: f.thread})); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a turn on a thread with a queue: %v", err)
		}
		<-f.done
		for id, s := range settled(t, f.st, f.thread, f.r0, s1.RunID, s2.RunID) {
			if s.Status != runstate.StatusCompleted || runner.Stopped(s) != "" {
				t.Fatalf("run %s: %s stopped %q", id, s.Status, runner.Stopped(s))
			}
		}
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question", "assistant:" + longAnswer,
			"user:second", "assistant:" + longAnswer, "user:third", "assistant:" + longAnswer})
	})
	t.Run("Interrupt", func(t *testing.T) {
		f := newFixture(t, open, "question")
		s1 := f.post(t, "second", threads.Interrupt)
		end := <-f.done
		if end.Status != runstate.StatusCancelled || end.Output == "" || end.Output == longAnswer ||
			end.Stopped == nil || *end.Stopped != (runner.Stop{Reason: "interrupt", RunID: s1.RunID}) {
			t.Fatalf("the interrupted run's end: %+v", end)
		}
		states := settled(t, f.st, f.thread, f.r0, s1.RunID)
		if runner.Stopped(states[f.r0]) != "interrupt" || runner.StoppedBy(states[f.r0]) != s1.RunID || runner.Stopped(states[s1.RunID]) != "" {
			t.Fatalf("stopped: %q, %q", runner.Stopped(states[f.r0]), runner.Stopped(states[s1.RunID]))
		}
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question",
			"assistant:" + end.Output + " [partial]", "user:second", "assistant:" + longAnswer})
	})
	t.Run("Rollback", func(t *testing.T) {
		f := newFixture(t, open, "question")
		s1 := f.post(t, "second", threads.Rollback)
		<-f.done
		states := settled(t, f.st, f.thread, f.r0, s1.RunID)
		if s := states[f.r0]; s.Status != runstate.StatusCancelled || s.Failure.Kind != threads.RolledBack || runner.Stopped(s) != "rollback" || runner.StoppedBy(s) != s1.RunID {
			t.Fatalf("rolled-back run: %s %+v", s.Status, s.Failure)
		}
		got := transcript(t, f.st, f.thread)
		if len(got) != 6 || !strings.HasPrefix(got[2], "rolledback user:question") || !strings.HasPrefix(got[3], "rolledback assistant:") ||
			got[4] != "user:second" || got[5] != "assistant:"+longAnswer {
			t.Fatalf("transcript %q", got)
		}
		// The next turn's history leaves the rolled-back messages out.
		for _, m := range states[s1.RunID].Messages {
			if m.Text() == "question" {
				t.Fatalf("the run after a rollback saw the rolled-back input: %+v", states[s1.RunID].Messages)
			}
		}
	})
	t.Run("InterruptWaitingForDecision", func(t *testing.T) {
		// The busy run waits for an approval: no process executes it; the
		// next run's first checkpoint stops it and supersedes its interrupt.
		f := newFixture(t, open, "refund please")
		if end := <-f.done; end.Status != runstate.StatusInterrupted {
			t.Fatalf("the run waiting for a decision: %+v", end)
		}
		s1 := f.post(t, "never mind", threads.Interrupt)
		states := settled(t, f.st, f.thread, f.r0, s1.RunID)
		if s := states[f.r0]; s.Status != runstate.StatusCancelled || runner.Stopped(s) != "interrupt" || runner.StoppedBy(s) != s1.RunID {
			t.Fatalf("the stopped run: %s %q", s.Status, runner.Stopped(s))
		}
		ints, err := f.st.ListInterrupts(t.Context(), &store.ListInterruptsParams{OwnerID: owner, ThreadID: f.thread})
		if err != nil || len(ints) != 1 || ints[0].Status != store.InterruptSuperseded {
			t.Fatalf("interrupts: %+v, %v", ints, err)
		}
	})
	t.Run("UnstartableLeavesTheQueue", func(t *testing.T) {
		// A queued run that cannot start (its agent is gone) leaves the
		// queue; the run behind it runs.
		f := newFixture(t, open, "question")
		bad, err := f.svc.Submit(t.Context(), owner, "to nobody", threads.TurnOptions{ThreadID: f.thread, RunID: runstate.NewRunID(), Agent: "gone", Strategy: threads.Enqueue})
		if err != nil || !bad.Queued {
			t.Fatalf("enqueue: %+v, %v", bad, err)
		}
		s2 := f.post(t, "second", threads.Enqueue)
		<-f.done
		settled(t, f.st, f.thread, f.r0, s2.RunID)
		equal(t, transcript(t, f.st, f.thread), []string{"user:hello", "assistant:" + longAnswer, "user:question", "assistant:" + longAnswer,
			"user:second", "assistant:" + longAnswer})
	})
	t.Run("EnqueueRacesTheEnd", func(t *testing.T) {
		// A run's end kicks its thread only when its final checkpoint saw
		// runs in the queue; a run enqueued after that is started by its
		// own Submit. Posts land at every moment of the busy run, its end
		// included: each is answered, none stays in the queue.
		f := newFixture(t, open, "question")
		want := []string{"user:hello", "assistant:" + longAnswer, "user:question", "assistant:" + longAnswer}
		for i := range 12 {
			r0, done := f.r0, f.done
			if i > 0 {
				r0, done = busy(t, f.svc, f.thread, "question")
				want = append(want, "user:question", "assistant:"+longAnswer)
			}
			time.Sleep(time.Duration(i) * 30 * time.Millisecond)
			input := fmt.Sprintf("post %d", i)
			o := threads.TurnOptions{ThreadID: f.thread, RunID: runstate.NewRunID(), Strategy: threads.Enqueue}
			sub, err := f.svc.Submit(t.Context(), owner, input, o)
			if err == nil && !sub.Queued {
				_, err = drain(t, f.svc.Turn(t.Context(), owner, input, o))
			}
			if err != nil {
				t.Fatalf("post %d: %v", i, err)
			}
			<-done
			for id, s := range settled(t, f.st, f.thread, r0, o.RunID) {
				if s.Status != runstate.StatusCompleted {
					t.Fatalf("post %d: run %s %s", i, id, s.Status)
				}
			}
			want = append(want, "user:"+input, "assistant:"+longAnswer)
		}
		equal(t, transcript(t, f.st, f.thread), want)
	})
	for _, strat := range []threads.Strategy{threads.Enqueue, threads.Interrupt, threads.Rollback} {
		t.Run("TwoConcurrent"+string(strat), func(t *testing.T) {
			f := newFixture(t, open, "question")
			st, svc, thread, r0, done := f.st, f.svc, f.thread, f.r0, f.done
			var wg sync.WaitGroup
			subs := make([]*threads.Submission, 2)
			errs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() {
					input := fmt.Sprintf("post %d", i)
					o := threads.TurnOptions{ThreadID: thread, RunID: runstate.NewRunID(), Strategy: strat}
					if subs[i], errs[i] = svc.Submit(t.Context(), owner, input, o); errs[i] == nil && !subs[i].Queued {
						// The thread was free when this post came (the
						// other's run ended): it runs as any turn.
						_, errs[i] = drain(t, svc.Turn(t.Context(), owner, input, o))
					}
				})
			}
			wg.Wait()
			for i := range 2 {
				if errs[i] != nil {
					t.Fatalf("post %d: %+v, %v", i, subs[i], errs[i])
				}
			}
			<-done
			states := settled(t, st, thread, r0, subs[0].RunID, subs[1].RunID)
			// No message lost: both posts are in the thread, each answered —
			// or, when the other post interrupted or rolled back its run,
			// stopped (partial or no answer) or rolled back. The last run
			// answered in full.
			got := transcript(t, st, thread)
			posts := 0
			for _, line := range got {
				if strings.Contains(line, "user:post ") {
					posts++
				}
			}
			if posts != 2 || got[len(got)-1] != "assistant:"+longAnswer {
				t.Fatalf("transcript %q: want both posts and a full answer last", got)
			}
			if strat == threads.Enqueue && (got[len(got)-4] != "user:post 0" && got[len(got)-4] != "user:post 1" || got[len(got)-3] != "assistant:"+longAnswer) {
				t.Fatalf("transcript %q: enqueued posts each answered in full, in order", got)
			}
			for _, id := range []string{subs[0].RunID, subs[1].RunID} {
				if !states[id].Status.Terminal() {
					t.Fatalf("run %s: %s", id, states[id].Status)
				}
			}
			wantR0 := map[threads.Strategy]string{threads.Enqueue: "", threads.Interrupt: "interrupt", threads.Rollback: "rollback"}[strat]
			if runner.Stopped(states[r0]) != wantR0 {
				t.Fatalf("the busy run: stopped %q, want %q", runner.Stopped(states[r0]), wantR0)
			}
		})
	}
}
