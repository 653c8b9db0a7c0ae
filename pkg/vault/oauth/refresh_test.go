package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/ompgo/omp/pkg/vault"
)

// seen is one request as the fake token endpoint received it.
type seen struct {
	Method      string
	Path        string
	ContentType string
	Header      http.Header
	Raw         string
	Fields      map[string]string
}

// tokenServer fakes a provider token endpoint: it records every request and
// answers with reply.
type tokenServer struct {
	*httptest.Server
	hits atomic.Int64
	last atomic.Pointer[seen]
}

func newTokenServer(t *testing.T, reply http.HandlerFunc) *tokenServer {
	t.Helper()
	ts := &tokenServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.hits.Add(1)
		raw, _ := io.ReadAll(r.Body)
		s := &seen{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Header: r.Header.Clone(), Raw: string(raw), Fields: map[string]string{}}
		if strings.HasPrefix(s.ContentType, "application/json") {
			_ = json.Unmarshal(raw, &s.Fields)
		} else if vals, err := url.ParseQuery(string(raw)); err == nil {
			for k := range vals {
				s.Fields[k] = vals.Get(k)
			}
		}
		ts.last.Store(s)
		r.Body = io.NopCloser(strings.NewReader(string(raw))) // replies may read it again
		reply(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func jsonReply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// testRegistry points every token URL at ts and freezes the clock.
func testRegistry(ts *tokenServer, now time.Time) *Registry {
	r := NewRegistry(func(_, kind string) string {
		if kind == KindTokenURL {
			return ts.URL + "/token"
		}
		return ""
	})
	r.Now = func() time.Time { return now }
	return r
}

func jwt(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	return "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(b) + ".sig"
}

var t0 = time.UnixMilli(1_700_000_000_000)

func TestRefreshSendsProviderWireAndMapsReply(t *testing.T) {
	codexAccess := jwt(map[string]any{
		"https://api.openai.com/auth":    map[string]any{"chatgpt_account_id": "acct-codex"},
		"https://api.openai.com/profile": map[string]any{"email": " User@Example.COM "},
	})
	tests := []struct {
		name        string
		provider    string
		cred        vault.Credential
		reply       string
		contentType string
		fields      map[string]string
		headers     map[string]string
		raw         string // exact body, when the order matters
		want        vault.Credential
	}{
		{
			name:     "anthropic posts JSON with beta headers and rotates the refresh token",
			provider: "anthropic",
			cred:     vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", Expires: 1, Email: "old@x", AccountID: "old", Extra: map[string]json.RawMessage{"orgId": json.RawMessage(`"org"`)}},
			reply:    `{"access_token":"a2","refresh_token":"r2","expires_in":28800,"account":{"uuid":"acct-1","email_address":"me@example.com"}}`,
			// JSON, in the reference's key order.
			contentType: "application/json",
			raw:         `{"grant_type":"refresh_token","client_id":"9d1c250a-e61b-44d9-88ed-5944d1962f5e","refresh_token":"r1"}`,
			headers:     map[string]string{"anthropic-beta": "oauth-2025-04-20", "User-Agent": "anthropic-sdk-typescript/0.112.1 userOAuthProvider"},
			want: vault.Credential{Type: vault.TypeOAuth, Access: "a2", Refresh: "r2", Expires: t0.UnixMilli() + 28800_000 - 300_000,
				Email: "me@example.com", AccountID: "acct-1", Extra: map[string]json.RawMessage{"orgId": json.RawMessage(`"org"`)}},
		},
		{
			name:        "anthropic keeps previous identity when the reply has none",
			provider:    "anthropic",
			cred:        vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", Email: "old@x", AccountID: "old"},
			reply:       `{"access_token":"a2","refresh_token":"r2","expires_in":3600}`,
			contentType: "application/json",
			fields:      map[string]string{"grant_type": "refresh_token", "refresh_token": "r1"},
			want:        vault.Credential{Type: vault.TypeOAuth, Access: "a2", Refresh: "r2", Expires: t0.UnixMilli() + 3600_000 - 300_000, Email: "old@x", AccountID: "old"},
		},
		{
			name:        "codex posts a form and reads identity from the access token",
			provider:    "openai-codex",
			cred:        vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", Email: "old@x"},
			reply:       `{"access_token":"` + codexAccess + `","refresh_token":"r2","expires_in":864000,"id_token":"x.y.z"}`,
			contentType: "application/x-www-form-urlencoded",
			fields:      map[string]string{"grant_type": "refresh_token", "refresh_token": "r1", "client_id": "app_EMoamEEZ73f0CkXaXp7hrann"},
			want:        vault.Credential{Type: vault.TypeOAuth, Access: codexAccess, Refresh: "r2", Expires: t0.UnixMilli() + 864000_000, Email: "user@example.com", AccountID: "acct-codex"},
		},
		{
			name:        "gemini cli sends the installed-app secret, keeps projectId and the unrotated refresh token",
			provider:    "google-gemini-cli",
			cred:        vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", ProjectID: "proj-1", Email: "g@x"},
			reply:       `{"access_token":"a2","expires_in":3599,"token_type":"Bearer"}`,
			contentType: "application/x-www-form-urlencoded",
			fields: map[string]string{"grant_type": "refresh_token", "refresh_token": "r1",
				"client_id":     "681255809395-oo8ft2oprdrnp9e3aqf6av3hmdib135j.apps.googleusercontent.com",
				"client_secret": "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"},
			want: vault.Credential{Type: vault.TypeOAuth, Access: "a2", Refresh: "r1", Expires: t0.UnixMilli() + 3599_000 - 300_000, ProjectID: "proj-1", Email: "g@x"},
		},
		{
			name:        "antigravity uses its own client",
			provider:    "google-antigravity",
			cred:        vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", ProjectID: "proj-2"},
			reply:       `{"access_token":"a2","refresh_token":"r2","expires_in":3599}`,
			contentType: "application/x-www-form-urlencoded",
			fields: map[string]string{"grant_type": "refresh_token", "refresh_token": "r1",
				"client_id":     "1071006060591-tmhssin2h21lcre235vtolojh4g403ep.apps.googleusercontent.com",
				"client_secret": "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"},
			want: vault.Credential{Type: vault.TypeOAuth, Access: "a2", Refresh: "r2", Expires: t0.UnixMilli() + 3599_000 - 300_000, ProjectID: "proj-2"},
		},
		{
			name:        "gitlab counts expires_in from created_at and keeps enterpriseUrl",
			provider:    "gitlab-duo",
			cred:        vault.Credential{Type: vault.TypeOAuth, Access: "a1", Refresh: "r1", EnterpriseURL: "https://gitlab.example"},
			reply:       `{"access_token":"a2","refresh_token":"r2","expires_in":7200,"created_at":1600000000}`,
			contentType: "application/x-www-form-urlencoded",
			fields:      map[string]string{"grant_type": "refresh_token", "refresh_token": "r1", "client_id": "da4edff2e6ebd2bc3208611e2768bc1c1dd7be791dc5ff26ca34ca9ee44f7d4b"},
			want:        vault.Credential{Type: vault.TypeOAuth, Access: "a2", Refresh: "r2", Expires: 1600000000_000 + 7200_000 - 300_000, EnterpriseURL: "https://gitlab.example"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTokenServer(t, jsonReply(200, tt.reply))
			got, err := testRegistry(ts, t0).Refresh(context.Background(), tt.provider, tt.cred, ts.Client())
			if err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("credential = %+v\nwant %+v", dump(got), dump(tt.want))
			}
			s := ts.last.Load()
			if ts.hits.Load() != 1 || s.Method != http.MethodPost || s.Path != "/token" {
				t.Fatalf("requests = %d, last %s %s", ts.hits.Load(), s.Method, s.Path)
			}
			if !strings.HasPrefix(s.ContentType, tt.contentType) {
				t.Errorf("Content-Type = %q, want %q", s.ContentType, tt.contentType)
			}
			if tt.raw != "" && s.Raw != tt.raw {
				t.Errorf("body = %s\nwant %s", s.Raw, tt.raw)
			}
			for k, v := range tt.fields {
				if s.Fields[k] != v {
					t.Errorf("body field %s = %q, want %q", k, s.Fields[k], v)
				}
			}
			if _, ok := tt.fields["client_secret"]; !ok && s.Fields["client_secret"] != "" {
				t.Errorf("unexpected client_secret in body")
			}
			if s.Header.Get("Authorization") != "" {
				t.Errorf("client credentials sent in the Authorization header")
			}
			for k, v := range tt.headers {
				if s.Header.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, s.Header.Get(k), v)
				}
			}
		})
	}
}

