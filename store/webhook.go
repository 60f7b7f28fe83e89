package store

import "time"

// WebhookDelivery is one attempt to deliver a webhook: its event, where it
// went and how the receiver answered (the [AppendWebhookDeliveryParams] it
// was appended with), its ID and its time.
type WebhookDelivery struct {
	// ID is time-ordered (UUIDv7).
	ID string
	AppendWebhookDeliveryParams
	CreatedAt time.Time
}

// AppendWebhookDeliveryParams are the params of
// [Ops.AppendWebhookDelivery], and what a [WebhookDelivery] records.
type AppendWebhookDeliveryParams struct {
	OwnerID string
	// WebhookID is the event's webhook-id, the same on every attempt.
	// WebhookID, EventType and URL are required.
	WebhookID string
	EventType string
	URL       string
	// Target tells a run's own target from others of the same URL (an A2A
	// push notification config's id); "" for a webhook URL. A delivery is
	// its (WebhookID, URL, Target).
	Target   string
	ThreadID string
	RunID    string
	Network  string
	// Attempt counts from 1.
	Attempt int
	// StatusCode is the receiver's HTTP status, 0 when none answered.
	StatusCode int
	// Error is why the attempt failed; "" for a 2xx answer.
	Error    string
	Duration time.Duration
	// Final marks the delivery's last attempt: a 2xx answer, or the
	// attempt after which it is not tried again.
	Final bool
}

// ListWebhookDeliveriesParams are the params of [Ops.ListWebhookDeliveries].
type ListWebhookDeliveriesParams struct {
	OwnerID string
	// WebhookID and RunID, when set, filter.
	WebhookID string
	RunID     string
	// Networks, when set, lists only the deliveries of those networks'
	// runs.
	Networks []string
	// Limit is the page size. Defaults to 50; at most 1000.
	Limit int
	// Cursor is the NextCursor of the previous page; "" is the first page.
	Cursor string
}

// WebhookDeliveryPage is a page of deliveries, newest first.
type WebhookDeliveryPage struct {
	Deliveries []*WebhookDelivery
	// NextCursor continues the listing; "" when this is the last page.
	NextCursor string
}

// PruneWebhookDeliveriesParams are the params of
// [Store.PruneWebhookDeliveries].
type PruneWebhookDeliveriesParams struct {
	// Before is the retention's horizon: the attempts of a delivery
	// (owner, WebhookID, URL, Target) whose final attempt was logged
	// before it are deleted. Required.
	Before time.Time
	// After continues a walk: only rows whose id sorts after it are looked
	// at. "" starts from the first.
	After string
	// Limit is how many rows the call looks at. Defaults to
	// [DefaultPruneLimit].
	Limit int
}
