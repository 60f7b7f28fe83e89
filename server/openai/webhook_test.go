package openai_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/server/internal/servertest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook"
)

// TestOpenAIWebhook: metadata.webhook of a chat completion or a response
// names the run's own webhook, like POST …/runs' "webhook": the run's end
// reaches it, signed (verified by the Standard Webhooks reference library);
// a bad or refused URL is a 400 naming metadata.webhook. SQLite and
// PostgreSQL.
func TestOpenAIWebhook(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		k := make([]byte, 24)
		_, _ = rand.Read(k)
		secret := webhook.SecretPrefix + base64.StdEncoding.EncodeToString(k)
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		type delivery struct {
			path string
			ev   webhook.Event
		}
		got := make(chan delivery, 10)
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if err := wh.Verify(body, r.Header); err != nil {
				t.Errorf("verify: %v", err)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			var ev webhook.Event
			if err := json.Unmarshal(body, &ev); err != nil {
				t.Error(err)
			}
			got <- delivery{r.URL.Path, ev}
		}))
		defer rcv.Close()
		b := servertest.SetupStore(t, open(t), func(o *servertest.Options) {
			o.Service.Webhooks = webhook.Config{Secret: secret, Allow: []string{"127.0.0.1"}}
		})
		chat := func(hook string) map[string]any {
			return map[string]any{"model": "support", "metadata": map[string]string{"webhook": hook},
				"messages": []any{map[string]any{"role": "user", "content": "I was charged twice for order 1234"}}}
		}
		resp := func(hook string) map[string]any {
			return map[string]any{"model": "support", "metadata": map[string]string{"webhook": hook}, "input": "I was charged twice for order 1234"}
		}
		for _, bad := range []string{"ftp://127.0.0.1/x", "http://10.0.0.1/x", "http://169.254.169.254", "not a url", ""} {
			for path, body := range map[string]map[string]any{"/v1/chat/completions": chat(bad), "/v1/responses": resp(bad)} {
				r := b.Do(t, b.KeyA, "POST", path, body)
				if _, _, param := openAIErr(t, r); r.Status != http.StatusBadRequest || param != "metadata.webhook" {
					t.Errorf("%s webhook %q: %d %s, want 400 naming metadata.webhook", path, bad, r.Status, r.Body)
				}
			}
		}
		for path, body := range map[string]map[string]any{"/v1/chat/completions": chat(rcv.URL + "/chat"), "/v1/responses": resp(rcv.URL + "/responses")} {
			r := b.Do(t, b.KeyA, "POST", path, body)
			runID := r.Header.Get("Baton-Run-Id")
			if r.Status != http.StatusOK || runID == "" {
				t.Fatalf("%s: %d %s", path, r.Status, r.Body)
			}
			select {
			case d := <-got:
				if d.ev.Type != webhook.RunCompleted || d.ev.Data.RunID != runID || d.ev.Data.Network != "support" || d.ev.Data.Output == "" ||
					d.path != map[string]string{"/v1/chat/completions": "/chat", "/v1/responses": "/responses"}[path] {
					t.Errorf("%s: delivery to %s %+v, want run.completed of run %s", path, d.path, d.ev, runID)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: no delivery in 60 s", path)
			}
		}
	})
}

// TestOpenAIWebhookOff: metadata.webhook on a server without webhooks is
// a 400 naming it.
func TestOpenAIWebhookOff(t *testing.T) {
	t.Parallel()
	b := servertest.Setup(t)
	r := b.Do(t, b.KeyA, "POST", "/v1/responses", map[string]any{"model": "support", "input": "hi", "metadata": map[string]string{"webhook": "https://example.com/hook"}})
	if _, _, param := openAIErr(t, r); r.Status != http.StatusBadRequest || param != "metadata.webhook" {
		t.Errorf("%d %s, want 400 naming metadata.webhook", r.Status, r.Body)
	}
}
