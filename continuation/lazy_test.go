package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// directQueue is the service's queue for deliveries a test makes itself
// (River's workers not started): River's completion of the job, which
// needs River's worker context, is counted and not made.
type directQueue struct {
	queue
	completed atomic.Int32
}

func (q *directQueue) completeTx(context.Context, store.Tx, *river.Job[Args]) error {
	q.completed.Add(1)
	return nil
}

// direct makes b's deliveries direct (see directQueue) and returns a
// delivery of the hand-over h of run at River attempt n.
func direct(t testing.TB, b *bundle, run string, h *Handover) (*directQueue, func(n int) *river.Job[Args]) {
	t.Helper()
	cp, err := b.st.LatestCheckpoint(t.Context(), &store.LatestCheckpointParams{OwnerID: owner, RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	args := Args{OwnerID: owner, ThreadID: cp.ThreadID, RunID: run, EventID: h.EventID, JobRunID: h.JobRun.ID, Fingerprint: cp.Fingerprint}
	q := &directQueue{queue: b.cont.q}
	b.cont.q = q
	return q, func(n int) *river.Job[Args] {
		return &river.Job[Args]{JobRow: &rivertype.JobRow{ID: 1, Attempt: n, State: rivertype.JobStateRunning}, Args: args}
	}
}

// idempotentNetwork is network with the slow tool idempotent: a worker
// claims such a run with the run's first write (lazyClaim).
func idempotentNetwork(t testing.TB, tools *toolLog) *agent.Network {
	t.Helper()
	a := &agent.Agent{Name: "assistant", ModelName: "scripted",
		Model: scripted.New("assistant", []scripted.Step{
			{Text: "Let me look that up.", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
			{Text: "Your order 1234 has shipped."},
		}, scripted.Options{}),
		Tools: []*agent.Tool{{Name: "lookup", Description: "Look an order up.", Slow: true, Idempotent: true, Func: tools.fn}}}
	n, err := agent.NewNetwork(agent.NetworkConfig{Name: "shop", Agents: []*agent.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLazyClaim: a run whose worker starts with calls of idempotent tools
// is claimed with its first write. When that is the final checkpoint, the
// continuation is three transactions (begin, hand-over, final): no claim
// checkpoint, the placeholder from queued to completed, the job run from
// queued to completed at attempt 1. When a draft flush comes first (the
// tool is slow), the flush claims: placeholder streaming with the draft,
// job run processing at attempt 1, still no checkpoint; the final
// checkpoint then finishes as after a claim.
func TestLazyClaim(t *testing.T) {
	for _, flush := range []bool{false, true} {
		name := "AtFinalCheckpoint"
		if flush {
			name = "AtFirstFlush"
		}
		t.Run(name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, be backend) {
				ctx := t.Context()
				tools := newToolLog()
				if flush {
					tools.gate = make(chan struct{})
				}
				b := setup(t, be, idempotentNetwork(t, tools), tools, func(c *Config) {
					c.Draft = draft.Options{Interval: 10 * time.Millisecond}
					if !flush {
						c.Draft.Interval = time.Hour
					}
				})
				thread, runID, h := b.handOver(t)
				b.start(t)
				if flush {
					// The tool runs: the first draft flush claims the run.
					b.waitStatus(t, h.MessageID, 30*time.Second, message.StatusStreaming)
					jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
					if err != nil {
						t.Fatal(err)
					}
					if jr.Status != store.JobProcessing || jr.Attempt != 1 {
						t.Fatalf("claimed by the flush: job run %s attempt %d", jr.Status, jr.Attempt)
					}
					if d, err := b.st.GetDraft(ctx, &store.GetDraftParams{OwnerID: owner, MessageID: h.MessageID}); err != nil || d.Text != "Running lookup…" {
						t.Fatalf("draft = %+v, %v", d, err)
					}
					if sts := statuses(t, b.st, runID); !slices.Equal(sts, []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended}) {
						t.Fatalf("checkpoints while the tool runs: %v", sts)
					}
					close(tools.gate)
				}
				msg := b.waitMessage(t, h.MessageID, 30*time.Second)
				if msg.Status != message.StatusCompleted || msg.Text() != "Your order 1234 has shipped." {
					t.Fatalf("placeholder = %s %q", msg.Status, msg.Text())
				}
				if md, _ := msg.Metadata[MetaContinuation].(map[string]any); md["status"] != "completed" {
					t.Errorf("placeholder metadata = %v", msg.Metadata)
				}
				jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
				if err != nil {
					t.Fatal(err)
				}
				if jr.Status != store.JobCompleted || jr.Attempt != 1 || jr.StartedAt.IsZero() || jr.FinishedAt.IsZero() {
					t.Errorf("job run = %+v, want completed at attempt 1", jr)
				}
				if sts := statuses(t, b.st, runID); !slices.Equal(sts, []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended, runstate.StatusCompleted}) {
					t.Errorf("checkpoints %v, want running suspended completed", sts)
				}
				if _, err := b.st.GetDraft(ctx, &store.GetDraftParams{OwnerID: owner, MessageID: h.MessageID}); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("draft after completion: %v", err)
				}
				if keys, calls := tools.total(); keys != 1 || calls != 1 {
					t.Errorf("tool: %d keys, %d calls", keys, calls)
				}
				msgs, _ := stored(t, b.st, thread)
				if got := shape(msgs); len(msgs) != 4 {
					t.Errorf("thread: %s", got)
				}
			})
		})
	}
}

