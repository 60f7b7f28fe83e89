// Package webui is baton's web UI: static HTML, CSS and JavaScript embedded
// in the binary (no build step, no CDN), served by the server at / and
// /assets/. The page talks to the HTTP API with the API key the user logs
// in with.
package webui

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// FS returns the UI's files: index.html at the root, the rest under assets/.
func FS() fs.FS { return assets }

// Handler serves the UI: GET / is the page, GET /assets/… its files, GET
// /favicon.ico its icon (an SVG, as /assets/favicon.svg). Files
// are served with their modification-independent ETag-less caching
// disabled for the page (so a new binary's page is picked up) and a strict
// Content-Security-Policy: scripts and styles from the same origin only.
func Handler() http.Handler {
	files := http.FileServerFS(assets)
	index, _ := fs.ReadFile(assets, "assets/index.html")
	favicon, _ := fs.ReadFile(assets, "assets/favicon.svg")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if r.URL.Path == "/" || r.URL.Path == "/index.html" {
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			_, _ = w.Write(index)
			return
		}
		if r.URL.Path == "/favicon.ico" {
			// Browsers ask for it whatever the page's icon link says.
			h.Set("Content-Type", "image/svg+xml")
			h.Set("Cache-Control", "max-age=86400")
			_, _ = w.Write(favicon)
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/assets/") || r.URL.Path == "/assets/index.html" {
			http.NotFound(w, r)
			return
		}
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
