package usage

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ompgo/omp/pkg/vault"
)

const anthropicPayload = `{
  "five_hour": {"utilization": 35, "resets_at": "2026-01-02T05:00:00.123Z"},
  "seven_day": {"utilization": 91.5, "resets_at": "2026-01-08T00:00:00+00:00"},
  "seven_day_opus": null,
  "seven_day_sonnet": {"utilization": 100, "resets_at": null},
  "account": {"uuid": "acc-uuid", "email": "claude@x.io"}
}`

func anthropicCred() vault.Credential {
	return vault.Credential{Type: vault.TypeOAuth, Access: "sk-ant-oat-1", Refresh: "r", Expires: testNow.UnixMilli() + 3600_000}
}

func TestAnthropicFetchBuildsBuckets(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/oauth/usage" {
			t.Errorf("path = %s", r.URL.Path)
		}
		beta := anthropicBeta
		if r.URL.RawQuery != "" { // saved-reset discovery sends only the OAuth beta
			beta = "oauth-2025-04-20"
		}
		for k, want := range map[string]string{
			"accept":         "application/json, text/plain, */*",
			"anthropic-beta": beta,
			"content-type":   "application/json",
			"user-agent":     "claude-cli/2.1.280 (external, cli)",
			"authorization":  "Bearer sk-ant-oat-1",
		} {
			if got := r.Header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		writeJSON(w, 200, anthropicPayload)
	})
	rep, err := Anthropic{}.Fetch(context.Background(), probeRequest("anthropic", srv.URL+"/v1/", anthropicCred()))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rep, `{
	 "provider": "anthropic", "fetchedAt": 1767323045000,
	 "metadata": {"endpoint": "`+srv.URL+`/api/oauth/usage", "accountId": "acc-uuid", "email": "claude@x.io"},
	 "resetCredits": {"availableCount": 0, "redeemableCount": 0, "eligible": false, "credits": []},
	 "limits": [
	  {"id": "anthropic:5h", "label": "Claude 5 Hour", "status": "ok",
	   "scope": {"provider": "anthropic", "windowId": "5h", "shared": true},
	   "window": {"id": "5h", "label": "5 Hour", "durationMs": 18000000, "resetsAt": 1767330000123},
	   "amount": {"used": 35, "limit": 100, "remaining": 65, "usedFraction": 0.35, "remainingFraction": 0.65, "unit": "percent"}},
	  {"id": "anthropic:7d", "label": "Claude 7 Day", "status": "warning",
	   "scope": {"provider": "anthropic", "windowId": "7d", "shared": true},
	   "window": {"id": "7d", "label": "7 Day", "durationMs": 604800000, "resetsAt": 1767830400000},
	   "amount": {"used": 91.5, "limit": 100, "remaining": 8.5, "usedFraction": 0.915, "remainingFraction": 0.08499999999999996, "unit": "percent"}},
	  {"id": "anthropic:7d:sonnet", "label": "Claude 7 Day (Sonnet)", "status": "exhausted",
	   "scope": {"provider": "anthropic", "windowId": "7d", "tier": "sonnet"},
	   "window": {"id": "7d", "label": "7 Day", "durationMs": 604800000},
	   "amount": {"used": 100, "limit": 100, "remaining": 0, "usedFraction": 1, "remainingFraction": 0, "unit": "percent"}}
	 ]}`)
}

func TestAnthropicRetriesHonourRetryAfter(t *testing.T) {
	var calls atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" { // saved-reset discovery: not counted
			writeJSON(w, 200, `{}`)
			return
		}
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "2")
			writeJSON(w, 429, `{"error":{"type":"rate_limit_error"}}`)
		case 2:
			writeJSON(w, 503, `{}`)
		default:
			writeJSON(w, 200, anthropicPayload)
		}
	})
	var mu sync.Mutex
	var waits []time.Duration
	req := probeRequest("anthropic", srv.URL, anthropicCred())
	req.Wait = func(_ context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return nil
	}
	rep, err := Anthropic{}.Fetch(context.Background(), req)
	if err != nil || rep == nil {
		t.Fatalf("rep=%v err=%v", rep, err)
	}
	if calls.Load() != 3 {
		t.Errorf("calls = %d, want 3", calls.Load())
	}
	want := []time.Duration{2 * time.Second, time.Second}
	if len(waits) != 2 || waits[0] != want[0] || waits[1] != want[1] {
		t.Errorf("waits = %v, want %v", waits, want)
	}
}

