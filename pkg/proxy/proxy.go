// Package proxy is the gateway's HTTP core. This file is a placeholder with
// the final API (Options, New, Server.Handler) so the gateway wiring
// (internal/gatewayd) builds and its tests run; it serves only GET /healthz
// and is replaced by the real gateway core at merge.
package proxy

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/ompgo/omp/internal/httpx"
	"github.com/ompgo/omp/pkg/vault"
)

// Options configures New.
type Options struct {
	Source     vault.Source                       // required
	Tokens     []string                           // bearer allow-list
	NoAuth     bool                               // accept every request (loopback-only use)
	Logger     *slog.Logger                       // default: discard
	Version    string                             // reported by /healthz
	URLs       func(provider, kind string) string // upstream base URL override ("" = default); may be nil
	HTTPClient *http.Client                       // upstream calls; default http.DefaultClient
	Status     func() any                         // extra /healthz detail; may be nil
	Now        func() time.Time                   // default time.Now
}

// Server is the gateway's HTTP handler.
type Server struct {
	o      Options
	bearer *httpx.Bearer // nil with NoAuth
}

// New checks o and returns a server.
func New(o Options) (*Server, error) {
	if o.Source == nil {
		return nil, errors.New("proxy: Source is required")
	}
	s := &Server{o: o}
	if !o.NoAuth {
		b, err := httpx.NewBearer(o.Tokens)
		if err != nil {
			return nil, err
		}
		s.bearer = b
	}
	return s, nil
}

// Handler serves GET /healthz (unauthenticated) and answers 404 to every
// other authorised request.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			_, _ = w.Write([]byte(`{"ok":true}`))
			return
		}
		if s.bearer != nil && !s.bearer.Authorized(r) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"unauthorized"}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		body, _ := json.Marshal(map[string]string{"error": "No route: " + r.Method + " " + r.URL.Path})
		_, _ = w.Write(body)
	})
}
