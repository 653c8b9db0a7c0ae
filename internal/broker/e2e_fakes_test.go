package broker_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Public client ids of the providers: the fakes check
// that the broker's token requests carry them.
const (
	anthropicClientID = "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
	codexClientID     = "app_EMoamEEZ73f0CkXaXp7hrann"

	anthropicTokenPath = "/anthropic/v1/oauth/token"
	codexTokenPath     = "/openai/oauth/token"
	anthropicUsagePath = "/anthropic/api/oauth/usage"
	codexUsagePath     = "/backend-api/wham/usage"
	antigravityPath    = "/antigravity/v1internal:fetchAvailableModels"

	anthropicUsageBeta = "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14,redact-thinking-2026-02-12,context-management-2025-06-27,prompt-caching-scope-2026-01-05,mid-conversation-system-2026-04-07,advanced-tool-use-2025-11-20,effort-2025-11-24,extended-cache-ttl-2025-04-11"

	anthropicTokenTTL = 28800  // seconds, what claude.ai answers
	codexTokenTTL     = 864000 // seconds (10 days)
)

// tokenCall is one refresh-token request a fake token endpoint received.
type tokenCall struct {
	Provider string
	Refresh  string // the refresh_token the broker sent
	OK       bool   // answered 200
}

// upstream fakes the providers' token and usage endpoints on one
// httptest.Server, reproducing their wire shapes (JSON token body for
// Anthropic, form body for OpenAI; the providers' usage payloads).
type upstream struct {
	srv *httptest.Server

	mu       sync.Mutex
	calls    []tokenCall
	dead     map[string]bool // refresh tokens answered 400 invalid_grant
	hold     chan struct{}   // non-nil: token requests wait until it is closed
	arrived  chan struct{}   // one value per token request received
	issued   []string        // every access/refresh token handed out
	n        int
	usage    map[string]int // usage path → calls
	problems []string       // wire mismatches seen by the handlers
	// spent holds every refresh token answered 200: the reply replaced it.
	// Presenting one again is what reuse detection punishes (RFC 9700
	// §4.14.2); reused counts those requests.
	spent  map[string]bool
	reused int
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{dead: map[string]bool{}, arrived: make(chan struct{}, 256), usage: map[string]int{}, spent: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+anthropicTokenPath, u.anthropicToken)
	mux.HandleFunc("POST "+codexTokenPath, u.codexToken)
	mux.HandleFunc("GET "+anthropicUsagePath, u.anthropicUsage)
	mux.HandleFunc("GET "+codexUsagePath, u.codexUsage)
	mux.HandleFunc("POST "+antigravityPath, u.antigravityUsage)
	// The quota summary is not offered (an older Cloud Code deployment): the
	// probe falls back to fetchAvailableModels.
	mux.HandleFunc("POST /antigravity/v1internal:retrieveUserQuotaSummary", http.NotFound)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		u.problem("unexpected upstream request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	u.srv = httptest.NewServer(mux)
	t.Cleanup(u.srv.Close)
	t.Cleanup(func() {
		for _, p := range u.wireProblems() {
			t.Errorf("upstream: %s", p)
		}
	})
	return u
}

// urls is the broker's Config.URLs: every upstream of the two providers
// points at the fake; anything else stays "" (no other provider is stored).
func (u *upstream) urls(provider, kind string) string {
	switch provider + " " + kind {
	case "anthropic tokenUrl":
		return u.srv.URL + anthropicTokenPath
	case "openai-codex tokenUrl":
		return u.srv.URL + codexTokenPath
	case "anthropic usageUrl":
		return u.srv.URL + "/anthropic" // AnthropicBase appends /api/oauth
	case "openai-codex usageUrl":
		return u.srv.URL + "/backend-api"
	case "google-antigravity usageUrl":
		return u.srv.URL + "/antigravity"
	}
	return ""
}

func (u *upstream) problem(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
}

func (u *upstream) wireProblems() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.problems...)
}

// holdTokens makes token requests wait until the returned release is called.
func (u *upstream) holdTokens() (release func()) {
	ch := make(chan struct{})
	u.mu.Lock()
	u.hold = ch
	u.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			u.mu.Lock()
			u.hold = nil
			u.mu.Unlock()
			close(ch)
		})
	}
}

func (u *upstream) kill(refresh string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.dead[refresh] = true
}

// tokenCalls returns a copy of every token request so far.
func (u *upstream) tokenCalls() []tokenCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]tokenCall(nil), u.calls...)
}