func TestAnthropicNoReport(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		wantCalls int32
	}{
		{"401 is not retried", 401, `{"error":"unauthorized"}`, 1},
		{"404 is not retried", 404, `{}`, 1},
		{"5xx is retried three times", 502, `{}`, 3},
		{"payload without usage data is retried", 200, `{"five_hour":null,"seven_day":{"resets_at":"2026-01-01T00:00:00Z"}}`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.RawQuery != "" { // saved-reset discovery: not counted
					writeJSON(w, 200, `{}`)
					return
				}
				calls.Add(1)
				writeJSON(w, tt.status, tt.body)
			})
			rep, err := Anthropic{}.Fetch(context.Background(), probeRequest("anthropic", srv.URL, anthropicCred()))
			if rep != nil || err != nil {
				t.Errorf("report = %+v, err = %v; want nil, nil (the reference's null)", rep, err)
			}
			if calls.Load() != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls.Load(), tt.wantCalls)
			}
		})
	}
}

func TestAnthropicIdentityFallbacks(t *testing.T) {
	usage := `{"five_hour":{"utilization":1}}`
	tests := []struct {
		name        string
		body        string
		orgHeader   string
		cred        vault.Credential
		profile     string
		wantAccount string
		wantEmail   string
		wantOrg     string
		wantProfile bool
	}{
		{name: "payload top-level fields", body: `{"five_hour":{"utilization":1},"account_id":"a1","user_email":"e@x"}`, wantAccount: "a1", wantEmail: "e@x"},
		{name: "payload organization", body: `{"five_hour":{"utilization":1},"organization":{"uuid":"org-1"},"user":{"email":"u@x"}}`, wantAccount: "org-1", wantEmail: "u@x", wantOrg: "org-1"},
		{name: "organization header then profile email", body: usage, orgHeader: "org-h", profile: `{"account":{"uuid":"p","email":"p@x"}}`, wantAccount: "org-h", wantEmail: "p@x", wantOrg: "org-h", wantProfile: true},
		{name: "credential identity skips the profile", body: usage, cred: vault.Credential{AccountID: "c1", Email: "c@x"}, wantAccount: "c1", wantEmail: "c@x"},
		{name: "profile top-level", body: usage, profile: `{"uuid":"pu","email":"pe@x"}`, wantAccount: "pu", wantEmail: "pe@x", wantProfile: true},
		{name: "profile failure leaves identity empty", body: usage, wantProfile: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var profiled atomic.Bool
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/api/oauth/profile" {
					profiled.Store(true)
					if tt.profile == "" {
						writeJSON(w, 404, `{}`)
						return
					}
					writeJSON(w, 200, tt.profile)
					return
				}
				if tt.orgHeader != "" {
					w.Header().Set("anthropic-organization-id", tt.orgHeader)
				}
				writeJSON(w, 200, tt.body)
			})
			c := anthropicCred()
			c.AccountID, c.Email = tt.cred.AccountID, tt.cred.Email
			rep, err := Anthropic{}.Fetch(context.Background(), probeRequest("anthropic", srv.URL+"/api/oauth", c))
			if err != nil || rep == nil {
				t.Fatalf("rep=%v err=%v", rep, err)
			}
			get := func(k string) string { s, _ := rep.Metadata[k].(string); return s }
			if get("accountId") != tt.wantAccount || get("email") != tt.wantEmail || get("orgId") != tt.wantOrg {
				t.Errorf("metadata = %v, want account %q email %q org %q", rep.Metadata, tt.wantAccount, tt.wantEmail, tt.wantOrg)
			}
			if profiled.Load() != tt.wantProfile {
				t.Errorf("profile fetched = %v, want %v", profiled.Load(), tt.wantProfile)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		attempt    int
		retryAfter string
		want       time.Duration
	}{
		{"baseline doubles", 1, "", time.Second},
		{"smaller retry-after keeps baseline", 2, "1", 2 * time.Second},
		{"larger retry-after seconds", 0, "3.5", 3500 * time.Millisecond},
		{"HTTP date", 0, now.Add(4 * time.Second).Format(http.TimeFormat), 4 * time.Second},
		{"garbage keeps baseline", 0, "soon", 500 * time.Millisecond},
		{"negative keeps baseline", 0, "-5", 500 * time.Millisecond},
		{"huge is capped", 0, "1e300", time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryDelay(tt.attempt, tt.retryAfter, now); got != tt.want {
				t.Errorf("retryDelay = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAnthropicBase(t *testing.T) {
	tests := map[string]string{
		"":                                  AnthropicDefaultBase,
		"https://api.anthropic.com":         "https://api.anthropic.com/api/oauth",
		"https://proxy.example/v1/":         "https://proxy.example/api/oauth",
		"https://proxy.example/x/api/oauth": "https://proxy.example/x/api/oauth",
	}
	for in, want := range tests {
		if got := AnthropicBase(in); got != want {
			t.Errorf("AnthropicBase(%q) = %q, want %q", in, got, want)
		}
	}
}

// redirectTransport sends every request to target, keeping the path: the
// real default host is never contacted, and the test sees what it got.
type redirectTransport struct {
	target string
	hosts  chan string
}

func (rt redirectTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.hosts <- r.URL.Host + r.URL.Path
	u := *r.URL
	t, _ := url.Parse(rt.target)
	u.Scheme, u.Host = t.Scheme, t.Host
	r2 := r.Clone(r.Context())
	r2.URL = &u
	r2.Host = t.Host
	r2.Header.Set("X-Original-Host", r.URL.Host)
	return http.DefaultTransport.RoundTrip(r2)
}

// TestAnthropicModelBaseFallsBackToTheDefault: a models.yml base with no usage endpoint (404, non-JSON 2xx, not a usage
// payload) is followed by the default; a 401 there stands, and an explicit
// usage URL never falls back.
func TestAnthropicModelBaseFallsBackToTheDefault(t *testing.T) {
	for _, tt := range []struct {
		name      string
		status    int
		body      string
		modelBase bool
		fallback  bool
	}{
		{"404 falls back", 404, `{}`, true, true},
		{"non-JSON 2xx falls back", 200, `<html>proxy</html>`, true, true},
		{"not a usage payload falls back", 200, `{"object":"list","data":[]}`, true, true},
		{"401 stands", 401, `{"error":"no"}`, true, false},
		{"an explicit usage URL never falls back", 404, `{}`, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Original-Host") == "api.anthropic.com" {
					writeJSON(w, 200, anthropicPayload)
					return
				}
				if tt.body[0] == '<' {
					w.WriteHeader(tt.status)
					_, _ = w.Write([]byte(tt.body))
					return
				}
				writeJSON(w, tt.status, tt.body)
			})
			hosts := make(chan string, 16)
			req := probeRequest("anthropic", "http://proxy.example/v1", anthropicCred())
			req.ModelBase = tt.modelBase
			req.HTTP = &http.Client{Transport: redirectTransport{srv.URL, hosts}}
			rep, err := Anthropic{}.Fetch(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			close(hosts)
			var seen []string
			for h := range hosts {
				seen = append(seen, h)
			}
			usedDefault := slices.Contains(seen, "api.anthropic.com/api/oauth/usage")
			if usedDefault != tt.fallback || (rep != nil) != tt.fallback {
				t.Fatalf("requests %v, report %v; want fallback %v", seen, rep != nil, tt.fallback)
			}
			if seen[0] != "proxy.example/api/oauth/usage" {
				t.Fatalf("the configured base was not tried first: %v", seen)
			}
			if tt.fallback && rep.Metadata["endpoint"] != "https://api.anthropic.com/api/oauth/usage" {
				t.Fatalf("endpoint %v", rep.Metadata["endpoint"])
			}
		})
	}
}

