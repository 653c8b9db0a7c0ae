package usage_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ompgo/omp/pkg/vault"
	"github.com/ompgo/omp/pkg/vault/usage"
)

func codexPayload(t *testing.T, chatUsed, sparkUsed float64, limitReached bool) any {
	t.Helper()
	raw := `{"plan_type":"plus","rate_limit":{"allowed":true,"limit_reached":` + map[bool]string{true: "true", false: "false"}[limitReached] + `,
	  "primary_window":{"used_percent":` + ftoa(chatUsed) + `,"limit_window_seconds":18000,"reset_after_seconds":100}},
	  "additional_rate_limits":[{"limit_name":"GPT-5.3-Codex-Spark","metered_feature":"codex_bengalfox",
	    "rate_limit":{"allowed":true,"limit_reached":false,"primary_window":{"used_percent":` + ftoa(sparkUsed) + `,"limit_window_seconds":18000,"reset_after_seconds":100}}}]}`
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func ftoa(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestHealthyScopesCodexPerMeter(t *testing.T) {
	for _, c := range []struct {
		name         string
		chat, spark  float64
		limitReached bool
		want         []string
	}{
		{"both healthy", 10, 10, false, []string{"chat", "spark"}},
		{"spark exhausted", 10, 100, false, []string{"chat"}},
		{"chat exhausted", 100, 10, false, []string{"spark"}},
		{"limit reached", 10, 10, true, []string{"spark"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := usage.CodexReport(codexPayload(t, c.chat, c.spark, c.limitReached), 1000, "acct", "a@x.y")
			key, got := usage.HealthyScopes("openai-codex", rep)
			if key != vault.CodexProviderKey || !slices.Equal(got, c.want) {
				t.Fatalf("%s %v, want %v (limits %+v)", key, got, c.want, rep.Limits)
			}
		})
	}
	// The chat meter heals only on allowed === true and limitReached ===
	// false, as the reference: a report lacking either heals spark alone.
	for _, drop := range []string{"allowed", "limitReached"} {
		rep := usage.CodexReport(codexPayload(t, 10, 10, false), 1000, "acct", "a@x.y")
		delete(rep.Metadata, drop)
		if _, got := usage.HealthyScopes("openai-codex", rep); !slices.Equal(got, []string{"spark"}) {
			t.Fatalf("without %s: %v, want [spark]", drop, got)
		}
	}
	if _, got := usage.HealthyScopes("anthropic", &vault.UsageReport{}); got != nil {
		t.Fatalf("anthropic scopes %v", got)
	}
}

func antigravityPayload(t *testing.T, claudeLeft, geminiLeft float64) any {
	t.Helper()
	raw := `{"models":{
	  "claude-sonnet":{"modelProvider":"MODEL_PROVIDER_ANTHROPIC","quotaInfo":{"remainingFraction":` + ftoa(claudeLeft) + `,"resetTime":"2030-01-02T12:00:00Z"}},
	  "gemini-pro":{"modelProvider":"MODEL_PROVIDER_GOOGLE","quotaInfo":{"remainingFraction":` + ftoa(geminiLeft) + `,"resetTime":"2030-01-02T12:00:00Z"}}}}`
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Antigravity heals per backend counter (the reference's
// healableBlockScopes): a counter whose limits are all below exhaustion,
// and only counters the report has limits for.
func TestHealthyScopesAntigravityPerCounter(t *testing.T) {
	for _, c := range []struct {
		name           string
		claude, gemini float64 // remaining fractions
		want           []string
	}{
		{"both healthy", 0.5, 0.9, []string{"counter:anthropic", "counter:google"}},
		{"claude exhausted", 0, 0.9, []string{"counter:google"}},
		{"gemini exhausted", 0.5, 0, []string{"counter:anthropic"}},
		{"both exhausted", 0, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := usage.AntigravityReport(antigravityPayload(t, c.claude, c.gemini), 1000, "acct", "proj")
			key, got := usage.HealthyScopes("google-antigravity", rep)
			slices.Sort(got)
			if key != "google-antigravity:oauth" || !slices.Equal(got, c.want) {
				t.Fatalf("%s %v, want %v (limits %+v)", key, got, c.want, rep.Limits)
			}
		})
	}
	// A counter is judged by all its windows: a healthy day does not heal
	// an exhausted week; ids are compared in lower case.
	used := func(f float64) *float64 { return &f }
	rep := &vault.UsageReport{Provider: "google-antigravity", Limits: []vault.UsageLimit{
		{ID: "google-antigravity:Anthropic:default:daily", Amount: vault.UsageAmount{UsedFraction: used(0.2)}},
		{ID: "google-antigravity:anthropic:default:weekly", Amount: vault.UsageAmount{UsedFraction: used(1)}},
		{ID: "google-antigravity:openai:default:daily", Status: vault.StatusOK, Amount: vault.UsageAmount{UsedFraction: used(0.1)}},
	}}
	if _, got := usage.HealthyScopes("google-antigravity", rep); !slices.Equal(got, []string{"counter:openai"}) {
		t.Fatalf("mixed windows: %v, want [counter:openai]", got)
	}
	if _, got := usage.HealthyScopes("google-antigravity", &vault.UsageReport{}); got != nil {
		t.Fatalf("empty report heals %v", got)
	}
}