// seen counts the token requests that carried refresh.
func (u *upstream) seen(refresh string) int {
	n := 0
	for _, c := range u.tokenCalls() {
		if c.Refresh == refresh {
			n++
		}
	}
	return n
}

// reuses counts the token requests that presented a refresh token an
// earlier reply had already replaced.
func (u *upstream) reuses() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reused
}

// secrets returns every token the fake issued.
func (u *upstream) secrets() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.issued...)
}

func (u *upstream) usageCalls(path string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.usage[path]
}

// begin records a token request and waits while tokens are held. It
// reports whether the refresh token is dead, and the request's sequence.
func (u *upstream) begin(r *http.Request, provider, refresh string) (dead bool, n int, ok bool) {
	select {
	case u.arrived <- struct{}{}:
	default:
	}
	u.mu.Lock()
	hold := u.hold
	u.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return false, 0, false
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	dead = u.dead[refresh]
	if u.spent[refresh] {
		u.reused++
	}
	if !dead {
		u.spent[refresh] = true
	}
	u.calls = append(u.calls, tokenCall{Provider: provider, Refresh: refresh, OK: !dead})
	u.n++
	return dead, u.n, true
}

func (u *upstream) issue(tokens ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.issued = append(u.issued, tokens...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// anthropicToken answers the Claude refresh grant: a JSON body
// {grant_type, client_id, refresh_token} and the anthropic-beta header; the
// reply rotates both tokens and names the account.
func (u *upstream) anthropicToken(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		u.problem("anthropic token request content type %q", ct)
	}
	if got := r.Header.Get("anthropic-beta"); got != "oauth-2025-04-20" {
		u.problem("anthropic token request anthropic-beta %q", got)
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil {
		u.problem("anthropic token request body: %v", err)
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	if body["grant_type"] != "refresh_token" || body["client_id"] != anthropicClientID {
		u.problem("anthropic token request grant_type=%q client_id=%q", body["grant_type"], body["client_id"])
	}
	dead, n, ok := u.begin(r, "anthropic", body["refresh_token"])
	if !ok {
		return
	}
	if dead {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "Refresh token not found or invalid"})
		return
	}
	access := fmt.Sprintf("sk-ant-oat01-e2e-access-%03d-%s", n, strings.Repeat("A", 24))
	refresh := fmt.Sprintf("sk-ant-ort01-e2e-refresh-%03d-%s", n, strings.Repeat("R", 24))
	u.issue(access, refresh)
	writeJSON(w, 200, map[string]any{
		"token_type": "Bearer", "access_token": access, "refresh_token": refresh,
		"expires_in": anthropicTokenTTL, "scope": "user:inference user:profile",
		"organization": map[string]any{"uuid": "org-e2e", "name": "E2E Org"},
		"account":      map[string]any{"uuid": "acct-anthropic-e2e", "email_address": "alice@example.com"},
	})
}

// codexToken answers the OpenAI refresh grant: a form body; the reply holds
// JWT access and id tokens whose claims carry the ChatGPT account.
func (u *upstream) codexToken(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		u.problem("codex token request content type %q", ct)
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		u.problem("codex token request body: %v", err)
	}
	if form.Get("grant_type") != "refresh_token" || form.Get("client_id") != codexClientID {
		u.problem("codex token request grant_type=%q client_id=%q", form.Get("grant_type"), form.Get("client_id"))
	}
	dead, n, ok := u.begin(r, "openai-codex", form.Get("refresh_token"))
	if !ok {
		return
	}
	if dead {
		writeJSON(w, 400, map[string]any{"error": map[string]string{"code": "refresh_token_reused", "message": "already used"}})
		return
	}
	claims := map[string]any{
		"https://api.openai.com/auth":    map[string]any{"chatgpt_account_id": "acct-codex-e2e", "chatgpt_plan_type": "pro"},
		"https://api.openai.com/profile": map[string]any{"email": "carol@example.com"},
		"nonce":                          n,
	}
	access, idToken := fakeJWT(claims, "access"), fakeJWT(claims, "id")
	refresh := fmt.Sprintf("rt_e2e-codex-refresh-%03d-%s", n, strings.Repeat("C", 24))
	u.issue(access, refresh)
	writeJSON(w, 200, map[string]any{
		"id_token": idToken, "access_token": access, "refresh_token": refresh,
		"expires_in": codexTokenTTL, "token_type": "Bearer",
	})
}

// fakeJWT builds an unsigned three-part token with claims.
func fakeJWT(claims map[string]any, sig string) string {
	enc := base64.RawURLEncoding
	payload, _ := json.Marshal(claims)
	return enc.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc.EncodeToString(payload) + "." +
		enc.EncodeToString([]byte("e2e-signature-"+sig))
}

