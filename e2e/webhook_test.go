package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/webhooktest"
)

// TestWebhookKill: a run's event survives a SIGKILL of the process that
// committed it, between the commit and a successful send. `baton serve`
// (with workers and --webhook) completes a run; its worker's first POST
// reaches the receiver, which holds it unanswered while the test SIGKILLs
// serve. A `baton worker` started afterwards delivers the event (River
// rescues the job the dead process held): signed (the Standard Webhooks
// reference library verifies it), with the same webhook-id, accepted once.
// On SQLite and PostgreSQL.
func TestWebhookKill(t *testing.T) {
	bin := batonBin(t)
	for _, be := range backends(t, "") {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			db := be.open(t)
			dir := t.TempDir()
			fx := newEffects(t, nil)
			secret := webhooktest.NewSecret(t)
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			attempts, accepted := map[string]int{}, map[string]int{}
			var types []string
			first, got := make(chan struct{}), make(chan string, 10)
			var once sync.Once
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if err := wh.Verify(body, r.Header); err != nil {
					t.Errorf("verify: %v", err)
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				id := r.Header.Get("webhook-id")
				mu.Lock()
				attempts[id]++
				n := attempts[id]
				mu.Unlock()
				if n == 1 {
					// Held unanswered until the sender dies.
					once.Do(func() { close(first) })
					<-r.Context().Done()
					return
				}
				var ev webhook.Event
				_ = json.Unmarshal(body, &ev)
				mu.Lock()
				accepted[id]++
				types = append(types, ev.Type)
				mu.Unlock()
				w.WriteHeader(http.StatusNoContent)
				got <- id
			}))
			defer rcv.Close()
			network := filepath.Join("testdata", "shop.yaml")
			flags := []string{"--network", network, "--database", db.url, "--lease-ttl", "2s", "--job-timeout", "5s",
				"--rescue-after", "6s", "--webhook", rcv.URL + "/hook", "--webhook-allow", "127.0.0.1", "--workers", "2"}
			serve := newServe(dir, bin, append(flags, fx.toolFlags("serve")...)...)
			serve.env = []string{"BATON_WEBHOOK_SECRET=" + secret}
			if err := serve.start(); err != nil {
				t.Fatal(err)
			}
			defer serve.stop(5 * time.Second)
			if _, err := db.st.EnsureOwner(t.Context(), &store.EnsureOwnerParams{ID: "acme"}); err != nil {
				t.Fatal(err)
			}
			key, err := db.st.CreateAPIKey(t.Context(), &store.CreateAPIKeyParams{OwnerID: "acme", Name: "e2e"})
			if err != nil {
				t.Fatal(err)
			}
			a := &api{key: key.Secret, base: serve.url}
			ctx := t.Context()
			var th struct{ ID string }
			if err := a.do(ctx, http.MethodPost, "/v1/threads", map[string]string{"network": "shop"}, &th); err != nil {
				t.Fatal(err)
			}
			var run struct{ ID, Status string }
			if err := a.do(ctx, http.MethodPost, "/v1/threads/"+th.ID+"/runs", map[string]any{"input": paths["inline"][0]}, &run); err != nil {
				t.Fatal(err)
			}
			if run.Status != "completed" {
				t.Fatalf("run %+v", run)
			}
			select {
			case <-first:
			case <-time.After(60 * time.Second):
				t.Fatalf("no first attempt in 60 s:\n%s", serve.tail(3000))
			}
			serve.kill()
			worker := newProc(dir, "worker", bin, append(append([]string{"worker"}, flags...), fx.toolFlags("worker")...)...)
			worker.env = []string{"BATON_WEBHOOK_SECRET=" + secret}
			if err := worker.start(); err != nil {
				t.Fatal(err)
			}
			defer worker.stop(5 * time.Second)
			var id string
			select {
			case id = <-got:
			case <-time.After(recoveryBound()):
				t.Fatalf("the event was not delivered within %s of the kill:\n%s", recoveryBound(), worker.tail(3000))
			}
			// Nothing else arrives: one event, accepted once.
			select {
			case id2 := <-got:
				t.Errorf("a second acceptance %s", id2)
			case <-time.After(2 * time.Second):
			}
			mu.Lock()
			defer mu.Unlock()
			if len(attempts) != 1 || attempts[id] < 2 || accepted[id] != 1 || len(types) != 1 || types[0] != webhook.RunCompleted {
				t.Errorf("attempts %v, accepted %v, types %v: want one run.completed, tried again with its id, accepted once", attempts, accepted, types)
			}
		})
	}
}
