package service_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/service/servicetest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/webhooktest"
)

// TestRunWebhookOnServerURL: a run whose own webhook is also a server-wide
// URL gets both deliveries of its event there, with one webhook-id: the
// server-wide one signed with the server's secret, the run's own with the
// owner's endpoint secret (each verifies with its secret alone), on SQLite
// and PostgreSQL.
func TestRunWebhookOnServerURL(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		type delivery struct {
			h    http.Header
			body []byte
		}
		var mu sync.Mutex
		var got []delivery
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, delivery{r.Header.Clone(), body})
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(srv.Close)
		url := srv.URL + "/hook"
		secret := webhooktest.NewSecret(t)
		svc := servicetest.Started(t, service.Config{Store: open(t), Files: []string{example("support")}, Workers: 2,
			Webhooks: webhook.Config{URLs: []string{url}, Secret: secret, Allow: []string{"127.0.0.1"}, Timeout: 5 * time.Second}})
		ownSecret, err := svc.Webhooks().EndpointSecret("ann", url)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := svc.Network("support")
		for _, err := range n.Threads.Turn(t.Context(), "ann", "I was charged twice for order 1234",
			threads.TurnOptions{RunOptions: []runner.RunOption{runner.WithValues(webhook.RunValues(url))}}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n >= 2 || time.Now().After(deadline) {
				break
			}
		}
		time.Sleep(300 * time.Millisecond) // no third delivery
		server, _ := standardwebhooks.NewWebhook(secret)
		own, _ := standardwebhooks.NewWebhook(ownSecret)
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 {
			t.Fatalf("%d deliveries to a URL both the server and the run name, want 2", len(got))
		}
		byServer, byOwn := 0, 0
		for _, d := range got {
			s, o := server.Verify(d.body, d.h) == nil, own.Verify(d.body, d.h) == nil
			switch {
			case s && !o:
				byServer++
			case o && !s:
				byOwn++
			}
		}
		if byServer != 1 || byOwn != 1 || got[0].h.Get("webhook-id") != got[1].h.Get("webhook-id") {
			t.Fatalf("deliveries signed by the server's secret %d, by the endpoint's %d, ids %q %q; want one each, one id",
				byServer, byOwn, got[0].h.Get("webhook-id"), got[1].h.Get("webhook-id"))
		}
	})
}
