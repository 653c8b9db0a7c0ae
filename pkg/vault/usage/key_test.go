package usage

import (
	"strings"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
)

func TestCacheKey(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		base     string
		cred     vault.Credential
		want     string
	}{
		{"account and email skip the secret", "openai-codex", "",
			vault.Credential{Type: vault.TypeOAuth, AccountID: " acc ", Email: " A@B.C ", Refresh: "r"},
			"report:openai-codex:default:oauth|account:acc|email:a@b.c"},
		{"project and enterprise with secret", "github-copilot", "https://x//",
			vault.Credential{Type: vault.TypeOAuth, ProjectID: "p", EnterpriseURL: "GHE.Corp", Refresh: "r", Access: "a"},
			"report:github-copilot:https://x:oauth|project:p|enterprise:ghe.corp|secret:" + secretHash("r")},
		{"antigravity key version", "google-antigravity", "",
			vault.Credential{Type: vault.TypeOAuth, Email: "e@x"},
			"report:2:google-antigravity:default:oauth|email:e@x"},
		{"api key hashes the key", "zai", "https://api.z.ai/",
			vault.Credential{Type: vault.TypeAPIKey, Key: " k "},
			"report:zai:https://api.z.ai:api_key|secret:" + secretHash("k")},
		{"no secret is anonymous", "kimi-code", "",
			vault.Credential{Type: vault.TypeOAuth},
			"report:kimi-code:default:oauth|anonymous"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CacheKey(tt.provider, tt.base, tt.cred); got != tt.want {
				t.Errorf("CacheKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSecretHashHidesTheSecret(t *testing.T) {
	h := secretHash("sk-very-secret")
	if strings.Contains(h, "secret") || h == secretHash("sk-very-secreT") || len(h) > 16 || h != strings.ToLower(h) {
		t.Errorf("secretHash = %q", h)
	}
}

func rep(provider string, limits int, fetched int64, meta map[string]any, scopes ...vault.UsageScope) vault.UsageReport {
	r := vault.UsageReport{Provider: provider, FetchedAt: fetched, Metadata: meta}
	for i := range limits {
		l := vault.UsageLimit{ID: provider + ":" + string(rune('a'+i)), Amount: vault.UsageAmount{Unit: "percent"}}
		if i < len(scopes) {
			l.Scope = scopes[i]
		}
		r.Limits = append(r.Limits, l)
	}
	return r
}

func TestDedupe(t *testing.T) {
	t.Run("codex merges by email only", func(t *testing.T) {
		got := Dedupe([]vault.UsageReport{
			rep("openai-codex", 1, 10, map[string]any{"email": "A@x", "accountId": "1"}),
			rep("openai-codex", 2, 5, map[string]any{"email": "a@x", "planType": "pro"}),
			rep("openai-codex", 1, 7, map[string]any{"accountId": "1"}),
		})
		if len(got) != 2 {
			t.Fatalf("groups = %d, want 2 (accountId alone does not merge codex)", len(got))
		}
		m := got[0]
		if len(m.Limits) != 2 || m.FetchedAt != 10 || m.Metadata["planType"] != "pro" || m.Metadata["accountId"] != "1" || m.Metadata["email"] != "a@x" {
			t.Fatalf("merged = %+v", m)
		}
	})
	t.Run("others merge by project, account and single scope ids", func(t *testing.T) {
		got := Dedupe([]vault.UsageReport{
			rep("google-gemini-cli", 1, 1, nil, vault.UsageScope{ProjectID: "P"}),
			rep("google-gemini-cli", 1, 2, map[string]any{"projectId": "p", "user": "u1"}),
			rep("google-gemini-cli", 1, 3, map[string]any{"username": "U1"}),
			rep("github-copilot", 1, 4, map[string]any{"user": "u1"}),
			rep("kimi-code", 2, 5, nil, vault.UsageScope{AccountID: "a"}, vault.UsageScope{AccountID: "b"}),
			rep("kimi-code", 1, 6, nil, vault.UsageScope{AccountID: "a"}),
		})
		if len(got) != 4 {
			t.Fatalf("groups = %d, want 4: %+v", len(got), got)
		}
		if got[0].FetchedAt != 3 {
			t.Errorf("gemini group fetchedAt = %d, want 3 (max)", got[0].FetchedAt)
		}
	})
	t.Run("email suppresses the project identifier", func(t *testing.T) {
		got := Dedupe([]vault.UsageReport{
			rep("google-antigravity", 1, 1, map[string]any{"email": "a@x", "projectId": "shared"}),
			rep("google-antigravity", 1, 1, map[string]any{"email": "b@x", "projectId": "shared"}),
		})
		if len(got) != 2 {
			t.Fatalf("groups = %d, want 2", len(got))
		}
	})
	t.Run("tie on limits keeps the newest as base", func(t *testing.T) {
		a := rep("anthropic", 1, 1, map[string]any{"email": "e", "endpoint": "old"})
		b := rep("anthropic", 1, 2, map[string]any{"email": "e", "endpoint": "new"})
		b.Limits[0].ID = "anthropic:other"
		got := Dedupe([]vault.UsageReport{a, b})
		if len(got) != 1 || got[0].Metadata["endpoint"] != "new" || len(got[0].Limits) != 2 || got[0].Limits[0].ID != "anthropic:other" {
			t.Fatalf("merged = %+v", got)
		}
	})
}

func TestHistoryEntries(t *testing.T) {
	r := CodexReport(mustJSON(t, `{"rate_limit":{"primary_window":{"used_percent":50,"reset_at":1767400000}}}`), 0, "scope-acct", "meta@x")
	cred := vault.Credential{Type: vault.TypeOAuth, Refresh: "r"}
	got := HistoryEntries("openai-codex", cred, r, 99)
	if len(got) != 1 {
		t.Fatalf("entries = %+v", got)
	}
	e := got[0]
	if e.RecordedAt != 99 || e.AccountKey != CacheIdentity(cred) || e.Email != "meta@x" || e.AccountID != "scope-acct" ||
		e.WindowLabel != "Primary window" || *e.UsedFraction != 0.5 || *e.ResetsAt != 1767400000000 || e.Status != "ok" {
		t.Fatalf("entry = %+v", e)
	}
	if HistoryEntries("x", cred, &vault.UsageReport{}, 1) != nil {
		t.Error("entries for a report without limits")
	}
}
