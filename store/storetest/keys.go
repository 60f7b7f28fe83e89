package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// testAPIKeyScopes checks that a key keeps its scopes, networks and expiry,
// that a key made without scopes has every right, and that a bad scope or
// network name is refused.
func testAPIKeyScopes(t *testing.T, s store.Store, b *bundle) {
	full := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner}))(t).Key
	if !reflect.DeepEqual(full.Scopes, []store.Scope{store.ScopeAdmin}) || len(full.Networks) != 0 || !full.ExpiresAt.IsZero() {
		t.Fatalf("a key made without scopes = %+v, want admin, every network, no expiry", full)
	}
	exp := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Microsecond)
	made := Must(s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Scopes: []store.Scope{store.ScopeRead, store.ScopeDecide},
		Networks: []string{"support", "research"}, ExpiresAt: exp}))(t)
	k := made.Key
	if !reflect.DeepEqual(k.Scopes, []store.Scope{store.ScopeRead, store.ScopeDecide}) || !reflect.DeepEqual(k.Networks, []string{"support", "research"}) || !k.ExpiresAt.Equal(exp) {
		t.Fatalf("CreateAPIKey = %+v", k)
	}
	got := Must(s.LookupAPIKey(b.ctx, &store.LookupAPIKeyParams{Hash: store.HashAPIKey(made.Secret)}))(t)
	if !reflect.DeepEqual(got, k) {
		t.Fatalf("LookupAPIKey = %+v, want %+v", got, k)
	}
	keys := Must(s.ListAPIKeys(b.ctx, &store.ListAPIKeysParams{OwnerID: b.owner}))(t)
	if len(keys) != 2 || !reflect.DeepEqual(keys[1], k) {
		t.Fatalf("ListAPIKeys = %+v", keys)
	}
	_, err := s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Scopes: []store.Scope{"root"}})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Networks: []string{"two words"}})
	wantErr(t, err, store.ErrInvalid)
	_, err = s.CreateAPIKey(b.ctx, &store.CreateAPIKeyParams{OwnerID: b.owner, Networks: []string{"nul\x00"}})
	wantErr(t, err, store.ErrInvalid)
}

// testThreadListNetworks checks that a listing limited to networks holds
// only their threads.
func testThreadListNetworks(t *testing.T, s store.Store, b *bundle) {
	for _, n := range []string{"a", "b", "c", "a"} {
		Must(s.CreateThread(b.ctx, &store.CreateThreadParams{OwnerID: b.owner, Network: n}))(t)
	}
	for _, tc := range []struct {
		networks []string
		want     int
	}{{nil, 4}, {[]string{"a"}, 2}, {[]string{"a", "c"}, 3}, {[]string{"z"}, 0}} {
		page := Must(s.ListThreads(b.ctx, &store.ListThreadsParams{OwnerID: b.owner, Networks: tc.networks}))(t)
		if len(page.Threads) != tc.want {
			t.Errorf("ListThreads(Networks %v) = %d threads, want %d", tc.networks, len(page.Threads), tc.want)
		}
		for _, th := range page.Threads {
			if len(tc.networks) > 0 && !contains(tc.networks, th.Network) {
				t.Errorf("ListThreads(Networks %v) holds a thread of %q", tc.networks, th.Network)
			}
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
