package proxy

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ompgo/omp/internal/httpx"
)

// SyncState is the broker sync state the metrics report (the remote
// store's Status in production).
type SyncState struct {
	Mode     string    // e.g. "stream", "poll", "backoff", "connecting"
	LastSync time.Time // zero before the first sync
}

// metrics is the gateway's Prometheus instrumentation, always on, on the
// Server's own registry, served at GET /metrics behind the gateway token
// (as the broker's; the reference gateway has no
// /metrics). Labels never carry a token, an email or a credential id:
// route pattern, format, provider, status, stream, and for blocks the
// provider and credential type.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ttfb     *prometheus.HistogramVec
	streams  prometheus.Gauge
}

var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

func newMetrics(s *Server, sync func() SyncState) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omp_gateway_http_requests_total", Help: "HTTP requests by route pattern, wire format, resolved provider and status.",
		}, []string{"route", "format", "provider", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "omp_gateway_http_request_duration_seconds", Help: "HTTP request latency by route pattern, wire format and stream (a streamed request lasts until its stream ends).",
			Buckets: latencyBuckets,
		}, []string{"route", "format", "stream"}),
		ttfb: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "omp_gateway_upstream_ttfb_seconds", Help: "Time from credential pick until the upstream answered (response headers), retries included, by provider.",
			Buckets: latencyBuckets,
		}, []string{"provider"}),
		streams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "omp_gateway_open_streams", Help: "Streamed responses in progress.",
		}),
	}
	m.reg.MustRegister(m.requests, m.duration, m.ttfb, m.streams, stateCollector{s, sync},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// reqInfo is what a handler learns about its request for the metrics.
type reqInfo struct {
	format, provider string
	stream           bool
}

type reqInfoKey struct{}

// info returns the request's metrics labels to fill in (a throwaway when
// the middleware did not run).
func info(ctx context.Context) *reqInfo {
	if ri, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// middleware counts and times every request, by the route pattern chi
// matched ("unmatched" for 404s, preflights and 401s before routing).
func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{}
		sw := httpx.Wrap(w)
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri)))
		m.record(r, ri, sw.Status, start)
	})
}

// record counts and times a finished request.
func (m *metrics) record(r *http.Request, ri *reqInfo, status int, start time.Time) {
	route := "unmatched"
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route = rc.RoutePattern()
	}
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(route, ri.format, ri.provider, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route, ri.format, strconv.FormatBool(ri.stream)).Observe(time.Since(start).Seconds())
}

// stateCollector reports state read at scrape time: broker sync lag and
// mode, the credential blocks in force and the request body bytes in
// flight.
type stateCollector struct {
	s    *Server
	sync func() SyncState
}

var (
	lagDesc    = prometheus.NewDesc("omp_gateway_broker_sync_lag_seconds", "Seconds since the broker last answered the store's sync.", nil, nil)
	modeDesc   = prometheus.NewDesc("omp_gateway_broker_sync_mode", "1 for the store's current sync mode.", []string{"mode"}, nil)
	blocksDesc = prometheus.NewDesc("omp_gateway_credential_blocks", "Credential blocks in force in this gateway, by provider and credential type.", []string{"provider", "type"}, nil)
	bodiesDesc = prometheus.NewDesc("omp_gateway_request_body_bytes_in_flight", "Request body bytes held by the requests in progress (capped by the in-flight byte limit).", nil, nil)
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- modeDesc
	ch <- blocksDesc
	ch <- bodiesDesc
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(bodiesDesc, prometheus.GaugeValue, float64(c.s.inflight.bytes()))
	if c.sync != nil {
		st := c.sync()
		if !st.LastSync.IsZero() {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, c.s.now().Sub(st.LastSync).Seconds())
		}
		if st.Mode != "" {
			ch <- prometheus.MustNewConstMetric(modeDesc, prometheus.GaugeValue, 1, st.Mode)
		}
	}
	for key, n := range c.s.picker.Blocks.Counts() {
		provider, typ := key, ""
		if i := strings.LastIndexByte(key, ':'); i >= 0 {
			provider, typ = key[:i], key[i+1:]
		}
		ch <- prometheus.MustNewConstMetric(blocksDesc, prometheus.GaugeValue, float64(n), provider, typ)
	}
}