type dumped struct {
	Access, Refresh                            string
	Expires                                    int64
	Email, AccountID, ProjectID, EnterpriseURL string
	Extra                                      int
}

func dump(c vault.Credential) dumped {
	return dumped{c.Access, c.Refresh, c.Expires, c.Email, c.AccountID, c.ProjectID, c.EnterpriseURL, len(c.Extra)}
}

func TestRefreshRejectsBeforeCallingTheEndpoint(t *testing.T) {
	tests := []struct {
		name, provider string
		cred           vault.Credential
		want           string
	}{
		{"google without projectId", "google-gemini-cli", vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r"},
			"Google Cloud token refresh failed: google-gemini-cli credentials are missing projectId; sign in again"},
		{"missing refresh token", "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: "a"},
			"Anthropic token refresh failed: anthropic credentials are missing a refresh token; sign in again"},
		{"remote sentinel as refresh token", "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: vault.RemoteRefreshSentinel},
			"Anthropic token refresh failed: anthropic credentials are missing a refresh token; sign in again"},
		{"api key", "anthropic", vault.Credential{Type: vault.TypeAPIKey, Key: "k"},
			"Anthropic token refresh failed: credential is not OAuth (type=api_key)"},
		{"unknown provider", "nope", vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r"},
			"nope token refresh failed: unknown OAuth provider: nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTokenServer(t, jsonReply(200, `{}`))
			_, err := testRegistry(ts, t0).Refresh(context.Background(), tt.provider, tt.cred, ts.Client())
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if Classify(err) != Transient {
				t.Errorf("class = %v, want transient", Classify(err))
			}
			if ts.hits.Load() != 0 {
				t.Errorf("endpoint called %d times", ts.hits.Load())
			}
		})
	}
}

