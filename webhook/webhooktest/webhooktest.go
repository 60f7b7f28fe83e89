// Package webhooktest is a webhook receiver for tests: an HTTP server on
// loopback that verifies every delivery with the Standard Webhooks
// reference library, as a receiver of baton's webhooks would.
package webhooktest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/batonhq/baton/webhook"
)

// NewSecret returns a new random endpoint secret (whsec_…).
func NewSecret(t testing.TB) string {
	t.Helper()
	k := make([]byte, 24)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(k)
}

// Delivery is a delivery the receiver accepted.
type Delivery struct {
	// ID is its webhook-id header, Path its URL's path.
	ID, Path string
	Event    webhook.Event
	// Header and Body are the request's (a body that is not an Event: an
	// A2A push notification's task).
	Header http.Header
	Body   []byte
}

// Receiver is a webhook endpoint on loopback, closed when the test ends. A
// delivery whose signature does not verify is answered 401 and recorded
// (Bad); with FailFirst, the first attempt of every message is answered
// 500 (a holding receiver holds it instead); every other delivery is
// answered 204 and sent on Got.
type Receiver struct {
	*httptest.Server
	// Got receives each accepted delivery (buffered: 100).
	Got chan Delivery
	// Secret is the secret the receiver was made with.
	Secret string

	failFirst bool
	// held, for a holding receiver, is closed at the first attempt held.
	held     chan struct{}
	holdOnce sync.Once
	mu       sync.Mutex
	// own verifies the deliveries to a path with its own secret
	// ([Receiver.SetSecret]).
	own      map[string]*standardwebhooks.Webhook
	attempts map[string]int // webhook-id → attempts verified
	accepted map[string]int // webhook-id → 2xx answers given
	events   map[string]webhook.Event
	bad      []error
}

// NewReceiver starts a receiver of deliveries signed with secret.
func NewReceiver(t testing.TB, secret string, failFirst bool) *Receiver {
	t.Helper()
	return newReceiver(t, secret, failFirst, nil)
}

// NewHoldingReceiver starts a receiver of deliveries signed with secret
// that holds the first verified attempt of every message unanswered until
// its sender hangs up (a sender killed between its commit and a send);
// first is closed when the first such attempt arrives.
func NewHoldingReceiver(t testing.TB, secret string) (r *Receiver, first <-chan struct{}) {
	t.Helper()
	held := make(chan struct{})
	return newReceiver(t, secret, false, held), held
}

func newReceiver(t testing.TB, secret string, failFirst bool, held chan struct{}) *Receiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Got: make(chan Delivery, 100), Secret: secret, failFirst: failFirst, held: held,
		own: map[string]*standardwebhooks.Webhook{}, attempts: map[string]int{}, accepted: map[string]int{}, events: map[string]webhook.Event{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		status, d := r.receive(wh, req, body)
		if status == 0 { // held
			r.holdOnce.Do(func() { close(r.held) })
			<-req.Context().Done()
			return
		}
		w.WriteHeader(status)
		if d != nil {
			r.Got <- *d
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// receive verifies and records a delivery and returns the status to answer
// it with (0: hold it) and, if it is accepted, the delivery.
func (r *Receiver) receive(wh *standardwebhooks.Webhook, req *http.Request, body []byte) (int, *Delivery) {
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	defer r.mu.Unlock()
	v := wh
	if o, ok := r.own[req.URL.Path]; ok {
		v = o
		// The receiver's secret (the server's) must not sign a
		// delivery to an endpoint with its own.
		if wh.Verify(body, req.Header) == nil {
			r.bad = append(r.bad, fmt.Errorf("delivery %s to %s verifies with the receiver's default secret, not only its own", id, req.URL.Path))
		}
	}
	if err := v.Verify(body, req.Header); err != nil {
		r.bad = append(r.bad, err)
		return http.StatusUnauthorized, nil
	}
	r.attempts[id]++
	switch {
	case r.failFirst && r.attempts[id] == 1:
		return http.StatusInternalServerError, nil
	case r.held != nil && r.attempts[id] == 1:
		return 0, nil
	}
	var ev webhook.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		r.bad = append(r.bad, err)
	}
	r.events[id] = ev
	r.accepted[id]++
	return http.StatusNoContent, &Delivery{ID: id, Path: req.URL.Path, Event: ev, Header: req.Header.Clone(), Body: body}
}

// SetSecret makes the receiver verify the deliveries to path with secret
// (an endpoint's own, [webhook.Service.EndpointSecret]) instead of the
// one it was made with, and count as bad any of them that the latter
// verifies.
func (r *Receiver) SetSecret(t testing.TB, path, secret string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.own[path] = wh
}

// IDs returns the ids of the messages of which verified attempts came,
// sorted.
func (r *Receiver) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.attempts))
}

// Attempts returns how many verified attempts of message id came.
func (r *Receiver) Attempts(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts[id]
}

// Accepted returns how many times message id was accepted.
func (r *Receiver) Accepted(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted[id]
}

// Event returns the event of message id.
func (r *Receiver) Event(id string) webhook.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[id]
}

// Bad returns the errors of the deliveries that did not verify or decode.
func (r *Receiver) Bad() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}

// Next returns the next accepted delivery, failing t when none comes in
// 60 s.
func (r *Receiver) Next(t testing.TB) Delivery {
	t.Helper()
	select {
	case d := <-r.Got:
		return d
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery in 60 s")
		return Delivery{}
	}
}
