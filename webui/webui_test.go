package webui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/batonhq/baton/webui"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(webui.Handler())
	defer srv.Close()
	for _, tc := range []struct {
		path, ctype string
		status      int
		contains    string
	}{
		{"/", "text/html", 200, `src="/assets/app.js"`},
		{"/assets/app.js", "javascript", 200, "batonMarkdown"},
		{"/assets/markdown.js", "javascript", 200, "escapeHTML"},
		{"/assets/style.css", "text/css", 200, ".timeline"},
		{"/favicon.ico", "image/svg+xml", 200, "<svg"},
		{"/assets/favicon.svg", "image/svg+xml", 200, "<svg"},
		{"/assets/nope.js", "", 404, ""},
		{"/assets/index.html", "", 404, ""},
		{"/other", "", 404, ""},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.contains) {
			t.Errorf("GET %s: %d %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: CSP %q", tc.path, csp)
		}
	}
}

// The page loads nothing from other origins (no CDN at run time).
func TestNoExternalResources(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"assets/index.html", "assets/app.js", "assets/markdown.js", "assets/style.css"} {
		b, err := io.ReadAll(must(webui.FS().Open(name)))
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "@import"} {
			if strings.Contains(string(b), bad) && !(name == "assets/markdown.js" && strings.HasPrefix(bad, "http")) {
				t.Errorf("%s references %q", name, bad)
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