func TestRefreshFailuresAreClassifiedAndWorded(t *testing.T) {
	cred := vault.Credential{Type: vault.TypeOAuth, Access: "secret-access-1", Refresh: "secret-refresh-1", ProjectID: "p"}
	tests := []struct {
		name       string
		provider   string
		reply      http.HandlerFunc
		class      Class
		msg        string // exact text; "" skips
		contains   string
		retryAfter time.Duration
	}{
		{name: "codex invalid_grant is definitive", provider: "openai-codex", reply: jsonReply(400, `{"error":"invalid_grant"}`),
			class: Definitive, msg: "OpenAI Codex token refresh failed: 400 invalid_grant"},
		{name: "anthropic expired refresh token is definitive", provider: "anthropic",
			reply: jsonReply(400, `{"error":"invalid_grant","error_description":"Refresh token expired"}`),
			class: Definitive, msg: "Anthropic token refresh failed: 400 invalid_grant: Refresh token expired"},
		{name: "401 with a nested error object is definitive", provider: "openai-codex",
			reply: jsonReply(401, `{"error":{"message":"Could not validate your token.","type":"invalid_request_error"}}`),
			class: Definitive, msg: "OpenAI Codex token refresh failed: 401 Could not validate your token."},
		{name: "403 without a body is definitive", provider: "google-gemini-cli", reply: jsonReply(403, ``),
			class: Definitive, msg: "Google Cloud token refresh failed: 403"},
		{name: "invalid_grant in a 200 reply is definitive", provider: "gitlab-duo", reply: jsonReply(200, `{"error":"invalid_grant"}`),
			class: Definitive, msg: "GitLab Duo token refresh failed: 200 invalid_grant"},
		{name: "HTML 502 is transient", provider: "anthropic",
			reply: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				_, _ = io.WriteString(w, "<html>\n  <body>Bad   Gateway</body>\n</html>")
			},
			class: Transient, msg: "Anthropic token refresh failed: 502 <html> <body>Bad Gateway</body> </html>"},
		{name: "503 with invalid_grant stays transient", provider: "anthropic", reply: jsonReply(503, `{"error":"invalid_grant"}`),
			class: Transient, msg: "Anthropic token refresh failed: 503 invalid_grant"},
		{name: "429 with Retry-After is transient", provider: "openai-codex",
			reply: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "30")
				jsonReply(429, `{"error":"rate_limited","error_description":"slow down"}`)(w, nil)
			},
			class: Transient, msg: "OpenAI Codex token refresh failed: 429 rate_limited: slow down", retryAfter: 30 * time.Second},
		{name: "404 without an OAuth code is transient", provider: "anthropic", reply: jsonReply(404, `{"message":"not found"}`),
			class: Transient, msg: "Anthropic token refresh failed: 404 not found"},
		{name: "reply without expires_in is transient", provider: "anthropic", reply: jsonReply(200, `{"access_token":"x","refresh_token":"y"}`),
			class: Transient, msg: "Anthropic token refresh failed: anthropic token response missing expires_in"},
		{name: "reply without access token is transient", provider: "anthropic", reply: jsonReply(200, `{"expires_in":5}`),
			class: Transient, contains: "missing access_token"},
		{name: "an error body echoing a token is withheld", provider: "openai-codex",
			reply: jsonReply(400, `{"error":"invalid_grant","error_description":"token secret-refresh-1 unknown"}`),
			class: Definitive, msg: "OpenAI Codex token refresh failed: 400 invalid_grant (reply body withheld: it echoed a secret of the request)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTokenServer(t, tt.reply)
			_, err := testRegistry(ts, t0).Refresh(context.Background(), tt.provider, cred, ts.Client())
			if err == nil {
				t.Fatal("Refresh succeeded")
			}
			if got := Classify(err); got != tt.class {
				t.Errorf("class = %v, want %v (err %v)", got, tt.class, err)
			}
			if tt.msg != "" && err.Error() != tt.msg {
				t.Errorf("message = %q\nwant      %q", err.Error(), tt.msg)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("message %q does not contain %q", err.Error(), tt.contains)
			}
			if strings.Contains(err.Error(), "secret-") {
				t.Errorf("message leaks a token: %q", err.Error())
			}
			var rerr *RefreshError
			if !errors.As(err, &rerr) || rerr.RetryAfter != tt.retryAfter {
				t.Errorf("RefreshError = %+v, want RetryAfter %v", rerr, tt.retryAfter)
			}
			// One request only: oauth2's auth-style probing would spend a
			// rotating refresh token twice.
			if ts.hits.Load() != 1 {
				t.Errorf("endpoint called %d times, want 1", ts.hits.Load())
			}
		})
	}
}

