package servertest

import (
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
