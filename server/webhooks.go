package server

import (
	"errors"
	"net/http"

	"github.com/batonhq/baton/server/internal/wire"
	"github.com/batonhq/baton/store"
)

// listWebhookDeliveries is GET /v1/webhooks/deliveries?webhook_id=&run_id=&limit=&cursor=:
// the caller's webhook delivery attempts, newest first (a key limited to
// networks sees those of its networks' runs).
func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request, c *Caller) error {
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), "limit", 20, 1, 100)
	if err != nil {
		return err
	}
	page, err := s.st.ListWebhookDeliveries(r.Context(), &store.ListWebhookDeliveriesParams{OwnerID: c.Owner, WebhookID: q.Get("webhook_id"),
		RunID: q.Get("run_id"), Networks: c.Networks, Limit: limit, Cursor: q.Get("cursor")})
	if errors.Is(err, store.ErrInvalid) {
		return BadRequest("a filter or the cursor is malformed")
	}
	if err != nil {
		return err
	}
	return writePage(w, page.Deliveries, page.NextCursor, func(d *store.WebhookDelivery) wire.WebhookDelivery {
		return wire.WebhookDelivery{ID: d.ID, Object: "webhook_delivery", WebhookID: d.WebhookID, Type: d.EventType,
			URL: d.URL, Target: d.Target, ThreadID: d.ThreadID, RunID: d.RunID, Network: d.Network, Attempt: d.Attempt, StatusCode: d.StatusCode,
			Error: d.Error, DurationMS: d.Duration.Milliseconds(), Final: d.Final, CreatedAt: d.CreatedAt}
	})
}

// webhookSecret is POST /v1/webhooks/secret {"url": …}: the secret that
// signs the deliveries to url of the caller's own endpoints (a run's
// webhook, an A2A push notification config), for the caller's receiver to
// verify them with.
func (s *Server) webhookSecret(w http.ResponseWriter, r *http.Request, c *Caller) error {
	var req wire.WebhookSecret
	if err := DecodeJSON(r, &req, true); err != nil {
		return err
	}
	if req.URL == "" {
		return BadParam("url", "url is required: the webhook URL runs name")
	}
	hooks := s.cfg.Service.Webhooks()
	if err := hooks.CheckURL(r.Context(), req.URL); err != nil {
		return BadParam("url", "%v", err)
	}
	secret, err := hooks.EndpointSecret(c.Owner, req.URL)
	if err != nil {
		return err
	}
	WriteJSON(w, http.StatusOK, wire.WebhookSecret{URL: req.URL, Secret: secret})
	return nil
}
