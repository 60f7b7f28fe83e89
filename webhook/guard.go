package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrRefused is the error of a webhook URL refused by the allow list: its
// host resolves to a loopback, private, link-local, unspecified or
// multicast address that [Config].Allow does not name, or its scheme is
// not http or https.
var ErrRefused = errors.New("webhook: URL refused")

// guard is the allow list: hosts (by name, as written in URLs) and
// networks (CIDRs or single addresses) that may be called although they
// resolve to an internal address.
type guard struct {
	hosts    map[string]bool
	prefixes []netip.Prefix
}

func newGuard(allow []string) (*guard, error) {
	g := &guard{hosts: map[string]bool{}}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
			continue
		case strings.Contains(a, "/"):
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("%w: allow %q: %w", ErrConfig, a, err)
			}
			g.prefixes = append(g.prefixes, p.Masked())
		default:
			if ip, err := netip.ParseAddr(a); err == nil {
				g.prefixes = append(g.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				continue
			}
			g.hosts[strings.ToLower(a)] = true
		}
	}
	return g, nil
}

// internal reports whether ip is an address a tenant must not make the
// server call.
func internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		// Carrier-grade NAT (RFC 6598), used for internal services too.
		netip.MustParsePrefix("100.64.0.0/10").Contains(ip)
}

// allowed reports whether host (as written in the URL) at address ip may
// be called.
func (g *guard) allowed(host string, ip netip.Addr) bool {
	if !internal(ip) || g.hosts[strings.ToLower(host)] {
		return true
	}
	for _, p := range g.prefixes {
		if p.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// parse checks a webhook URL's form and, resolving its host now, its
// addresses: a URL refused here is refused to the request that names it.
// The dialer checks again at each delivery ([guard.control]), since a
// name may resolve elsewhere later.
func (g *guard) parse(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: %q: the scheme must be http or https", ErrRefused, raw)
	}
	host := u.Hostname()
	if host == "" || u.User != nil {
		return nil, fmt.Errorf("%w: %q: a URL with a host and no user information is required", ErrRefused, raw)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrRefused, raw, err)
	}
	for _, ip := range addrs {
		if !g.allowed(host, ip) {
			return nil, fmt.Errorf("%w: %q resolves to %s, an internal address not in the allow list", ErrRefused, raw, ip)
		}
	}
	return u, nil
}

// dialer returns a DialContext that refuses, at connect time, an internal
// address the allow list does not name: the address dialled is the one
// resolved for this connection, so a name that resolves to a public
// address when the URL is checked and to an internal one later is still
// refused.
func (g *guard) dialer(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		dd := *d
		dd.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: address %q: %w", ErrRefused, address, err)
			}
			if !g.allowed(host, ap.Addr()) {
				return fmt.Errorf("%w: %s resolves to %s, an internal address not in the allow list", ErrRefused, host, ap.Addr())
			}
			return nil
		}
		return dd.DialContext(ctx, network, addr)
	}
}
