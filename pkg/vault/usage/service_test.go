package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// fakeCodex is a fake chatgpt.com usage endpoint whose answer tests change.
type fakeCodex struct {
	calls   atomic.Int32
	status  atomic.Int32 // 0 → 200
	used    atomic.Int32 // used_percent
	block   chan struct{}
	blocked atomic.Bool
	mu      sync.Mutex
	tokens  []string
}

func (f *fakeCodex) handler(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	f.mu.Lock()
	f.tokens = append(f.tokens, r.Header.Get("Authorization"))
	f.mu.Unlock()
	if f.blocked.Load() {
		select {
		case <-f.block:
		case <-r.Context().Done():
			return
		}
	}
	if s := f.status.Load(); s != 0 {
		writeJSON(w, int(s), `{}`)
		return
	}
	writeJSON(w, 200, fmt.Sprintf(`{"plan_type":"plus","rate_limit":{"allowed":true,"limit_reached":false,
	  "primary_window":{"used_percent":%d,"limit_window_seconds":18000,"reset_after_seconds":60}}}`, f.used.Load()))
}

func (f *fakeCodex) lastToken() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.tokens) == 0 {
		return ""
	}
	return f.tokens[len(f.tokens)-1]
}

type env struct {
	clk   *clock
	store *sqlite.Store
	codex *fakeCodex
	svc   *Service
	rand  atomic.Value // float64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{clk: &clock{t: testNow}, codex: &fakeCodex{block: make(chan struct{})}}
	e.rand.Store(0.5)
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	e.store, err = sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agent.db"), kr, sqlite.Options{Now: e.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	srv := serve(t, e.codex.handler)
	e.svc = &Service{Store: e.store, Cache: e.store, History: e.store, Now: e.clk.Now,
		Rand: func() float64 { return e.rand.Load().(float64) },
		URLs: func(provider, kind string) string {
			if provider == "openai-codex" && kind == KindUsageURL {
				return srv.URL
			}
			return ""
		}}
	t.Cleanup(func() { e.svc.Close() })
	return e
}

func (e *env) addCodex(t *testing.T, email string, expiresIn time.Duration) vault.Record {
	t.Helper()
	recs, err := e.store.Upsert(context.Background(), "openai-codex", vault.Credential{Type: vault.TypeOAuth,
		Access: "access-" + email, Refresh: "refresh-" + email, Expires: e.clk.Now().Add(expiresIn).UnixMilli(), Email: email, AccountID: "acct-" + email})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Credential.Email == email {
			return r
		}
	}
	t.Fatalf("upserted row for %s not found", email)
	return vault.Record{}
}

func (e *env) reports(t *testing.T) []vault.UsageReport {
	t.Helper()
	reps, err := e.svc.Reports(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return reps
}

// cached reads the durable cache entry of rec (stale read).
func (e *env) cached(t *testing.T, rec vault.Record) (entry, bool) {
	t.Helper()
	base, _ := e.svc.base(rec.Provider)
	raw, ok, err := e.store.GetCache(context.Background(), cachePrefix+CacheKey(rec.Provider, base, rec.Credential), true)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return entry{}, false
	}
	var en entry
	if err := json.Unmarshal(raw, &en); err != nil {
		t.Fatal(err)
	}
	return en, true
}

func TestServiceCacheTTLWithJitter(t *testing.T) {
	tests := []struct {
		name string
		rand float64
		ttl  time.Duration
	}{
		{"rand 0 gives -25%", 0, 225 * time.Second},
		{"rand 0.5 gives 5 minutes", 0.5, 300 * time.Second},
		{"rand 1 gives +25%", 1, 375 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.rand.Store(tt.rand)
			rec := e.addCodex(t, "a@x.io", time.Hour)
			if got := len(e.reports(t)); got != 1 {
				t.Fatalf("reports = %d, want 1", got)
			}
			en, ok := e.cached(t, rec)
			if !ok || en.Value == nil || int64(en.ExpiresAt) != testNow.Add(tt.ttl).UnixMilli() {
				t.Fatalf("cache entry = %+v ok=%v, want expiresAt now+%v", en, ok, tt.ttl)
			}
			e.clk.Add(tt.ttl - time.Millisecond)
			e.reports(t)
			if got := e.codex.calls.Load(); got != 1 {
				t.Fatalf("calls before expiry = %d, want 1 (fresh entry served)", got)
			}
			e.clk.Add(time.Millisecond)
			e.reports(t)
			if got := e.codex.calls.Load(); got != 2 {
				t.Fatalf("calls at expiry = %d, want 2", got)
			}
		})
	}
}

