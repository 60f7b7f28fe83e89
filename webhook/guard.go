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

// Networks internal refuses besides those net/netip names.
var (
	// Carrier-grade NAT (RFC 6598), used for internal services too.
	cgnat = netip.MustParsePrefix("100.64.0.0/10")
	// "This network" (RFC 791): 0.0.0.0/8 reaches the host itself on
	// some systems.
	thisNet = netip.MustParsePrefix("0.0.0.0/8")
	// Benchmarking (RFC 2544), often routed internally.
	bench = netip.MustParsePrefix("198.18.0.0/15")
	// Reserved (RFC 1112), broadcast included.
	reserved = netip.MustParsePrefix("240.0.0.0/4")
	// IPv6 site-local (RFC 3879, deprecated but still routed by some).
	siteLocal = netip.MustParsePrefix("fec0::/10")
	// NAT64 (RFC 6052) and 6to4 (RFC 3056) embed an IPv4 address, which
	// a translator or relay reaches.
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// internal reports whether ip is an address a tenant must not make the
// server call: loopback, private, link-local, unspecified, multicast,
// carrier-grade NAT, 0.0.0.0/8, 198.18.0.0/15, 240.0.0.0/4, site-local,
// or a NAT64 or 6to4 address whose embedded IPv4 address is one of them.
func internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() ||
		cgnat.Contains(ip) || thisNet.Contains(ip) || bench.Contains(ip) || reserved.Contains(ip) || siteLocal.Contains(ip) {
		return true
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return internal(netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo4.Contains(ip):
			return internal(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return false
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