func TestRefreshTransportFailuresAreTransient(t *testing.T) {
	cred := vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r"}
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		ts := newTokenServer(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := testRegistry(ts, t0).Refresh(ctx, "anthropic", cred, ts.Client())
		if !errors.Is(err, context.DeadlineExceeded) || Classify(err) != Transient {
			t.Fatalf("err = %v (class %v), want a transient deadline error", err, Classify(err))
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		ts := newTokenServer(t, jsonReply(200, `{}`))
		ts.Close()
		_, err := testRegistry(ts, t0).Refresh(context.Background(), "openai-codex", cred, nil)
		if err == nil || Classify(err) != Transient || !strings.HasPrefix(err.Error(), "OpenAI Codex token refresh failed: ") {
			t.Fatalf("err = %v (class %v), want transient", err, Classify(err))
		}
	})
}

func TestRefreshErrorUnwrapsToRetrieveError(t *testing.T) {
	ts := newTokenServer(t, jsonReply(400, `{"error":"invalid_grant","error_description":"d"}`))
	_, err := testRegistry(ts, t0).Refresh(context.Background(), "anthropic", vault.Credential{Type: vault.TypeOAuth, Access: "a", Refresh: "r"}, ts.Client())
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || re.Response.StatusCode != 400 {
		t.Fatalf("errors.As RetrieveError = %+v (err %v)", re, err)
	}
	var rerr *RefreshError
	if !errors.As(err, &rerr) || rerr.Status != 400 || rerr.Code != "invalid_grant" || rerr.Description != "d" || rerr.Provider != "anthropic" {
		t.Fatalf("RefreshError = %+v", rerr)
	}
}