func TestServiceKeepsLastGoodDurablyFor24h(t *testing.T) {
	e := newEnv(t)
	rec := e.addCodex(t, "a@x.io", 48*time.Hour)
	e.reports(t)
	base, _ := e.svc.base(rec.Provider)
	key := cachePrefix + CacheKey(rec.Provider, base, rec.Credential)
	e.clk.Add(24*time.Hour - time.Second)
	if _, ok, _ := e.store.GetCache(context.Background(), key, false); !ok {
		t.Fatal("last-good row gone before 24 h")
	}
	e.clk.Add(2 * time.Second)
	if _, ok, _ := e.store.GetCache(context.Background(), key, false); ok {
		t.Fatal("last-good row still live after 24 h")
	}
}

func TestServiceFailureServesLastGoodWithBackoff(t *testing.T) {
	e := newEnv(t)
	rec := e.addCodex(t, "a@x.io", 48*time.Hour)
	e.codex.used.Store(30)
	first := e.reports(t)
	e.codex.status.Store(500)
	e.clk.Add(6 * time.Minute)
	got := e.reports(t)
	if len(got) != 1 || got[0].FetchedAt != first[0].FetchedAt {
		t.Fatalf("reports after failure = %+v, want the last-good report", got)
	}
	en, _ := e.cached(t, rec)
	if want := e.clk.Now().Add(FailureBackoff).UnixMilli(); int64(en.ExpiresAt) != want {
		t.Fatalf("backoff expiresAt = %v, want %d (10 s with rand 0.5)", en.ExpiresAt, want)
	}
	calls := e.codex.calls.Load()
	e.clk.Add(9 * time.Second)
	e.reports(t)
	if e.codex.calls.Load() != calls {
		t.Fatal("re-polled inside the failure backoff")
	}
	e.clk.Add(2 * time.Second)
	e.reports(t)
	if e.codex.calls.Load() != calls+1 {
		t.Fatal("did not re-poll after the failure backoff")
	}
}

func TestServiceFailureWithoutLastGoodWritesNothing(t *testing.T) {
	e := newEnv(t)
	rec := e.addCodex(t, "a@x.io", time.Hour)
	e.codex.status.Store(503)
	if got := e.reports(t); len(got) != 0 {
		t.Fatalf("reports = %+v, want none", got)
	}
	if _, ok := e.cached(t, rec); ok {
		t.Fatal("a failure without last-good wrote a cache entry")
	}
}

type definitiveErr struct{ msg string }

func (e definitiveErr) Error() string    { return e.msg }
func (e definitiveErr) Definitive() bool { return true }

func TestServiceRefreshFirstNearExpiry(t *testing.T) {
	e := newEnv(t)
	rec := e.addCodex(t, "a@x.io", 30*time.Second)
	var refreshed atomic.Int32
	e.svc.Refresh = func(ctx context.Context, id int64) (vault.Record, error) {
		refreshed.Add(1)
		c := rec.Credential
		c.Access, c.Expires = "fresh-access", e.clk.Now().Add(time.Hour).UnixMilli()
		return e.store.UpdateCredential(ctx, id, c)
	}
	if got := len(e.reports(t)); got != 1 {
		t.Fatalf("reports = %d, want 1", got)
	}
	if refreshed.Load() != 1 || e.codex.lastToken() != "Bearer fresh-access" {
		t.Fatalf("refreshes = %d, token = %q; want the refreshed token", refreshed.Load(), e.codex.lastToken())
	}
}

func TestServiceTransientRefreshFailureProbesWithOldToken(t *testing.T) {
	e := newEnv(t)
	rec := e.addCodex(t, "a@x.io", 30*time.Second)
	e.svc.Refresh = func(context.Context, int64) (vault.Record, error) {
		return vault.Record{}, errors.New("dial tcp: timeout")
	}
	if got := len(e.reports(t)); got != 1 {
		t.Fatalf("reports = %d, want 1", got)
	}
	if e.codex.lastToken() != "Bearer "+rec.Credential.Access {
		t.Fatalf("token = %q, want the old token", e.codex.lastToken())
	}
	if r, _ := e.store.Get(context.Background(), rec.ID); !r.Active() {
		t.Fatalf("row disabled after a transient failure: %q", r.DisabledCause)
	}
}

