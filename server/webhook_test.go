package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/webhooktest"
)

// TestRunWebhook: POST …/runs with "webhook" sends the run's events there,
// signed (verified by the Standard Webhooks reference library): a run that
// waits for an approval is run.interrupted with its interrupt, and its
// cancel run.cancelled; the delivery log lists the attempt. A bad or
// disallowed URL is 400 naming the param, on SQLite and PostgreSQL.
func TestRunWebhook(t *testing.T) {
	t.Parallel()
	servertest.EachWithWebhooks(t, func(t *testing.T, b *servertest.Bundle, rcv *webhooktest.Receiver) {
		got := rcv.Got
		thread := b.Thread(t, b.KeyA, "support")
		for url, want := range map[string]int{
			"ftp://127.0.0.1/x":      http.StatusBadRequest,
			"http://10.0.0.1/x":      http.StatusBadRequest,
			"http://169.254.169.254": http.StatusBadRequest,
			"not a url":              http.StatusBadRequest,
		} {
			r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "hi", "webhook": url})
			var e struct{ Error struct{ Param string } }
			r.JSON(t, &e)
			if r.Status != want || e.Error.Param != "webhook" {
				t.Errorf("webhook %q: %d %s, want %d naming webhook", url, r.Status, r.Body, want)
			}
		}
		// The endpoint's secret: alice's own for the URL, not the
		// server's, and not bob's for the same URL.
		secret := b.EndpointSecret(t, b.KeyA, rcv, rcv.URL+"/hook")
		if bob := b.EndpointSecret(t, b.KeyB, nil, rcv.URL+"/hook"); secret == rcv.Secret || bob == secret || bob == rcv.Secret {
			t.Errorf("alice's secret %s, bob's %s, the server's %s: want three", secret, bob, rcv.Secret)
		}
		if again := b.EndpointSecret(t, b.KeyA, nil, rcv.URL+"/hook"); again != secret {
			t.Errorf("alice's secret changed: %s, then %s", secret, again)
		}
		if other := b.EndpointSecret(t, b.KeyA, nil, rcv.URL+"/other"); other == secret {
			t.Error("two URLs share a secret")
		}
		for _, url := range []string{"", "http://10.0.0.1/x", "ftp://127.0.0.1/x"} {
			if r := b.Do(t, b.KeyA, "POST", "/v1/webhooks/secret", map[string]any{"url": url}); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"param":"url"`) {
				t.Errorf("secret of %q: %d %s, want 400 naming url", url, r.Status, r.Body)
			}
		}
		r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "I want a refund for order 1234", "webhook": rcv.URL + "/hook"})
		var run servertest.RunAnswer
		r.JSON(t, &run)
		if r.Status != http.StatusOK || run.Status != "interrupted" {
			t.Fatalf("run: %d %s", r.Status, r.Body)
		}
		select {
		case d := <-got:
			// Verified with alice's endpoint secret (by the receiver),
			// and not with the server's or bob's.
			for name, sec := range map[string]string{"server": rcv.Secret, "bob": b.EndpointSecret(t, b.KeyB, nil, rcv.URL+"/hook")} {
				wh, err := standardwebhooks.NewWebhook(sec)
				if err != nil {
					t.Fatal(err)
				}
				if wh.Verify(d.Body, d.Header) == nil {
					t.Errorf("the run's webhook verifies with the %s's secret", name)
				}
			}
			if d.Event.Type != webhook.RunInterrupted || d.Event.Data.RunID != run.ID || d.Event.Data.ThreadID != thread ||
				d.Event.Data.Interrupt == nil || d.Event.Data.Interrupt.ID != run.Interrupt.ID || d.ID == "" {
				t.Errorf("delivery %s %+v, want run.interrupted of run %s", d.ID, d.Event, run.ID)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no delivery in 60 s")
		}
		// The delivery log: the attempt, once the worker recorded it; the
		// owner's only.
		type list struct {
			Data []struct {
				WebhookID  string `json:"webhook_id"`
				Type       string
				URL        string
				RunID      string `json:"run_id"`
				Network    string
				Attempt    int
				StatusCode int `json:"status_code"`
				Final      bool
			}
		}
		var l list
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r := b.Do(t, b.KeyA, "GET", "/v1/webhooks/deliveries?run_id="+run.ID, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("deliveries: %d %s", r.Status, r.Body)
			}
			r.JSON(t, &l)
			if len(l.Data) > 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(l.Data) != 1 || l.Data[0].Type != webhook.RunInterrupted || l.Data[0].URL != rcv.URL+"/hook" || l.Data[0].Attempt != 1 ||
			l.Data[0].StatusCode != http.StatusNoContent || l.Data[0].Network != "support" || l.Data[0].WebhookID == "" || !l.Data[0].Final {
			t.Errorf("delivery log %+v", l.Data)
		}
		// A cancel of the waiting run (executed nowhere: ended outside
		// the runner) sends run.cancelled, with another webhook-id.
		if r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs/"+run.ID+"/cancel", nil); r.Status != http.StatusOK {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
		select {
		case d := <-got:
			if d.Event.Type != webhook.RunCancelled || d.Event.Data.RunID != run.ID || d.Event.Data.Status != "cancelled" || d.ID == l.Data[0].WebhookID {
				t.Errorf("delivery %s %+v, want run.cancelled of run %s with a new id", d.ID, d.Event, run.ID)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no run.cancelled in 60 s")
		}
		if bad := rcv.Bad(); len(bad) > 0 {
			t.Errorf("deliveries failed verification: %v", bad)
		}
		var other list
		b.Do(t, b.KeyB, "GET", "/v1/webhooks/deliveries", nil).JSON(t, &other)
		if len(other.Data) != 0 {
			t.Errorf("another owner sees %d deliveries", len(other.Data))
		}
	})
}

// TestRunWebhookOff: a server without a webhook secret refuses a run's
// webhook (400).
func TestRunWebhookOff(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	thread := b.Thread(t, b.KeyA, "support")
	r := b.Do(t, b.KeyA, "POST", "/v1/threads/"+thread+"/runs", map[string]any{"input": "hi", "webhook": "https://example.com/hook"})
	if r.Status != http.StatusBadRequest {
		t.Errorf("%d %s, want 400", r.Status, r.Body)
	}
}

// TestHandoffWebhooks: a thread handoff's proposal and its approval reach
// the server-wide webhook, signed, as thread_handoff.proposed and
// thread_handoff.decided (with the child thread), on SQLite and
// PostgreSQL.
func TestHandoffWebhooks(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		rcv, hooks := servertest.WithWebhookReceiver(t)
		type event struct {
			Type string
			Data webhook.HandoffData
		}
		b := servertest.SetupStore(t, open(t), hooks, func(o *servertest.Options) {
			o.Service.Webhooks.URLs = []string{rcv.URL}
		})
		thread := b.Thread(t, b.KeyA, "support")
		child, assistant := b.HandOff(t, thread, "I was charged twice for order 1234")
		seen := map[string]event{}
		for len(seen) < 2 {
			select {
			case d := <-rcv.Got:
				var ev event
				if err := json.Unmarshal(d.Body, &ev); err != nil {
					t.Error(err)
				}
				if ev.Type != webhook.RunCompleted {
					seen[ev.Type] = ev
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("events %v in 60 s, want proposed and decided (bad deliveries: %v)", seen, rcv.Bad())
			}
		}
		p, d := seen["thread_handoff.proposed"], seen["thread_handoff.decided"]
		if p.Data.ThreadID != thread || p.Data.HandoffID == "" || p.Data.Status != "pending" || p.Data.AssistantID != assistant {
			t.Errorf("proposed %+v", p)
		}
		if d.Data.HandoffID != p.Data.HandoffID || d.Data.Decision != "approve" || d.Data.ChildThreadID != child || d.Data.Status != "decided" {
			t.Errorf("decided %+v", d)
		}
		if bad := rcv.Bad(); len(bad) > 0 {
			t.Errorf("verify: %v", bad)
		}
	})
}