// TestLazyClaimFlushRacesFinal: the first draft flush claims the run and
// its transaction is still open when the final transaction writes. The
// final update of the placeholder, expecting the streaming status that
// claim writes, waits for the flush to commit and the continuation
// completes (on PostgreSQL it was refused by the claim it raced — the
// statement compared the status as its snapshot had it — and the run
// failed: a benchmark's continuation in a few hundred).
func TestLazyClaimFlushRacesFinal(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		claimed, finishing := make(chan struct{}), make(chan struct{})
		var claimOnce, finishOnce sync.Once
		tools := newToolLog()
		tools.gate = claimed // the tool returns once the flush has claimed
		b := setup(t, be, idempotentNetwork(t, tools), tools, func(c *Config) {
			c.Draft = draft.Options{Interval: time.Millisecond}
			// One attempt, however slow a loaded machine makes it (the
			// flush below holds its transaction up to 1.2 s): the
			// attempt is not timed out and retried, which would call the
			// tool a second time.
			c.JobTimeout, c.RescueStuckJobsAfter = 5*time.Minute, 6*time.Minute
			c.testHook = func(step string) error {
				switch step {
				case "flush claimed":
					claimOnce.Do(func() {
						close(claimed)
						// The flush's transaction stays open until the final
						// one is writing, and a while after, for its
						// statements to reach the placeholder (on SQLite the
						// final one cannot begin before the flush commits: a
						// second, then).
						select {
						case <-finishing:
							time.Sleep(200 * time.Millisecond)
						case <-time.After(time.Second):
						}
					})
				case "finish":
					finishOnce.Do(func() { close(finishing) })
				}
				return nil
			}
		})
		_, runID, h := b.handOver(t)
		b.start(t)
		msg := b.waitMessage(t, h.MessageID, 30*time.Second)
		if msg.Status != message.StatusCompleted || msg.Text() != "Your order 1234 has shipped." {
			t.Fatalf("placeholder = %s %q", msg.Status, msg.Text())
		}
		select {
		case <-finishing:
		default:
			t.Fatal("no final transaction")
		}
		jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
		if err != nil {
			t.Fatal(err)
		}
		if jr.Status != store.JobCompleted || jr.Attempt != 1 {
			t.Errorf("job run %s attempt %d, want completed at attempt 1", jr.Status, jr.Attempt)
		}
		if sts := statuses(t, b.st, runID); !slices.Equal(sts, []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended, runstate.StatusCompleted}) {
			t.Errorf("checkpoints %v, want running suspended completed", sts)
		}
		if keys, calls := tools.total(); keys != 1 || calls != 1 {
			t.Errorf("tool: %d keys, %d calls", keys, calls)
		}
	})
}