func TestServiceDefinitiveRefreshFailureDisablesAndTombstones(t *testing.T) {
	e := newEnv(t)
	rec := e.addCodex(t, "a@x.io", 2*time.Hour)
	e.reports(t) // last-good in cache
	e.clk.Add(2*time.Hour - 30*time.Second)
	e.svc.Refresh = func(context.Context, int64) (vault.Record, error) {
		return vault.Record{}, definitiveErr{"OpenAI Codex token refresh failed: 400 invalid_grant"}
	}
	calls := e.codex.calls.Load()
	if got := e.reports(t); len(got) != 0 {
		t.Fatalf("reports = %+v, want none (no last-good after a definitive failure)", got)
	}
	if e.codex.calls.Load() != calls {
		t.Fatal("probed upstream after a definitive refresh failure")
	}
	r, err := e.store.Get(context.Background(), rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	// One disable cause on every refresh path, the usage probe included.
	if want := "oauth refresh failed: Error: OpenAI Codex token refresh failed: 400 invalid_grant"; r.DisabledCause != want {
		t.Fatalf("cause = %q, want %q", r.DisabledCause, want)
	}
	en, ok := e.cached(t, rec)
	if !ok || en.Value != nil || en.ExpiresAt != 0 {
		t.Fatalf("cache = %+v ok=%v, want tombstone {null, 0}", en, ok)
	}
}

func TestServiceSingleFlightPerCredential(t *testing.T) {
	// In a bubble, synctest.Wait returns once every caller is parked: one
	// in the upstream call, the others on its flight. Upstream is served
	// in process (no sockets, which a bubble cannot wait on).
	synctest.Test(t, func(t *testing.T) {
		codex := &fakeCodex{block: make(chan struct{})}
		codex.blocked.Store(true)
		svc := &Service{HTTP: inProcess(codex.handler), URLs: func(provider, kind string) string {
			if provider == "openai-codex" && kind == KindUsageURL {
				return "http://codex.test"
			}
			return ""
		}}
		defer svc.Close()
		rec := vault.Record{ID: 1, Provider: "openai-codex", Credential: vault.Credential{Type: vault.TypeOAuth,
			Access: "access-a", Refresh: "refresh-a", Expires: time.Now().Add(time.Hour).UnixMilli(), Email: "a@x.io", AccountID: "acct-a"}}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if rep, err := svc.Report(context.Background(), rec); err != nil || rep == nil {
					t.Errorf("Report = %v, %v", rep, err)
				}
			})
		}
		synctest.Wait()
		if got := codex.calls.Load(); got != 1 {
			t.Fatalf("upstream calls with 5 callers waiting = %d, want 1", got)
		}
		close(codex.block)
		wg.Wait()
		if got := codex.calls.Load(); got != 1 {
			t.Fatalf("upstream calls = %d, want 1", got)
		}
	})
}

func TestServiceDeadlineAnswersWithLastGoodAndRefreshesInBackground(t *testing.T) {
	e := newEnv(t)
	e.svc.Deadline = 50 * time.Millisecond
	written := make(chan struct{}, 1)
	e.svc.Cache = notifyCache{e.store, written}
	rec := e.addCodex(t, "a@x.io", 48*time.Hour)
	e.codex.used.Store(10)
	e.reports(t)
	e.clk.Add(6 * time.Minute)
	e.codex.used.Store(70)
	e.codex.blocked.Store(true)
	got := e.reports(t)
	if len(got) != 1 || *got[0].Limits[0].Amount.Used != 10 {
		t.Fatalf("reports = %+v, want the last-good (10%%) value", got)
	}
	close(e.codex.block)
	timeout := time.After(10 * time.Second)
	for {
		en, _ := e.cached(t, rec)
		if en.Value != nil && *en.Value.Limits[0].Amount.Used == 70 {
			break
		}
		select {
		case <-written: // look again after every cache write
		case <-timeout:
			t.Fatalf("cache never got the background refresh: %+v", en.Value)
		}
	}
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Reports(context.Background()); vault.ErrorCode(err) != vault.EUNAVAILABLE {
		t.Fatalf("Reports after Close: err = %v, want unavailable", err)
	}
}

func TestServiceRecordsHistory(t *testing.T) {
	e := newEnv(t)
	rec := e.addCodex(t, "a@x.io", time.Hour)
	e.codex.used.Store(25)
	e.reports(t)
	hist, err := e.store.UsageHistory(context.Background(), 0, "openai-codex")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 {
		t.Fatalf("history = %+v, want one row", hist)
	}
	h := hist[0]
	if h.AccountKey != "oauth|account:acct-a@x.io|email:a@x.io" || h.LimitID != "openai-codex:primary" ||
		h.Email != "a@x.io" || h.AccountID != rec.Credential.AccountID || h.UsedFraction == nil || *h.UsedFraction != 0.25 ||
		h.WindowLabel != "5 hours" || h.Status != "ok" || h.RecordedAt != testNow.UnixMilli() {
		t.Fatalf("history row = %+v", h)
	}
}