func TestCodexModelBase(t *testing.T) {
	for raw, want := range map[string]string{
		"https://chatgpt.com/backend-api/codex": "https://chatgpt.com/backend-api",
		"https://chat.openai.com":               "https://chat.openai.com/backend-api",
		"https://my-proxy.example/v1":           "",
		"not a url at all":                      "",
	} {
		if got := codexModelBase(raw); got != want {
			t.Errorf("codexModelBase(%q) = %q, want %q", raw, got, want)
		}
	}
	s := &Service{ModelBaseURL: func(p string) string {
		return map[string]string{"openai-codex": "https://proxy.example", "anthropic": "http://a.example/v1/"}[p]
	},
		URLs: func(p, kind string) string {
			if p == "zai" {
				return "http://explicit.example/"
			}
			return ""
		}}
	if b, mb := s.base("openai-codex"); b != "" || mb {
		t.Errorf("codex proxy base = %q %v", b, mb)
	}
	if b, mb := s.base("anthropic"); b != "http://a.example/v1" || !mb {
		t.Errorf("anthropic = %q %v", b, mb)
	}
	if b, mb := s.base("zai"); b != "http://explicit.example" || mb {
		t.Errorf("explicit = %q %v", b, mb)
	}
}

func TestAnthropicScopedWeeklyCaps(t *testing.T) {
	rep := AnthropicReport(mustJSON(t, `{"seven_day":{"utilization":77},"seven_day_opus":null,"limits":[
	  {"kind":"weekly_scoped","percent":100,"resets_at":"2026-01-08T00:00:00Z","scope":{"model":{"display_name":" Fable "}},"is_active":true},
	  {"kind":"weekly_scoped","percent":5,"scope":{"model":{"display_name":"Claude Opus 4.5"}},"is_active":false},
	  {"kind":"weekly_scoped","percent":50,"scope":{"model":{"display_name":"FABLE"}}},
	  {"kind":"weekly_scoped","percent":9,"scope":{}},
	  {"kind":"five_hour","percent":12}]}`), 1)
	assertJSON(t, rep.Limits, `[
	 {"id": "anthropic:7d", "label": "Claude 7 Day", "status": "ok",
	  "scope": {"provider": "anthropic", "windowId": "7d", "shared": true},
	  "window": {"id": "7d", "label": "7 Day", "durationMs": 604800000},
	  "amount": {"used": 77, "limit": 100, "remaining": 23, "usedFraction": 0.77, "remainingFraction": 0.22999999999999998, "unit": "percent"}},
	 {"id": "anthropic:7d:fable", "label": "Claude 7 Day (Fable)", "status": "exhausted",
	  "scope": {"provider": "anthropic", "windowId": "7d", "tier": "fable"},
	  "window": {"id": "7d", "label": "7 Day", "durationMs": 604800000, "resetsAt": 1767830400000},
	  "amount": {"used": 100, "limit": 100, "remaining": 0, "usedFraction": 1, "remainingFraction": 0, "unit": "percent"}},
	 {"id": "anthropic:7d:claude-opus-4-5", "label": "Claude 7 Day (Claude Opus 4.5)", "status": "ok",
	  "scope": {"provider": "anthropic", "windowId": "7d", "tier": "claude-opus-4-5"},
	  "window": {"id": "7d", "label": "7 Day", "durationMs": 604800000},
	  "amount": {"used": 5, "limit": 100, "remaining": 95, "usedFraction": 0.05, "remainingFraction": 0.95, "unit": "percent"}}
	]`)
	if !anthropicHasData(object(mustJSON(t, `{"limits":[{"kind":"weekly_scoped","percent":1,"scope":{"model":{"display_name":"X"}}}]}`))) {
		t.Error("a scoped cap alone is usage data")
	}
}
