package usage

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/ompgo/omp/pkg/vault"
)

// DefaultDeadline is how long Reports waits for slow probes before it
// answers with their last-good values.
const DefaultDeadline = 8 * time.Second

// URL kinds passed to Service.URLs.
const KindUsageURL = "usageUrl"

// DefaultProbers returns the built-in probes in the reference's order.
func DefaultProbers() []Prober {
	return []Prober{Codex{}, Kimi{}, Antigravity{}, Gemini{}, Anthropic{}, Zai{}, Copilot{}}
}

// Service fetches, caches and aggregates usage reports. The zero value of
// every optional field is useful; a Service must not be copied after first
// use and must be closed to stop background refreshes.
type Service struct {
	// Store lists stored credentials and disables dead ones; nil means only
	// APIKey-provided keys are probed.
	Store vault.Store
	// Cache is the durable per-credential cache; nil keeps it in memory.
	Cache vault.CacheStore
	// History records usage history; nil records none.
	History vault.HistoryStore
	// Refresh refreshes OAuth row id (the broker's refresher) before probing
	// a token within 60 s of expiry; nil probes with the stored token.
	Refresh func(ctx context.Context, id int64) (vault.Record, error)
	// IsDefinitive classifies a Refresh error; nil means an error
	// implementing Definitive() bool decides, else oauth.Classify.
	IsDefinitive func(error) bool
	// HTTP is the upstream client; nil means http.DefaultClient.
	HTTP *http.Client
	// ModelBaseURL returns the models.yml baseUrl of provider ("" = none):
	// local-mode `omp usage` only; the broker leaves it nil.
	ModelBaseURL func(provider string) string
	// URLs resolves base-URL overrides: URLs(provider, "usageUrl") is the
	// usage base of provider, "" for the default. nil means no overrides.
	URLs func(provider, kind string) string
	// APIKey returns the runtime or environment API key of a provider that
	// has no stored credential ("" for none). nil means none.
	APIKey func(provider string) string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand returns a float in [0,1) for TTL jitter; nil means math/rand/v2.
	Rand func() float64
	// Wait sleeps between provider retries; nil uses timers.
	Wait func(ctx context.Context, d time.Duration) error
	// Logger receives diagnostics (never secrets); nil discards them.
	Logger *slog.Logger
	// Probers are the usage probes; nil means DefaultProbers().
	Probers []Prober
	// Deadline bounds how long Reports waits for probes (default 8 s).
	Deadline time.Duration
	// Timeout bounds one credential's refresh and fetch (default 10 s).
	Timeout time.Duration
	// OnReport, if set, is called after each successful upstream fetch of a
	// stored credential (id ≠ 0) with its fresh report; the broker heals
	// fleet blocks from it. It must not block for long.
	OnReport func(ctx context.Context, id int64, provider string, rep *vault.UsageReport)

	once   sync.Once
	ctx    context.Context // canceled by Close; parent of every fetch
	cancel context.CancelFunc
	wg     sync.WaitGroup
	flight singleflight.Group // one fetch per cache key
	mem    *memCache

	mu     sync.Mutex // guards closed, agg, latest, latestAt
	closed bool
	agg    *aggCall

	latest   []vault.UsageReport
	latestAt time.Time

	// staleAt maps a provider ("" = every provider) to when its cached
	// reports were invalidated (epoch ms); guarded by mu.
	staleAt map[string]int64
}

type aggCall struct {
	done    chan struct{}
	reports []vault.UsageReport
	err     error
}

func (s *Service) init() {
	s.once.Do(func() {
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.mem = &memCache{now: s.now}
	})
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) rand() float64 {
	if s.Rand != nil {
		return s.Rand()
	}
	return rand.Float64()
}

func (s *Service) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (s *Service) cache() vault.CacheStore {
	if s.Cache != nil {
		return s.Cache
	}
	return s.mem
}

func (s *Service) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return RequestTimeout
}

func (s *Service) deadline() time.Duration {
	if s.Deadline > 0 {
		return s.Deadline
	}
	return DefaultDeadline
}

func (s *Service) probers() []Prober {
	if s.Probers != nil {
		return s.Probers
	}
	return DefaultProbers()
}

func (s *Service) prober(provider string) Prober {
	for _, p := range s.probers() {
		if p.ID() == provider {
			return p
		}
	}
	return nil
}

// base returns the usage base of provider and whether it came from a
// models.yml baseUrl: the explicit usage URL wins and is used as
// given; else ModelBaseURL by the 18.1.21 rules (Codex only on the two
// ChatGPT origins, Anthropic with the default as fallback); else "".
func (s *Service) base(provider string) (string, bool) {
	if s.URLs != nil {
		if b := trimBase(s.URLs(provider, KindUsageURL)); b != "" {
			return b, false
		}
	}
	if s.ModelBaseURL == nil {
		return "", false
	}
	raw := strings.TrimSpace(s.ModelBaseURL(provider))
	if raw == "" {
		return "", false
	}
	switch provider {
	case "openai-codex":
		return codexModelBase(raw), false
	case "anthropic":
		return trimBase(raw), true
	}
	return "", false
}

