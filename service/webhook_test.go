package service_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/internal/runtest"
	"github.com/batonhq/baton/internal/testdb"
	"github.com/batonhq/baton/runner"
	"github.com/batonhq/baton/runstate"
	"github.com/batonhq/baton/service"
	"github.com/batonhq/baton/service/servicetest"
	"github.com/batonhq/baton/store"
	"github.com/batonhq/baton/threads"
	"github.com/batonhq/baton/webhook"
	"github.com/batonhq/baton/webhook/webhooktest"
)

// TestWebhooks: a run's end reaches the server-wide webhook and the run's
// own, signed (verified by the Standard Webhooks reference library), after
// the receiver failed the first attempt (River retries with the same
// webhook-id), once per event and URL, on SQLite and PostgreSQL.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		ctx := t.Context()
		secret := webhooktest.NewSecret(t)
		all := webhooktest.NewReceiver(t, secret, true)
		own := webhooktest.NewReceiver(t, secret, false)
		svc := startedWithWebhook(t, open(t), example("support"), all.URL+"/all", secret)
		if err := svc.Webhooks().CheckURL(ctx, own.URL); err != nil {
			t.Fatal(err)
		}
		// The run's own webhook is signed with the secret of its owner
		// and URL, not the server's (the receiver checks both).
		ownSecret, err := svc.Webhooks().EndpointSecret("ann", own.URL+"/own")
		if err != nil {
			t.Fatal(err)
		}
		own.SetSecret(t, "/own", ownSecret)
		n, _ := svc.Network("support")
		ran := runtest.Collect(t, n.Threads.Turn(ctx, "ann", "I was charged twice for order 1234",
			threads.TurnOptions{RunOptions: []runner.RunOption{runner.WithValues(webhook.RunValues(own.URL + "/own"))}}), nil)
		start, end := ran.Start, ran.End
		if end == nil || start == nil {
			t.Fatal("no run end")
		}
		idAll, idOwn := all.Next(t).ID, own.Next(t).ID
		if idAll != idOwn {
			t.Errorf("webhook-id %s to one URL, %s to the other: one event has one id", idAll, idOwn)
		}
		// The delivery log: the 500 and the retry to one URL, the
		// delivery to the other, once the workers recorded them.
		var log []*store.WebhookDelivery
		for deadline := time.Now().Add(30 * time.Second); len(log) < 3 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			page, err := svc.Store().ListWebhookDeliveries(ctx, &store.ListWebhookDeliveriesParams{OwnerID: "ann", RunID: start.RunID})
			if err != nil {
				t.Fatal(err)
			}
			log = page.Deliveries
		}
		codes := map[string][]int{}
		for i := len(log) - 1; i >= 0; i-- {
			codes[log[i].URL] = append(codes[log[i].URL], log[i].StatusCode)
			// Only an attempt answered 2xx ends the delivery here (the
			// 500 is retried): the retention sweeps only those.
			if log[i].Final != (log[i].StatusCode == 204) {
				t.Errorf("attempt %d to %s answered %d: Final %v", log[i].Attempt, log[i].URL, log[i].StatusCode, log[i].Final)
			}
		}
		if len(log) != 3 || len(codes[all.URL+"/all"]) != 2 || codes[all.URL+"/all"][0] != 500 || codes[all.URL+"/all"][1] != 204 ||
			len(codes[own.URL+"/own"]) != 1 || codes[own.URL+"/own"][0] != 204 {
			t.Errorf("delivery log %v", codes)
		}
		if len(all.Bad()) > 0 {
			t.Fatalf("deliveries failed verification: %v", all.Bad())
		}
		if all.Attempts(idAll) != 2 || all.Accepted(idAll) != 1 {
			t.Errorf("attempts %d, accepted %d: want a retry after the 500 and one acceptance", all.Attempts(idAll), all.Accepted(idAll))
		}
		ev := all.Event(idAll)
		if ev.Type != webhook.RunCompleted || ev.Data.RunID != start.RunID || ev.Data.ThreadID == "" ||
			ev.Data.Network != "support" || ev.Data.Status != "completed" || ev.Data.Output == "" {
			t.Errorf("event %+v, want run.completed of run %s", ev, start.RunID)
		}
		// The same event recorded again (as a retried transaction would),
		// with a new payload timestamp: River's unique args (owner,
		// webhook-id, URL, target) make it no new job.
		st := &runstate.State{RunID: start.RunID, ThreadID: ev.Data.ThreadID, Network: "support", Status: runstate.StatusCompleted, FinalOutput: ev.Data.Output}
		again := svc.Webhooks().EndTx(n.Continuation, nil)
		if err := svc.Store().Tx(ctx, func(tx store.Tx) error {
			return again(ctx, tx, "ann", st, strings.TrimPrefix(idAll, "msg_"))
		}); err != nil {
			t.Fatal(err)
		}
		// No other event, no second delivery of this one.
		select {
		case d := <-all.Got:
			t.Errorf("a second delivery %s", d.ID)
		case <-time.After(time.Second):
		}
	})
}

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
		svc := startedWithWebhook(t, open(t), example("support"), url, secret)
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

