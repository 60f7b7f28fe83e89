package e2e_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

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
			rcv, first := webhooktest.NewHoldingReceiver(t, secret)
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
			case d := <-rcv.Got:
				id = d.ID
			case <-time.After(recoveryBound()):
				t.Fatalf("the event was not delivered within %s of the kill:\n%s", recoveryBound(), worker.tail(3000))
			}
			// Nothing else arrives: one event, accepted once.
			select {
			case d := <-rcv.Got:
				t.Errorf("a second acceptance %s", d.ID)
			case <-time.After(2 * time.Second):
			}
			for _, err := range rcv.Bad() {
				t.Errorf("verify: %v", err)
			}
			if ids := rcv.IDs(); len(ids) != 1 || rcv.Attempts(id) < 2 || rcv.Accepted(id) != 1 || rcv.Event(id).Type != webhook.RunCompleted {
				t.Errorf("messages %v, attempts %d, accepted %d, type %q: want one run.completed, tried again with its id, accepted once", ids, rcv.Attempts(id), rcv.Accepted(id), rcv.Event(id).Type)
			}
		})
	}
}
