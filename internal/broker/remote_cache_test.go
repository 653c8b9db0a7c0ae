package broker_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	brokerclient "github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/remote"
	"github.com/ompgo/omp/pkg/vault/seal"
	"github.com/ompgo/omp/pkg/vault/vaulttest"
)

// downable fronts the real broker at a URL that stays the same while the
// broker "goes down": every connection is then dropped unanswered, as an
// unreachable host would.
type downable struct {
	*httptest.Server
	down    atomic.Bool
	dropped atomic.Int64 // requests dropped while down
	status  atomic.Int32 // when set, every request is answered with it instead
}

func newDownable(t *testing.T, b *runningBroker) *downable {
	s := &downable{}
	api := b.m.API.Handler()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.down.Load() {
			s.dropped.Add(1)
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if code := s.status.Load(); code != 0 {
			http.Error(w, `{"error":"front says no"}`, int(code))
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// bootStore builds a store over url with cache and boots it.
func bootStore(ctx context.Context, url, token string, cache *remote.Cache) (*remote.Store, bool, error) {
	rs := remote.New(remote.Options{Client: brokerclient.New(url, token, nil), Cache: cache, PollWait: 2 * time.Second})
	fromCache, err := rs.Boot(ctx)
	return rs, fromCache, err
}

// runStore runs rs until the test ends.
func runStore(t *testing.T, rs *remote.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rs.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestRemoteBootsFromCacheWhileBrokerDown: a client that synced once
// boots from the cache with the broker unreachable — no waiting — serves
// the cached credentials, and once the broker is back reconciles in the
// background and rewrites the cache with what the broker sent.
func TestRemoteBootsFromCacheWhileBrokerDown(t *testing.T) {
	b := newHarness(t).start(t)
	ctx := context.Background()
	first, err := b.client.Upload(ctx, "anthropic", vaulttest.OAuth("anthropic", "cached@example.com").Credential())
	if err != nil {
		t.Fatal(err)
	}
	front := newDownable(t, b)
	url := front.URL + "/" // bound as resolved, slash included
	cache := &remote.Cache{Path: filepath.Join(t.TempDir(), "cache", "auth-broker-snapshot.enc"), Token: b.token, URL: url, TTL: time.Hour}

	// First client: a live boot writes the cache.
	if _, fromCache, err := bootStore(ctx, url, b.token, cache); err != nil || fromCache {
		t.Fatalf("first boot: fromCache=%v err=%v, want a live fetch", fromCache, err)
	}
	fi, err := os.Stat(cache.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache after a live boot: %v %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(cache.Path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir mode %v", di.Mode())
	}

	// The broker goes down; a second client boots at once from the cache.
	front.down.Store(true)
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	rs, fromCache, err := bootStore(bctx, url, b.token, cache)
	if err != nil || !fromCache {
		t.Fatalf("boot with the broker down: fromCache=%v err=%v", fromCache, err)
	}
	t.Logf("booted from the cache in %v", time.Since(start).Round(time.Microsecond))
	e, err := rs.Get(bctx, first[0].ID)
	if err != nil || e.Credential.Access != vaulttest.OAuth("anthropic", "cached@example.com").Access || e.Credential.Refresh != vault.RemoteRefreshSentinel {
		t.Fatalf("cached credential: %+v, %v", e, err)
	}
	if st := rs.Status(); st.Mode != remote.ModeCache {
		t.Errorf("Status = %+v, want mode %q", st, remote.ModeCache)
	}
	dropped := front.dropped.Load() // the boot's
	runStore(t, rs)

	// Meanwhile the broker changed; it comes back and the store follows.
	second, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-after-restart"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the running store to fail against the dead front", func() bool {
		return front.dropped.Load() > dropped
	})
	front.down.Store(false)
	eventually(t, 10*time.Second, "the store reconciled with the broker", func() bool {
		_, err := rs.Get(ctx, second[0].ID)
		return err == nil
	})
	eventually(t, 5*time.Second, "the cache rewritten with the broker's snapshot", func() bool {
		c := *cache
		snap, err := c.Read()
		return err == nil && len(snap.Credentials) == 2
	})
}

// TestRemoteBootFallsBackToLiveFetch: a stale, corrupt, foreign-URL or
// foreign-token cache is not used: the boot fetches live, and fails when
// the broker is unreachable.
func TestRemoteBootFallsBackToLiveFetch(t *testing.T) {
	b := newHarness(t).start(t)
	ctx := context.Background()
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-live"}); err != nil {
		t.Fatal(err)
	}
	front := newDownable(t, b)
	url := front.URL
	good := filepath.Join(t.TempDir(), "good.enc")
	if _, _, err := bootStore(ctx, url, b.token, &remote.Cache{Path: good, Token: b.token, URL: url, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	valid, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		cache func(path string) *remote.Cache
	}{
		{"stale", func(p string) *remote.Cache {
			return &remote.Cache{Path: p, Token: b.token, URL: url, TTL: time.Hour,
				Now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
		}},
		{"corrupt", func(p string) *remote.Cache {
			d, _ := os.ReadFile(p)
			d[len(d)-3] ^= 1
			os.WriteFile(p, d, 0o600)
			return &remote.Cache{Path: p, Token: b.token, URL: url, TTL: time.Hour}
		}},
		{"written for another URL", func(p string) *remote.Cache {
			d, _ := seal.OpenSnapshotCache(valid, b.token, url)
			d, _ = seal.SealSnapshotCache(d, b.token, "http://other-broker:8765")
			os.WriteFile(p, d, 0o600)
			return &remote.Cache{Path: p, Token: b.token, URL: url, TTL: time.Hour}
		}},
		{"written for another token", func(p string) *remote.Cache {
			d, _ := seal.OpenSnapshotCache(valid, b.token, url)
			d, _ = seal.SealSnapshotCache(d, "an-older-token", url)
			os.WriteFile(p, d, 0o600)
			return &remote.Cache{Path: p, Token: b.token, URL: url, TTL: time.Hour}
		}},
		{"disabled (TTL 0)", func(p string) *remote.Cache {
			return &remote.Cache{Path: p, Token: b.token, URL: url}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "c.enc")
			if err := os.WriteFile(p, valid, 0o600); err != nil {
				t.Fatal(err)
			}
			cache := tt.cache(p)

			front.down.Store(true)
			bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, fromCache, err := bootStore(bctx, url, b.token, cache); err == nil || fromCache {
				t.Fatalf("boot with the broker down: fromCache=%v err=%v, want the live fetch's error", fromCache, err)
			}
			front.down.Store(false)
			rs, fromCache, err := bootStore(ctx, url, b.token, cache)
			if err != nil || fromCache {
				t.Fatalf("boot with the broker up: fromCache=%v err=%v, want a live fetch", fromCache, err)
			}
			if l, _ := rs.List(ctx, "openai"); len(l) != 1 || l[0].Credential.Key != "sk-live" {
				t.Fatalf("live snapshot: %+v", l)
			}
			if cache.TTL > 0 {
				if _, err := (&remote.Cache{Path: p, Token: b.token, URL: url, TTL: time.Hour}).Read(); err != nil {
					t.Fatalf("the live fetch did not rewrite the cache: %v", err)
				}
			} else if d, _ := os.ReadFile(p); string(d) != string(valid) {
				t.Fatal("TTL 0 wrote the cache")
			}
		})
	}
}

// TestRemoteLiveFirstBoot: a LiveFirst store (the gateway's) boots from
// the broker whenever it answers, even over a fresh cache; it falls back
// to the cache only when the broker gives no answer or a 5xx, and a
// rejected token is an error whatever the cache holds.
func TestRemoteLiveFirstBoot(t *testing.T) {
	b := newHarness(t).start(t)
	ctx := context.Background()
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-before"}); err != nil {
		t.Fatal(err)
	}
	front := newDownable(t, b)
	cache := &remote.Cache{Path: filepath.Join(t.TempDir(), "c.enc"), Token: b.token, URL: front.URL, TTL: time.Hour}
	boot := func() (*remote.Store, bool, error) {
		rs := remote.New(remote.Options{Client: brokerclient.New(front.URL, b.token, nil), Cache: cache, LiveFirst: true})
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		fromCache, err := rs.Boot(bctx)
		return rs, fromCache, err
	}
	keys := func(rs *remote.Store) []string {
		var out []string
		l, _ := rs.List(ctx, "openai")
		for _, e := range l {
			out = append(out, e.Credential.Key)
		}
		return out
	}
	if _, fromCache, err := boot(); err != nil || fromCache {
		t.Fatalf("first boot: fromCache=%v err=%v", fromCache, err)
	}
	// The cache is fresh, but the broker answers: its current state wins.
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-after"}); err != nil {
		t.Fatal(err)
	}
	rs, fromCache, err := boot()
	if err != nil || fromCache || len(keys(rs)) != 2 {
		t.Fatalf("boot with the broker up: fromCache=%v err=%v keys=%v, want both keys live", fromCache, err, keys(rs))
	}

	front.down.Store(true)
	rs, fromCache, err = boot()
	if err != nil || !fromCache || len(keys(rs)) != 2 || rs.Status().Mode != remote.ModeCache {
		t.Fatalf("boot with the broker unreachable: fromCache=%v err=%v keys=%v status=%+v", fromCache, err, keys(rs), rs.Status())
	}
	front.down.Store(false)

	front.status.Store(http.StatusBadGateway)
	if _, fromCache, err = boot(); err != nil || !fromCache {
		t.Fatalf("boot behind a proxy answering 502: fromCache=%v err=%v, want the cache", fromCache, err)
	}
	front.status.Store(http.StatusUnauthorized)
	if _, fromCache, err = boot(); err == nil || fromCache {
		t.Fatalf("boot with the token rejected: fromCache=%v err=%v, want the 401", fromCache, err)
	}
	front.status.Store(0)

	front.down.Store(true)
	os.Remove(cache.Path)
	if _, fromCache, err = boot(); err == nil || fromCache || !remote.Unreachable(err) {
		t.Fatalf("boot with the broker unreachable and no cache: fromCache=%v err=%v", fromCache, err)
	}
}

// TestRemoteRenewsCacheWhileFollowing: a store following the stream, with
// nothing changing in the broker, rewrites the cache from a fresh
// snapshot every half TTL, so the cache stays fresh for a restart during
// a later outage.
func TestRemoteRenewsCacheWhileFollowing(t *testing.T) {
	b := newHarness(t).start(t)
	ctx := context.Background()
	if _, err := b.client.Upload(ctx, "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-renew"}); err != nil {
		t.Fatal(err)
	}
	cache := &remote.Cache{Path: filepath.Join(t.TempDir(), "c.enc"), Token: b.token, URL: b.url, TTL: 2 * time.Second}
	rs, _, err := bootStore(ctx, b.url, b.token, cache)
	if err != nil {
		t.Fatal(err)
	}
	booted, err := cache.Read()
	if err != nil {
		t.Fatal(err)
	}
	runStore(t, rs)
	// The stream's first frame rewrites the cache once; later snapshots
	// come only from the renewal.
	var streamed vault.Snapshot
	eventually(t, 10*time.Second, "the stream's snapshot cached", func() bool {
		streamed, err = cache.Read()
		return err == nil && streamed.GeneratedAt > booted.GeneratedAt
	})
	eventually(t, 10*time.Second, "the cache renewed by a fresh snapshot", func() bool {
		snap, err := cache.Read()
		return err == nil && snap.GeneratedAt > streamed.GeneratedAt && len(snap.Credentials) == 1
	})
	if st := rs.Status(); st.Mode != remote.ModeStream {
		t.Fatalf("status %+v, want following the stream", st)
	}
}
