package refresh

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/internal/syncbuf"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/oauth"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/sqlite"
)

// fakeProvider is an httptest token endpoint standing in for every provider.
// By default it rotates: refresh token r → access "acc-"+r, refresh r+"'".
type fakeProvider struct {
	*httptest.Server
	hits atomic.Int64
	// arrived receives one value per token request (dropped when full).
	arrived chan struct{}
	mu      sync.Mutex
	seen    []string // refresh tokens received, in order
	reply   func(w http.ResponseWriter, r *http.Request, refresh string)
}

func newFakeProvider(t *testing.T) *fakeProvider {
	t.Helper()
	fp := &fakeProvider{reply: rotate(3600), arrived: make(chan struct{}, 64)}
	fp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fp.hits.Add(1)
		select {
		case fp.arrived <- struct{}{}:
		default:
		}
		body, _ := io.ReadAll(r.Body)
		var fields map[string]string
		_ = json.Unmarshal(body, &fields) // anthropic: JSON body
		fp.mu.Lock()
		fp.seen = append(fp.seen, fields["refresh_token"])
		reply := fp.reply
		fp.mu.Unlock()
		reply(w, r, fields["refresh_token"])
	}))
	t.Cleanup(fp.Close)
	return fp
}

func (fp *fakeProvider) setReply(f func(w http.ResponseWriter, r *http.Request, refresh string)) {
	fp.mu.Lock()
	fp.reply = f
	fp.mu.Unlock()
}

func rotate(expiresIn int) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, refresh string) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "acc-" + refresh, "refresh_token": refresh + "'", "expires_in": expiresIn})
	}
}

func status(code int, body string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, _ string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// blockUntil holds the reply until release is closed (or the client leaves).
func blockUntil(release <-chan struct{}, then func(http.ResponseWriter, *http.Request, string)) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, refresh string) {
		select {
		case <-release:
			then(w, r, refresh)
		case <-r.Context().Done():
		}
	}
}

type fixture struct {
	store *sqlite.Store
	keep  *Keeper // the refresher's Store, over store
	fp    *fakeProvider
	r     *Refresher
	logs  *syncbuf.Buffer
	now   atomic.Int64 // fake clock, epoch ms

	resMu   sync.Mutex
	results []string
	changes atomic.Int64
}

var t0 = time.UnixMilli(1_800_000_000_000)

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	kr, err := seal.NewKeyring(seal.Key{ID: 1, Secret: [seal.KeySize]byte{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "vault.db"), kr, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{store: st, fp: newFakeProvider(t), logs: &syncbuf.Buffer{}}
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.keep = &Keeper{Store: st, Logger: logger}
	f.now.Store(t0.UnixMilli())
	reg := oauth.NewRegistry(func(_, kind string) string {
		if kind == oauth.KindTokenURL {
			return f.fp.URL + "/token"
		}
		return ""
	})
	f.r = &Refresher{
		Store:  f.keep,
		OAuth:  reg,
		HTTP:   f.fp.Client(),
		Now:    func() time.Time { return time.UnixMilli(f.now.Load()) },
		Logger: logger,
		// No minimum between forced refreshes: most tests force several in
		// a row on the frozen clock; TestForcedRefreshes… set one.
		MinForcedInterval: -1,
		OnResult: func(p, outcome string) {
			f.resMu.Lock()
			f.results = append(f.results, p+":"+outcome)
			f.resMu.Unlock()
		},
		OnChange: func() { f.changes.Add(1) },
	}
	t.Cleanup(f.r.Wait)
	return f
}

// add stores an OAuth credential for provider and returns its row id.
func (f *fixture) add(t *testing.T, provider, email, refresh string, expires int64) int64 {
	t.Helper()
	cred := vault.Credential{Type: vault.TypeOAuth, Access: "acc0-" + refresh, Refresh: refresh, Expires: expires, Email: email, ProjectID: "proj"}
	recs, err := f.store.Upsert(context.Background(), provider, cred)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Credential.Refresh == refresh {
			return r.ID
		}
	}
	t.Fatalf("upserted row for %s not found", email)
	return 0
}

func (f *fixture) get(t *testing.T, id int64) vault.Record {
	t.Helper()
	rec, err := f.store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (f *fixture) resultList() []string {
	f.resMu.Lock()
	defer f.resMu.Unlock()
	return append([]string(nil), f.results...)
}

// arrivals waits for n token requests to reach the fake provider.
func (fp *fakeProvider) arrivals(t *testing.T, n int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for range n {
		select {
		case <-fp.arrived:
		case <-timeout.C:
			t.Fatal("token request did not arrive")
		}
	}
}

// joined returns a channel closed when a caller joins the flight for id as
// its n-th waiter.
func (f *fixture) joined(id int64, n int) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	f.r.onJoin = func(fid int64, waiters int) {
		if fid == id && waiters == n {
			once.Do(func() { close(ch) })
		}
	}
	return ch
}

func receive(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
