package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/api"
	"github.com/ompgo/omp/pkg/vault/client"
	"github.com/ompgo/omp/pkg/vault/server"
)

// withClientTokens serves the vault's named client tokens.
func withClientTokens(s *server.Server) { s.ClientTokens = s.Store.(server.TokenSource) }

// createToken stores a fresh token named name with scope through store
// (the broker's own store or a second one, as another process would) and
// returns the token text.
func createToken(t testing.TB, store vault.TokenStore, name, scope string) string {
	t.Helper()
	tok, digest := vault.NewClientToken()
	if err := store.CreateToken(context.Background(), vault.ClientToken{Name: name, Scope: scope, Digest: digest}); err != nil {
		t.Fatal(err)
	}
	return tok
}

// status sends method path with bearer tok and returns the status and the
// body (not read for a 200 stream: the stream is closed after its headers).
func (e *env) status(method, path, tok string) (int, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequestWithContext(ctx, method, e.ts.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTokenScopesEveryRoute walks every route the broker registers and
// sends it with each kind of bearer: the shared bearer and an admin token
// pass the auth layer everywhere; a client token passes exactly the client
// routes and gets 403 `token <name> may not <action>` elsewhere;
// an unknown and a revoked token get the 401. A route added later without a
// decision here fails this test.
func TestTokenScopesEveryRoute(t *testing.T) {
	e := newEnv(t, withClientTokens)
	admin := createToken(t, e.store, "ops", vault.ScopeAdmin)
	client := createToken(t, e.store, "gw-a", vault.ScopeClient)
	revoked := createToken(t, e.store, "old", vault.ScopeClient)
	if err := e.store.RevokeToken(context.Background(), "old"); err != nil {
		t.Fatal(err)
	}

	// What a client token may do, and the
	// 403 text of everything else. Routes not present in this build are
	// skipped by the walk.
	clientOK := map[string]bool{
		"GET /v1/snapshot":                        true,
		"GET /v1/snapshot/stream":                 true,
		"GET /v1/usage":                           true,
		"GET /v1/usage/history":                   true,
		"POST /v1/credential/{id:[0-9]+}/refresh": true,
		"POST /v1/credential/{id:[0-9]+}/block":   true,
		"POST /v1/usage/observed":                 true,
	}
	forbidden := map[string]string{
		"POST /v1/credential":                      "token gw-a may not upload credentials",
		"POST /v1/credential/{id:[0-9]+}/disable":  "token gw-a may not disable credentials",
		"DELETE /v1/credential/{id:[0-9]+}/blocks": "token gw-a may not lift blocks",
		"POST /v1/usage/stale":                     "token gw-a may not expire usage reports",
		"GET /v1/usage/clients":                    "token gw-a may not read client usage",
		"GET /v1/credentials/disabled":             "token gw-a may not list disabled credentials",
		"GET /metrics":                             "token gw-a may not read metrics",
	}
	public := map[string]bool{"GET /v1/healthz": true, "GET /usage": true}

	var routes [][2]string
	err := chi.Walk(e.srv.Handler().(chi.Routes), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routes = append(routes, [2]string{method, pattern})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 10 {
		t.Fatalf("walked only %d routes: %v", len(routes), routes)
	}
	rec := e.upsert("anthropic", oauthCred("a@example.com", e.clk.Now().UnixMilli()+3_600_000))
	for _, rt := range routes {
		method, pattern := rt[0], rt[1]
		key := method + " " + pattern
		path := strings.ReplaceAll(pattern, "{id:[0-9]+}", itoa(rec.ID))
		t.Run(key, func(t *testing.T) {
			if public[key] {
				return
			}
			want403, isAdmin := forbidden[key]
			if !clientOK[key] && !isAdmin {
				t.Fatalf("route %s has no scope decision in this test", key)
			}
			for _, tok := range []string{"not-a-token", revoked, client[:len(client)-1]} {
				if st, body := e.status(method, path, tok); st != http.StatusUnauthorized || body != `{"error":"unauthorized"}` {
					t.Fatalf("unknown/revoked token: %d %s", st, body)
				}
			}
			st, body := e.status(method, path, client)
			switch {
			case clientOK[key] && (st == http.StatusUnauthorized || st == http.StatusForbidden):
				t.Fatalf("client token refused on a client route: %d %s", st, body)
			case isAdmin && (st != http.StatusForbidden || body != `{"error":"`+want403+`"}`):
				t.Fatalf("client token on an admin route: %d %s, want 403 %q", st, body, want403)
			}
			// Admin routes may change state (disable): the client ran first.
			for _, tok := range []string{admin, testToken} {
				if st, body := e.status(method, path, tok); st == http.StatusUnauthorized || st == http.StatusForbidden {
					t.Fatalf("admin bearer refused: %d %s", st, body)
				}
			}
		})
	}
	// Unknown routes stay 404 for a client token (not 403: nothing to guard).
	if st, body := e.status(http.MethodGet, "/v1/nope", client); st != http.StatusNotFound || body != `{"error":"No route: GET /v1/nope"}` {
		t.Fatalf("unknown route with a client token: %d %s", st, body)
	}
}

// TestTokenCreatedElsewhereWorksAtOnce: a token created by another process
// (the CLI) is accepted by the running broker on its first request.
func TestTokenCreatedElsewhereWorksAtOnce(t *testing.T) {
	e := newEnv(t, withClientTokens)
	tok := createToken(t, e.openSecondStore(), "gw-new", vault.ScopeClient)
	if st, body := e.status(http.MethodGet, "/v1/snapshot", tok); st != http.StatusOK {
		t.Fatalf("fresh token: %d %s", st, body)
	}
}

// TestRevokeEndsStreams: a client token's open SSE stream and parked
// long-poll end after a revoke made by another process (real listener, real
// vault file); a stream of another token and of the shared bearer stay
// open; the revoked token is refused afterwards. The promise is one token
// poll (250 ms, well within 1 s; the time is logged); the test allows 10 s
// so a loaded machine cannot fail it: unrevoked, the stream would never end
// and the long-poll would wait its full 30 s.
func TestRevokeEndsStreams(t *testing.T) {
	e := newEnv(t, withClientTokens)
	other := e.openSecondStore()
	gone := createToken(t, other, "gw-gone", vault.ScopeClient)
	kept := createToken(t, other, "gw-kept", vault.ScopeClient)

	open := func(tok string) (io.ReadCloser, *bufio.Reader) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/v1/snapshot/stream", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := e.ts.Client().Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %v %v", err, resp)
		}
		t.Cleanup(func() { resp.Body.Close() })
		br := bufio.NewReader(resp.Body)
		for { // the first frame (snapshot) has arrived when its blank line has
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "\n" {
				break
			}
		}
		return resp.Body, br
	}
	_, goneStream := open(gone)
	_, keptStream := open(kept)
	_, sharedStream := open(testToken)

	gen, err := e.store.Generation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pollDone := make(chan int, 1)
	parked := e.parkedLongPolls()
	go func() {
		req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/v1/snapshot?wait=30000", nil)
		req.Header.Set("Authorization", "Bearer "+gone)
		req.Header.Set("If-None-Match", `"`+itoa(gen)+`"`)
		resp, err := e.ts.Client().Do(req)
		if err != nil {
			pollDone <- -1
			return
		}
		resp.Body.Close()
		pollDone <- resp.StatusCode
	}()
	e.awaitParked(t, parked)

	streamDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, goneStream)
		streamDone <- err
	}()
	start := time.Now()
	if err := other.RevokeToken(context.Background(), "gw-gone"); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second) // a hang guard, far below the long-poll's 30 s
	for range 2 {
		select {
		case <-streamDone:
		case <-pollDone:
		case <-deadline:
			t.Fatalf("revoked token's stream or long-poll still open after %v", time.Since(start))
		}
	}
	t.Logf("revoked token's stream and long-poll ended %v after the revoke", time.Since(start))

	if st, _ := e.status(http.MethodGet, "/v1/snapshot", gone); st != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d", st)
	}
	// The other streams still deliver: a credential change reaches both.
	e.upsert("anthropic", oauthCred("late@example.com", e.clk.Now().UnixMilli()+3_600_000))
	for name, br := range map[string]*bufio.Reader{"gw-kept": keptStream, "shared": sharedStream} {
		got := make(chan error, 1)
		go func() {
			for {
				line, err := br.ReadString('\n')
				if err != nil || strings.Contains(line, "late@example.com") {
					got <- err
					return
				}
			}
		}()
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("%s stream ended: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s stream did not see the change", name)
		}
	}
}

