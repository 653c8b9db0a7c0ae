package usage

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

const codexPayload = `{
  "plan_type": "pro",
  "rate_limit": {
    "allowed": true, "limit_reached": false,
    "primary_window": {"used_percent": 42.5, "limit_window_seconds": 18000, "reset_after_seconds": 100},
    "secondary_window": {"used_percent": 95, "limit_window_seconds": 604800, "reset_at": 1767900000}
  },
  "additional_rate_limits": [
    {"limit_name": "GPT-5.3-Codex-Spark", "metered_feature": "codex_bengalfox",
     "rate_limit": {"allowed": false, "limit_reached": true,
       "primary_window": {"used_percent": 120, "limit_window_seconds": 18000, "reset_at": 1767330000000}}},
    {"metered_feature": "codex_Review Tool",
     "rate_limit": {"secondary_window": {"used_percent": 10}}},
    {"limit_name": "ignored", "rate_limit": {}}
  ],
  "rate_limit_reset_credits": {"available_count": 2.9}
}`

func TestCodexFetchBuildsEveryLimit(t *testing.T) {
	var calls atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/backend-api/wham/usage" || r.Method != http.MethodGet {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer tok" {
			t.Errorf("Authorization = %q", got)
		}
		if got := r.Header.Get("User-Agent"); got != "OpenCode-Status-Plugin/1.0" {
			t.Errorf("User-Agent = %q", got)
		}
		if got := r.Header.Get("ChatGPT-Account-Id"); got != "acct-1" {
			t.Errorf("ChatGPT-Account-Id = %q", got)
		}
		writeJSON(w, 200, codexPayload)
	})
	cred := vault.Credential{Type: vault.TypeOAuth, Access: "tok", Refresh: "r", Expires: testNow.UnixMilli() + 3600_000, AccountID: "acct-1", Email: "A@B.c"}
	rep, err := Codex{}.Fetch(context.Background(), probeRequest("openai-codex", srv.URL+"/backend-api", cred))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rep, `{
	 "provider": "openai-codex", "fetchedAt": 1767323045000,
	 "resetCredits": {"availableCount": 2},
	 "metadata": {"planType": "pro", "allowed": true, "limitReached": false, "email": "a@b.c", "accountId": "acct-1"},
	 "limits": [
	  {"id": "openai-codex:primary", "label": "5 hours", "status": "ok",
	   "scope": {"provider": "openai-codex", "accountId": "acct-1", "tier": "pro", "windowId": "5h", "shared": true},
	   "window": {"id": "5h", "label": "5 hours", "durationMs": 18000000, "resetsAt": 1767323145000},
	   "amount": {"used": 42.5, "limit": 100, "remaining": 57.5, "usedFraction": 0.425, "remainingFraction": 0.575, "unit": "percent"}},
	  {"id": "openai-codex:secondary", "label": "7 days", "status": "warning",
	   "scope": {"provider": "openai-codex", "accountId": "acct-1", "tier": "pro", "windowId": "7d", "shared": true},
	   "window": {"id": "7d", "label": "7 days", "durationMs": 604800000, "resetsAt": 1767900000000},
	   "amount": {"used": 95, "limit": 100, "remaining": 5, "usedFraction": 0.95, "remainingFraction": 0.050000000000000044, "unit": "percent"}},
	  {"id": "openai-codex:spark:primary", "label": "5 hours (Spark)", "status": "exhausted",
	   "scope": {"provider": "openai-codex", "accountId": "acct-1", "tier": "spark", "modelId": "GPT-5.3-Codex-Spark", "windowId": "5h", "shared": true},
	   "window": {"id": "5h", "label": "5 hours", "durationMs": 18000000, "resetsAt": 1767330000000},
	   "amount": {"used": 100, "limit": 100, "remaining": 0, "usedFraction": 1, "remainingFraction": 0, "unit": "percent"}},
	  {"id": "openai-codex:review-tool:secondary", "label": "Secondary window (Review Tool)", "status": "ok",
	   "scope": {"provider": "openai-codex", "accountId": "acct-1", "tier": "review-tool", "windowId": "secondary", "shared": true},
	   "window": {"id": "secondary", "label": "Secondary window"},
	   "amount": {"used": 10, "limit": 100, "remaining": 90, "usedFraction": 0.1, "remainingFraction": 0.9, "unit": "percent"}}
	 ]}`)
	if calls.Load() != 1 {
		t.Errorf("calls = %d, want 1", calls.Load())
	}
}

