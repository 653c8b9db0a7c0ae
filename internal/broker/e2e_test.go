package broker_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	brokerclient "github.com/ompgo/omp/pkg/vault/client"
)

// The end-to-end tests run the real broker wiring (broker.Main: encrypted
// SQLite vault, refresher, usage service, HTTP API) on 127.0.0.1:0 with a
// temporary vault, against httptest fakes of the providers' token and usage
// endpoints. They drive the broker only through brokerclient.Client and plain
// net/http, as a remote client would.

const unauthorizedBody = `{"error":"unauthorized"}`

func TestE2EHTTPSurface(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("healthz answers without a bearer", func(t *testing.T) {
		health, err := brokerclient.New(b.url, "", nil).Healthz(ctx)
		if err != nil {
			t.Fatalf("Healthz: %v", err)
		}
		if !health.OK || health.Version != "e2e-test" {
			t.Errorf("Healthz = %+v, want OK with version e2e-test", health)
		}
		r := b.do(t, http.MethodGet, "/v1/healthz", "", nil)
		if r.status != http.StatusOK || r.body != `{"ok":true,"version":"e2e-test"}` {
			t.Errorf("GET /v1/healthz = %d %s", r.status, r.body)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
	})

	t.Run("bad bearer is 401 with the reference body", func(t *testing.T) {
		tests := []struct{ name, method, path, authz string }{
			{"wrong token", http.MethodGet, "/v1/snapshot", "Bearer not-the-token"},
			{"no header", http.MethodGet, "/v1/snapshot", ""},
			{"other scheme", http.MethodGet, "/v1/snapshot", "Basic " + b.token},
			{"empty bearer", http.MethodGet, "/v1/snapshot", "Bearer "},
			{"stream", http.MethodGet, "/v1/snapshot/stream", "Bearer x"},
			{"usage", http.MethodGet, "/v1/usage", "Bearer x"},
			{"metrics", http.MethodGet, "/metrics", "Bearer x"},
			{"refresh", http.MethodPost, "/v1/credential/1/refresh", "Bearer x"},
			{"upload", http.MethodPost, "/v1/credential", "Bearer x"},
			{"unknown route", http.MethodGet, "/v1/nope", "Bearer x"},
		}
		for _, tt := range tests {
			r := b.do(t, tt.method, tt.path, tt.authz, nil)
			if r.status != http.StatusUnauthorized || r.body != unauthorizedBody {
				t.Errorf("%s: %s %s = %d %s, want 401 %s", tt.name, tt.method, tt.path, r.status, r.body, unauthorizedBody)
			}
		}
		_, err := brokerclient.New(b.url, "not-the-token", nil).Snapshot(ctx, nil, 0)
		var be *brokerclient.Error
		if !errors.As(err, &be) || be.Status != http.StatusUnauthorized || be.BrokerMessage() != "unauthorized" {
			t.Errorf("Client.Snapshot with a wrong token: %v, want a 401 unauthorized *brokerclient.Error", err)
		}
		// Control: the scheme is case-insensitive and the right token passes.
		if r := b.do(t, http.MethodGet, "/v1/snapshot", "bearer "+b.token, nil); r.status != http.StatusOK {
			t.Errorf("lower-case scheme with the right token = %d %s", r.status, r.body)
		}
	})

	t.Run("oversized body is 413", func(t *testing.T) {
		// Just over the 1 MiB limit, so the server drains the rest and the
		// client reliably reads the answer.
		body := `{"provider":"openai","credential":{"type":"api_key","key":"` + strings.Repeat("k", 1<<20) + `"}}`
		r := b.do(t, http.MethodPost, "/v1/credential", b.bearer(), strings.NewReader(body))
		if r.status != http.StatusRequestEntityTooLarge || r.body != `{"error":"request body too large"}` {
			t.Errorf("POST /v1/credential (%d bytes) = %d %.200s", len(body), r.status, r.body)
		}
		snap, err := b.client.Snapshot(ctx, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(snap.Snapshot.Credentials); n != 0 {
			t.Errorf("snapshot after a refused upload has %d credentials", n)
		}
	})

	t.Run("unknown route with the bearer is 404", func(t *testing.T) {
		r := b.do(t, http.MethodGet, "/v1/nope", b.bearer(), nil)
		if r.status != http.StatusNotFound || r.body != `{"error":"No route: GET /v1/nope"}` {
			t.Errorf("GET /v1/nope = %d %s", r.status, r.body)
		}
	})

	t.Run("raw stream starts with a snapshot frame and sends keepalives", func(t *testing.T) {
		sctx, scancel := context.WithTimeout(ctx, waitLong)
		defer scancel()
		req, _ := http.NewRequestWithContext(sctx, http.MethodGet, b.url+"/v1/snapshot/stream", nil)
		req.Header.Set("Authorization", b.bearer())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		for k, want := range map[string]string{"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		rd := bufio.NewReader(resp.Body)
		line := func() string {
			s, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("read stream: %v", err)
			}
			return s
		}
		if got := line(); got != "event: snapshot\n" {
			t.Fatalf("first line %q", got)
		}
		if got := line(); !strings.HasPrefix(got, `data: {"kind":"snapshot","generation":`) || !strings.HasSuffix(got, "}\n") {
			t.Fatalf("snapshot data line %q", got)
		}
		if got := line(); got != "\n" {
			t.Fatalf("frame terminator %q", got)
		}
		start := time.Now()
		if got := line(); got != ": keepalive\n" {
			t.Fatalf("after the snapshot: %q, want the keepalive comment", got)
		}
		// The configured keepalive, not the 20 s default (a bound a loaded
		// machine cannot reach otherwise).
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("keepalive after %v, configured %v", d, testKeepAlive)
		}
	})
}

func TestE2EBearerTokenCreationIsLogged(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	b.stop()
	h.start(t).stop() // the restart loads the existing token
	const line = `level=INFO msg="auth-broker bearer token created" path=`
	if n := strings.Count(h.logs.String(), line); n != 1 {
		t.Errorf("%d %q lines over a first start and a restart, want 1:\n%s", n, line, h.logs)
	}
	assertNoSecrets(t, "logs", h.logs.String(), []string{b.token})
}