// TestWebhooksRefused: a webhook URL on a loopback or private address is
// refused unless the allow list names it; a secret is required and must be
// whsec_ and base64.
func TestWebhooksRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := testdb.SQLite(t)
	secret := webhooktest.NewSecret(t)
	for name, cfg := range map[string]webhook.Config{
		"Loopback":   {URLs: []string{"http://127.0.0.1:9/x"}, Secret: secret},
		"Private":    {URLs: []string{"http://10.1.2.3/x"}, Secret: secret},
		"LinkLocal":  {URLs: []string{"http://169.254.169.254/latest/meta-data"}, Secret: secret},
		"IPv6":       {URLs: []string{"http://[::1]:9/x"}, Secret: secret},
		"Localhost":  {URLs: []string{"http://localhost:9/x"}, Secret: secret},
		"Scheme":     {URLs: []string{"file:///etc/passwd"}, Secret: secret},
		"NoSecret":   {URLs: []string{"http://127.0.0.1:9/x"}, Allow: []string{"127.0.0.0/8"}},
		"BadSecret":  {URLs: []string{"http://127.0.0.1:9/x"}, Allow: []string{"127.0.0.0/8"}, Secret: "nope"},
		"OtherAllow": {URLs: []string{"http://127.0.0.1:9/x"}, Allow: []string{"10.0.0.0/8"}, Secret: secret},
	} {
		_, err := service.Open(ctx, service.Config{Store: st, Files: []string{example("support")}, Webhooks: cfg})
		if err == nil {
			t.Errorf("%s: opened", name)
			continue
		}
		if name != "NoSecret" && name != "BadSecret" && !errors.Is(err, webhook.ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", name, err)
		}
	}
}

// TestWebhookFailed: a run that fails (the support network with max_turns
// 1: triage's transfer to billing takes a second turn) sends run.failed,
// signed, with its status and failure, on SQLite and PostgreSQL.
func TestWebhookFailed(t *testing.T) {
	t.Parallel()
	file := editedExample(t, "support", "max_turns: 12", "max_turns: 1")
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		ctx := t.Context()
		secret := webhooktest.NewSecret(t)
		rcv := webhooktest.NewReceiver(t, secret, false)
		svc := startedWithWebhook(t, open(t), file, rcv.URL+"/all", secret)
		n, _ := svc.Network("support")
		start := runStart(t, n.Threads.Turn(ctx, "ann", "I was charged twice for order 1234", threads.TurnOptions{}), true)
		id := rcv.Next(t).ID
		if len(rcv.Bad()) > 0 {
			t.Fatalf("deliveries failed verification: %v", rcv.Bad())
		}
		ev := rcv.Event(id)
		if ev.Type != webhook.RunFailed || ev.Data.RunID != start.RunID || ev.Data.ThreadID == "" || ev.Data.Network != "support" ||
			ev.Data.Status != "failed" || ev.Data.Failure == nil || ev.Data.Failure.Limit != "max_turns" || ev.Data.Failure.Message == "" {
			t.Errorf("event %+v (failure %+v), want run.failed of run %s with the max_turns limit", ev, ev.Data.Failure, start.RunID)
		}
	})
}

