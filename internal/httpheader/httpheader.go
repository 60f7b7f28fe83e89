// Package httpheader sets fixed headers on every request an HTTP client
// sends: the headers a network file declares for a remote server (MCP over
// HTTP, A2A agents).
package httpheader

import "net/http"

// Transport returns a RoundTripper that sets the headers h on every request
// (on a clone: the caller's request is left as it is) and sends it through
// base, http.DefaultTransport when base is nil.
func Transport(base http.RoundTripper, h map[string]string) http.RoundTripper {
	return transport{base: base, h: h}
}

type transport struct {
	base http.RoundTripper
	h    map[string]string
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(t.h) == 0 {
		return base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header.Set(k, v)
	}
	return base.RoundTrip(r)
}
