package usage

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
)

// Cache timings.
const (
	ReportTTL         = 5 * time.Minute  // USAGE_REPORT_TTL_MS
	FailureBackoff    = 10 * time.Second // USAGE_FAILURE_BACKOFF_MS
	LastGoodRetention = 24 * time.Hour   // USAGE_LAST_GOOD_RETENTION_MS
	RequestTimeout    = 10 * time.Second // DEFAULT_USAGE_REQUEST_TIMEOUT_MS
	RefreshSkew       = 60 * time.Second // OAUTH_REFRESH_SKEW_MS
)

// entry is the durable cache value {"value":<UsageReport|null>,"expiresAt":<ms>}.
type entry struct {
	Value     *vault.UsageReport `json:"value"`
	ExpiresAt float64            `json:"expiresAt"` // float: reference rows may hold fractional ms
}

// read returns the entry under key; stale also returns entries past their
// durable expiry.
func (s *Service) read(ctx context.Context, key string, stale bool) (entry, bool) {
	raw, ok, err := s.cache().GetCache(ctx, cachePrefix+key, stale)
	if err != nil {
		s.logger().Debug("usage cache read failed", "error", err)
		return entry{}, false
	}
	if !ok {
		return entry{}, false
	}
	var e entry
	if err := json.Unmarshal(raw, &e); err != nil {
		s.logger().Debug("usage cache entry unreadable", "error", err)
		return entry{}, false
	}
	return e, true
}

// write stores value until expiresAt (ms). Non-null values are kept durably
// for at least LastGoodRetention so they can serve as last-good.
func (s *Service) write(ctx context.Context, key string, value *vault.UsageReport, expiresAt int64) {
	b, err := json.Marshal(struct {
		Value     *vault.UsageReport `json:"value"`
		ExpiresAt int64              `json:"expiresAt"`
	}{value, expiresAt})
	if err != nil {
		s.logger().Debug("usage cache encode failed", "error", err)
		return
	}
	keep := expiresAt
	if value != nil {
		keep = max(expiresAt, s.now().Add(LastGoodRetention).UnixMilli())
	}
	if err := s.cache().SetCache(ctx, cachePrefix+key, b, keep); err != nil {
		s.logger().Debug("usage cache write failed", "error", err)
	}
}

// jittered returns now + d ± 25 %.
func (s *Service) jittered(d time.Duration) int64 {
	r := s.rand()
	ms := float64(d.Milliseconds())
	return s.now().UnixMilli() + int64(math.Round(ms+ms*(r*0.5-0.25)))
}

// request is one credential to probe.
type request struct {
	provider string
	id       int64 // stored row id; 0 for an env/runtime key
	cred     vault.Credential
	base     string
	// modelBase: base came from models.yml (Request.ModelBase).
	modelBase bool
	prober    Prober
}

func (q request) key() string { return CacheKey(q.provider, q.base, q.cred) }

// get returns the credential's report through the cache:
// fresh entries are returned as is; otherwise one fetch per key runs.
func (s *Service) get(q request) *vault.UsageReport {
	key := q.key()
	if e, ok := s.read(s.ctx, key, false); ok && s.fresh(q.provider, e) {
		return e.Value
	}
	v, _, _ := s.flight.Do(key, func() (any, error) {
		if e, ok := s.read(s.ctx, key, false); ok && s.fresh(q.provider, e) {
			return e.Value, nil
		}
		return s.fetchAndStore(key, q), nil
	})
	r, _ := v.(*vault.UsageReport)
	return r
}

// staleMarkerTTL is how long an invalidation keeps cached "no report"
// entries from being served (the reference force-refresh marker lives 5
// minutes).
const staleMarkerTTL = 5 * time.Minute

// fresh reports whether cache entry e of provider may be served: not
// expired and not invalidated since it was fetched (InvalidateUsage).
func (s *Service) fresh(provider string, e entry) bool {
	now := s.now().UnixMilli()
	if int64(e.ExpiresAt) <= now {
		return false
	}
	s.mu.Lock()
	since := max(s.staleAt[""], s.staleAt[provider])
	s.mu.Unlock()
	if since == 0 {
		return true
	}
	if e.Value == nil { // no fetch time: stale while the marker lives
		return now-since >= staleMarkerTTL.Milliseconds()
	}
	return e.Value.FetchedAt >= since
}

// CacheLister is a CacheStore that can list its keys; with one,
// InvalidateUsage expires the stored entries themselves, for every process
// sharing the store.
type CacheLister interface {
	CacheKeys(ctx context.Context, prefix string) ([]string, error)
}

