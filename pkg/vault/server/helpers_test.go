package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/server"
	"github.com/ompgo/omp/pkg/vault/server/brokermetrics"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

const testToken = "test-token-0123456789"

// clock is a settable fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// fakeRefresher is a test double of server.Refresher (an interface of the
// package under test): RefreshNow rotates the access token through the real
// store; err, when set, is returned instead.
type fakeRefresher struct {
	mu    sync.Mutex
	store vault.Store
	sched vault.Schedule
	err   error
	calls int
}

func (f *fakeRefresher) Schedule() vault.Schedule { f.mu.Lock(); defer f.mu.Unlock(); return f.sched }

func (f *fakeRefresher) setSchedule(s vault.Schedule) { f.mu.Lock(); f.sched = s; f.mu.Unlock() }

func (f *fakeRefresher) RefreshNow(ctx context.Context, id int64) (vault.Record, error) {
	f.mu.Lock()
	f.calls++
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return vault.Record{}, err
	}
	rec, err := f.store.Get(ctx, id)
	if err != nil {
		return vault.Record{}, err
	}
	if !rec.Active() {
		return vault.Record{}, vault.NotFoundID(id)
	}
	if !rec.Credential.IsOAuth() {
		return vault.Record{}, vault.Errorf(vault.EINVALID, "Credential %d is not OAuth (provider=%s, type=api_key): API-key credentials have nothing to refresh", id, rec.Provider)
	}
	c := rec.Credential
	c.Access = "refreshed-access"
	c.Refresh = "rotated-refresh-secret"
	c.Expires += 3_600_000
	return f.store.UpdateCredential(ctx, id, c)
}

// fakeUsage is a test double of server.UsageSource and
// UsageInvalidator; it records the invalidated providers.
type fakeUsage struct {
	reports []vault.UsageReport
	err     error

	mu          sync.Mutex
	invalidated []string
}

func (f *fakeUsage) InvalidateUsage(_ context.Context, provider string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.invalidated = append(f.invalidated, provider)
	return nil
}

func (f *fakeUsage) invalidations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.invalidated...)
}

func (f *fakeUsage) Reports(context.Context) ([]vault.UsageReport, error) { return f.reports, f.err }

// logBuf collects log lines for assertions.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }

func (l *logBuf) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

type env struct {
	t       testing.TB
	clk     *clock
	kr      *seal.Keyring
	path    string
	store   *sqlite.Store
	ref     *fakeRefresher
	usage   *fakeUsage
	srv     *server.Server
	metrics *brokermetrics.Metrics
	ts      *httptest.Server
	client  *client.Client
	logs    *logBuf
}

type envOpt func(*server.Server)

// newEnv runs a broker API over a real SQLite vault in a temp dir, with the
// hub loop running, behind a real listener.
func newEnv(t testing.TB, opts ...envOpt) *env {
	t.Helper()
	kr, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, kr: kr, clk: &clock{t: time.UnixMilli(1_765_500_000_000)}, logs: &logBuf{},
		path: filepath.Join(t.TempDir(), "vault.db")}
	e.metrics = brokermetrics.New(brokermetrics.Options{Now: e.clk.Now})
	e.srv = &server.Server{
		Tokens: []string{testToken, "second-token"}, Version: "9.9.9-test",
		Logger:       slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:          e.clk.Now,
		PollInterval: 20 * time.Millisecond,
		Metrics:      e.metrics,
	}
	e.store, err = sqlite.Open(context.Background(), e.path, kr, sqlite.Options{Now: e.clk.Now, OnChange: e.srv.Notify})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	e.ref = &fakeRefresher{store: e.store, sched: vault.Schedule{Enabled: true, IntervalMs: 60_000, SkewMs: 300_000, NextSweepAt: e.clk.Now().UnixMilli() + 41_234}}
	e.usage = &fakeUsage{}
	e.srv.Store, e.srv.Refresher, e.srv.Usage, e.srv.History, e.srv.Disabled = e.store, e.ref, e.usage, e.store, e.store
	e.srv.Blocks, e.srv.ClientUsage, e.srv.Invalidator = e.store, e.store, e.usage
	for _, o := range opts {
		o(e.srv)
	}
	e.metrics.Attach(func() []vault.UsageReport { return e.usage.reports })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Run(ctx) }()
	e.ts = httptest.NewServer(e.srv.Handler())
	t.Cleanup(func() {
		e.ts.CloseClientConnections()
		e.ts.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	e.client = client.New(e.ts.URL+"/", testToken, e.ts.Client())
	return e
}

func oauthCred(email string, expires int64) vault.Credential {
	return vault.Credential{Type: vault.TypeOAuth, Access: "access-" + email, Refresh: "refresh-secret-" + email,
		Expires: expires, Email: email, Extra: map[string]json.RawMessage{"apiEndpoint": json.RawMessage(`"https://x"`)}}
}

func (e *env) upsert(provider string, c vault.Credential) vault.Record {
	e.t.Helper()
	recs, err := e.store.Upsert(context.Background(), provider, c)
	if err != nil {
		e.t.Fatal(err)
	}
	key := vault.IdentityKey(provider, c)
	for _, r := range recs {
		if (key != "" && r.IdentityKey == key) || (key == "" && r.Credential.Key == c.Key) {
			return r
		}
	}
	e.t.Fatalf("upserted record not found")
	return vault.Record{}
}

// do sends a raw request and returns status, headers and body.
func (e *env) do(method, path, auth string, body string, hdr ...string) (int, http.Header, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (e *env) get(path string, hdr ...string) (int, http.Header, string) {
	return e.do(http.MethodGet, path, "Bearer "+testToken, "", hdr...)
}

func (e *env) post(path, body string) (int, http.Header, string) {
	return e.do(http.MethodPost, path, "Bearer "+testToken, body)
}

// keys returns the sorted key set of a JSON object.
func keys(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func obj(t testing.TB, raw string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("not an object: %q", raw)
	}
	return m
}

// eventually re-checks cond every 5 ms until it holds, failing after 5 s.
// It is for conditions with no event to wait on (log lines, metrics).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// parkedLongPolls counts the long-polls that have started waiting.
func (e *env) parkedLongPolls() int {
	return strings.Count(e.logs.String(), `msg="auth-broker snapshot long-poll waiting"`)
}

// awaitParked waits until more than before long-polls have started waiting:
// from then on a vault change wakes them.
func (e *env) awaitParked(t testing.TB, before int) {
	t.Helper()
	eventually(t, "the long-poll to wait", func() bool { return e.parkedLongPolls() > before })
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func httptestRecorder(h http.Handler, method, path, auth string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// openSecondStore opens the same vault file as another process would: its
// writes do not call the server's Notify.
func (e *env) openSecondStore() *sqlite.Store {
	e.t.Helper()
	s, err := sqlite.Open(context.Background(), e.path, e.kr, sqlite.Options{Now: e.clk.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { s.Close() })
	return s
}