// TestNetworkWebhooks: a network file's webhooks: take its runs' events
// (here run.completed of the support network) besides the server-wide
// URL, signed with the server's secret or the one its secret_env names
// (reference-library verification with each), with one webhook-id; a
// network webhook without a secret, on a refused address or naming an
// unset variable fails Open. SQLite and PostgreSQL.
func TestNetworkWebhooks(t *testing.T) {
	t.Parallel()
	withHook := func(t *testing.T, hooks string) string {
		return editedExample(t, "support", "\ntools:\n", "\nwebhooks:\n"+hooks+"\ntools:\n")
	}
	testdb.Each(t, func(t *testing.T, open func(testing.TB) store.Store) {
		ctx := t.Context()
		secret := webhooktest.NewSecret(t)
		all := webhooktest.NewReceiver(t, secret, false)
		net := webhooktest.NewReceiver(t, secret, false)
		// A webhook with its own secret (secret_env), in a variable of
		// this subtest's.
		ownSecret := webhooktest.NewSecret(t)
		own := webhooktest.NewReceiver(t, ownSecret, false)
		env := "BATON_TEST_HOOK_" + strings.ToUpper(filepath.Base(t.Name()))
		if err := os.Setenv(env, ownSecret); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Unsetenv(env) })
		hooks := "  - url: " + net.URL + "/net\n  - url: " + own.URL + "/own\n    secret_env: " + env + "\n"
		st := open(t)
		for name, c := range map[string]struct {
			cfg   webhook.Config
			hooks string
		}{
			"NoSecret": {webhook.Config{}, hooks},
			"Refused":  {webhook.Config{Secret: secret}, hooks},
			"NoEnv":    {webhook.Config{Secret: secret, Allow: []string{"127.0.0.1"}}, "  - url: " + own.URL + "\n    secret_env: " + env + "_UNSET\n"},
		} {
			if _, err := service.Open(ctx, service.Config{Store: st, Files: []string{withHook(t, c.hooks)}, Webhooks: c.cfg}); err == nil {
				t.Errorf("%s: opened", name)
			} else if name == "Refused" && !errors.Is(err, webhook.ErrRefused) {
				t.Errorf("%s: %v, want ErrRefused", name, err)
			}
		}
		svc := startedWithWebhook(t, st, withHook(t, hooks), all.URL+"/all", secret)
		n, _ := svc.Network("support")
		start := runStart(t, n.Threads.Turn(ctx, "ann", "I was charged twice for order 1234", threads.TurnOptions{}), false)
		idAll, idNet, idOwn := all.Next(t).ID, net.Next(t).ID, own.Next(t).ID
		if idAll != idNet || idAll != idOwn {
			t.Errorf("webhook-id %s to the server's URL, %s and %s to the network's: one event has one id", idAll, idNet, idOwn)
		}
		if len(own.Bad()) > 0 || own.Accepted(idOwn) != 1 {
			t.Errorf("the secret_env webhook: %d accepted, verification failures %v", own.Accepted(idOwn), own.Bad())
		}
		if len(net.Bad()) > 0 {
			t.Fatalf("deliveries failed verification: %v", net.Bad())
		}
		ev := net.Event(idNet)
		if ev.Type != webhook.RunCompleted || ev.Data.RunID != start.RunID || ev.Data.Network != "support" || ev.Data.Status != "completed" {
			t.Errorf("event %+v, want run.completed of run %s", ev, start.RunID)
		}
	})
}

// startedWithWebhook starts a service on st with the network file, two
// workers and url as the server-wide webhook, signed with secret (its
// loopback address allowed).
func startedWithWebhook(t *testing.T, st store.Store, file, url, secret string) *service.Service {
	t.Helper()
	return servicetest.Started(t, service.Config{Store: st, Files: []string{file}, Workers: 2,
		Webhooks: webhook.Config{URLs: []string{url}, Secret: secret, Allow: []string{"127.0.0.1"}, Timeout: 5 * time.Second}})
}

// editedExample writes the example network name, with its first old
// replaced by new, to a file of t's and returns the file's path.
func editedExample(t *testing.T, name, old, new string) string {
	t.Helper()
	src, err := os.ReadFile(example(name))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "network.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(string(src), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
