package continuation

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/agent"
	"github.com/batonhq/baton/draft"
	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/store"
)

// TestIncompatibleFingerprint: a worker on another version of the network
// refuses the checkpoint; the placeholder goes to error, the detail to the
// job run, and the thread is free again.
func TestIncompatibleFingerprint(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		tools := newToolLog()
		b := setup(t, be, network(t, tools, "v1", scripted.Options{}), tools, nil)
		thread, _, h := b.handOver(t)
		// A worker deployed with v2 of the network, on the same database.
		running(t, b.st, network(t, tools, "v2", scripted.Options{}), testConfig(t, b.st))
		checkGaveUp(t, b, h, thread, DefaultIncompatibleText, "was written under version")
		if keys, _ := tools.total(); keys != 0 {
			t.Error("the tool ran")
		}
	})
}

// TestTransientFailureRetries: the tool fails transiently more often than
// the runner retries it; the job is retried with backoff from the last
// checkpoint, with the same idempotency key, and completes.
func TestTransientFailureRetries(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		tools := newToolLog()
		tools.fail = func(_ string, n int) error {
			if n <= 5 { // the runner tries 4 times per attempt
				return agent.Transient(errors.New("inventory service unavailable"), time.Millisecond)
			}
			return nil
		}
		b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, nil)
		_, _, h := b.handOver(t)
		b.start(t)
		m := b.waitMessage(t, h.MessageID, 60*time.Second)
		if m.Status != message.StatusCompleted || m.Text() != "Your order 1234 has shipped." {
			t.Fatalf("placeholder = %s %q", m.Status, m.Text())
		}
		jr, _ := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
		if jr.Status != store.JobCompleted || jr.Attempt != 2 {
			t.Errorf("job run = %s attempt %d, want completed at attempt 2", jr.Status, jr.Attempt)
		}
		if keys, calls := tools.total(); keys != 1 || calls != 6 {
			t.Errorf("tool: %d keys, %d calls; want 1 key, 6 calls", keys, calls)
		}
	})
}

// TestPermanentFailure: the model fails for good in the worker; the
// placeholder goes to error with the user-safe text, the detail to the job
// run, and the job is not retried.
func TestPermanentFailure(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		tools := newToolLog()
		net := network(t, tools, "", scripted.Options{}, scripted.Step{Fail: &scripted.Fail{Status: 400, Message: "context window exceeded"}})
		b := setup(t, be, net, tools, func(c *Config) {
			c.ErrorText = "That did not work."
			// Not the 2 s of the other tests: on a saturated machine the
			// first attempt could time out and be retried, correctly,
			// which is not what this test is about.
			c.JobTimeout, c.RescueStuckJobsAfter = time.Minute, 2*time.Minute
		})
		thread, _, h := b.handOver(t)
		b.start(t)
		if jr := checkGaveUp(t, b, h, thread, "That did not work.", "context window exceeded"); jr.Attempt != 1 {
			t.Errorf("job run attempt %d, want 1 (not retried)", jr.Attempt)
		}
	})
}

// TestLateSubscriberSeesDraft: a client that subscribes while the worker
// streams gets the current draft first, then updates, then the final
// message. The model's answer waits, half written, until the subscriber
// has seen a draft of that half, so that the draft is seen growing however
// slow a loaded machine makes the worker.
func TestLateSubscriberSeesDraft(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		ctx := t.Context()
		tools := newGatedToolLog(1)
		answer := "Your order 1234 left our warehouse this morning and should arrive within two days at the address on file."
		steps := []scripted.Step{
			{Text: "Let me look that up.", ToolCalls: []scripted.Call{{Name: "lookup", Arguments: json.RawMessage(`{"order":"1234"}`)}}},
			{Text: answer},
		}
		half := make(chan struct{}) // closed when the subscriber saw the answer's first words
		m := pausedAnswer(scripted.New("assistant", steps, scripted.Options{ChunkWords: 1, ChunkDelay: 30 * time.Millisecond}), 5, half)
		b := setup(t, be, networkOf(t, tools, "", m), tools, func(c *Config) {
			c.Draft = draft.Options{Interval: 150 * time.Millisecond}
			// One attempt, however long the waits above and below take on
			// a loaded machine: a retry would start the draft over.
			c.JobTimeout, c.RescueStuckJobsAfter = 5*time.Minute, 6*time.Minute
		})
		_, _, h := b.handOver(t)
		b.start(t)
		<-tools.started
		// The tool runs: the draft says so. Wait for it to be flushed.
		deadline := time.Now().Add(time.Minute)
		for {
			d, err := b.st.GetDraft(ctx, &store.GetDraftParams{OwnerID: owner, MessageID: h.MessageID})
			if err == nil && strings.Contains(d.Text, "Running lookup") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no draft while the tool runs: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		var ups []draft.Update
		first := true
		for u, err := range b.cont.Broker().Subscribe(sctx, draft.Filter{OwnerID: owner, MessageID: h.MessageID}) {
			if err != nil {
				t.Fatal(err)
			}
			if first {
				if u.Status != message.StatusStreaming || !strings.Contains(u.Text, "Running lookup") {
					t.Fatalf("first update = %+v, want the current draft", u)
				}
				close(tools.gate)
				first = false
			} else if !u.Final && strings.Contains(u.Text, "Your order") {
				select {
				case <-half:
				default:
					close(half)
				}
			}
			ups = append(ups, u)
		}
		last := ups[len(ups)-1]
		if !last.Final || last.Text != answer {
			t.Fatalf("last update = %+v", last)
		}
		if len(ups) < 3 {
			t.Errorf("%d updates, want the draft growing while the answer streams", len(ups))
		}
		for i := 1; i < len(ups)-1; i++ {
			if len(ups[i].Text) < len(ups[i-1].Text) || ups[i].Version <= ups[i-1].Version {
				t.Errorf("update %d went back: %+v after %+v", i, ups[i], ups[i-1])
			}
		}
		if d := ups[len(ups)-2].Text; !strings.Contains(d, "Running lookup") || !strings.Contains(d, "Your order") {
			t.Errorf("last draft = %q", d)
		}
	})
}

