package a2a

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/store"
)

// TestPushPage pages configs given in any order, some created in the same
// microsecond: every page size walks them all once, in (time, id) order,
// and a config deleted or added before the cursor shifts none of the
// others; pageSize 0 is 100, more is 100; the last page's token is "",
// and present on the wire.
func TestPushPage(t *testing.T) {
	base := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	var cs []*store.PushConfig
	for i := range 250 {
		// Three configs per microsecond, ids out of creation order.
		cs = append(cs, &store.PushConfig{ID: fmt.Sprintf("c%03d", 249-i), CreatedAt: base.Add(time.Duration(i/3) * time.Microsecond)})
	}
	var sorted []string
	all, next, err := pushPage(cs, 1000, "")
	if err != nil || len(all) != maxPushPage || next == "" {
		t.Fatalf("pageSize over the bound: %d configs, next %q, %v; want %d and a token", len(all), next, err, maxPushPage)
	}
	for _, size := range []int{0, 1, 2, 7, 100} {
		var got []string
		token := ""
		for pages := 0; ; pages++ {
			page, next, err := pushPage(cs, size, token)
			if err != nil {
				t.Fatalf("size %d, token %q: %v", size, token, err)
			}
			if want := cmp.Or(size, maxPushPage); len(page) > want || next != "" && len(page) != want {
				t.Fatalf("size %d: a page of %d", size, len(page))
			}
			for _, c := range page {
				got = append(got, fmt.Sprintf("%d/%s", c.CreatedAt.UnixMicro(), c.ID))
			}
			if next == "" {
				break
			}
			token = next
			if pages > len(cs) {
				t.Fatalf("size %d: the walk does not end", size)
			}
		}
		if len(got) != len(cs) {
			t.Fatalf("size %d: %d configs walked, want %d", size, len(got), len(cs))
		}
		for i := 1; i < len(got); i++ {
			if pushKeyLess(got[i], got[i-1]) || got[i] == got[i-1] {
				t.Fatalf("size %d: %s after %s", size, got[i], got[i-1])
			}
		}
		if sorted == nil {
			sorted = got
		}
	}

	// A cursor after the first 10; the 10th deleted, one added before it.
	first, token, err := pushPage(cs, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	var kept []*store.PushConfig
	for _, c := range cs {
		if c != first[9] {
			kept = append(kept, c)
		}
	}
	kept = append(kept, &store.PushConfig{ID: "a", CreatedAt: base})
	page, _, err := pushPage(kept, 3, token)
	if err != nil || len(page) != 3 || fmt.Sprintf("%d/%s", page[0].CreatedAt.UnixMicro(), page[0].ID) != sorted[10] {
		t.Fatalf("after a deletion: %v, first %+v, want %s", err, page[0], sorted[10])
	}

	last, next, err := pushPage(cs[:2], 5, "")
	if err != nil || len(last) != 2 || next != "" {
		t.Fatalf("one short page: %d, %q, %v", len(last), next, err)
	}
	if b, _ := json.Marshal(a2av1.PushConfigList{Configs: []a2av1.PushConfig{}}); !strings.Contains(string(b), `"nextPageToken":""`) {
		t.Errorf("the last page on the wire: %s, want nextPageToken \"\"", b)
	}
}

// b64 is s as a page token's encoding.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// pushKeyLess orders "micros/id" keys as the cursor does.
func pushKeyLess(a, b string) bool {
	am, aid, _ := strings.Cut(a, "/")
	bm, bid, _ := strings.Cut(b, "/")
	if len(am) != len(bm) {
		return len(am) < len(bm)
	}
	if am != bm {
		return am < bm
	}
	return aid < bid
}

// TestPushPageBad: a malformed token or a negative pageSize is
// ErrInvalidParams, never another error.
func TestPushPageBad(t *testing.T) {
	cs := []*store.PushConfig{{ID: "a", CreatedAt: time.Now()}}
	enc := b64
	for _, token := range []string{"!", "not a token", "eC8=", enc("x/"), enc("12"), enc("12/"), enc("-1/a"), enc("+1/a"), enc("01/a"),
		enc("99999999999999999999/a"), enc("1/" + strings.Repeat("a", a2av1.MaxPushID+1)), strings.Repeat("A", a2av1.MaxPushToken+1)} {
		if _, _, err := pushPage(cs, 1, token); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("token %q: %v, want invalid params", token, err)
		}
	}
	if _, _, err := pushPage(cs, -1, ""); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("pageSize -1: %v, want invalid params", err)
	}
	if c, err := a2av1.ParsePushToken(enc("0/a/b")); err != nil || c.Created != 0 || c.ID != "a/b" {
		t.Errorf("a config id with a slash: %+v, %v", c, err)
	}
}
