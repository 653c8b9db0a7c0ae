// Package brokermetrics is the broker's Prometheus instrumentation, a
// server.Observer. Only the broker host links it (with Prometheus and
// protobuf); the server, its client and the wire types stay free of both.
package brokermetrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/server"
)

// Options configure New.
type Options struct {
	// IdentityLabels adds an "email" label to per-credential and per-account
	// series. Emails are personal data: off unless the operator opts in.
	IdentityLabels bool
	// Now is the clock for seconds-to-expiry; default time.Now.
	Now func() time.Time
}

// Metrics is the broker's Prometheus instrumentation on its own registry
// (served at GET /metrics behind the bearer, a Go addition).
type Metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	subscribers prometheus.Gauge
	refreshes   *prometheus.CounterVec
	generation  prometheus.Gauge
	writeFails  prometheus.Counter
	identity    bool
	now         func() time.Time

	// expiry holds the OAuth expiries of the last published snapshot (set by
	// the hub on every generation change), so a scrape never reads — let
	// alone decrypts — the vault.
	expiry    atomic.Pointer[server.Published]
	writeBack atomic.Pointer[server.WriteBackStatus]
	usage     atomic.Pointer[func() []vault.UsageReport]
}

// New builds the metrics and registers them, with the Go and process
// collectors, on a fresh registry.
func New(opts Options) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omp_broker_http_requests_total", Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "omp_broker_http_request_duration_seconds", Help: "HTTP request latency by route pattern and method (streams excluded).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "omp_broker_stream_subscribers", Help: "Open GET /v1/snapshot/stream connections.",
		}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "omp_broker_refresh_total", Help: "OAuth refresh outcomes by provider and outcome class.",
		}, []string{"provider", "outcome"}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "omp_broker_vault_generation", Help: "Vault generation of the last published snapshot.",
		}),
		writeFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "omp_broker_vault_write_failures_total", Help: "Failed attempts to persist a refreshed credential (each retry counts).",
		}),
		identity: opts.IdentityLabels,
		now:      opts.Now,
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "omp_broker_pending_writes", Help: "Refreshed credentials served from memory because their write to the vault has not landed yet.",
	}, func() float64 {
		if p := m.writeBack.Load(); p != nil {
			return float64((*p).Pending())
		}
		return 0
	})
	if m.now == nil {
		m.now = time.Now
	}
	m.reg.MustRegister(m.requests, m.duration, m.subscribers, m.refreshes, m.generation, m.writeFails, pending,
		expiryCollector{m}, usageCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Attach sets the source of the usage-limit gauges, read at scrape time
// (it must answer from memory: usage.Service.LatestReports does). The
// seconds-to-expiry gauges need no source: the Server's hub updates them
// whenever it publishes a new snapshot.
func (m *Metrics) Attach(usage func() []vault.UsageReport) {
	if usage != nil {
		m.usage.Store(&usage)
	}
}

// AttachWriteBack sets the source of the pending-writes gauge.
func (m *Metrics) AttachWriteBack(wb server.WriteBackStatus) {
	if wb != nil {
		m.writeBack.Store(&wb)
	}
}

// ObserveWriteFailure counts one failed attempt to persist a refreshed
// credential.
func (m *Metrics) ObserveWriteFailure() { m.writeFails.Inc() }

// SnapshotPublished publishes the hub's latest snapshot to the generation
// and expiry gauges: a pointer store, so a write does not pay for the
// gauges; a scrape reads the snapshot's entries (memory only, never the
// vault).
func (m *Metrics) SnapshotPublished(gen int64, snap server.Published) {
	m.generation.Set(float64(gen))
	m.expiry.Store(&snap)
}

// StreamOpened counts one more snapshot-stream subscriber.
func (m *Metrics) StreamOpened() { m.subscribers.Inc() }

// StreamClosed counts one subscriber less.
func (m *Metrics) StreamClosed() { m.subscribers.Dec() }

// ObserveRefresh counts one refresh outcome (e.g. "ok", "transient",
// "definitive") for provider.
func (m *Metrics) ObserveRefresh(provider, outcome string) {
	m.refreshes.WithLabelValues(provider, outcome).Inc()
}

// Registry returns the registry (for extra collectors or tests).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the Prometheus text exposition of the registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveRequest counts one request and, streams excepted, its latency.
func (m *Metrics) ObserveRequest(route, method string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	if route != "/v1/snapshot/stream" {
		m.duration.WithLabelValues(route, method).Observe(elapsed.Seconds())
	}
}

var (
	expiryDesc = func(identity bool) *prometheus.Desc {
		labels := []string{"id", "provider"}
		if identity {
			labels = append(labels, "email")
		}
		return prometheus.NewDesc("omp_broker_credential_expiry_seconds",
			"Seconds until the OAuth access token expires (negative: expired).", labels, nil)
	}
	usageLabels = func(identity bool) []string {
		l := []string{"provider", "account", "limit"}
		if identity {
			l = append(l, "email")
		}
		return l
	}
)

type expiryCollector struct{ m *Metrics }

func (c expiryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- expiryDesc(c.m.identity) }

// Collect reads only the in-memory series of the last snapshot; the
// seconds are computed at scrape time.
func (c expiryCollector) Collect(ch chan<- prometheus.Metric) {
	snap := c.m.expiry.Load()
	if snap == nil {
		return
	}
	desc := expiryDesc(c.m.identity)
	now := c.m.now().UnixMilli()
	labels := make([]string, 0, 3)
	snap.OAuthExpiries(func(id int64, provider, email string, expires int64) {
		labels = append(labels[:0], strconv.FormatInt(id, 10), provider)
		if c.m.identity {
			labels = append(labels, email)
		}
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(expires-now)/1000, labels...)
	})
}

