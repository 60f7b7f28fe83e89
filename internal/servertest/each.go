package servertest

import (
	"net/http"
	neturl "net/url"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/webhooktest"
)

// WithWebhookReceiver starts a webhook receiver (see
// [webhooktest.NewReceiver]) and returns it with the option that lets
// runs name it as their webhook: the service signs with its secret and
// allows its loopback address.
func WithWebhookReceiver(t testing.TB) (*webhooktest.Receiver, Option) {
	t.Helper()
	secret := webhooktest.NewSecret(t)
	rcv := webhooktest.NewReceiver(t, secret, false)
	return rcv, func(o *Options) {
		o.Service.Webhooks = webhook.Config{Secret: secret, Allow: []string{"127.0.0.1"}}
	}
}

// EachWithWebhooks runs test on each backend as [testdb.Each] does, on a
// [SetupStore] bundle whose runs may name rcv, a receiver of its own (see
// [WithWebhookReceiver]), as their webhook.
func EachWithWebhooks(t *testing.T, test func(t *testing.T, b *Bundle, rcv *webhooktest.Receiver)) {
	t.Helper()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		rcv, hooks := WithWebhookReceiver(t)
		test(t, SetupStore(t, open(t), hooks), rcv)
	})
}

// OnBackends runs test in parallel subtests, one per backend of
// [testdb.Backends] (as [testdb.Each] does), each on a [SetupStore] bundle
// of its own store with opts.
func OnBackends(t *testing.T, test func(t *testing.T, b *Bundle), opts ...Option) {
	t.Helper()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		test(t, SetupStore(t, open(t), opts...))
	})
}

// EndpointSecret returns the secret of url that key's owner learns from
// POST /v1/webhooks/secret, and makes rcv verify the deliveries to url's
// path with it (see [webhooktest.Receiver.SetSecret]).
func (b *Bundle) EndpointSecret(t testing.TB, key string, rcv *webhooktest.Receiver, url string) string {
	t.Helper()
	r := b.Do(t, key, "POST", "/v1/webhooks/secret", map[string]any{"url": url})
	var out struct{ URL, Secret string }
	r.JSON(t, &out)
	if r.Status != http.StatusOK || out.URL != url || !strings.HasPrefix(out.Secret, webhook.SecretPrefix) {
		t.Fatalf("POST /v1/webhooks/secret %s: %d %s", url, r.Status, r.Body)
	}
	if rcv != nil {
		u, err := neturl.Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		rcv.SetSecret(t, u.Path, out.Secret)
	}
	return out.Secret
}

// Each runs test in parallel subtests "SQLite" and "Postgres" (a new
// schema of the test database; skipped without one, see [testdb.URL]),
// each on a [SetupStore] bundle with the options opts give for it.
func Each(t *testing.T, test func(t *testing.T, b *Bundle), opts ...func(testing.TB) Option) {
	t.Helper()
	with := func(t testing.TB) []Option {
		var o []Option
		for _, f := range opts {
			o = append(o, f(t))
		}
		return o
	}
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		test(t, Setup(t, with(t)...))
	})
	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		test(t, SetupStore(t, testdb.PostgresWith(t, testdb.URL(t), store.Options{}), with(t)...))
	})
}
