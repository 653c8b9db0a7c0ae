// Package usagepage is the usage page for people: one self-contained HTML
// document (embedded; no CDN, no external fetch) that the broker and the
// gateway serve at GET /usage. The page holds no data, so it is served
// without auth; its script asks for the bearer token once, keeps it in
// sessionStorage and polls GET /v1/usage (and GET /v1/usage/history for the
// chart) with it.
package usagepage

import (
	_ "embed"
	"net/http"
	"strconv"
)

// Path is where the page is served.
const Path = "/usage"

//go:embed usage.html
var page []byte

// csp keeps the page self-contained: it can only talk to its own origin
// and loads nothing from anywhere else.
const csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Length", strconv.Itoa(len(page)))
		h.Set("Content-Security-Policy", csp)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(page)
	})
}
