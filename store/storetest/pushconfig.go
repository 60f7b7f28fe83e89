package storetest

import (
	"testing"

	"github.com/batonhq/baton/store"
)

// testPushConfigs checks A2A push notification configs: put replaces a
// task's config of the same id, get and list read them, delete removes
// one; another owner sees none; a missing field is invalid, a missing
// thread not found.
func testPushConfigs(t *testing.T, s store.Store, b *bundle) {
	th := newThread(t, s, b).ID
	put := func(run, id, url string) *store.PushConfig {
		return Must(s.PutPushConfig(b.ctx, &store.PutPushConfigParams{Config: store.PushConfig{OwnerID: b.owner, RunID: run, ID: id,
			ThreadID: th, Network: "n", URL: url, Token: "tok-" + id, AuthScheme: "Bearer", AuthCredentials: "cred", Protocol: "1.0"}}))(t)
	}
	c := put("r1", "a", "https://example.com/a")
	if c.OwnerID != b.owner || c.RunID != "r1" || c.ID != "a" || c.ThreadID != th || c.Network != "n" || c.URL != "https://example.com/a" ||
		c.Token != "tok-a" || c.AuthScheme != "Bearer" || c.AuthCredentials != "cred" || c.Protocol != "1.0" {
		t.Fatalf("PutPushConfig = %+v", c)
	}
	checkTime(t, "CreatedAt", c.CreatedAt)
	put("r1", "b", "https://example.com/b")
	put("r2", "a", "https://example.com/other")
	put("r1", "a", "https://example.com/a2")
	got := Must(s.GetPushConfig(b.ctx, &store.PushConfigKeyParams{OwnerID: b.owner, RunID: "r1", ID: "a"}))(t)
	if got.URL != "https://example.com/a2" {
		t.Fatalf("GetPushConfig after a second put: URL %q", got.URL)
	}
	list := Must(s.ListPushConfigs(b.ctx, &store.PushConfigKeyParams{OwnerID: b.owner, RunID: "r1"}))(t)
	if len(list) != 2 || list[0].ID == list[1].ID {
		t.Fatalf("ListPushConfigs(r1) = %+v", list)
	}
	if other := Must(s.ListPushConfigs(b.ctx, &store.PushConfigKeyParams{OwnerID: b.other, RunID: "r1"}))(t); len(other) != 0 {
		t.Fatalf("another owner lists %d configs", len(other))
	}
	_, err := s.GetPushConfig(b.ctx, &store.PushConfigKeyParams{OwnerID: b.other, RunID: "r1", ID: "a"})
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeletePushConfig(b.ctx, &store.PushConfigKeyParams{OwnerID: b.other, RunID: "r1", ID: "a"}), store.ErrNotFound)
	Must(0, s.DeletePushConfig(b.ctx, &store.PushConfigKeyParams{OwnerID: b.owner, RunID: "r1", ID: "a"}))(t)
	wantErr(t, s.DeletePushConfig(b.ctx, &store.PushConfigKeyParams{OwnerID: b.owner, RunID: "r1", ID: "a"}), store.ErrNotFound)
	if list := Must(s.ListPushConfigs(b.ctx, &store.PushConfigKeyParams{OwnerID: b.owner, RunID: "r1"}))(t); len(list) != 1 || list[0].ID != "b" {
		t.Fatalf("after delete: %+v", list)
	}
	_, err = s.PutPushConfig(b.ctx, &store.PutPushConfigParams{Config: store.PushConfig{OwnerID: b.owner, RunID: "r1", ID: "c", Protocol: "1.0"}})
	wantErr(t, err, store.ErrInvalid)
	// A thread that does not exist, and another owner's.
	for _, k := range []struct{ owner, thread string }{{b.owner, th + "-missing"}, {b.other, th}} {
		_, err = s.PutPushConfig(b.ctx, &store.PutPushConfigParams{Config: store.PushConfig{OwnerID: k.owner, RunID: "r1", ID: "c",
			ThreadID: k.thread, URL: "https://example.com/c", Protocol: "1.0"}})
		wantErr(t, err, store.ErrNotFound)
	}
}