// codexModelBase keeps a models.yml Codex base only when its host is
// chatgpt.com or chat.openai.com, reduced to <origin>/backend-api; any
// other host (a streaming proxy) means the default.
func codexModelBase(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return ""
	}
	if h := strings.ToLower(u.Hostname()); h != "chatgpt.com" && h != "chat.openai.com" {
		return ""
	}
	return u.Scheme + "://" + u.Host + "/backend-api"
}

// spawn runs fn on a goroutine owned by s; it reports false after Close.
func (s *Service) spawn(fn func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

// Close cancels background fetches and waits for them to return.
func (s *Service) Close() error {
	s.init()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

func errClosed() error { return vault.Errorf(vault.EUNAVAILABLE, "usage service is closed") }

// Report returns the usage report of one stored record through the cache,
// nil when its provider has no probe or the probe has nothing.
func (s *Service) Report(ctx context.Context, rec vault.Record) (*vault.UsageReport, error) {
	s.init()
	p := s.prober(rec.Provider)
	if p == nil || !p.Supports(rec.Credential) {
		return nil, nil
	}
	base, modelBase := s.base(rec.Provider)
	q := request{provider: rec.Provider, id: rec.ID, cred: rec.Credential, base: base, modelBase: modelBase, prober: p}
	ch := make(chan *vault.UsageReport, 1)
	if !s.spawn(func() { ch <- s.get(q) }) {
		return nil, errClosed()
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Reports runs the usage aggregation: every stored credential
// (and, for default providers without one, the APIKey key) is probed in
// parallel through the per-credential cache, and the reports are deduped
// by identity. Concurrent calls share one run; the caller's ctx only bounds
// its own wait. Probes still running after Deadline contribute their
// last-good value and keep refreshing in the background.
func (s *Service) Reports(ctx context.Context) ([]vault.UsageReport, error) {
	s.init()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed()
	}
	c := s.agg
	if c == nil {
		c = &aggCall{done: make(chan struct{})}
		s.agg = c
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.reports, c.err = s.collect()
			s.mu.Lock()
			s.agg = nil
			if c.err == nil {
				s.latest, s.latestAt = c.reports, s.now()
			}
			s.mu.Unlock()
			close(c.done)
		}()
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return slices.Clone(c.reports), c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// LatestReports returns the reports of the last completed Reports run and
// when it completed, without fetching (zero time if none yet). The slice is
// a copy; the reports' maps and slices must be treated as read-only.
func (s *Service) LatestReports() ([]vault.UsageReport, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.latest), s.latestAt
}

// requests lists the credentials to probe.
func (s *Service) requests(ctx context.Context) ([]request, error) {
	var recs []vault.Record
	if s.Store != nil {
		if _, err := s.Store.Dedupe(ctx); err != nil {
			s.logger().Warn("usage: dedupe before probing failed", "error", err)
		}
		var err error
		if recs, err = s.Store.List(ctx, ""); err != nil {
			return nil, err
		}
	}
	var order []string
	byProvider := map[string][]vault.Record{}
	for _, r := range recs {
		if _, ok := byProvider[r.Provider]; !ok {
			order = append(order, r.Provider)
		}
		byProvider[r.Provider] = append(byProvider[r.Provider], r)
	}
	for _, p := range s.probers() {
		if _, ok := byProvider[p.ID()]; !ok {
			order = append(order, p.ID())
			byProvider[p.ID()] = nil
		}
	}
	var out []request
	for _, provider := range order {
		p := s.prober(provider)
		if p == nil {
			continue
		}
		base, modelBase := s.base(provider)
		rows := byProvider[provider]
		if len(rows) == 0 && s.APIKey != nil {
			if key := s.APIKey(provider); key != "" {
				rows = []vault.Record{{Provider: provider, Credential: vault.Credential{Type: vault.TypeAPIKey, Key: key}}}
			}
		}
		for _, r := range rows {
			if p.Supports(r.Credential) {
				out = append(out, request{provider: provider, id: r.ID, cred: r.Credential, base: base, modelBase: modelBase, prober: p})
			}
		}
	}
	return out, nil
}

// collect probes every request, waits up to the deadline and fills the
// stragglers from the cache's last-good values.
func (s *Service) collect() ([]vault.UsageReport, error) {
	reqs, err := s.requests(s.ctx)
	if err != nil {
		return nil, err
	}
	type result struct {
		i int
		r *vault.UsageReport
	}
	results := make([]*vault.UsageReport, len(reqs))
	done := make([]bool, len(reqs))
	ch := make(chan result, len(reqs))
	pending := 0
	for i, q := range reqs {
		if s.spawn(func() { ch <- result{i, s.get(q)} }) {
			pending++
		}
	}
	timer := time.NewTimer(s.deadline())
	defer timer.Stop()
wait:
	for pending > 0 {
		select {
		case r := <-ch:
			results[r.i], done[r.i] = r.r, true
			pending--
		case <-timer.C:
			break wait
		case <-s.ctx.Done():
			break wait
		}
	}
	var reports []vault.UsageReport
	for i, q := range reqs {
		r := results[i]
		if !done[i] {
			if e, ok := s.read(context.WithoutCancel(s.ctx), q.key(), true); ok {
				r = e.Value
			}
			s.logger().Debug("usage probe still running; serving last-good", "provider", q.provider, "id", q.id, "lastGood", r != nil)
		}
		if r != nil {
			reports = append(reports, *r)
		}
	}
	return Dedupe(reports), nil
}
