package server

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/internal/httpx"
)

// Observer receives the Server's instrumentation events and serves them at
// GET /metrics. The Prometheus implementation is brokermetrics.Metrics; it
// lives in its own package so that the API's types and client (and
// pkg/vault/remote over them) do not depend on Prometheus and protobuf.
type Observer interface {
	// ObserveRequest records one served request: route is the chi route
	// pattern ("unmatched" when none matched), method one of the standard
	// methods or "OTHER" (httpx.MethodLabel), status the response's.
	ObserveRequest(route, method string, status int, elapsed time.Duration)
	// StreamOpened and StreamClosed bracket one GET /v1/snapshot/stream
	// subscriber.
	StreamOpened()
	StreamClosed()
	// SnapshotPublished is called by the hub whenever it publishes a new
	// snapshot; it must only keep the view (a scrape reads it later).
	SnapshotPublished(gen int64, snap Published)
	// Handler serves GET /metrics (behind the bearer).
	Handler() http.Handler
}

// Published is a read-only view of a published snapshot: memory only, so
// reading it never touches — let alone decrypts — the vault.
type Published struct{ sh *shared }

// OAuthExpiries calls f for every OAuth credential of the snapshot with
// its id, provider, email ("" when unknown) and access-token expiry in
// epoch ms.
func (p Published) OAuthExpiries(f func(id int64, provider, email string, expiresMs int64)) {
	if p.sh == nil {
		return
	}
	for i := range p.sh.entries {
		e := &p.sh.entries[i]
		if !e.oauth {
			continue
		}
		email := ""
		if e.src != nil {
			email = e.src.Credential.Email
		}
		f(e.id, e.provider, email, e.expires)
	}
}

// observeRequests records count and latency per route pattern.
func observeRequests(o Observer) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := httpx.Wrap(w)
			next.ServeHTTP(sw, r)
			observe(o, sw, r, start)
		})
	}
}

func observe(o Observer, sw *httpx.StatusWriter, r *http.Request, start time.Time) {
	route := "unmatched"
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route = rc.RoutePattern()
	}
	status := sw.Status
	if status == 0 {
		status = http.StatusOK
	}
	o.ObserveRequest(route, httpx.MethodLabel(r.Method), status, time.Since(start))
}
