package openai_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/webhooktest"
)

// TestOpenAIWebhook: metadata.webhook of a chat completion or a response
// names the run's own webhook, like POST …/runs' "webhook": the run's end
// reaches it, signed (verified by the Standard Webhooks reference library);
// a bad or refused URL is a 400 naming metadata.webhook. SQLite and
// PostgreSQL.
func TestOpenAIWebhook(t *testing.T) {
	t.Parallel()
	servertest.EachWithWebhooks(t, func(t *testing.T, b *servertest.Bundle, rcv *webhooktest.Receiver) {
		got := rcv.Got
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
		// Each run's webhook is signed with the secret of alice and its
		// URL, not the server's (the receiver checks both).
		b.EndpointSecret(t, b.KeyA, rcv, rcv.URL+"/chat")
		b.EndpointSecret(t, b.KeyA, rcv, rcv.URL+"/responses")
		for path, body := range map[string]map[string]any{"/v1/chat/completions": chat(rcv.URL + "/chat"), "/v1/responses": resp(rcv.URL + "/responses")} {
			r := b.Do(t, b.KeyA, "POST", path, body)
			runID := r.Header.Get("Baton-Run-Id")
			if r.Status != http.StatusOK || runID == "" {
				t.Fatalf("%s: %d %s", path, r.Status, r.Body)
			}
			select {
			case d := <-got:
				if d.Event.Type != webhook.RunCompleted || d.Event.Data.RunID != runID || d.Event.Data.Network != "support" || d.Event.Data.Output == "" ||
					d.Path != map[string]string{"/v1/chat/completions": "/chat", "/v1/responses": "/responses"}[path] {
					t.Errorf("%s: delivery to %s %+v, want run.completed of run %s", path, d.Path, d.Event, runID)
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
