package usage

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func oauthCred() vault.Credential {
	return vault.Credential{Type: vault.TypeOAuth, Access: "at", Refresh: "rt", Expires: testNow.UnixMilli() + 3600_000}
}

func TestGeminiLoadsProjectThenQuota(t *testing.T) {
	var quotaBody map[string]any
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer at" || !strings.HasPrefix(r.Header.Get("User-Agent"), "GeminiCLI/") {
			t.Errorf("bad request %s %s", r.Method, r.Header.Get("User-Agent"))
		}
		switch r.URL.Path {
		case "/v1internal:loadCodeAssist":
			writeJSON(w, 200, `{"cloudaicompanionProject":{"id":"proj-9"},"currentTier":{"id":"standard-tier","name":"Standard"}}`)
		case "/v1internal:retrieveUserQuota":
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &quotaBody)
			writeJSON(w, 200, `{"buckets":[{"modelId":"gemini-2.5-pro","remainingFraction":0.25,"resetTime":"2026-01-03T00:00:00Z"},{"remainingFraction":"x"}]}`)
		default:
			t.Errorf("path %s", r.URL.Path)
		}
	})
	rep, err := Gemini{}.Fetch(context.Background(), probeRequest("google-gemini-cli", srv.URL, oauthCred()))
	if err != nil {
		t.Fatal(err)
	}
	if quotaBody["project"] != "proj-9" {
		t.Errorf("quota body = %v, want project proj-9", quotaBody)
	}
	l := limitByID(t, rep, "gemini-2.5-pro:quota")
	if l.Label != "Gemini gemini-2.5-pro" || l.Window.ID != "quota" || l.Window.Label != "Quota window" || *l.Window.ResetsAt != 1767398400000 ||
		*l.Amount.UsedFraction != 0.75 || *l.Amount.Used != 75 || l.Scope.ProjectID != "proj-9" {
		t.Errorf("limit = %+v", l)
	}
	if u := limitByID(t, rep, "unknown:quota"); u.Amount.UsedFraction != nil || u.Amount.Unit != "percent" {
		t.Errorf("unknown bucket amount = %+v", u.Amount)
	}
	if rep.Metadata["currentTierId"] != "standard-tier" || rep.Metadata["currentTierName"] != "Standard" {
		t.Errorf("metadata = %v", rep.Metadata)
	}
}

func TestAntigravityMergesCountersPerWindow(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1internal:retrieveUserQuotaSummary" {
			writeJSON(w, 404, `{"error":{"code":404}}`) // an older deployment
			return
		}
		if r.URL.Path != "/v1internal:fetchAvailableModels" || string(b) != `{"project":"p1"}` {
			t.Errorf("request %s %s", r.URL.Path, b)
		}
		writeJSON(w, 200, `{"models":{
		  "claude-sonnet":{"modelProvider":"MODEL_PROVIDER_ANTHROPIC","quotaInfo":{"remainingFraction":0.8,"resetTime":"2026-01-02T12:00:00Z"}},
		  "claude-opus":{"modelProvider":"MODEL_PROVIDER_ANTHROPIC","quotaInfo":{"remainingFraction":0.6,"resetTime":"2026-01-02T12:00:00Z"}},
		  "gemini-pro":{"modelProvider":"MODEL_PROVIDER_GOOGLE","weeklyQuotaInfo":{"resetTime":"2026-01-08T00:00:00Z"}},
		  "tab_flash":{"modelProvider":"MODEL_PROVIDER_GOOGLE","quotaInfo":{"remainingFraction":1}}
		}}`)
	})
	c := oauthCred()
	c.ProjectID, c.Email = "p1", "g@x.io"
	rep, err := Antigravity{}.Fetch(context.Background(), probeRequest("google-antigravity", srv.URL, c))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Limits) != 2 {
		t.Fatalf("limits = %+v, want 2 (merged anthropic, google weekly; unmetered google dropped)", rep.Limits)
	}
	g := rep.Limits[0]
	if g.ID != "google-antigravity:google:default:weekly" || g.Status != vault.StatusExhausted || g.Label != "Usage (Google)" {
		t.Errorf("first limit = %+v, want exhausted google weekly", g)
	}
	a := limitByID(t, rep, "google-antigravity:anthropic:default:daily")
	if *a.Amount.RemainingFraction != 0.6 || a.Status != vault.StatusOK || a.Scope.ProjectID != "p1" {
		t.Errorf("anthropic limit = %+v", a)
	}
	if rep.Metadata["email"] != "g@x.io" || rep.Metadata["projectId"] != "p1" {
		t.Errorf("metadata = %v", rep.Metadata)
	}
	if r, _ := (Antigravity{}).Fetch(context.Background(), probeRequest("google-antigravity", srv.URL, oauthCred())); r != nil {
		t.Error("fetched without a project id")
	}
}