func TestServiceReportsEveryCredentialAndLatest(t *testing.T) {
	e := newEnv(t)
	e.addCodex(t, "a@x.io", time.Hour)
	e.addCodex(t, "b@x.io", time.Hour)
	if _, at := e.svc.LatestReports(); !at.IsZero() {
		t.Fatal("LatestReports before any run has a time")
	}
	got := e.reports(t)
	if len(got) != 2 || got[0].Metadata["email"] != "a@x.io" || got[1].Metadata["email"] != "b@x.io" {
		t.Fatalf("reports = %+v, want a then b", got)
	}
	latest, at := e.svc.LatestReports()
	if len(latest) != 2 || !at.Equal(testNow) {
		t.Fatalf("LatestReports = %d at %v", len(latest), at)
	}
}

// countingProber is a fake remote provider counting fetches.
type countingProber struct {
	calls   atomic.Int32
	release chan struct{}
}

func (p *countingProber) ID() string                       { return "zai" }
func (p *countingProber) Supports(c vault.Credential) bool { return c.Type == vault.TypeAPIKey }
func (p *countingProber) Fetch(ctx context.Context, r Request) (*vault.UsageReport, error) {
	p.calls.Add(1)
	<-p.release
	return &vault.UsageReport{Provider: "zai", FetchedAt: r.nowMs(), Limits: []vault.UsageLimit{{ID: "zai:tokens", Label: "t", Amount: vault.UsageAmount{Unit: "tokens"}}}}, nil
}

func TestServiceConcurrentReportsShareOneRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &countingProber{release: make(chan struct{})}
		var keys atomic.Int32
		svc := &Service{Probers: []Prober{p}, APIKey: func(string) string { keys.Add(1); return "k" }}
		defer svc.Close()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if r, err := svc.Reports(context.Background()); err != nil || len(r) != 1 {
					t.Errorf("Reports = %v, %v", r, err)
				}
			})
		}
		synctest.Wait() // all four callers wait on the run, whose fetch waits on release
		close(p.release)
		wg.Wait()
		if keys.Load() != 1 || p.calls.Load() != 1 {
			t.Fatalf("runs = %d, fetches = %d; want one shared run", keys.Load(), p.calls.Load())
		}
	})
}

func TestServiceCallerCancelDoesNotCancelPeers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &countingProber{release: make(chan struct{})}
		svc := &Service{Probers: []Prober{p}, APIKey: func(string) string { return "k" }}
		defer svc.Close()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := svc.Reports(ctx); errc <- err }()
		synctest.Wait() // the fetch has started and waits on release
		if p.calls.Load() != 1 {
			t.Fatalf("fetches = %d, want 1", p.calls.Load())
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled caller err = %v", err)
		}
		done := make(chan []vault.UsageReport, 1)
		go func() { r, _ := svc.Reports(context.Background()); done <- r }()
		close(p.release)
		if r := <-done; len(r) != 1 {
			t.Fatalf("peer reports = %+v, want 1", r)
		}
	})
}

// inProcess is an HTTP client that runs h in the calling goroutine: no
// sockets, so a synctest bubble sees a blocked handler as blocked.
func inProcess(h http.HandlerFunc) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		w := httptest.NewRecorder()
		h(w, r)
		return w.Result(), nil
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// notifyCache signals (without blocking) after every cache write.
type notifyCache struct {
	vault.CacheStore
	written chan struct{}
}

func (c notifyCache) SetCache(ctx context.Context, key string, value []byte, keepUntil int64) error {
	err := c.CacheStore.SetCache(ctx, key, value, keepUntil)
	select {
	case c.written <- struct{}{}:
	default:
	}
	return err
}

func TestServiceInvalidateUsageReprobesAndReports(t *testing.T) {
	e := newEnv(t)
	var got []int64
	e.svc.OnReport = func(_ context.Context, id int64, provider string, rep *vault.UsageReport) {
		if provider == "openai-codex" && rep != nil {
			got = append(got, id)
		}
	}
	rec := e.addCodex(t, "a@x.io", time.Hour)
	e.reports(t)
	e.reports(t)
	if n := e.codex.calls.Load(); n != 1 {
		t.Fatalf("calls = %d, want 1 (cached)", n)
	}
	e.clk.Add(time.Millisecond)
	if err := e.svc.InvalidateUsage(context.Background(), "anthropic"); err != nil {
		t.Fatal(err)
	}
	e.reports(t)
	if n := e.codex.calls.Load(); n != 1 {
		t.Fatalf("calls = %d after another provider's invalidation, want 1", n)
	}
	if err := e.svc.InvalidateUsage(context.Background(), "openai-codex"); err != nil {
		t.Fatal(err)
	}
	e.reports(t)
	e.reports(t)
	if n := e.codex.calls.Load(); n != 2 {
		t.Fatalf("calls = %d after invalidation, want 2 (one re-probe, then cached)", n)
	}
	if len(got) != 2 || got[0] != rec.ID {
		t.Fatalf("OnReport ids %v, want two of %d", got, rec.ID)
	}
}