type usageCollector struct{ m *Metrics }

var (
	usedDesc = func(identity bool) *prometheus.Desc {
		return prometheus.NewDesc("llm_usage_limit_used_fraction", "Used fraction of a usage limit (0–1).", usageLabels(identity), nil)
	}
	resetsDesc = func(identity bool) *prometheus.Desc {
		return prometheus.NewDesc("llm_usage_limit_resets_at_seconds", "Unix time at which a usage limit window resets.", usageLabels(identity), nil)
	}
)

func (c usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- usedDesc(c.m.identity)
	ch <- resetsDesc(c.m.identity)
}

func (c usageCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.m.usage.Load()
	if p == nil {
		return
	}
	used, resets := usedDesc(c.m.identity), resetsDesc(c.m.identity)
	seen := map[string]bool{}
	for _, rep := range (*p)() {
		for _, l := range rep.Limits {
			labels := []string{rep.Provider, usageAccount(rep, l), l.ID}
			if c.m.identity {
				email, _ := rep.Metadata["email"].(string)
				labels = append(labels, email)
			}
			key := labelKey(labels)
			if seen[key] { // a collector must not emit one series twice
				continue
			}
			seen[key] = true
			if f, ok := l.ResolveUsedFraction(); ok {
				ch <- prometheus.MustNewConstMetric(used, prometheus.GaugeValue, f, labels...)
			}
			if l.Window != nil && l.Window.ResetsAt != nil {
				ch <- prometheus.MustNewConstMetric(resets, prometheus.GaugeValue, float64(*l.Window.ResetsAt)/1000, labels...)
			}
		}
	}
}

// usageAccount names the account of a limit without personal data: the
// scope's account id, else metadata.accountId, else "".
func usageAccount(rep vault.UsageReport, l vault.UsageLimit) string {
	if l.Scope.AccountID != "" {
		return l.Scope.AccountID
	}
	if s, ok := rep.Metadata["accountId"].(string); ok {
		return s
	}
	return ""
}

func labelKey(labels []string) string {
	n := 0
	for _, l := range labels {
		n += len(l) + 1
	}
	b := make([]byte, 0, n)
	for _, l := range labels {
		b = append(append(b, l...), 0)
	}
	return string(b)
}
