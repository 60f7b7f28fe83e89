package httpheader_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/batonhq/baton/internal/httpheader"
)

func TestTransport(t *testing.T) {
	t.Parallel()
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	t.Cleanup(srv.Close)
	c := &http.Client{Transport: httpheader.Transport(nil, map[string]string{"Authorization": "Bearer k", "X-Team": "a"})}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Team", "b")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if got.Get("Authorization") != "Bearer k" || got.Get("X-Team") != "a" {
		t.Errorf("headers sent %v", got)
	}
	if req.Header.Get("Authorization") != "" || req.Header.Get("X-Team") != "b" {
		t.Errorf("the caller's request changed: %v", req.Header)
	}
}
