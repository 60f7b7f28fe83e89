package storetest

import (
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// testWebhookDeliveries checks the webhook delivery log: attempts list
// newest first, filtered by webhook id and run, paged; another owner sees
// none; a missing field is invalid.
func testWebhookDeliveries(t *testing.T, s store.Store, b *bundle) {
	add := func(id, run string, attempt, status int, errText string) {
		Must(s.AppendWebhookDelivery(b.ctx, &store.AppendWebhookDeliveryParams{OwnerID: b.owner, WebhookID: id, EventType: "run.completed",
			URL: "https://example.com/hook", ThreadID: "t1", RunID: run, Network: "net-" + run, Attempt: attempt, StatusCode: status, Error: errText,
			Duration: 1500 * time.Microsecond}))(t)
	}
	add("msg_1", "r1", 1, 500, "answered 500")
	add("msg_1", "r1", 2, 204, "")
	add("msg_2", "r2", 1, 0, "connection refused")
	all := Must(s.ListWebhookDeliveries(b.ctx, &store.ListWebhookDeliveriesParams{OwnerID: b.owner}))(t)
	if len(all.Deliveries) != 3 || all.Deliveries[0].WebhookID != "msg_2" || all.Deliveries[2].Attempt != 1 || all.Deliveries[2].StatusCode != 500 {
		t.Fatalf("ListWebhookDeliveries = %+v", all.Deliveries)
	}
	d := all.Deliveries[1]
	if d.OwnerID != b.owner || d.EventType != "run.completed" || d.URL != "https://example.com/hook" || d.ThreadID != "t1" || d.RunID != "r1" ||
		d.Attempt != 2 || d.StatusCode != 204 || d.Error != "" || d.Duration != 1500*time.Microsecond || d.ID == "" {
		t.Fatalf("delivery = %+v", d)
	}
	checkTime(t, "CreatedAt", d.CreatedAt)
	if page := Must(s.ListWebhookDeliveries(b.ctx, &store.ListWebhookDeliveriesParams{OwnerID: b.owner, WebhookID: "msg_1"}))(t); len(page.Deliveries) != 2 {
		t.Errorf("by webhook id: %d deliveries, want 2", len(page.Deliveries))
	}
	if page := Must(s.ListWebhookDeliveries(b.ctx, &store.ListWebhookDeliveriesParams{OwnerID: b.owner, RunID: "r2"}))(t); len(page.Deliveries) != 1 {
		t.Errorf("by run: %d deliveries, want 1", len(page.Deliveries))
	}
	if page := Must(s.ListWebhookDeliveries(b.ctx, &store.ListWebhookDeliveriesParams{OwnerID: b.owner, Networks: []string{"net-r1"}}))(t); len(page.Deliveries) != 2 || page.Deliveries[0].Network != "net-r1" {
		t.Errorf("by network: %+v, want 2 of net-r1", page.Deliveries)
	}
	checkPages(t, b, all.Deliveries[2].ID, func(owner string, limit int, cursor string) ([]*store.WebhookDelivery, string) {
		page := Must(s.ListWebhookDeliveries(b.ctx, &store.ListWebhookDeliveriesParams{OwnerID: owner, Limit: limit, Cursor: cursor}))(t)
		return page.Deliveries, page.NextCursor
	}, func(d *store.WebhookDelivery) string { return d.ID })
	_, err := s.AppendWebhookDelivery(b.ctx, &store.AppendWebhookDeliveryParams{OwnerID: b.owner, EventType: "run.completed", URL: "u"})
	wantErr(t, err, store.ErrInvalid)
}

// testWebhookRetention checks PruneWebhookDeliveries: walked in batches,
// it deletes the attempts of deliveries whose final attempt is older than
// the horizon, of every owner, and keeps a pending delivery's attempts (a
// delivery is its event, URL and target: another target's on the same URL
// having ended does not end it) and every delivery that ended after the
// horizon.
func testWebhookRetention(t *testing.T, s store.Store, b *bundle) {
	addTo := func(owner, id, target string, attempt, status int, final bool) {
		d := Must(s.AppendWebhookDelivery(b.ctx, &store.AppendWebhookDeliveryParams{OwnerID: owner, WebhookID: id, EventType: "run.completed",
			URL: "https://example.com/hook", Target: target, Attempt: attempt, StatusCode: status, Final: final}))(t)
		if d.Target != target {
			t.Fatalf("AppendWebhookDelivery: Target %q, want %q", d.Target, target)
		}
	}
	add := func(owner, id string, attempt, status int, final bool) { addTo(owner, id, "", attempt, status, final) }
	add(b.owner, "msg_done", 1, 500, false)
	add(b.owner, "msg_done", 2, 204, true)
	add(b.owner, "msg_pending", 1, 503, false)
	add(b.owner, "msg_pending", 2, 0, false)
	add(b.owner, "msg_gave_up", 10, 500, true)
	add(b.other, "msg_other", 1, 200, true)
	// Two targets of one event on the same URL (two push configs of a
	// task): push-a has ended, push-b is still pending.
	addTo(b.owner, "msg_push", "push-a", 1, 500, false)
	addTo(b.owner, "msg_push", "push-b", 1, 503, false)
	addTo(b.owner, "msg_push", "push-a", 2, 200, true)
	ids := func(owner string) map[string]int {
		page := Must(s.ListWebhookDeliveries(b.ctx, &store.ListWebhookDeliveriesParams{OwnerID: owner, Limit: 100}))(t)
		m := map[string]int{}
		for _, d := range page.Deliveries {
			m[d.WebhookID+"/"+d.Target]++
			if d.Final != (d.StatusCode == 204 || d.Attempt == 10 || d.StatusCode == 200) {
				t.Errorf("delivery %s attempt %d: Final %v", d.WebhookID, d.Attempt, d.Final)
			}
		}
		return m
	}
	sweep := func(before time.Time) int {
		p := &store.PruneWebhookDeliveriesParams{Before: before, Limit: 2}
		deleted := 0
		for {
			res := Must(s.PruneWebhookDeliveries(b.ctx, p))(t)
			deleted += res.Deleted
			if res.Next == "" {
				return deleted
			}
			p.After = res.Next
		}
	}
	if n := sweep(time.Now().Add(-time.Hour)); n != 0 {
		t.Fatalf("a horizon before every delivery deleted %d rows", n)
	}
	if n := sweep(time.Now().Add(time.Second)); n != 6 {
		t.Errorf("the sweep deleted %d rows, want 6 (two of msg_done, msg_gave_up, msg_other, two of msg_push to push-a)", n)
	}
	if got := ids(b.owner); len(got) != 2 || got["msg_pending/"] != 2 || got["msg_push/push-b"] != 1 {
		t.Errorf("after the sweep: %v, want msg_pending's 2 attempts and msg_push's 1 to push-b", got)
	}
	if got := ids(b.other); len(got) != 0 {
		t.Errorf("another owner's ended delivery kept: %v", got)
	}
	_, err := s.PruneWebhookDeliveries(b.ctx, &store.PruneWebhookDeliveriesParams{})
	wantErr(t, err, store.ErrInvalid)
}