// InvalidateUsage expires the cached reports of provider ("" = every
// provider): the next Report or Reports probes them upstream again
// (POST /v1/usage/stale, OAuth block posts, omp usage invalidate). This
// process marks them stale in memory; a cache that lists its keys also
// has each entry's expiry set to now, so other processes probe too. An
// expired report is kept as the last good one.
func (s *Service) InvalidateUsage(ctx context.Context, provider string) error {
	s.init()
	now := s.now().UnixMilli()
	s.mu.Lock()
	if s.staleAt == nil {
		s.staleAt = map[string]int64{}
	}
	s.staleAt[provider] = now
	s.mu.Unlock()
	l, ok := s.cache().(CacheLister)
	if !ok {
		return nil
	}
	prefix := cachePrefix + "report:"
	if provider != "" {
		pk := provider
		if o, ok := providerKeyOverrides[provider]; ok {
			pk = o
		}
		prefix += pk + ":"
	}
	keys, err := l.CacheKeys(ctx, prefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		key := strings.TrimPrefix(k, cachePrefix)
		if e, ok := s.read(ctx, key, true); ok && int64(e.ExpiresAt) > now {
			s.write(ctx, key, e.Value, now)
		}
	}
	return nil
}

// errDefinitive is implemented by refresh errors that know whether the
// failure is definitive (the refresh token is dead).
type errDefinitive interface{ Definitive() bool }

func (s *Service) definitive(err error) bool {
	if s.IsDefinitive != nil {
		return s.IsDefinitive(err)
	}
	var d errDefinitive
	if errors.As(err, &d) {
		return d.Definitive()
	}
	return oauth.Classify(err) == oauth.Definitive
}

// fetchAndStore probes one key (refreshing an OAuth token that expires
// within a minute first), stores a success for the jittered TTL, and on
// failure re-serves the last good report for a short jittered backoff.
func (s *Service) fetchAndStore(key string, q request) *vault.UsageReport {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
	defer cancel()
	cred := q.cred
	log := s.logger().With("provider", q.provider, "id", q.id)
	if cred.Type == vault.TypeOAuth && q.id != 0 && s.Refresh != nil &&
		s.now().Add(RefreshSkew).UnixMilli() >= cred.Expires {
		rec, err := s.Refresh(ctx, q.id)
		switch {
		case err == nil:
			cred = rec.Credential
		case s.definitive(err):
			log.Warn("usage probe refresh failed definitively; disabling credential", "error", err)
			dctx, dcancel := context.WithTimeout(s.ctx, 5*time.Second)
			if s.Store != nil {
				if _, derr := s.Store.DisableIf(dctx, q.id, q.cred, vault.RefreshFailureCause(err)); derr != nil {
					log.Warn("usage probe disable failed", "error", derr)
				}
			}
			s.write(dctx, key, nil, 0)
			dcancel()
			return nil
		default:
			log.Debug("usage credential refresh failed, using original credential", "error", err)
		}
	}
	var rep *vault.UsageReport
	if q.prober.Supports(cred) {
		var err error
		rep, err = q.prober.Fetch(ctx, Request{Provider: q.provider, Credential: cred, BaseURL: q.base, ModelBase: q.modelBase, HTTP: s.HTTP,
			Now: s.now, Logger: log, Wait: s.Wait})
		if err != nil {
			log.Debug("usage fetch failed", "error", err)
			rep = nil
		}
	}
	wctx := context.WithoutCancel(ctx)
	if rep != nil {
		if rep.Limits == nil {
			rep.Limits = []vault.UsageLimit{}
		}
		s.write(wctx, key, rep, s.jittered(ReportTTL))
		if s.OnReport != nil && q.id != 0 {
			s.OnReport(wctx, q.id, q.provider, rep)
		}
		if s.History != nil {
			if entries := HistoryEntries(q.provider, q.cred, rep, s.now().UnixMilli()); len(entries) > 0 {
				if err := s.History.RecordUsage(wctx, entries); err != nil {
					log.Debug("usage history record failed", "error", err)
				}
			}
		}
		return rep
	}
	if e, ok := s.read(wctx, key, true); ok && e.Value != nil {
		s.write(wctx, key, e.Value, s.jittered(FailureBackoff))
		return e.Value
	}
	return nil
}

// memCache is the in-process CacheStore used when Service.Cache is nil.
type memCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]memEntry // guarded by mu
}

type memEntry struct {
	value     []byte
	keepUntil int64
}

func (c *memCache) GetCache(_ context.Context, key string, stale bool) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || (!stale && e.keepUntil <= c.now().UnixMilli()) {
		return nil, false, nil
	}
	return e.value, true, nil
}

func (c *memCache) SetCache(_ context.Context, key string, value []byte, keepUntil int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]memEntry{}
	}
	c.m[key] = memEntry{value, keepUntil}
	return nil
}

func (c *memCache) CacheKeys(_ context.Context, prefix string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k := range c.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