// TestTokenWritesLoggedByNameNeverByToken: every write is logged with the
// token's name; no bearer (shared, admin, client, wrong) appears in the logs.
func TestTokenWritesLoggedByNameNeverByToken(t *testing.T) {
	e := newEnv(t, withClientTokens)
	admin := createToken(t, e.store, "ops", vault.ScopeAdmin)
	client := createToken(t, e.store, "gw-a", vault.ScopeClient)
	rec := e.upsert("anthropic", oauthCred("a@example.com", e.clk.Now().UnixMilli()+3_600_000))
	wrong := vault.ClientTokenPrefix + "wrong-token-value"

	e.status(http.MethodPost, "/v1/credential/"+itoa(rec.ID)+"/refresh", client)
	e.status(http.MethodPost, "/v1/credential/"+itoa(rec.ID)+"/disable", client) // 403
	e.status(http.MethodPost, "/v1/credential/"+itoa(rec.ID)+"/disable", admin)
	e.status(http.MethodPost, "/v1/credential", testToken)
	e.status(http.MethodPost, "/v1/credential", wrong)
	e.status(http.MethodGet, "/v1/snapshot", client)

	logs := e.logs.String()
	for _, want := range []string{
		`msg="auth-broker write" method=POST path=/v1/credential/` + itoa(rec.ID) + `/refresh status=200 token=gw-a`,
		`msg="auth-broker request forbidden" method=POST path=/v1/credential/` + itoa(rec.ID) + `/disable token=gw-a`,
		`msg="auth-broker write" method=POST path=/v1/credential/` + itoa(rec.ID) + `/disable status=200 token=ops`,
		`msg="auth-broker write" method=POST path=/v1/credential status=400 token=shared`,
		`msg="auth-broker request unauthorized" method=POST path=/v1/credential`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	for _, secret := range []string{admin, client, testToken, wrong, admin[len(vault.ClientTokenPrefix):]} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a bearer reached the logs:\n%s", logs)
		}
	}
}

