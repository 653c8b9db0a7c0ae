package proxy

import (
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/ompgo/omp/internal/httpx"
)

// A gateway without a token is open to every program on the machine, and
// a browser on the machine runs the programs of every web page it shows.
// So a NoAuth gateway answers only requests a page cannot forge:
//
//   - the Host must be a loopback name (localhost, *.localhost), an IP
//     address, or an allowed host: a page that rebinds its own DNS name to
//     127.0.0.1 still sends that name as the Host;
//   - an Origin header, which browsers send on every cross-origin request,
//     must be the gateway's own origin or an allowed origin;
//   - a POST to an inference route must be JSON: a page can send text/plain
//     or form bodies cross-origin without asking first, but not JSON.
//
// CORS then names the allowed origin instead of "*". A gateway with a token
// keeps its wildcard CORS: a page cannot read the token, and without it
// every request but the unauthenticated ones is 401.

// browserPolicy is the NoAuth gateway's allow-list.
type browserPolicy struct {
	hosts   map[string]bool // lower case, without port
	origins map[string]bool // lower case scheme://host[:port]
}

func newBrowserPolicy(hosts, origins []string) *browserPolicy {
	p := &browserPolicy{hosts: map[string]bool{}, origins: map[string]bool{}}
	for _, h := range hosts {
		if h = normalHost(h); h != "" {
			p.hosts[h] = true
		}
	}
	for _, o := range origins {
		if o = normalOrigin(o); o != "" {
			p.origins[o] = true
		}
	}
	return p
}

// normalHost is a Host header or host name without its port, brackets and
// trailing dot, in lower case.
func normalHost(h string) string {
	h = strings.TrimSpace(h)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// normalOrigin is an origin without a trailing slash, in lower case.
func normalOrigin(o string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
}

// hostAllowed reports whether a request's Host header names this gateway
// in a way no other site's page can: loopback names, IP addresses (a
// rebound DNS name is never an address) and the allowed hosts.
func (p *browserPolicy) hostAllowed(hostHeader string) bool {
	h := normalHost(hostHeader)
	switch {
	case h == "":
		return false
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return true
	case net.ParseIP(h) != nil:
		return true
	}
	return p.hosts[h]
}

// originAllowed reports whether a request's Origin is the gateway's own
// (its host and port are the Host the request was sent to) or an allowed
// origin. "null" (sandboxed frames, file: pages) is allowed only
// when listed.
func (p *browserPolicy) originAllowed(origin, hostHeader string) bool {
	o := normalOrigin(origin)
	if p.origins[o] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, hostHeader)
}

// guard refuses, with 403, the requests of a NoAuth gateway that a web
// page could have sent: a Host that is not the gateway's (DNS rebinding)
// or an Origin that is not allowed (a cross-site request). It runs before
// CORS, so a refused preflight gets no CORS headers either.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.browser.hostAllowed(r.Host) {
			s.forbidden(w, r, "Host "+r.Host+" is not allowed: a gateway without auth answers only localhost, IP addresses and --allowed-host names")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !s.browser.originAllowed(o, r.Host) {
			s.forbidden(w, r, "Origin "+o+" is not allowed: a gateway without auth answers only its own pages and --allowed-origin origins")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// forbidden answers 403 with a generic JSON error and logs the refusal.
func (s *Server) forbidden(w http.ResponseWriter, r *http.Request, msg string) {
	s.log.Warn("auth-gateway request refused", "method", r.Method, "path", r.URL.EscapedPath(),
		"peer", httpx.Peer(r), "host", r.Host, "origin", r.Header.Get("Origin"))
	body, _ := json.Marshal(map[string]string{"error": msg})
	writeGeneric(w, http.StatusForbidden, body)
}

// isJSON reports whether a Content-Type is application/json or a +json
// type, parameters aside.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// msgNotJSON is the 415 text of a NoAuth gateway's non-JSON POST.
const msgNotJSON = "Content-Type must be application/json: a gateway without auth refuses other bodies, which any web page can send"
