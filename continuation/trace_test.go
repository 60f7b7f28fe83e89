package continuation

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/message"
	"github.com/batonhq/baton/model/scripted"
	"github.com/batonhq/baton/runstate"
)

type traceKey struct{}

// TestTraceCarriedToWorker: the hand-over stores what Config.Inject returns
// for the request's context in the job, and the worker starts its delivery
// from it with Config.Link, so its spans can link to the request's.
func TestTraceCarriedToWorker(t *testing.T) {
	t.Parallel()
	be := backends(t)[0]
	var mu sync.Mutex
	var linked []map[string]string
	var ended int
	tools := newToolLog()
	b := setup(t, be, network(t, tools, "", scripted.Options{}), tools, func(c *Config) {
		c.Inject = func(ctx context.Context) map[string]string {
			return map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
		}
		c.Link = func(ctx context.Context, carrier map[string]string) (context.Context, func()) {
			mu.Lock()
			linked = append(linked, carrier)
			mu.Unlock()
			return context.WithValue(ctx, traceKey{}, carrier["traceparent"]), func() {
				mu.Lock()
				ended++
				mu.Unlock()
			}
		}
	})
	_, run, end := b.turn(t, "Where is my order 1234?")
	if end == nil || end.Status != runstate.StatusSuspended {
		t.Fatalf("inline run ended %+v", end)
	}
	h, err := b.cont.Lookup(t.Context(), owner, run)
	if err != nil {
		t.Fatal(err)
	}
	b.start(t)
	if final := b.waitMessage(t, h.MessageID, 30*time.Second); final.Status != message.StatusCompleted {
		t.Fatalf("placeholder = %s", final.Status)
	}
	// The delivery ends (and calls end) just after the message is final.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := len(linked) > 0 && ended == len(linked)
		mu.Unlock()
		if done || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(linked) == 0 || linked[0]["traceparent"] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Fatalf("worker linked from %v, want the request's trace context", linked)
	}
	if ended != len(linked) {
		t.Errorf("%d deliveries linked, %d ended", len(linked), ended)
	}
}
