package broker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/remote"
	"github.com/ompgo/omp/pkg/vault/vaulttest"
)

// The remote store against the real broker: what a gateway sees.

// A credential added, refreshed or disabled in the broker is visible in the
// remote store within a second, without restart. The time is logged; the
// test fails only past waitLong, so a loaded machine cannot fail it.
func TestRemoteFollowsBrokerWithinASecond(t *testing.T) {
	b := newHarness(t).start(t)
	rs := startRemote(t, b, remote.Options{})
	ctx := context.Background()

	within := func(what string, cond func() bool) {
		t.Helper()
		start := time.Now()
		eventually(t, waitLong, what, cond)
		t.Logf("%s after %v", what, time.Since(start).Round(time.Millisecond))
	}
	cred := vaulttest.OAuth("anthropic", "follow@example.com").Credential()
	entries, err := b.client.Upload(ctx, "anthropic", cred)
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	id := entries[0].ID
	within("added credential visible", func() bool { _, err := rs.Get(ctx, id); return err == nil })

	if _, err := b.m.Refresher.RefreshNow(ctx, id); err != nil { // refreshed on the broker host, not through rs
		t.Fatalf("RefreshNow: %v", err)
	}
	fresh, err := b.m.Store.Get(ctx, id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	within("refreshed access token visible", func() bool {
		e, err := rs.Get(ctx, id)
		return err == nil && e.Credential.Access == fresh.Credential.Access
	})

	if err := b.m.Store.Disable(ctx, id, ""); err != nil {
		t.Fatalf("Disable: %v", err)
	}
	within("disabled credential gone", func() bool {
		_, err := rs.Get(ctx, id)
		return vault.ErrorCode(err) == vault.ENOTFOUND
	})
	if st := rs.Status(); st.Mode != remote.ModeStream || st.LastSync.IsZero() {
		t.Errorf("Status = %+v, want stream mode with a last sync time", st)
	}
}

// A broker without the stream (404) is long-polled for the life of the store.
func TestRemoteFallsBackToLongPollOn404(t *testing.T) {
	b := newHarness(t).start(t)
	var streams atomic.Int32
	api := b.m.API.Handler()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/snapshot/stream" {
			streams.Add(1)
			http.Error(w, `{"error":"No route: GET /v1/snapshot/stream"}`, http.StatusNotFound)
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	rs := startRemote(t, &runningBroker{m: b.m, url: front.URL, token: b.token}, remote.Options{PollWait: 2 * time.Second})

	entries, err := b.client.Upload(context.Background(), "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-poll"})
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	eventually(t, waitLong, "uploaded key visible through long-poll", func() bool {
		_, err := rs.Get(context.Background(), entries[0].ID)
		return err == nil
	})
	if st := rs.Status(); st.Mode != remote.ModePoll {
		t.Errorf("Mode = %q, want %q", st.Mode, remote.ModePoll)
	}
	if n := streams.Load(); n != 1 {
		t.Errorf("stream requested %d times, want once (unsupported for the life of the store)", n)
	}
}

// After a broker restart the store reconnects and follows the new process.
func TestRemoteSurvivesBrokerRestart(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	front := &switchable{}
	front.set(b.m.API.Handler())
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	rs := startRemote(t, &runningBroker{m: b.m, url: srv.URL, token: b.token}, remote.Options{})

	b.stop()
	srv.CloseClientConnections() // the stream breaks as when the process dies
	b2 := h.start(t)
	front.set(b2.m.API.Handler())
	entries, err := b2.client.Upload(context.Background(), "openai", vault.Credential{Type: vault.TypeAPIKey, Key: "sk-after-restart"})
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	eventually(t, 5*time.Second, "credential written after the restart visible", func() bool {
		_, err := rs.Get(context.Background(), entries[0].ID)
		return err == nil
	})
}

// Prepare refreshes a credential about to expire through the broker, once
// for any number of concurrent callers.
func TestRemotePrepareRefreshesOnce(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	rs := startRemote(t, b, remote.Options{})
	cred := vaulttest.OAuth("anthropic", "soon@example.com").Credential()
	cred.Expires = time.Now().Add(30 * time.Second).UnixMilli() // inside the 60 s window
	entries, err := b.client.Upload(context.Background(), "anthropic", cred)
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	id := entries[0].ID
	waitSynced(t, b, rs)

	release := h.up.holdTokens()
	var wg sync.WaitGroup
	got := make([]string, 20)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := rs.Prepare(context.Background(), id)
			if err != nil {
				t.Errorf("Prepare: %v", err)
				return
			}
			got[i] = e.Credential.Access
		}()
	}
	<-h.up.arrived
	release()
	waitTimeout(t, &wg, waitLong, "Prepare callers")
	if n := len(h.up.tokenCalls()); n != 1 {
		t.Errorf("token endpoint called %d times, want 1", n)
	}
	for i, a := range got {
		if a == cred.Access || a != got[0] {
			t.Errorf("caller %d got access %q, want the one fresh token %q", i, a, got[0])
		}
	}
	// A fresh token is handed out without another refresh.
	if _, err := rs.Prepare(context.Background(), id); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if n := len(h.up.tokenCalls()); n != 1 {
		t.Errorf("token endpoint called %d times after a fresh Prepare, want 1", n)
	}
}

// Local mutations are refused with the reference's texts.
func TestRemoteIsReadOnly(t *testing.T) {
	rs := remote.New(remote.Options{})
	err := rs.Upsert(context.Background(), "anthropic", vault.Credential{})
	if got := fmt.Sprint(err); got != remote.ReadOnlyUpsert {
		t.Errorf("Upsert error = %q", got)
	}
	err = rs.DeleteProvider(context.Background(), "anthropic")
	if got := fmt.Sprint(err); got != remote.ReadOnlyDelete {
		t.Errorf("DeleteProvider error = %q", got)
	}
}

// switchable is a handler whose target can be swapped (a broker restart
// behind one address).
type switchable struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *switchable) set(h http.Handler) { s.mu.Lock(); s.h = h; s.mu.Unlock() }

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// Usage reports are reused for 15 s and fetched once for concurrent callers.
func TestRemoteUsageCache(t *testing.T) {
	b := newHarness(t).start(t)
	var usage atomic.Int32
	api := b.m.API.Handler()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/usage" {
			usage.Add(1)
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	rs := startRemote(t, &runningBroker{m: b.m, url: front.URL, token: b.token}, remote.Options{Now: clock})

	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := rs.Usage(context.Background()); err != nil {
				t.Errorf("Usage: %v", err)
			}
		}()
	}
	waitTimeout(t, &wg, waitLong, "Usage callers")
	now.Add(int64(14 * time.Second))
	if _, err := rs.Usage(context.Background()); err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if n := usage.Load(); n != 1 {
		t.Errorf("GET /v1/usage sent %d times within the TTL, want 1", n)
	}
	now.Add(int64(2 * time.Second))
	if _, err := rs.Usage(context.Background()); err != nil {
		t.Fatalf("Usage: %v", err)
	}
	if n := usage.Load(); n != 2 {
		t.Errorf("GET /v1/usage sent %d times after the TTL, want 2", n)
	}
}