// TestLazyClaimRace: two deliveries of one continuation at once (a job
// rescued while its worker still runs), both claiming lazily: both call the
// idempotent tool with the same key, one writes, the other loses at its
// write (fenced) and writes nothing; the job run counts one attempt.
func TestLazyClaimRace(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		tools := newGatedToolLog(2)
		b := setup(t, be, idempotentNetwork(t, tools), tools, func(c *Config) { c.Draft = draft.Options{Interval: time.Hour} })
		_, run, h := b.handOver(t)
		q, delivery := direct(t, b, run, h)
		job := delivery(1)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				errs[i] = b.cont.work(ctx, job)
			})
		}
		// Both deliveries have read the run and call the tool.
		for range 2 {
			select {
			case <-tools.started:
			case <-time.After(30 * time.Second):
				t.Fatal("the tool was not called twice")
			}
		}
		close(tools.gate)
		wg.Wait()
		var won, lost int
		for _, err := range errs {
			var snooze *river.JobSnoozeError
			switch {
			case err == nil:
				won++
			case errors.As(err, &snooze):
				lost++
			default:
				t.Errorf("delivery: %v", err)
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("deliveries: %d finished, %d snoozed (%v)", won, lost, errs)
		}
		jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
		if err != nil {
			t.Fatal(err)
		}
		if jr.Status != store.JobCompleted || jr.Attempt != 1 || q.completed.Load() == 0 {
			t.Errorf("job run %s attempt %d (River job completed %d times), want completed at attempt 1", jr.Status, jr.Attempt, q.completed.Load())
		}
		if sts := statuses(t, b.st, run); !slices.Equal(sts, []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended, runstate.StatusCompleted}) {
			t.Errorf("checkpoints %v", sts)
		}
		if keys, calls := tools.total(); keys != 1 || calls != 2 {
			t.Errorf("tool: %d keys, %d calls; want one key called twice", keys, calls)
		}
		if m, err := b.st.GetMessage(ctx, &store.GetMessageParams{OwnerID: owner, ID: h.MessageID}); err != nil || m.Status != message.StatusCompleted {
			t.Errorf("placeholder: %+v, %v", m, err)
		}
	})
}

// TestLazyClaimFailsUnclaimed: a delivery whose run stops before any
// write (its context ends mid-answer) records the retry on the job run it
// never claimed — error, one attempt counted, fenced on the attempt it
// read — and the next delivery claims it durably and finishes it.
func TestLazyClaimFailsUnclaimed(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		tools := newToolLog()
		tools.gate = make(chan struct{})
		b := setup(t, be, idempotentNetwork(t, tools), tools, func(c *Config) { c.Draft = draft.Options{Interval: time.Hour} })
		_, run, h := b.handOver(t)
		q, delivery := direct(t, b, run, h)
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if err := b.cont.work(wctx, delivery(1)); err == nil {
			t.Fatal("a delivery cut before its first write: no error")
		}
		jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
		if err != nil {
			t.Fatal(err)
		}
		if jr.Status != store.JobError || jr.Attempt != 1 || jr.Error == "" {
			t.Fatalf("job run after the cut delivery: %+v", jr)
		}
		if sts := statuses(t, b.st, run); !slices.Equal(sts, []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended}) {
			t.Fatalf("checkpoints after the cut delivery: %v", sts)
		}
		close(tools.gate)
		if err := b.cont.work(ctx, delivery(2)); err != nil {
			t.Fatal(err)
		}
		jr, _ = b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
		if jr.Status != store.JobCompleted || jr.Attempt != 2 || q.completed.Load() != 1 {
			t.Errorf("job run = %s attempt %d (River job completed %d times), want completed at attempt 2", jr.Status, jr.Attempt, q.completed.Load())
		}
		// The second delivery claimed durably: its claim's checkpoint.
		if sts := statuses(t, b.st, run); !slices.Equal(sts, []runstate.Status{runstate.StatusRunning, runstate.StatusSuspended, runstate.StatusRunning, runstate.StatusCompleted}) {
			t.Errorf("checkpoints %v", sts)
		}
		if keys, calls := tools.total(); keys != 1 || calls != 2 {
			t.Errorf("tool: %d keys, %d calls", keys, calls)
		}
	})
}
