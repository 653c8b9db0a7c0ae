package broker_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

// clientBearer creates a client-scope token on b's vault and returns its
// Authorization header.
func clientBearer(t *testing.T, b *runningBroker) string {
	t.Helper()
	tok, digest := vault.NewClientToken()
	err := b.m.Store.CreateToken(context.Background(), vault.ClientToken{Name: "gw-e2e", Scope: vault.ScopeClient, Digest: digest, CreatedAt: time.Now()})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	return "Bearer " + tok
}

// uploadMCP stores an MCP OAuth row refreshing at tokenURL and returns its id.
func uploadMCP(t *testing.T, b *runningBroker, refresh, secret, tokenURL string) int64 {
	t.Helper()
	cred := map[string]any{"type": "oauth", "refresh": refresh, "access": "mcp-at-0", "expires": time.Now().Add(time.Hour).UnixMilli(),
		"tokenUrl": tokenURL, "clientId": "cid", "clientSecret": secret}
	body, _ := json.Marshal(map[string]any{"provider": "mcp_oauth_e2esec", "credential": cred})
	r := b.do(t, http.MethodPost, "/v1/credential", b.bearer(), strings.NewReader(string(body)))
	if r.status != http.StatusOK {
		t.Fatalf("upload = %d %s", r.status, r.body)
	}
	var out struct {
		Entries []struct {
			ID int64 `json:"id"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.body), &out); err != nil || len(out.Entries) != 1 {
		t.Fatalf("upload reply %s: %v", r.body, err)
	}
	return out.Entries[0].ID
}

// secretForms are the forms of secret an echoing endpoint shows it in.
func secretForms(secret string) []string {
	j, _ := json.Marshal(secret)
	return []string{secret, url.QueryEscape(secret), url.PathEscape(secret), strings.Trim(string(j), `"`)}
}

func assertNoSecretForm(t *testing.T, where, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		for _, f := range secretForms(s) {
			if strings.Contains(text, f) {
				t.Errorf("%s holds %q, a form of a secret:\n%s", where, f, text)
			}
		}
	}
}

func refreshPath(id int64) string { return "/v1/credential/" + strconv.FormatInt(id, 10) + "/refresh" }

// A client token asking for refreshes in a loop makes one token request.
func TestE2EClientTokenCannotForceARefreshStorm(t *testing.T) {
	h := newHarness(t)
	h.minForced = 0 // the broker's default minimum
	b := h.start(t)
	var hits atomic.Int64
	tokenEP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "mcp-at-" + strconv.FormatInt(n, 10), "refresh_token": "mcp-rt-" + strconv.FormatInt(n, 10), "expires_in": 3600})
	}))
	t.Cleanup(tokenEP.Close)
	id := uploadMCP(t, b, "mcp-rt-0", "mcp-secret-0", tokenEP.URL+"/token")
	client := clientBearer(t, b)

	for i := range 50 {
		r := b.do(t, http.MethodPost, refreshPath(id), client, nil)
		if r.status != http.StatusOK || !strings.Contains(r.body, `"access":"mcp-at-1"`) {
			t.Fatalf("forced refresh %d = %d %s, want 200 with the credential of the first refresh", i, r.status, r.body)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("50 forced refreshes by a client token reached the token endpoint %d times, want 1", n)
	}
}

// A token endpoint echoing its request leaks no secret to the client, the
// log or the stored disable cause.
func TestE2EEchoingTokenEndpointLeaksNoSecret(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	const refresh, secret = "mcp/rt+1&a=b", "mcp/client+secret=1"
	tokenEP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		j, _ := json.Marshal(string(body))
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "invalid_grant: could not use "+string(body)+" ("+string(j)+")")
	}))
	t.Cleanup(tokenEP.Close)
	id := uploadMCP(t, b, refresh, secret, tokenEP.URL+"/token")

	r := b.do(t, http.MethodPost, refreshPath(id), clientBearer(t, b), nil)
	if r.status != http.StatusInternalServerError || !strings.Contains(r.body, "400") {
		t.Fatalf("refresh = %d %s, want a 500 naming the provider's 400", r.status, r.body)
	}
	assertNoSecretForm(t, "client reply", r.body, refresh, secret)
	rec, err := b.m.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Active() {
		t.Fatalf("row still active after invalid_grant")
	}
	assertNoSecretForm(t, "disabled cause", rec.DisabledCause, refresh, secret)
	dis := b.do(t, http.MethodGet, "/v1/credentials/disabled", b.bearer(), nil)
	assertNoSecretForm(t, "disabled list", dis.body, refresh, secret)
	assertNoSecretForm(t, "broker log", h.logs.String(), refresh, secret)
}

// A token endpoint redirecting elsewhere gets the secrets sent nowhere else,
// and the credential survives the misconfiguration.
func TestE2ERedirectingTokenEndpointIsNotFollowed(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	var stolen atomic.Int64
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"stolen","refresh_token":"stolen","expires_in":3600}`)
	}))
	t.Cleanup(thief.Close)
	tokenEP := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.URL+"/collect?x=1", http.StatusPermanentRedirect)
	}))
	t.Cleanup(tokenEP.Close)
	id := uploadMCP(t, b, "mcp-rt-redirect", "mcp-secret-redirect", tokenEP.URL+"/token")

	r := b.do(t, http.MethodPost, refreshPath(id), clientBearer(t, b), nil)
	if stolen.Load() != 0 {
		t.Fatalf("the redirect target received %d token request(s)", stolen.Load())
	}
	if r.status != http.StatusInternalServerError || !strings.Contains(r.body, "308 redirect to "+thief.URL) || strings.Contains(r.body, "collect") {
		t.Fatalf("refresh = %d %s, want a 500 naming the 308 and the target origin only", r.status, r.body)
	}
	rec, err := b.m.Store.Get(context.Background(), id)
	if err != nil || !rec.Active() || rec.Credential.Refresh != "mcp-rt-redirect" {
		t.Fatalf("row after a redirect: %+v, %v; want it active and unchanged", rec, err)
	}
}

// Refreshing an API key is the client's mistake: a 400 saying why.
func TestE2ERefreshingAnAPIKeyIsAClientError(t *testing.T) {
	h := newHarness(t)
	b := h.start(t)
	up := b.do(t, http.MethodPost, "/v1/credential", b.bearer(), strings.NewReader(`{"provider":"openrouter","credential":{"type":"api_key","key":"sk-or-e2e"}}`))
	if up.status != http.StatusOK {
		t.Fatalf("upload = %d %s", up.status, up.body)
	}
	r := b.do(t, http.MethodPost, refreshPath(1), clientBearer(t, b), nil)
	want := `{"error":"Credential 1 is not OAuth (provider=openrouter, type=api_key): API-key credentials have nothing to refresh"}`
	if r.status != http.StatusBadRequest || r.body != want {
		t.Fatalf("refresh of an API key = %d %s, want 400 %s", r.status, r.body, want)
	}
}