func TestCodexLimitReachedExhaustsBothWindows(t *testing.T) {
	rep := CodexReport(mustJSON(t, `{"rate_limit":{"allowed":false,"limit_reached":true,
	  "primary_window":{"used_percent":3},"secondary_window":{"used_percent":50}}}`), 1000, "", "")
	for _, id := range []string{"openai-codex:primary", "openai-codex:secondary"} {
		if got := limitByID(t, rep, id).Status; got != vault.StatusExhausted {
			t.Errorf("%s status = %q, want exhausted", id, got)
		}
	}
	if rep.ResetCredits != nil {
		t.Errorf("resetCredits = %+v, want absent", rep.ResetCredits)
	}
}

func TestCodexResetAtSecondsAndMilliseconds(t *testing.T) {
	tests := []struct {
		name   string
		window string
		want   int64
	}{
		{"seconds are scaled", `{"used_percent":1,"reset_at":1767400000}`, 1767400000000},
		{"milliseconds are kept", `{"used_percent":1,"reset_at":1767400000123}`, 1767400000123},
		{"reset_after is relative to now", `{"used_percent":1,"reset_after_seconds":60}`, 1000 + 60000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := CodexReport(mustJSON(t, `{"rate_limit":{"primary_window":`+tt.window+`}}`), 1000, "", "")
			w := limitByID(t, rep, "openai-codex:primary").Window
			if w.ResetsAt == nil || *w.ResetsAt != tt.want {
				t.Errorf("resetsAt = %v, want %d", w.ResetsAt, tt.want)
			}
		})
	}
}

func TestCodexAccountIDFromJWTClaim(t *testing.T) {
	access := jwt(t, map[string]any{
		"https://api.openai.com/auth":    map[string]any{"chatgpt_account_id": "from-jwt"},
		"https://api.openai.com/profile": map[string]any{"email": "Jwt@X.io"},
	})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("ChatGPT-Account-Id"); got != "from-jwt" {
			t.Errorf("ChatGPT-Account-Id = %q", got)
		}
		writeJSON(w, 200, `{"rate_limit":{"primary_window":{"used_percent":1}}}`)
	})
	rep, err := Codex{}.Fetch(context.Background(), probeRequest("openai-codex", srv.URL, vault.Credential{Type: vault.TypeOAuth, Access: access}))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Metadata["email"] != "jwt@x.io" || rep.Metadata["accountId"] != "from-jwt" {
		t.Errorf("metadata = %v", rep.Metadata)
	}
}

func TestCodexNoReport(t *testing.T) {
	var calls atomic.Int32
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(w, 500, `{"error":"boom"}`)
	})
	expired := vault.Credential{Type: vault.TypeOAuth, Access: "tok", Expires: testNow.UnixMilli()}
	rep, err := Codex{}.Fetch(context.Background(), probeRequest("openai-codex", srv.URL, expired))
	if rep != nil || err != nil || calls.Load() != 0 {
		t.Fatalf("expired token: rep=%v err=%v calls=%d, want no request", rep, err, calls.Load())
	}
	valid := expired
	valid.Expires = testNow.UnixMilli() + 1
	rep, err = Codex{}.Fetch(context.Background(), probeRequest("openai-codex", srv.URL, valid))
	var se *StatusError
	if rep != nil || !errors.As(err, &se) || se.Status != 500 {
		t.Fatalf("HTTP 500: rep=%v err=%v, want *StatusError 500", rep, err)
	}
	if (Codex{}).Supports(vault.Credential{Type: vault.TypeAPIKey, Key: "k"}) {
		t.Error("Codex supports an API key")
	}
}

func TestCodexBase(t *testing.T) {
	tests := map[string]string{
		"":                                   "https://chatgpt.com/backend-api",
		"https://chatgpt.com/":               "https://chatgpt.com/backend-api",
		"https://chat.openai.com":            "https://chat.openai.com/backend-api",
		"https://chatgpt.com/backend-api///": "https://chatgpt.com/backend-api",
		"http://127.0.0.1:9/x/":              "http://127.0.0.1:9/x",
	}
	for in, want := range tests {
		if got := CodexBase(in); got != want {
			t.Errorf("CodexBase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCodexSlug(t *testing.T) {
	tests := []struct{ name, feature, want string }{
		{"Spark", "", "spark"},
		{"", "codex_bengalfox", "spark"},
		{"Nice Name", "codex-Some_Feature!", "some-feature"},
		{"My Limit", "", "my-limit"},
		{"", "", "extra"},
		{"", "codex_---", "extra"},
	}
	for _, tt := range tests {
		if got := codexSlug(tt.name, tt.feature); got != tt.want {
			t.Errorf("codexSlug(%q,%q) = %q, want %q", tt.name, tt.feature, got, tt.want)
		}
	}
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