const codexUsagePayload = `{
  "plan_type": "pro",
  "rate_limit": {
    "allowed": true, "limit_reached": false,
    "primary_window": {"used_percent": 42.5, "limit_window_seconds": 18000, "reset_after_seconds": 600},
    "secondary_window": {"used_percent": 95, "limit_window_seconds": 604800, "reset_at": 1893456000}
  },
  "rate_limit_reset_credits": {"available_count": 2}
}`

const anthropicUsagePayload = `{
  "five_hour": {"utilization": 35, "resets_at": "2030-01-01T05:00:00Z"},
  "seven_day": {"utilization": 91.5, "resets_at": "2030-01-07T00:00:00+00:00"},
  "seven_day_opus": null,
  "seven_day_sonnet": {"utilization": 100, "resets_at": null},
  "account": {"uuid": "acct-anthropic-usage", "email": "dave@example.com"}
}`

// codexUsage serves GET /backend-api/wham/usage.
func (u *upstream) codexUsage(w http.ResponseWriter, r *http.Request) {
	u.countUsage(r.URL.Path)
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer codex-e2e-access-") {
		u.problem("codex usage Authorization %q", redactHeader(r.Header.Get("Authorization")))
	}
	if got := r.Header.Get("User-Agent"); got != "OpenCode-Status-Plugin/1.0" {
		u.problem("codex usage User-Agent %q", got)
	}
	if got := r.Header.Get("ChatGPT-Account-Id"); got != "acct-codex-e2e" {
		u.problem("codex usage ChatGPT-Account-Id %q", got)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, codexUsagePayload)
}

// anthropicUsage serves GET /api/oauth/usage.
func (u *upstream) anthropicUsage(w http.ResponseWriter, r *http.Request) {
	switch r.URL.RawQuery {
	case "":
		u.countUsage(r.URL.Path)
	case "cedar_ember=1&skip_spend=1": // saved-reset discovery
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, anthropicCedarPayload)
		return
	default:
		u.problem("anthropic usage query %q", r.URL.RawQuery)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer sk-ant-oat01-usage-") {
		u.problem("anthropic usage authorization %q", redactHeader(r.Header.Get("Authorization")))
	}
	if got := r.Header.Get("anthropic-beta"); got != anthropicUsageBeta {
		u.problem("anthropic usage anthropic-beta %q", got)
	}
	if got := r.Header.Get("User-Agent"); got != "claude-cli/2.1.280 (external, cli)" {
		u.problem("anthropic usage user-agent %q", got)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, anthropicUsagePayload)
}

// anthropicCedarPayload answers the Claude saved-reset discovery: one
// banked grant of two resets, selected and usable now.
const anthropicCedarPayload = `{"cedar_ember":{"eligible":true,"next_grant_id":"grant-1","grants":[{"id":"grant-1",
  "label":"Saved reset","resets_left":2,"ends_at":"2030-02-01T00:00:00Z","clears":["five_hour"],"blocking":[],
  "usable_now":true,"percent_used":{"five_hour":35}}]}}`

// antigravityUsagePayload: the Claude counter has headroom, the Gemini
// counter is used up.
const antigravityUsagePayload = `{"models":{
  "claude-sonnet-4-5":{"modelProvider":"MODEL_PROVIDER_ANTHROPIC","quotaInfo":{"remainingFraction":0.7,"resetTime":"2030-01-02T12:00:00Z"}},
  "gemini-3-pro":{"modelProvider":"MODEL_PROVIDER_GOOGLE","quotaInfo":{"remainingFraction":0,"resetTime":"2030-01-02T12:00:00Z"}}}}`

// antigravityUsage serves POST /v1internal:fetchAvailableModels.
func (u *upstream) antigravityUsage(w http.ResponseWriter, r *http.Request) {
	u.countUsage(r.URL.Path)
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer antigravity-e2e-access") {
		u.problem("antigravity usage Authorization %q", redactHeader(r.Header.Get("Authorization")))
	}
	body, _ := io.ReadAll(r.Body)
	if string(body) != `{"project":"proj-antigravity-e2e"}` {
		u.problem("antigravity usage body %q", body)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, antigravityUsagePayload)
}

func (u *upstream) countUsage(path string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.usage[path]++
}

// redactHeader keeps the scheme of an Authorization value for messages.
func redactHeader(v string) string {
	if i := strings.IndexByte(v, ' '); i >= 0 {
		return v[:i] + " …"
	}
	return "…"
}