// TestObservedUsageAttributedToClientToken: observed usage posted with a
// client token is recorded under the token's name whatever installId the
// body claims (also an empty one); the shared bearer and an admin token
// keep the claimed id.
func TestObservedUsageAttributedToClientToken(t *testing.T) {
	e := newEnv(t, withClientTokens)
	ctx := context.Background()
	clientTok := createToken(t, e.store, "gw-a", vault.ScopeClient)
	admin := createToken(t, e.store, "ops", vault.ScopeAdmin)
	now := e.clk.Now().UnixMilli()
	entry := []api.ObservedUsageEntry{{At: now, Provider: "anthropic", Model: "m", Requests: 1, InputTokens: 10}}
	post := func(tok, claimed string) {
		t.Helper()
		c := client.New(e.ts.URL, tok, e.ts.Client())
		if err := c.PostObserved(ctx, api.ClientUsageReport{InstallID: claimed, Entries: entry}); err != nil {
			t.Fatalf("post as %q: %v", claimed, err)
		}
	}
	post(clientTok, "gw-b")     // forged: another member's id
	post(clientTok, "")         // empty: still attributed
	post(admin, "ops-tooling")  // admin: as claimed
	post(testToken, "ref-inst") // shared bearer: as claimed (reference clients)
	got, err := e.client.UsageClients(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, c := range got.Clients {
		for _, p := range c.Providers {
			ids[c.InstallID] += p.Requests
		}
	}
	if len(ids) != 3 || ids["gw-a"] != 2 || ids["ops-tooling"] != 1 || ids["ref-inst"] != 1 {
		t.Fatalf("clients by install id %v, want gw-a:2 ops-tooling:1 ref-inst:1 (no gw-b)", ids)
	}
}

// BenchmarkAuthSnapshot is GET /v1/snapshot through the whole handler with
// the shared bearer and with a client token among 100 (lookup among 101
// digests, principal in the context, request tracked for revocation).
func BenchmarkAuthSnapshot(b *testing.B) {
	e := newEnv(b, withClientTokens)
	for i := range 10 {
		e.upsert("anthropic", oauthCred("u"+itoa(int64(i))+"@example.com", e.clk.Now().UnixMilli()+3_600_000))
	}
	var client string
	for i := range 100 {
		client = createToken(b, e.store, "gw-"+itoa(int64(i)), vault.ScopeClient)
	}
	h := e.srv.Handler()
	if rec := httptestRecorder(h, http.MethodGet, "/v1/snapshot", "Bearer "+client); rec.Code != http.StatusOK {
		b.Fatalf("client token: %d", rec.Code)
	}
	for name, tok := range map[string]string{"shared": testToken, "client-of-100": client} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if rec := httptestRecorder(h, http.MethodGet, "/v1/snapshot", "Bearer "+tok); rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
