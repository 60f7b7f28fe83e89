package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/store"
)

// TestKeysScopes creates a scoped, network-limited, expiring key and an
// unscoped one, and lists them with their scopes, networks and expiry.
func TestKeysScopes(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "baton.db")
	code, out, stderr := runCLI(t, "keys", "create", "--database", db, "--owner", "acme", "--scope", "read", "--scope", "decide", "--network", "support", "--expires", "30d")
	if code != 0 || !strings.HasPrefix(out, "baton_") || !strings.Contains(stderr, "scopes read,decide, networks support, expires 20") {
		t.Fatalf("keys create = %d, %q, %q", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "keys", "create", "--database", db, "--owner", "acme"); code != 0 || !strings.Contains(stderr, "scopes admin, networks *, expires never") {
		t.Fatalf("keys create (no scope) = %d, %q", code, stderr)
	}
	code, out, _ = runCLI(t, "keys", "list", "--database", db, "--owner", "acme")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], "SCOPES") || !strings.Contains(lines[0], "EXPIRES") {
		t.Fatalf("keys list = %d, %q", code, out)
	}
	if f := strings.Fields(lines[1]); !strings.Contains(lines[1], "read,decide") || !strings.Contains(lines[1], "support") || f[len(f)-1] != "-" {
		t.Errorf("scoped key listed as %q", lines[1])
	}
	if !strings.Contains(lines[2], "admin") || !strings.Contains(lines[2], "never") {
		t.Errorf("unscoped key listed as %q", lines[2])
	}
	for _, tc := range [][]string{
		{"--scope", "root"},
		{"--scope", ""},
		{"--expires", "30"},
		{"--expires", "-1d"},
		{"--expires", "0d"},
		{"--network", "two words"},
	} {
		args := append([]string{"keys", "create", "--database", db, "--owner", "acme"}, tc...)
		if code, _, stderr := runCLI(t, args...); code != 2 || !strings.Contains(stderr, tc[0]) {
			t.Errorf("keys create %v = %d, %q: want a usage error naming %s", tc, code, stderr, tc[0])
		}
	}
	if code, _, stderr := runCLI(t, "keys", "list", "--database", db, "--owner", "acme", "--scope", "read"); code != 2 {
		t.Errorf("keys list --scope = %d, %q: want a usage error", code, stderr)
	}

	// Each key created or revoked is in the owner's audit log.
	id := strings.Fields(lines[1])[0]
	if code, _, stderr := runCLI(t, "keys", "revoke", "--database", db, "--owner", "acme", id); code != 0 {
		t.Fatalf("keys revoke = %d, %q", code, stderr)
	}
	st := openTestStore(t, db)
	page, err := st.ListAudit(t.Context(), &store.ListAuditParams{OwnerID: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 3 || page.Events[0].Kind != store.AuditKeyRevoke || page.Events[0].KeyID != id || page.Events[0].Actor != store.ActorCLI ||
		page.Events[2].Kind != store.AuditKeyCreate || page.Events[2].KeyID != id || !strings.Contains(string(page.Events[2].Detail), `"scopes":["read","decide"]`) {
		for _, ev := range page.Events {
			t.Logf("%+v %s", ev, ev.Detail)
		}
		t.Fatalf("audit log of the keys: %d events", len(page.Events))
	}
}

func TestParseExpires(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true},
		{"12h", 12 * time.Hour, true},
		{"2w", 14 * 24 * time.Hour, true},
		{"1d12h", 36 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"45s", 45 * time.Second, true},
		{"", 0, false},
		{"30", 0, false},
		{"d", 0, false},
		{"0d", 0, false},
		{"1y", 0, false},
		{"-1d", 0, false},
		{"5300w", 0, false},
		{"999999999w", 0, false},
		{"1.5h", 0, false},
	} {
		got, err := ParseExpires(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseExpires(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseExpires checks that a lifetime parsed is positive, at most 100
// years, and that its canonical form (whole units) parses to the same.
func FuzzParseExpires(f *testing.F) {
	for _, s := range []string{"30d", "12h", "1d12h", "2w", "0d", "999999999w", "1h1h1h", "9s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseExpires(s)
		if err != nil {
			return
		}
		if d <= 0 || d > maxExpires {
			t.Fatalf("ParseExpires(%q) = %v, out of range", s, d)
		}
		day := 24 * time.Hour
		canon := fmt.Sprintf("%dd%ds", d/day, d%day/time.Second)
		if d2, err := ParseExpires(canon); err != nil || d2 != d {
			t.Fatalf("ParseExpires(%q) = %v; its form %q parses to %v, %v", s, d, canon, d2, err)
		}
	})
}