// pausedAnswer is m whose answer after a tool result stops after its
// first words text chunks until resume is closed (or the call's context
// ends), then goes on.
func pausedAnswer(m model.Model, words int, resume <-chan struct{}) model.Model {
	return model.Func(func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		afterTool := len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == message.RoleTool
		return func(yield func(model.Chunk, error) bool) {
			n := 0
			for c, err := range m.Stream(ctx, req) {
				if afterTool && err == nil && c.Type == model.ChunkText {
					if n == words {
						select {
						case <-resume:
						case <-ctx.Done():
						}
					}
					n++
				}
				if !yield(c, err) {
					return
				}
			}
		}
	})
}

// TestLastAttemptInterrupted: the only attempt of a continuation
// (MaxAttempts 1) is cut off, its tool still running at the job timeout, as
// it would be by a worker killed or stuck. River keeps reserve deliveries,
// and the next one records the failure: the placeholder goes to error and
// the thread is free, instead of River discarding the job and leaving the
// placeholder streaming for ever.
func TestLastAttemptInterrupted(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		tools := newToolLog()
		tools.gate = make(chan struct{}) // never opens: the tool runs until the job times out
		b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, func(c *Config) { c.MaxAttempts = 1 })
		thread, _, h := b.handOver(t)
		b.start(t)
		checkGaveUp(t, b, h, thread, DefaultErrorText, "attempts spent")
		if keys, calls := tools.total(); keys != 1 || calls != 1 {
			t.Errorf("tool: %d keys, %d calls; want it started once", keys, calls)
		}
	})
}

// checkGaveUp checks a continuation that failed for good: its placeholder
// went to error with text, its job run to error with a detail containing
// detail, River's job was cancelled (not discarded, not left open), and its
// thread is free (the run's latest checkpoint is failed). It returns the
// job run.
func checkGaveUp(t *testing.T, b *bundle, h *Handover, thread, text, detail string) *store.JobRun {
	t.Helper()
	ctx := t.Context()
	m := b.waitMessage(t, h.MessageID, 30*time.Second)
	if m.Status != message.StatusError || m.Text() != text {
		t.Fatalf("placeholder = %s %q, want error %q", m.Status, m.Text(), text)
	}
	jr, err := b.st.GetJobRun(ctx, &store.GetJobRunParams{OwnerID: owner, ID: h.JobRun.ID})
	if err != nil || jr.Status != store.JobError || !strings.Contains(jr.Error, detail) {
		t.Fatalf("job run = %+v, %v; want error with %q", jr, err, detail)
	}
	if jobs := waitRiver(t, b.st, 10*time.Second); jobs["cancelled"] != 1 || jobs["discarded"] != 0 {
		t.Errorf("river jobs = %v, want 1 cancelled", jobs)
	}
	cp, err := b.st.LatestCheckpoint(ctx, &store.LatestCheckpointParams{OwnerID: owner, ThreadID: thread})
	if err != nil || cp.Status != runstate.StatusFailed {
		t.Errorf("latest checkpoint = %+v, %v; want failed (the thread is free)", cp, err)
	}
	return jr
}
