// Package sdkconfig checks and fills the transport settings that every
// provider adapter hands its SDK: the base URL, the HTTP client and the
// extra headers.
package sdkconfig

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
)

// CheckBaseURL returns an error wrapping errConfig unless base is an
// absolute http or https URL.
func CheckBaseURL(base string, errConfig error) error {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: BaseURL %q is not an http(s) URL", errConfig, base)
	}
	return nil
}

// Client returns hc or, when it is nil, a client without a total timeout
// (streams may be long; calls are cancelled through their context).
func Client(hc *http.Client) *http.Client {
	if hc == nil {
		return &http.Client{}
	}
	return hc
}

// Headers returns the SDK's request option for each header, made by with,
// in the order of the header names.
func Headers[O any](h map[string]string, with func(name, value string) O) []O {
	opts := make([]O, 0, len(h))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		opts = append(opts, with(k, h[k]))
	}
	return opts
}