func TestKimiParsesUsageAndLimits(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/coding/v1/usages" || r.Header.Get("Authorization") != "Bearer at" || r.Header.Get("X-Msh-Platform") != "kimi_cli" {
			t.Errorf("request %s", r.URL.Path)
		}
		writeJSON(w, 200, `{"usage":{"limit":"100","used":"40","resetTime":"2026-01-05T00:00:00Z"},
		  "limits":[{"window":{"duration":300,"timeUnit":"TIME_UNIT_MINUTE"},"detail":{"limit":50,"remaining":5,"resetTime":"2026-01-02T06:00:00Z"}}]}`)
	})
	rep, err := Kimi{}.Fetch(context.Background(), probeRequest("kimi-code", srv.URL+"/coding/v1/", oauthCred()))
	if err != nil {
		t.Fatal(err)
	}
	w := limitByID(t, rep, "kimi-code:0")
	if w.Label != "Weekly limit" || w.Window.ID != "7d" || *w.Amount.UsedFraction != 0.4 || w.Status != vault.StatusOK {
		t.Errorf("weekly = %+v", w)
	}
	f := limitByID(t, rep, "kimi-code:1")
	if f.Label != "5h limit" || f.Window.ID != "5h" || *f.Window.DurationMs != 5*hourMs || *f.Amount.Used != 45 ||
		f.Status != vault.StatusWarning || f.Window.ResetsAt == nil {
		t.Errorf("5h = %+v window %+v", f, f.Window)
	}
}

func TestZaiSendsRawKeyAndBuildsLimits(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "zai-key" {
			t.Errorf("Authorization = %q, want the raw key", r.Header.Get("Authorization"))
		}
		switch r.URL.Path {
		case "/api/monitor/usage/quota/limit":
			writeJSON(w, 200, `{"success":true,"data":{"level":"pro","limits":[
			  {"type":"TOKENS_LIMIT","usage":1000,"currentValue":950,"remaining":50,"unit":3,"number":5,"nextResetTime":1767340000},
			  {"type":"TOKENS_LIMIT","usage":9000,"currentValue":10,"unit":6},
			  {"type":"TIME_LIMIT","usage":100,"currentValue":100,"percentage":100,"unit":5,"number":1}]}}`)
		case "/api/monitor/usage/model-usage":
			if r.URL.Query().Get("startTime") == "" {
				t.Error("model-usage without startTime")
			}
			writeJSON(w, 200, `{"data":{"total":1}}`)
		}
	})
	rep, err := Zai{}.Fetch(context.Background(), probeRequest("zai", srv.URL+"/some/path", vault.Credential{Type: vault.TypeAPIKey, Key: "zai-key"}))
	if err != nil {
		t.Fatal(err)
	}
	tok := limitByID(t, rep, "zai:tokens")
	if tok.Window.ID != "5h" || tok.Label != "ZAI 5 Hours Token Quota" || *tok.Amount.UsedFraction != 0.95 || tok.Status != vault.StatusWarning || *tok.Window.ResetsAt != 1767340000000 {
		t.Errorf("tokens = %+v", tok)
	}
	if w := limitByID(t, rep, "zai:tokens:1w"); w.Window.Label != "Weekly" {
		t.Errorf("weekly tokens = %+v", w)
	}
	if req := limitByID(t, rep, "zai:requests"); req.Status != vault.StatusExhausted || req.Window.Label != "Monthly" || req.Amount.Unit != "requests" {
		t.Errorf("requests = %+v", req)
	}
	if rep.Metadata["planType"] != "pro" || rep.Metadata["modelUsage"] == nil {
		t.Errorf("metadata = %v", rep.Metadata)
	}
	if (Zai{}).Supports(oauthCred()) {
		t.Error("zai supports OAuth")
	}
	if ZaiReport(mustJSON(t, `{"success":false}`), 1) != nil {
		t.Error("unsuccessful payload gave a report")
	}
}

func TestCopilotOAuthUsesGitHubToken(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer rt" {
			t.Errorf("Authorization = %q, want the GitHub token", r.Header.Get("Authorization"))
		}
		switch r.URL.Path {
		case "/copilot_internal/user":
			writeJSON(w, 200, `{"copilot_plan":"individual","quota_reset_date":"2026-02-01",
			  "quota_snapshots":{"premium_interactions":{"entitlement":300,"remaining":30,"percent_remaining":10,"unlimited":false,"overage_count":2},
			  "chat":{"entitlement":0,"remaining":0,"percent_remaining":100,"unlimited":true}}}`)
		case "/user":
			writeJSON(w, 200, `{"login":"octo"}`)
		}
	})
	rep, err := Copilot{}.Fetch(context.Background(), probeRequest("github-copilot", srv.URL, oauthCred()))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Limits) != 1 {
		t.Fatalf("limits = %+v, want premium only", rep.Limits)
	}
	p := limitByID(t, rep, "copilot:premium")
	if p.Window.ID != "monthly" || *p.Amount.Used != 270 || p.Status != vault.StatusWarning || p.Scope.AccountID != "octo" ||
		len(p.Notes) != 1 || p.Notes[0] != "Overage requests: 2" {
		t.Errorf("premium = %+v", p)
	}
	if rep.Metadata["accountId"] != "octo" || rep.Metadata["plan"] != "individual" {
		t.Errorf("metadata = %v", rep.Metadata)
	}
}

func TestCopilotAPI(t *testing.T) {
	tests := []struct {
		base, enterprise, want string
	}{
		{"", "", "https://api.github.com"},
		{"", "ghe.corp", "https://api.ghe.corp"},
		{"", "api.ghe.corp", "https://api.ghe.corp"},
		{"", "https://ghe.corp/", "https://ghe.corp"},
		{"https://api.githubcopilot.com", "", "https://api.github.com"},
		{"http://127.0.0.1:1/", "ghe.corp", "http://127.0.0.1:1"},
	}
	for _, tt := range tests {
		if got := copilotAPI(tt.base, vault.Credential{EnterpriseURL: tt.enterprise}); got != tt.want {
			t.Errorf("copilotAPI(%q,%q) = %q, want %q", tt.base, tt.enterprise, got, tt.want)
		}
	}
}
