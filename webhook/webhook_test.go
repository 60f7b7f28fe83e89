package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestSign: a signature the reference library verifies, and its own
// signature for the same message.
func TestSign(t *testing.T) {
	t.Parallel()
	wh, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	key, err := parseSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	now, body := time.Now(), []byte(`{"type":"run.completed"}`)
	want, err := wh.Sign("msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := Sign(key, "msg_1", now, body); got != want {
		t.Errorf("Sign = %s, the reference library %s", got, want)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", Sign(key, "msg_1", now, body))
	if err := wh.Verify(body, h); err != nil {
		t.Error(err)
	}
	if _, err := parseSecret("whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))); err == nil {
		t.Error("a 5-byte key accepted")
	}
}

// TestDialRefused: the guard refuses at connect time an internal address
// the allow list does not name, whatever the URL's check said: a name
// that resolved elsewhere then (DNS rebinding) is refused when dialled.
func TestDialRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	ctx := context.Background()
	open, err := New(ctx, Config{Secret: testSecret, Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := open.post(ctx, srv.URL, "msg_a", []byte("{}")); err != nil {
		t.Fatalf("allowed loopback: %v", err)
	}
	closed, err := New(ctx, Config{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	// The URL check is skipped (as if the name had resolved to a public
	// address then): the dialer refuses.
	if err := closed.post(ctx, srv.URL, "msg_b", []byte("{}")); !errors.Is(err, ErrRefused) {
		t.Errorf("dial of loopback without allow: %v, want ErrRefused", err)
	}
	if err := closed.CheckURL(ctx, srv.URL); !errors.Is(err, ErrRefused) {
		t.Errorf("CheckURL of loopback: %v, want ErrRefused", err)
	}
	byName, err := New(ctx, Config{Secret: testSecret, Allow: []string{"localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err := byName.post(ctx, "http://localhost:"+port, "msg_c", []byte("{}")); err != nil {
		t.Errorf("allowed by name: %v", err)
	}
	if err := byName.post(ctx, srv.URL, "msg_d", []byte("{}")); !errors.Is(err, ErrRefused) {
		t.Errorf("the same address by another name: %v, want ErrRefused", err)
	}
}

// FuzzCheckURL: no URL or allow entry panics the check; an accepted URL is
// http or https with a host, and never a literal internal address outside
// the allow list.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/x", "https://example.com/hook", "http://[::1]:80", "http://10.0.0.1", "file:///etc", "http://user@h/", "http://0x7f.1/", "http://169.254.169.254/",
		"http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b::7f00:1]/", "http://[2002:a00:1::]/", "http://[2002:7f00:1::1]/", "http://0.1.2.3/", "http://198.18.0.1/",
		"http://240.0.0.1/", "http://255.255.255.255/", "http://[fec0::1]/", "http://[::ffff:10.0.0.1]/", "http://[64:ff9b::808:808]/", "http://[2002:808:808::]/"} {
		f.Add(s, "10.0.0.0/8")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, raw, allow string) {
		g, err := newGuard([]string{allow})
		if err != nil {
			return
		}
		// No resolver: only literal addresses, so that the fuzzer does
		// not query DNS.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		u, err := g.parse(ctx, raw)
		if err != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
			t.Fatalf("accepted %q", raw)
		}
		ip, err := netip.ParseAddr(u.Hostname())
		if err != nil || !internal(ip) {
			return
		}
		// An internal literal: the allow entry must name it.
		a := strings.TrimSpace(allow)
		if strings.EqualFold(a, u.Hostname()) {
			return
		}
		if p, err := netip.ParsePrefix(a); err == nil && p.Masked().Contains(ip.Unmap()) {
			return
		}
		if x, err := netip.ParseAddr(a); err == nil && x.Unmap() == ip.Unmap() {
			return
		}
		t.Fatalf("accepted %q, an internal address, with allow %q", raw, allow)
	})
}

// TestInternal: the addresses the guard refuses, NAT64 and 6to4 ones by
// the IPv4 address they embed.
func TestInternal(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "169.254.169.254": true, "100.64.0.1": true, "::1": true, "fe80::1": true,
		"0.0.0.0": true, "0.1.2.3": true, "198.18.0.1": true, "198.19.255.255": true, "240.0.0.1": true, "255.255.255.255": true,
		"fec0::1": true, "feff::1": true, "::ffff:10.0.0.1": true,
		"64:ff9b::a9fe:a9fe": true, "64:ff9b::7f00:1": true, "64:ff9b::a00:1": true,
		"2002:a00:1::": true, "2002:7f00:1::1": true, "2002:a9fe:a9fe::1": true,
		"8.8.8.8": false, "1.1.1.1": false, "198.20.0.1": false, "223.255.255.255": false, "2606:4700::1111": false,
		"64:ff9b::808:808": false, "2002:808:808::": false, "fe00::1": false,
	} {
		if got := internal(netip.MustParseAddr(addr)); got != want {
			t.Errorf("internal(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestEndpointSecret: an endpoint's secret is a whsec_ secret of its own
// for each owner and URL, the same each time, never the server's; a
// delivery marked Endpoint is signed with it, others with the server's.
func TestEndpointSecret(t *testing.T) {
	s, err := New(context.Background(), Config{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://hooks.example.com/x"
	alice, _ := s.EndpointSecret("alice", url)
	seen := map[string]string{"server": testSecret}
	for name, got := range map[string]string{
		"alice": alice, "bob": must(s.EndpointSecret("bob", url)), "alice/y": must(s.EndpointSecret("alice", url+"y")),
		// No two (owner, URL) pairs run together.
		"ab+c": must(s.EndpointSecret("ab", "c")), "a+bc": must(s.EndpointSecret("a", "bc")),
	} {
		if _, err := parseSecret(got); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for other, sec := range seen {
			if sec == got {
				t.Errorf("%s and %s share a secret", name, other)
			}
		}
		seen[name] = got
	}
	if again, _ := s.EndpointSecret("alice", url); again != alice {
		t.Errorf("alice's secret changed: %s, then %s", alice, again)
	}
	key, _ := parseSecret(alice)
	if got, _ := s.keyOf(&Args{OwnerID: "alice", URL: url, Endpoint: true}); string(got) != string(key) {
		t.Error("an endpoint delivery is not signed with its endpoint secret")
	}
	if got, _ := s.keyOf(&Args{OwnerID: "alice", URL: url}); string(got) != string(s.key) {
		t.Error("a server-wide delivery is not signed with the server's secret")
	}
	var off *Service
	if _, err := off.EndpointSecret("alice", url); err == nil {
		t.Error("no webhooks, yet a secret")
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}
